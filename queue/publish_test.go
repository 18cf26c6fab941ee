package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

func TestDeliveryKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		forge              workflows.Forge
		delivery, workflow string
		want, wantKV       string
	}{
		{workflows.Forge("github"), "72d3162e-cc78-11e3-81ab-4c9367dc0958", "pr-review",
			"github:72d3162e-cc78-11e3-81ab-4c9367dc0958:pr-review", "github.72d3162e-cc78-11e3-81ab-4c9367dc0958.pr-review"},
		{workflows.Forge("gitlab"), "a3b2c1", "triage", "gitlab:a3b2c1:triage", "gitlab.a3b2c1.triage"},
		// KV keys refuse ':' and spaces, and '.' would add tokens: hashed.
		{workflows.Forge("gitlab"), "Note Hook:1.2", "triage", "gitlab:Note Hook:1.2:triage",
			"h.5d8d7e0ab1f0c4f1a3a0bbbd2fc1c8e8e0a4b4d15f8e0d14c6a2bd0a3b74e6a5"},
	}
	for _, tt := range tests {
		if got := queue.DeliveryKey(tt.forge, tt.delivery, tt.workflow); got != tt.want {
			t.Errorf("DeliveryKey(%q, %q, %q) = %q, want %q", tt.forge, tt.delivery, tt.workflow, got, tt.want)
		}
		got := queue.DeliveryKVKey(tt.forge, tt.delivery, tt.workflow)
		if tt.wantKV[:2] == "h." {
			if len(got) != 66 || got[:2] != "h." || !queue.KVSafe(got[2:]) {
				t.Errorf("queue.DeliveryKVKey(%q) = %q, want a hashed key", tt.delivery, got)
			}
			continue
		}
		if got != tt.wantKV {
			t.Errorf("queue.DeliveryKVKey(%q) = %q, want %q", tt.delivery, got, tt.wantKV)
		}
	}
}

func TestNewRunIDSortable(t *testing.T) {
	t.Parallel()
	prev := queue.NewRunID()
	for range 1000 {
		id := queue.NewRunID()
		if len(id) != 26 || id <= prev {
			t.Fatalf("run id %q after %q: want 26 chars, increasing", id, prev)
		}
		prev = id
	}
}

// Survival: run requests outlive the embedded server.
func TestRestartSurvival(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := testCtx(t, 30*time.Second)
	const n = 50
	raw, err := queue.Open(ctx, queue.Config{DataDir: dir, Logger: testLogger(t), RequestKey: testRequestKey})
	if err != nil {
		t.Fatal(err)
	}
	q1 := withStores(t, raw)
	want := map[string]bool{}
	for range n {
		res, err := q1.Publish(ctx, testRequest("restart"))
		if err != nil {
			t.Fatal(err)
		}
		want[res.RunID] = true
	}
	if err := q1.Close(); err != nil {
		t.Fatal(err)
	}

	q2 := openTest(t, queue.Config{DataDir: dir})
	if got := streamMsgs(t, q2); got != n {
		t.Fatalf("stream has %d messages after restart, want %d", got, n)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	c, err := q2.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, Concurrency: 8}, func(ctx context.Context, d *queue.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		seen[d.Request.ID]++
		if len(seen) == n {
			close(all)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("consumed %d of %d", len(seen), n)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("run %s handled %d times, want 1", id, seen[id])
		}
		rec, _, err := q2.Runs().Get(ctx, id)
		if err != nil || rec.Status != workflows.StatusQueued {
			t.Errorf("record %s after restart: %v %v", id, rec, err)
		}
	}
}

