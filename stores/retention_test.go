package stores

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// retainedRun is a run of the retention test with everything kept per
// run: its record, log lines, a stored body, an outbox entry and its place
// in a cancel_in_progress group.
func retainedRun(t *testing.T, q *testQueue, status workflows.Status, finished *time.Time) *RunRecord {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	id := queue.NewRunID()
	rec := &RunRecord{ID: id, Workflow: "w", Repo: "o/a", Status: status, CreatedAt: time.Now().UTC(),
		Event: workflows.Event{Forge: workflows.Forge("github"), DeliveryID: "dlv-" + id}, ConcurrencyGroup: "pr:w:o/a#" + id, FinishedAt: finished}
	if _, err := q.Runs().Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"build", "test"} {
		if err := q.Logs().Append(ctx, LogLine{RunID: id, StepID: step, Text: "output of " + step}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Logs().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bodiesOf(t, q).PutBytes(ctx, runBody(rec), bytes.Repeat([]byte("x"), 300<<10)); err != nil {
		t.Fatal(err)
	}
	if err := q.Outbox().Put(ctx, &OutboxEntry{Key: OutboxKey(id, "final"), RunID: id}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Groups().StartNewest(ctx, rec.ConcurrencyGroup, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := q.Groups().LeaveNewest(ctx, rec.ConcurrencyGroup, id); err != nil {
		t.Fatal(err)
	}
	return rec
}

func runBody(rec *RunRecord) string {
	return queue.BodyName(rec.Event.Forge, rec.Event.DeliveryID)
}

// kept reports which of a run's parts are still stored.
type kept struct{ record, logs, body, outbox, group bool }

func keptOf(t *testing.T, q *testQueue, rec *RunRecord) kept {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	var k kept
	_, _, err := q.Runs().Get(ctx, rec.ID)
	k.record = err == nil
	lines, err := q.Logs().Read(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	k.logs = len(lines) > 0
	_, err = bodiesOf(t, q).GetInfo(ctx, runBody(rec))
	k.body = !errors.Is(err, jetstream.ErrObjectNotFound)
	_, err = q.Outbox().kv.Get(ctx, OutboxKey(rec.ID, "final"))
	k.outbox = err == nil
	_, err = q.Groups().kv.Get(ctx, groupKey("cancel", rec.ConcurrencyGroup))
	k.group = err == nil
	return k
}

// The retention sweep, on a fake clock, removes the runs that finished
// more than the retention ago with their logs, body, outbox entry and
// group key; a run that finished since, and an unfinished run however old,
// keep everything. Sweeping again removes nothing; several sweepers at
// once remove each run once.
func TestRetentionSweep(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	const retention = 30 * 24 * time.Hour

	old := start.Add(-time.Hour)
	expired := []*RunRecord{
		retainedRun(t, q, workflows.StatusSucceeded, &old),
		retainedRun(t, q, workflows.StatusFailed, &old),
		retainedRun(t, q, workflows.StatusCancelled, &old),
	}
	later := start.Add(10 * 24 * time.Hour)
	recent := retainedRun(t, q, workflows.StatusSucceeded, &later)
	running := retainedRun(t, q, workflows.StatusRunning, nil)
	queued := retainedRun(t, q, workflows.StatusQueued, nil)
	all := append([]*RunRecord{recent, running, queued}, expired...)
	for _, r := range all {
		if k := keptOf(t, q, r); k != (kept{true, true, true, true, true}) {
			t.Fatalf("run %s before the sweep: %+v, want everything stored", r.ID, k)
		}
	}

	stop, err := q.StartRetention(RetentionConfig{Retention: retention, Interval: 20 * time.Millisecond, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Within the retention: nothing goes.
	time.Sleep(200 * time.Millisecond)
	for _, r := range all {
		if k := keptOf(t, q, r); !k.record || !k.logs || !k.body {
			t.Fatalf("run %s removed within the retention: %+v", r.ID, k)
		}
	}
	// 30 days and a bit after the old runs finished.
	now.Store(start.Add(retention).UnixNano())
	deadline := time.Now().Add(10 * time.Second)
	for keptOf(t, q, expired[2]).record && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	for _, r := range expired {
		if k := keptOf(t, q, r); k != (kept{}) {
			t.Errorf("expired run %s (%s): still stored %+v, want nothing", r.ID, r.Status, k)
		}
	}
	for _, r := range []*RunRecord{recent, running, queued} {
		if k := keptOf(t, q, r); !k.record || !k.logs || !k.body || !k.outbox {
			t.Errorf("run %s (%s, finished %v) lost parts: %+v", r.ID, r.Status, r.FinishedAt, k)
		}
	}
	if got, _, _ := q.Runs().List(testCtx(t, 5*time.Second), ListFilter{}); len(got) != 3 {
		t.Errorf("List after the sweep: %d runs, want 3", len(got))
	}

	// Far in the future: the recent run goes too, unfinished ones never.
	// Four sweepers at once remove it once.
	var wg sync.WaitGroup
	var removed atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := q.SweepRuns(context.Background(), start.Add(10*365*24*time.Hour))
			if err != nil {
				t.Error(err)
			}
			removed.Add(int64(n))
		}()
	}
	wg.Wait()
	if n := removed.Load(); n != 1 {
		t.Errorf("four concurrent sweeps removed %d runs, want 1 (the recent one, once)", n)
	}
	for _, r := range []*RunRecord{running, queued} {
		if k := keptOf(t, q, r); !k.record {
			t.Errorf("unfinished run %s was removed", r.ID)
		}
	}
	if n, err := q.SweepRuns(context.Background(), start.Add(10*365*24*time.Hour)); err != nil || n != 0 {
		t.Errorf("sweeping again = %d, %v; want nothing to remove", n, err)
	}

	// The markers removed records leave expire (the bucket allows it).
	st, err := q.Runs().kv.Status(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if st.LimitMarkerTTL() != RunMarkerTTL {
		t.Errorf("hookrun_runs limit marker ttl %s, want %s", st.LimitMarkerTTL(), RunMarkerTTL)
	}
}
