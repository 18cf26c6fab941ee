package stores

import (
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// TestRunTransitionsReadNoRecordTheyWrote: a run enqueued, claimed,
// refreshed and finished in one process reads its record from the bucket
// once, to enqueue it (its publish was made where nothing consumes runs,
// as an ingress apart from the runners): each transition after starts
// from the record the one before wrote. The record ends as the
// transitions made it, and nothing of the run is remembered once it ended.
func TestRunTransitionsReadNoRecordTheyWrote(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	reads := queuetest.DirectGets(t, q.Queue, "hookrun_runs")

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
	if n := reads()["hookrun_runs"]; n != 1 {
		t.Errorf("the run's transitions read its record %d times, want 1", n)
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

// TestRecentRecordsForgetEnded: a record written as ended is not
// remembered, and an earlier entry of its run goes.
func TestRecentRecordsForgetEnded(t *testing.T) {
	var h recentRecords
	h.remember("x", []byte("{}"), 1, false)
	h.remember("x", []byte("{}"), 2, true)
	if _, ok := h.lookup("x"); ok {
		t.Error("an ended run is still remembered")
	}
}