// Dedupe: one delivery published 1,000 times at once is one message and one
// run id.
func TestPublishDedupeConcurrent(t *testing.T) {
	t.Parallel()
	// Default duplicate window (2m): the burst must fit in it even on a
	// loaded machine; the timeout is generous for the same reason.
	q := openTest(t, queue.Config{PublishTimeout: 30 * time.Second})
	ctx := testCtx(t, 60*time.Second)
	base := testRequest("dedupe")

	const n = 1000
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ids  = map[string]int{}
		dups int
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := *base
			req.ID = ""
			<-start
			res, err := q.Publish(ctx, &req)
			if err != nil {
				t.Errorf("Publish: %v", err)
				return
			}
			if req.ID != res.RunID {
				t.Errorf("req.ID %s, result %s", req.ID, res.RunID)
			}
			mu.Lock()
			ids[res.RunID]++
			if res.Duplicate {
				dups++
			}
			mu.Unlock()
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d concurrent publishes of one delivery took %s", n, time.Since(began))
	if len(ids) != 1 || dups != n-1 {
		t.Fatalf("got run ids %v and %d duplicates; want one id and %d duplicates", ids, dups, n-1)
	}
	if got := streamMsgs(t, q); got != 1 {
		t.Fatalf("stream has %d messages, want 1", got)
	}
	recs, _, err := q.Runs().List(ctx, stores.ListFilter{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d run records (%v), want 1", len(recs), err)
	}
}

// A redelivery after JetStream's duplicate window still maps to the run
// the first delivery created, and leaves a finished run finished.
func TestPublishReplayAfterWindow(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond // JetStream's minimum is 100ms
	q := openTest(t, queue.Config{DuplicateWindow: window})
	ctx := testCtx(t, 30*time.Second)
	base := testRequest("replay")
	first := *base
	res1, err := q.Publish(ctx, &first)
	if err != nil {
		t.Fatal(err)
	}

	// Consume and finish the run, as a runner would.
	done := make(chan struct{}, 1)
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, FetchWait: 200 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
		_, err := q.Runs().Modify(ctx, d.Request.ID, func(r *stores.RunRecord) bool {
			r.Status = workflows.StatusSucceeded
			return true
		})
		done <- struct{}{}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, q, 5*time.Second)

	time.Sleep(window + 1500*time.Millisecond)
	replay := *base
	replay.ID = ""
	res2, err := q.Publish(ctx, &replay)
	if err != nil {
		t.Fatal(err)
	}
	if !res2.Duplicate || res2.RunID != res1.RunID || replay.ID != res1.RunID {
		t.Fatalf("replay = %+v (req.ID %s), want duplicate of %s", res2, replay.ID, res1.RunID)
	}
	// Past the window JetStream stored the replay: a harmless copy for the
	// same, finished, run.
	if got := streamMsgs(t, q); got != 1 {
		t.Fatalf("stream has %d messages after the replay, want 1 (the window has passed)", got)
	}
	rec, _, err := q.Runs().Get(ctx, res1.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusSucceeded {
		t.Fatalf("replay changed the record to %s", rec.Status)
	}
}

// A publish that failed after its message landed, then a retry of the same
// delivery: the retry's run id wins, the stream message of the first
// attempt runs under it, and the first attempt's record disappears;
// whether the consumer reads the delivery key (the publishes were made
// where nothing consumed runs) or remembers what the retry's publish
// wrote to it (they were made while this process consumed).
func TestReconcileSupersededAttempt(t *testing.T) {
	t.Parallel()
	for _, remembered := range []bool{false, true} {
		name := "key read"
		if remembered {
			name = "key remembered"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testReconcileSupersededAttempt(t, remembered)
		})
	}
}

func testReconcileSupersededAttempt(t *testing.T, remembered bool) {
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	reads := queuetest.DirectGets(t, q.Queue, "hookrun_deliveries")
	stopPretending := func() {}
	if remembered {
		stopPretending = q.PretendConsuming()
	}
	first := testRequest("retried")
	first.ID, first.V, first.Attempt, first.CreatedAt = queue.NewRunID(), queue.WireVersion, 1, time.Now().UTC()
	// What the failed attempt left behind: its message and record, but no
	// delivery key (Publish removed it when it reported the failure).
	if _, err := q.Publish(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := q.DelKV().Delete(ctx, queue.DeliveryKVKey(first.Event.Forge, first.Event.DeliveryID, first.Workflow)); err != nil {
		t.Fatal(err)
	}
	retry := *first
	retry.ID = ""
	res, err := q.Publish(ctx, &retry)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || res.RunID == first.ID {
		t.Fatalf("retry result %+v; want a fresh run id", res)
	}
	if n := streamMsgs(t, q); n != 1 {
		t.Fatalf("stream has %d messages, want 1 (the retry's is a duplicate)", n)
	}
	stopPretending()
	before := reads()["hookrun_deliveries"]
	got := make(chan *queue.Delivery, 1)
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		got <- d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	d := <-got
	if d.Request.ID != res.RunID {
		t.Fatalf("handler got run %s, want the retry's %s", d.Request.ID, res.RunID)
	}
	wantReads := int64(1)
	if remembered {
		wantReads = 0
	}
	if n := reads()["hookrun_deliveries"] - before; n != wantReads {
		t.Errorf("the consumer read the delivery key %d times, want %d", n, wantReads)
	}
	if _, _, err := q.Runs().Get(ctx, first.ID); !errors.Is(err, stores.ErrNotFound) {
		t.Fatalf("first attempt's record: %v, want ErrNotFound", err)
	}
	if _, _, err := q.Runs().Get(ctx, res.RunID); err != nil {
		t.Fatal(err)
	}
}

// TestConsumeReadsNothingItsProcessPublished: a run published and
// consumed by one process (hookrun serve) sends the server no read of its
// delivery key or its record between the publish and the handler, even
// when its message is consumed before the publish returned (a delivery of
// many runs); a run published where nothing consumed runs (an ingress
// apart from the runners) has its key and its record read once each.
func TestConsumeReadsNothingItsProcessPublished(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	reads := queuetest.DirectGets(t, q.Queue, "hookrun_deliveries", "hookrun_runs")
	const many = 16
	got := make(chan string, many)
	for _, c := range []struct {
		runs      int
		consuming bool
	}{{1, false}, {1, true}, {many, true}} {
		before := reads()
		res, err := q.PublishDelivery(ctx, deliveryRequests(c.runs))
		if err != nil {
			t.Fatal(err)
		}
		if !c.consuming {
			// Consumed by the consumer opened after it.
			cons, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 5 * time.Second, Concurrency: many}, func(ctx context.Context, d *queue.Delivery) error {
				got <- d.Request.ID
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cons.Close(ctx) }()
		}
		want := map[string]bool{}
		for _, r := range res {
			want[r.RunID] = true
		}
		for range res {
			if id := <-got; !want[id] {
				t.Fatalf("handler got run %s, not one of %v", id, want)
			}
		}
		after := reads()
		k, r := after["hookrun_deliveries"]-before["hookrun_deliveries"], after["hookrun_runs"]-before["hookrun_runs"]
		want1 := int64(0) // reads of each run's key, and of its record
		if !c.consuming {
			want1 = int64(c.runs)
		}
		if k != want1 || r != want1 {
			t.Errorf("%d runs published while consuming %v: %d reads of the delivery keys and %d of the records, want %d and %d", c.runs, c.consuming, k, r, want1, want1)
		}
	}
}

