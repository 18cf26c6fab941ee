package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
)

// handled records the run ids a consumer's handler saw.
type handled struct {
	mu  sync.Mutex
	ids []string
}

func (h *handled) handler(ctx context.Context, d *queue.Delivery) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, d.Request.ID)
	return nil
}

func (h *handled) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ids)
}

// assertNothingLeft checks that no record, no delivery key and no message
// of reqs remains.
func assertNothingLeft(t *testing.T, q *testQueue, reqs []*queue.RunRequest) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != 0 {
		t.Errorf("records after a failed delivery: %d (%v); want none", len(recs), err)
	}
	for _, r := range reqs {
		_, err := q.DelKV().Get(ctx, queue.DeliveryKVKey(r.Event.Forge, r.Event.DeliveryID, r.Workflow))
		if !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			t.Errorf("delivery key of %s after a failed delivery: %v; want none", r.Workflow, err)
		}
	}
	if n := streamMsgs(t, q); n != 0 {
		t.Errorf("stream has %d messages after a failed delivery; want none", n)
	}
	if objs, err := q.Bodies().List(ctx); !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Errorf("bodies after a failed delivery: %d (%v); want none", len(objs), err)
	}
}

// assertDelivered checks that the results name one fresh run per request,
// each with its record, its key and its message, and that the consumer
// runs each exactly once.
func assertDelivered(t *testing.T, q *testQueue, reqs []*queue.RunRequest, res []queue.PublishResult, h *handled) {
	t.Helper()
	ctx := testCtx(t, 15*time.Second)
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d runs", len(res), len(reqs))
	}
	var want []string
	for i, r := range res {
		if r.Duplicate || r.RunID != reqs[i].ID {
			t.Errorf("result %d = %+v (req.ID %s); want a fresh run", i, r, reqs[i].ID)
		}
		want = append(want, r.RunID)
		if _, _, err := q.Runs().Get(ctx, r.RunID); err != nil {
			t.Errorf("record of %s: %v", r.RunID, err)
		}
		e, err := q.DelKV().Get(ctx, queue.DeliveryKVKey(reqs[i].Event.Forge, reqs[i].Event.DeliveryID, reqs[i].Workflow))
		if err != nil || string(e.Value()) != r.RunID {
			t.Errorf("delivery key of %s: %v; want run %s", reqs[i].Workflow, err, r.RunID)
		}
	}
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != len(reqs) {
		t.Errorf("%d records (%v); want %d", len(recs), err, len(reqs))
	}
	slices.Sort(want)
	for ctx.Err() == nil && len(h.seen()) < len(want) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a second run of any would show now
	got := h.seen()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("handler ran %v; want each of %v once", got, want)
	}
}

// A delivery of three runs is all or nothing: a failure between its writes
// (after its body, after the keys, after the records, at the messages) or
// a stream that refuses one of its messages leaves no body, record, key or
// message, no run reaches a runner, and the redelivery creates all three.
// The injected failures come with a body too large to travel inline.
func TestDeliveryAllOrNothing(t *testing.T) {
	t.Parallel()
	injected := errors.New("injected failure")
	for _, tc := range []struct {
		name  string
		point string // "" for the stream's own refusal
	}{
		{"after the body", queue.FailBody},
		{"after keys", queue.FailKeys},
		{"after records", queue.FailRecords},
		{"messages refused", queue.FailMessages},
		{"one message too large for the stream", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := openTest(t, queue.Config{})
			ctx := testCtx(t, 30*time.Second)
			h := &handled{}
			c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, FetchWait: 100 * time.Millisecond}, h.handler)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(context.Background()) })

			reqs := deliveryRequests(3)
			var restore func()
			if tc.point != "" {
				big := json.RawMessage(`"` + strings.Repeat("b", q.InlineMax()+1) + `"`)
				for _, r := range reqs {
					r.Event.Raw = big
				}
				*q.FailAt() = func(p string) error {
					if p == tc.point {
						return injected
					}
					return nil
				}
				restore = func() { *q.FailAt() = nil }
			} else {
				// The middle run's message alone is too large: without
				// an atomic batch the other two would be stored.
				st, err := q.JS().Stream(ctx, queue.StreamRuns)
				if err != nil {
					t.Fatal(err)
				}
				info, err := st.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				small := info.Config
				small.MaxMsgSize = 4096
				if _, err := q.JS().UpdateStream(ctx, small); err != nil {
					t.Fatal(err)
				}
				reqs[1].Event.Raw = json.RawMessage(`"` + strings.Repeat("x", 8192) + `"`)
				restore = func() {
					if _, err := q.JS().UpdateStream(ctx, info.Config); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := q.PublishDelivery(ctx, reqs); err == nil {
				t.Fatal("the failed delivery reported success")
			} else if tc.point != "" && !errors.Is(err, injected) {
				t.Fatalf("error %v; want the injected one", err)
			}
			assertNothingLeft(t, q, reqs)
			time.Sleep(300 * time.Millisecond) // the consumer fetches every 100ms
			if got := h.seen(); len(got) != 0 {
				t.Fatalf("runs of a failed delivery reached the handler: %v", got)
			}

			restore()
			again := redeliver(reqs)
			res, err := q.PublishDelivery(ctx, again)
			if err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			assertDelivered(t, q, again, res, h)
		})
	}
}

