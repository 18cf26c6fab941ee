package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// withObject copies reqs as another delivery of the same object would
// arrive: fresh run ids, another delivery id, the same Object.
func withObject(reqs []*queue.RunRequest, delivery, object string) []*queue.RunRequest {
	out := redeliver(reqs)
	for _, r := range out {
		r.Event.DeliveryID, r.Object = delivery, object
	}
	return out
}

// The runs of an object dedupe across delivery ids: a second delivery of
// the same object maps to the first one's runs (SameObject), stores no
// message, and its delivery key names those runs, so that its own
// redelivery is a plain duplicate. A failed publish removes the object
// keys it wrote: the next delivery of that object runs.
func TestObjectDedupeAcrossDeliveries(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	h := &handled{}
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, FetchWait: 100 * time.Millisecond}, h.handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	first := withObject(deliveryRequests(3), "obj-d1", "object-1")
	res, err := q.PublishDelivery(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	assertDelivered(t, q, first, res, h)

	for _, tc := range []struct {
		delivery         string
		wantSameObject   bool
		wantDeliveryKeys bool
	}{
		{"obj-d2", true, true},  // another delivery id: the object's runs
		{"obj-d2", false, true}, // its redelivery: its own delivery key
		{"obj-d1", false, true}, // the first's redelivery
	} {
		again, err := q.PublishDelivery(ctx, withObject(first, tc.delivery, "object-1"))
		if err != nil {
			t.Fatalf("%s: %v", tc.delivery, err)
		}
		for i, r := range again {
			if r.RunID != res[i].RunID || !r.Duplicate || r.SameObject != tc.wantSameObject {
				t.Fatalf("%s: result %d = %+v; want run %s, duplicate, same object %v", tc.delivery, i, r, res[i].RunID, tc.wantSameObject)
			}
			e, err := q.DelKV().Get(ctx, queue.DeliveryKVKey(first[i].Event.Forge, tc.delivery, first[i].Workflow))
			if err != nil || string(e.Value()) != r.RunID {
				t.Fatalf("%s: delivery key of %s: %v; want run %s", tc.delivery, first[i].Workflow, err, r.RunID)
			}
		}
	}
	if n := streamMsgs(t, q) + uint64(len(h.seen())); len(h.seen()) != 3 || n > 3 {
		t.Fatalf("handler saw %v, %d messages left; want each of the 3 runs once", h.seen(), streamMsgs(t, q))
	}

	// A failed publish leaves no object key behind.
	injected := errors.New("injected failure")
	*q.FailAt() = func(p string) error {
		if p == queue.FailRecords {
			return injected
		}
		return nil
	}
	failed := withObject(first, "obj-d3", "object-2")
	if _, err := q.PublishDelivery(ctx, failed); !errors.Is(err, injected) {
		t.Fatalf("failed delivery: %v", err)
	}
	*q.FailAt() = nil
	for _, r := range failed {
		if _, err := q.DelKV().Get(ctx, queue.ObjectKVKey(r.Event.Forge, "object-2", r.Workflow)); !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			t.Fatalf("object key of %s after a failed delivery: %v; want none", r.Workflow, err)
		}
	}
	next, err := q.PublishDelivery(ctx, withObject(first, "obj-d4", "object-2"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range next {
		if r.Duplicate || r.RunID == res[i].RunID {
			t.Fatalf("a new object after a failed delivery: result %d = %+v; want a fresh run", i, r)
		}
	}
}

// Copies of one delivery of an object that race each other (the forge's
// retry while the first answer is still on its way) are one run: every
// copy is answered with the same run id, and one message is stored. When
// the copy that lost the delivery key could still claim the object key,
// the winner followed the object key to the loser's id while the loser
// pointed the object key back at the winner's: two answers, no run.
func TestRacingCopiesOfAnObjectAreOneRun(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 60*time.Second)
	const rounds, copies = 200, 8
	base := deliveryRequests(1)
	for round := range rounds {
		delivery, object := fmt.Sprintf("race-d%d", round), fmt.Sprintf("race-object-%d", round)
		ids := make([]string, copies)
		errs := make([]error, copies)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c := range copies {
			wg.Go(func() {
				reqs := withObject(base, delivery, object)
				<-start
				res, err := q.PublishDelivery(ctx, reqs)
				if err == nil {
					ids[c] = res[0].RunID
				}
				errs[c] = err
			})
		}
		close(start)
		wg.Wait()
		for c := range copies {
			if errs[c] != nil {
				t.Fatalf("round %d copy %d: %v", round, c, errs[c])
			}
			if ids[c] != ids[0] {
				t.Fatalf("round %d: copies answered runs %v; want one run", round, ids)
			}
		}
		e, err := q.DelKV().Get(ctx, queue.ObjectKVKey(base[0].Event.Forge, object, base[0].Workflow))
		if err != nil || string(e.Value()) != ids[0] {
			t.Fatalf("round %d: object key %v (%v); want run %s", round, e, err, ids[0])
		}
	}
	if n := streamMsgs(t, q); n != rounds {
		t.Fatalf("stream holds %d messages, want %d (one run per object)", n, rounds)
	}
}