// A message whose record never landed still reaches the handler with a record.
func TestReconcileCreatesMissingRecord(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	req := testRequest("norecord")
	req.ID, req.V, req.Attempt = queue.NewRunID(), queue.WireVersion, 1
	data, _ := json.Marshal(req)
	if _, err := q.JS().PublishMsg(ctx, signedMsg(q, queue.RunsSubjectPrefix+req.Workflow, data)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		_, _, err := q.Runs().Get(ctx, d.Request.ID)
		got <- err
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	if err := <-got; err != nil {
		t.Fatalf("record in handler: %v", err)
	}
}

// BenchmarkPublish measures one Publish (delivery key, stream message and
// record) against the embedded server: what ingress adds to a webhook.
func BenchmarkPublish(b *testing.B) {
	q := openTest(b, queue.Config{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := q.Publish(ctx, testRequest("bench")); err != nil {
			b.Fatal(err)
		}
	}
}

// A publish the stream refuses (the message is known not stored) leaves
// nothing behind: no delivery key, and no queued record that no message would
// ever run; a retry then starts afresh.
func TestRefusedPublishLeavesNoRecord(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	st, err := q.JS().Stream(ctx, queue.StreamRuns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	small := info.Config
	small.MaxMsgSize = 512
	if _, err := q.JS().UpdateStream(ctx, small); err != nil {
		t.Fatal(err)
	}
	req := testRequest("refused")
	req.Event.Raw = json.RawMessage(`"` + strings.Repeat("x", 2048) + `"`)
	if _, err := q.Publish(ctx, req); err == nil {
		t.Fatal("publish of an oversized request succeeded")
	}
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != 0 {
		t.Fatalf("records after a refused publish: %d (%v); want none", len(recs), err)
	}
	if _, err := q.JS().UpdateStream(ctx, info.Config); err != nil {
		t.Fatal(err)
	}
	req.ID = ""
	res, err := q.Publish(ctx, req)
	if err != nil || res.Duplicate {
		t.Fatalf("retry after the refusal: %+v, %v; want a fresh run", res, err)
	}
	if recs, _, err := q.Runs().List(ctx, stores.ListFilter{}); err != nil || len(recs) != 1 || recs[0].ID != res.RunID {
		t.Fatalf("records after the retry: %v (%v); want exactly the retried run", recs, err)
	}
}

// BenchmarkPublishDelivery3 measures a delivery that matched three
// workflows: three keys and records, then one atomic batch of three
// messages.
func BenchmarkPublishDelivery3(b *testing.B) {
	q := openTest(b, queue.Config{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := q.PublishDelivery(ctx, deliveryRequests(3)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishDelivery3Parallel is BenchmarkPublishDelivery3 from
// concurrent deliveries, as ingress publishes them.
func BenchmarkPublishDelivery3Parallel(b *testing.B) {
	q := openTest(b, queue.Config{})
	ctx := context.Background()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.PublishDelivery(ctx, deliveryRequests(3)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