// A delivery whose messages were stored but whose acknowledgement was lost
// (a timeout: the outcome is unknown) keeps its keys and records; the
// redelivery maps every run to the same id, stores no second message and
// answers success.
func TestDeliveryUnknownOutcomeCompletes(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	lost := fmt.Errorf("waiting for ack: %w", context.DeadlineExceeded)
	*q.FailAt() = func(p string) error {
		if p == queue.FailAck {
			return lost
		}
		return nil
	}
	reqs := deliveryRequests(3)
	if _, err := q.PublishDelivery(ctx, reqs); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first attempt: %v; want the lost acknowledgement", err)
	}
	*q.FailAt() = nil
	var first []string
	for _, r := range reqs {
		first = append(first, r.ID)
		if _, _, err := q.Runs().Get(ctx, r.ID); err != nil {
			t.Fatalf("record of %s after an unknown outcome: %v; want it kept", r.ID, err)
		}
	}
	if n := streamMsgs(t, q); n != 3 {
		t.Fatalf("stream has %d messages; want the 3 the lost acknowledgement was for", n)
	}

	again := redeliver(reqs)
	res, err := q.PublishDelivery(ctx, again)
	if err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	for i, r := range res {
		if !r.Duplicate || r.RunID != first[i] || again[i].ID != first[i] {
			t.Errorf("redelivery result %d = %+v; want a duplicate of %s", i, r, first[i])
		}
	}
	if n := streamMsgs(t, q); n != 3 {
		t.Errorf("stream has %d messages after the redelivery; want 3", n)
	}
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != 3 {
		t.Errorf("%d records (%v); want 3", len(recs), err)
	}
}

// A delivery some of whose runs an earlier attempt stored (here: one
// published alone before) is completed: the stored one is a duplicate
// under its earlier id, the others are stored, one message each.
func TestDeliveryPartlyStoredCompletes(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	reqs := deliveryRequests(3)
	one := *reqs[0]
	earlier, err := q.Publish(ctx, &one)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.PublishDelivery(ctx, redeliver(reqs))
	if err != nil {
		t.Fatalf("delivery: %v", err)
	}
	if !res[0].Duplicate || res[0].RunID != earlier.RunID || res[1].Duplicate || res[2].Duplicate {
		t.Fatalf("results %+v; want the first a duplicate of %s, the others fresh", res, earlier.RunID)
	}
	if n := streamMsgs(t, q); n != 3 {
		t.Errorf("stream has %d messages; want 3", n)
	}
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != 3 {
		t.Errorf("%d records (%v); want 3 (a duplicate's own record removed)", len(recs), err)
	}
}

// Many concurrent deliveries of several runs, as ingress publishes them
// (each an atomic batch): every one is persisted, none answered with an
// error.
func TestDeliveriesConcurrentBatches(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{PublishTimeout: 30 * time.Second})
	ctx := testCtx(t, 60*time.Second)
	const n = 120
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			if _, err := q.PublishDelivery(ctx, deliveryRequests(2)); err != nil {
				t.Errorf("delivery: %v", err)
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d concurrent deliveries of 2 runs in %s", n, time.Since(began))
	if got := streamMsgs(t, q); got != 2*n {
		t.Fatalf("stream has %d messages; want %d", got, 2*n)
	}
}

// A record whose write's outcome is unknown (its acknowledgement lost) may
// land after any rollback looked for it: its run keeps its delivery key
// and record, and the redelivery completes the run under the same id,
// with one message and one record per run and each run executed once.
func TestDeliveryRecordOutcomeUnknown(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	h := &handled{}
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, FetchWait: 100 * time.Millisecond}, h.handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	*q.FailAt() = func(p string) error {
		if p == queue.FailRecordAck {
			return errors.New("waiting for ack: lost")
		}
		return nil
	}
	reqs := deliveryRequests(2)
	if _, err := q.PublishDelivery(ctx, reqs); err == nil {
		t.Fatal("the failed delivery reported success")
	}
	*q.FailAt() = nil
	if n := streamMsgs(t, q); n != 0 {
		t.Fatalf("stream has %d messages; want none before the commit", n)
	}
	var first []string
	for _, r := range reqs {
		first = append(first, r.ID)
		e, err := q.DelKV().Get(ctx, queue.DeliveryKVKey(r.Event.Forge, r.Event.DeliveryID, r.Workflow))
		if err != nil || string(e.Value()) != r.ID {
			t.Fatalf("delivery key of %s: %v; want it kept with run %s", r.Workflow, err, r.ID)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if got := h.seen(); len(got) != 0 {
		t.Fatalf("runs of a failed delivery reached the handler: %v", got)
	}
	again := redeliver(reqs)
	res, err := q.PublishDelivery(ctx, again)
	if err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	for i, r := range res {
		if !r.Duplicate || r.RunID != first[i] {
			t.Errorf("redelivery result %d = %+v; want a duplicate of %s", i, r, first[i])
		}
	}
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != 2 {
		t.Errorf("%d records (%v); want 2", len(recs), err)
	}
	for ctx.Err() == nil && len(h.seen()) < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	got := h.seen()
	slices.Sort(got)
	if !slices.Equal(got, first) {
		t.Errorf("handler ran %v; want each of %v once", got, first)
	}
}
