package stores

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// countRecordReads counts the direct gets of run records that reach q's
// server from any client, from now on: reads() is how many were sent
// before it was called.
func countRecordReads(t *testing.T, q *testQueue) (reads func() int64) {
	t.Helper()
	nc, err := q.Connect("count-reads")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var n atomic.Int64
	if _, err := nc.Subscribe("$JS.API.DIRECT.GET.KV_hookrun_runs.>", func(*nats.Msg) { n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() int64 {
		// The server passed each read on to nc when it received it: a
		// round trip of nc's comes back after them.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return n.Load()
	}
}

// TestRunTransitionsReadNoRecordTheyWrote: a run published, enqueued,
// claimed, refreshed and finished in one process reads its record from the
// bucket not once: each transition starts from the record the one before
// it wrote. The record ends as the transitions made it, and nothing of the
// run is remembered once it ended.
func TestRunTransitionsReadNoRecordTheyWrote(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	reads := countRecordReads(t, q)

	req := testRequest("hinted")
	if _, err := q.Publish(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := rs.Enqueue(ctx, req, ""); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	res, err := rs.Claim(ctx, req, ClaimSpec{Claimant: "me", Now: now, StaleAfter: time.Minute})
	if err != nil || res.Outcome != Claimed {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	steps := []workflows.StepState{{ID: "a", Status: workflows.StatusRunning}}
	if _, err := rs.Heartbeat(ctx, req.ID, HeartbeatSpec{Claimant: "me", Attempt: 1, Now: now.Add(time.Second), Steps: steps}); err != nil {
		t.Fatal(err)
	}
	steps[0].Status = workflows.StatusSucceeded
	if err := rs.Finish(ctx, req.ID, FinishSpec{Claimant: "me", Attempt: 1, Now: now.Add(2 * time.Second), FinishedAt: now.Add(2 * time.Second),
		Status: workflows.StatusSucceeded, Steps: steps}); err != nil {
		t.Fatal(err)
	}
	if n := reads(); n != 0 {
		t.Errorf("the run's transitions read its record %d times, want 0", n)
	}
	if n := rs.recent.len(); n != 0 {
		t.Errorf("%d runs remembered after the run ended, want 0", n)
	}
	rec, _, err := rs.Get(ctx, req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusSucceeded || rec.Attempt != 1 || rec.Claimant != "me" || len(rec.Steps) != 1 ||
		rec.Steps[0].Status != workflows.StatusSucceeded || !rec.HeartbeatAt.Equal(now.Add(2*time.Second)) {
		t.Errorf("record %+v, want succeeded by me at attempt 1 with its step", rec)
	}
}

// TestRunTransitionsReadWhatAnotherProcessWrote: a transition that starts
// from what this process last wrote loses nothing another process wrote
// since (the write is refused and the record read again), and a decision
// to write nothing is never made on a remembered record alone.
func TestRunTransitionsReadWhatAnotherProcessWrote(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	mine := q.Runs()
	other := &RunStore{kv: mine.kv, clock: time.Now} // another process: the same bucket, its own memory
	now := time.Now().UTC().Truncate(time.Millisecond)
	spec := ClaimSpec{Claimant: "me", Now: now, StaleAfter: time.Minute}

	t.Run("a cancel requested meanwhile stays", func(t *testing.T) {
		req := testRequest("cancelled")
		req.ID = queue.NewRunID()
		if _, err := mine.Claim(ctx, req, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := other.RequestCancel(ctx, req.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := mine.Heartbeat(ctx, req.ID, HeartbeatSpec{Claimant: "me", Attempt: 1, Now: now.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		rec, _, err := other.Get(ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.CancelRequested || !rec.HeartbeatAt.Equal(now.Add(time.Second)) {
			t.Errorf("record %+v: want the other process's cancel request kept and the heartbeat written", rec)
		}
	})

	t.Run("a run that ended elsewhere is not held", func(t *testing.T) {
		req := testRequest("ended")
		req.ID = queue.NewRunID()
		if _, err := other.Claim(ctx, req, ClaimSpec{Claimant: "them", Now: now, StaleAfter: time.Minute}); err != nil {
			t.Fatal(err)
		}
		// This process reads the run running under the other's claim...
		if res, err := mine.Claim(ctx, req, spec); err != nil || res.Outcome != ClaimHeld {
			t.Fatalf("claim while held: %+v, %v; want ClaimHeld", res, err)
		}
		// ...which then finishes it.
		if err := other.Finish(ctx, req.ID, FinishSpec{Claimant: "them", Attempt: 1, Now: now, FinishedAt: now, Status: workflows.StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
		if res, err := mine.Claim(ctx, req, spec); err != nil || res.Outcome != ClaimFinished {
			t.Errorf("claim after it ended elsewhere: outcome %v, %v; want ClaimFinished", res.Outcome, err)
		}
	})

	t.Run("a run deleted elsewhere is enqueued again by its claim", func(t *testing.T) {
		req := testRequest("deleted")
		req.ID = queue.NewRunID()
		if err := mine.Enqueue(ctx, req, ""); err != nil {
			t.Fatal(err)
		}
		_, rev, err := other.Get(ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.delete(ctx, req.ID, rev); err != nil {
			t.Fatal(err)
		}
		res, err := mine.Claim(ctx, req, spec)
		if err != nil || res.Outcome != Claimed || res.Record.Attempt != 1 {
			t.Fatalf("claim of a deleted record: %+v, %v; want it created and claimed", res, err)
		}
		if _, _, err := other.Get(ctx, req.ID); err != nil {
			t.Errorf("record after the claim: %v", err)
		}
	})
}

// TestRecentRecordsBounded: the memory of unfinished runs keeps at most
// maxRecentRecords of them, however many runs never end in this process.
func TestRecentRecordsBounded(t *testing.T) {
	var h recentRecords
	for i := range maxRecentRecords + 100 {
		h.remember(queue.NewRunID()+string(rune('a'+i%26)), []byte("{}"), uint64(i+1), false)
	}
	if n := h.len(); n != maxRecentRecords {
		t.Errorf("%d runs remembered, want %d", n, maxRecentRecords)
	}
	h.remember("x", []byte("{}"), 1, false)
	h.remember("x", []byte("{}"), 2, true)
	if _, ok := h.lookup("x"); ok {
		t.Error("an ended run is still remembered")
	}
}
