package stores

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

func TestRequestCancel(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	tests := []struct {
		name       string
		status     workflows.Status // "" = no record
		wantStatus workflows.Status
		wantErr    error
	}{
		{"queued is cancelled at once", workflows.StatusQueued, workflows.StatusCancelled, nil},
		{"running gets the request", workflows.StatusRunning, workflows.StatusRunning, nil},
		{"finished stays finished", workflows.StatusSucceeded, workflows.StatusSucceeded, ErrRunFinished},
		{"partially succeeded is finished", workflows.StatusPartiallySucceeded, workflows.StatusPartiallySucceeded, ErrRunFinished},
		{"missing", "", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := queue.NewRunID()
			if tt.status != "" {
				if _, err := rs.Create(ctx, &RunRecord{ID: id, Workflow: "w", Status: tt.status, CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := rs.RequestCancel(ctx, id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("RequestCancel: %v, want %v", err, tt.wantErr)
			}
			if tt.status == "" {
				return
			}
			rec, _, err := rs.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != tt.wantStatus {
				t.Fatalf("status %s, want %s", rec.Status, tt.wantStatus)
			}
			if want := tt.wantErr == nil; rec.CancelRequested != want {
				t.Fatalf("cancel_requested = %v, want %v", rec.CancelRequested, want)
			}
			if tt.wantStatus == workflows.StatusCancelled && (rec.FinishedAt == nil || rec.Error != ErrCancelled.Error()) {
				t.Fatalf("cancelled record %+v", rec)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	rs, ctx := openRuns(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	fresh, stale := now.Add(-time.Second), now.Add(-time.Minute)
	started := now.Add(-2 * time.Minute)
	spec := ClaimSpec{Claimant: "me", Now: now, StaleAfter: 15 * time.Second, Group: "g"}
	tests := []struct {
		name string
		rec  *RunRecord // nil: no record
		mod  func(*ClaimSpec)

		want        ClaimOutcome
		wantStatus  workflows.Status
		wantAttempt int
		wantOwner   string
		takeOver    bool
	}{
		{name: "missing is created and claimed", want: Claimed, wantStatus: workflows.StatusRunning, wantAttempt: 1, wantOwner: "me"},
		{name: "queued", rec: &RunRecord{Status: workflows.StatusQueued, Attempt: 1},
			want: Claimed, wantStatus: workflows.StatusRunning, wantAttempt: 1, wantOwner: "me"},
		{name: "handed back is the next attempt", rec: &RunRecord{Status: workflows.StatusQueued, Attempt: 1, StartedAt: &started},
			want: Claimed, wantStatus: workflows.StatusRunning, wantAttempt: 2, wantOwner: "me"},
		{name: "finished", rec: &RunRecord{Status: workflows.StatusSucceeded, Attempt: 1},
			want: ClaimFinished, wantStatus: workflows.StatusSucceeded, wantAttempt: 1},
		{name: "partially succeeded is finished", rec: &RunRecord{Status: workflows.StatusPartiallySucceeded, Attempt: 1},
			want: ClaimFinished, wantStatus: workflows.StatusPartiallySucceeded, wantAttempt: 1},
		{name: "live claim elsewhere", rec: &RunRecord{Status: workflows.StatusRunning, Attempt: 1, Claimant: "other", HeartbeatAt: fresh, StartedAt: &started},
			want: ClaimHeld, wantStatus: workflows.StatusRunning, wantAttempt: 1, wantOwner: "other"},
		{name: "own live claim after a restart", rec: &RunRecord{Status: workflows.StatusRunning, Attempt: 1, Claimant: "me", HeartbeatAt: fresh, StartedAt: &started},
			mod:  func(c *ClaimSpec) { c.Resume = true },
			want: Claimed, wantStatus: workflows.StatusRunning, wantAttempt: 2, wantOwner: "me"},
		{name: "own live claim still executing", rec: &RunRecord{Status: workflows.StatusRunning, Attempt: 1, Claimant: "me", HeartbeatAt: fresh, StartedAt: &started},
			want: ClaimHeld, wantStatus: workflows.StatusRunning, wantAttempt: 1, wantOwner: "me"},
		{name: "stale claim is taken over", rec: &RunRecord{Status: workflows.StatusRunning, Attempt: 1, Claimant: "dead", HeartbeatAt: stale, StartedAt: &started},
			want: Claimed, wantStatus: workflows.StatusRunning, wantAttempt: 2, wantOwner: "me", takeOver: true},
		{name: "cancel requested at claim", rec: &RunRecord{Status: workflows.StatusRunning, Attempt: 1, Claimant: "dead", HeartbeatAt: stale, StartedAt: &started, CancelRequested: true},
			want: ClaimCancelled, wantStatus: workflows.StatusCancelled, wantAttempt: 2, wantOwner: "me", takeOver: true},
		{name: "refused while claimable", rec: &RunRecord{Status: workflows.StatusQueued, Attempt: 1},
			mod:  func(c *ClaimSpec) { c.Refuse = true },
			want: ClaimRefused, wantStatus: workflows.StatusQueued, wantAttempt: 1},
		{name: "refused but held elsewhere", rec: &RunRecord{Status: workflows.StatusRunning, Attempt: 1, Claimant: "other", HeartbeatAt: fresh, StartedAt: &started},
			mod:  func(c *ClaimSpec) { c.Refuse = true },
			want: ClaimHeld, wantStatus: workflows.StatusRunning, wantAttempt: 1, wantOwner: "other"},
		{name: "refused but finished", rec: &RunRecord{Status: workflows.StatusFailed, Attempt: 1},
			mod:  func(c *ClaimSpec) { c.Refuse = true },
			want: ClaimFinished, wantStatus: workflows.StatusFailed, wantAttempt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest("claim")
			req.ID, req.Attempt = queue.NewRunID(), 1
			if tt.rec != nil {
				tt.rec.ID, tt.rec.Workflow, tt.rec.CreatedAt = req.ID, req.Workflow, started
				if _, err := rs.Create(ctx, tt.rec); err != nil {
					t.Fatal(err)
				}
			}
			c := spec
			if tt.mod != nil {
				tt.mod(&c)
			}
			res, err := rs.Claim(ctx, req, c)
			if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			stored, _, err := rs.Get(ctx, req.ID)
			if tt.rec == nil && tt.want != Claimed {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("a record was written: %+v, %v", stored, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want || res.TakeOver != tt.takeOver {
				t.Fatalf("outcome %d takeover %v, want %d %v", res.Outcome, res.TakeOver, tt.want, tt.takeOver)
			}
			for what, r := range map[string]*RunRecord{"result": res.Record, "stored": stored} {
				if r.Status != tt.wantStatus || r.Attempt != tt.wantAttempt || r.Claimant != tt.wantOwner {
					t.Errorf("%s record: status %s attempt %d claimant %q, want %s %d %q", what, r.Status, r.Attempt, r.Claimant, tt.wantStatus, tt.wantAttempt, tt.wantOwner)
				}
			}
			if tt.takeOver && (res.StaleClaimant != "dead" || !res.StaleHeartbeat.Equal(stale)) {
				t.Errorf("stale claim %q at %s, want dead at %s", res.StaleClaimant, res.StaleHeartbeat, stale)
			}
			switch tt.want {
			case Claimed:
				if !stored.HeartbeatAt.Equal(now) || stored.StartedAt == nil || !stored.StartedAt.Equal(now) ||
					stored.FinishedAt != nil || stored.Error != "" || stored.ConcurrencyGroup != "g" {
					t.Errorf("claimed record %+v", stored)
				}
				if tt.rec == nil && (!stored.CreatedAt.Equal(now) || stored.HeadSHA != req.Event.HeadSHA() || stored.Repo != req.Event.Repo) {
					t.Errorf("record created at claim: %+v", stored)
				}
			case ClaimCancelled:
				if stored.FinishedAt == nil || !stored.FinishedAt.Equal(now) || stored.Error != ErrCancelled.Error() {
					t.Errorf("cancelled record %+v", stored)
				}
			}
		})
	}
}

// The claimant's later transitions write only while the run is running
// under its claim (the claimant and the attempt its claim started);
// otherwise they return ErrClaimLost and write nothing.
func TestClaimantTransitions(t *testing.T) {
	rs, ctx := openRuns(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	later := now.Add(time.Second)
	steps := []workflows.StepState{{ID: "s", Status: workflows.StatusSucceeded}}
	transitions := []struct {
		name  string
		do    func(id, claimant string, attempt int) error
		check func(t *testing.T, r *RunRecord)
	}{
		{"heartbeat", func(id, c string, a int) error {
			_, err := rs.Heartbeat(ctx, id, HeartbeatSpec{Claimant: c, Attempt: a, Now: later, Steps: steps, HeadSHA: "abc"})
			return err
		}, func(t *testing.T, r *RunRecord) {
			if r.Status != workflows.StatusRunning || !r.HeartbeatAt.Equal(later) || len(r.Steps) != 1 || r.HeadSHA != "abc" {
				t.Errorf("after heartbeat: %+v", r)
			}
		}},
		{"release", func(id, c string, a int) error { return rs.Release(ctx, id, c, a, "preparing workspace: boom") },
			func(t *testing.T, r *RunRecord) {
				if r.Status != workflows.StatusQueued || r.Claimant != "" || r.Attempt != 2 || r.Error != "preparing workspace: boom" {
					t.Errorf("after release: %+v", r)
				}
			}},
		{"finish", func(id, c string, a int) error {
			return rs.Finish(ctx, id, FinishSpec{Claimant: c, Attempt: a, Now: later, Status: workflows.StatusFailed, Steps: steps,
				Error: "step s failed", CommentID: 42, FinishedAt: later})
		}, func(t *testing.T, r *RunRecord) {
			if r.Status != workflows.StatusFailed || r.Error != "step s failed" || r.CommentID != 42 || r.FinishedAt == nil ||
				!r.FinishedAt.Equal(later) || !r.HeartbeatAt.Equal(later) || r.HeadSHA != "head" || len(r.Steps) != 1 {
				t.Errorf("after finish: %+v", r)
			}
		}},
	}
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			id := queue.NewRunID()
			// "me" runs attempt 2: it took its own run over after attempt
			// 1's heartbeat went stale.
			if _, err := rs.Create(ctx, &RunRecord{ID: id, Workflow: "w", Status: workflows.StatusRunning, Attempt: 2,
				Claimant: "me", HeartbeatAt: now, StartedAt: &now, CreatedAt: now, HeadSHA: "head"}); err != nil {
				t.Fatal(err)
			}
			before, rev, _ := rs.Get(ctx, id)
			for _, stale := range []struct {
				who      string
				claimant string
				attempt  int
			}{{"a runner without the claim", "other", 2}, {"the claimant's earlier attempt", "me", 1}} {
				if err := tr.do(id, stale.claimant, stale.attempt); !errors.Is(err, ErrClaimLost) {
					t.Fatalf("by %s: %v, want ErrClaimLost", stale.who, err)
				}
				if after, arev, _ := rs.Get(ctx, id); arev != rev || after.Claimant != before.Claimant || after.Status != before.Status {
					t.Fatalf("%s changed the record: %+v", stale.who, after)
				}
			}
			if err := tr.do(id, "me", 2); err != nil {
				t.Fatalf("by the claimant: %v", err)
			}
			rec, _, _ := rs.Get(ctx, id)
			tr.check(t, rec)
			if rec.Status != workflows.StatusRunning {
				if err := tr.do(id, "me", 2); !errors.Is(err, ErrClaimLost) {
					t.Fatalf("again once the run left running: %v, want ErrClaimLost", err)
				}
			}
		})
	}
}

// change is the one compare-and-set loop: it retries a lost race with a
// fresh read, and gives up with ErrConflict after casAttempts attempts.
func TestChangeRetryPolicy(t *testing.T) {
	rs, ctx := openRuns(t)
	id := queue.NewRunID()
	if _, err := rs.Create(ctx, &RunRecord{ID: id, Workflow: "w", Status: workflows.StatusQueued, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// interfere writes the record behind the caller's back while it changes it.
	interfere := func() {
		t.Helper()
		if _, err := rs.Modify(ctx, id, func(r *RunRecord) bool { r.Attempt++; return true }); err != nil {
			t.Fatal(err)
		}
	}

	calls := 0
	rec, err := rs.change(ctx, id, nil, false, func(r *RunRecord) (bool, error) {
		if calls++; calls <= 2 {
			interfere()
		}
		r.Error = "mine"
		return true, nil
	})
	if err != nil || calls != 3 || rec.Error != "mine" || rec.Attempt != 2 {
		t.Fatalf("after two lost races: %v, %d calls, %+v; want the third attempt to win over both writes", err, calls, rec)
	}

	calls = 0
	start := time.Now()
	_, err = rs.change(ctx, id, nil, false, func(r *RunRecord) (bool, error) {
		calls++
		interfere()
		return true, nil
	})
	if !errors.Is(err, ErrConflict) || calls != casAttempts {
		t.Fatalf("always losing: %v after %d attempts, want ErrConflict after %d", err, calls, casAttempts)
	}
	if least := time.Duration((casAttempts-1)*(casAttempts-2)/2) * casBackoff; time.Since(start) < least {
		t.Fatalf("always losing took %s, want at least the policy's backoff %s", time.Since(start), least)
	}
}

// The records the queue writes itself carry Config.Now's time.
func TestStoreClock(t *testing.T) {
	t.Parallel()
	clock := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	q := openTest(t, queue.Config{Now: func() time.Time { return clock }})
	ctx := testCtx(t, 20*time.Second)
	res, err := q.Publish(ctx, testRequest("clock"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := q.Runs().RequestCancel(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.CreatedAt.Equal(clock) || rec.FinishedAt == nil || !rec.FinishedAt.Equal(clock) {
		t.Fatalf("queued and cancelled record: created %s finished %v, want both %s", rec.CreatedAt, rec.FinishedAt, clock)
	}
	req := testRequest("clock")
	req.ID = queue.NewRunID()
	if _, err := q.Runs().Fail(ctx, req, "gave up"); err != nil {
		t.Fatal(err)
	}
	rec, _, err = q.Runs().Get(ctx, req.ID)
	if err != nil || !rec.CreatedAt.Equal(clock) || rec.FinishedAt == nil || !rec.FinishedAt.Equal(clock) || rec.Status != workflows.StatusFailed {
		t.Fatalf("failed record: %+v, %v; want created and finished at %s", rec, err, clock)
	}
}

// openRuns is the run store of a fresh embedded queue, for a parallel test.
func openRuns(t *testing.T) (*RunStore, context.Context) {
	t.Parallel()
	return openTest(t, queue.Config{}).Runs(), testCtx(t, 20*time.Second)
}

func TestConcurrentCAS(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	rec := &RunRecord{ID: queue.NewRunID(), Workflow: "w", Status: workflows.StatusQueued, CreatedAt: time.Now()}
	rev, err := rs.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Create(ctx, rec); !errors.Is(err, ErrConflict) {
		t.Fatalf("second Create: %v, want ErrConflict", err)
	}

	const n = 16
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		wins      int
		conflicts int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := *rec
			r.Attempt = i + 1
			_, err := rs.Update(ctx, &r, rev)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrConflict):
				conflicts++
			default:
				t.Errorf("update: %v", err)
			}
			if err == nil {
				return
			}
			mu.Unlock()
			// The loser re-reads and retries until it wins.
			for {
				cur, crev, err := rs.Get(ctx, rec.ID)
				if err != nil {
					t.Errorf("get: %v", err)
					break
				}
				cur.Steps = append(cur.Steps, workflows.StepState{ID: "s", Status: workflows.StatusSucceeded})
				if _, err := rs.Update(ctx, cur, crev); err == nil {
					break
				} else if !errors.Is(err, ErrConflict) {
					t.Errorf("retry update: %v", err)
					break
				}
			}
			mu.Lock()
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || conflicts != n-1 {
		t.Fatalf("wins = %d, conflicts = %d; want 1 and %d", wins, conflicts, n-1)
	}
	final, _, err := rs.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Steps) != n-1 {
		t.Fatalf("final record has %d retried appends, want %d (every loser succeeded once)", len(final.Steps), n-1)
	}
}

// RecordActions (the outbox's later delivery of a final report) replaces
// the outcome the run saw, after Finish and before it (Finish then keeps
// it), only on the report's attempt; a new attempt starts with none.
func TestRecordActions(t *testing.T) {
	rs, ctx := openRuns(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	failed := &workflows.ActionsOutcome{Failed: []workflows.ActionNote{{What: `add label "bug" to #7`, Reason: "rate limited"}}}
	applied := &workflows.ActionsOutcome{Applied: []workflows.ActionNote{{What: `add label "bug" to #7`}}}
	running := func() string {
		t.Helper()
		id := queue.NewRunID()
		if _, err := rs.Create(ctx, &RunRecord{ID: id, Workflow: "w", Status: workflows.StatusRunning, Attempt: 1,
			Claimant: "me", HeartbeatAt: now, StartedAt: &now, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	finish := func(id string) {
		t.Helper()
		if err := rs.Finish(ctx, id, FinishSpec{Claimant: "me", Attempt: 1, Now: now, Status: workflows.StatusSucceeded, FinishedAt: now, Actions: failed}); err != nil {
			t.Fatal(err)
		}
	}
	actions := func(id string) *workflows.ActionsOutcome {
		t.Helper()
		rec, _, err := rs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Actions
	}
	record := func(id string, attempt int) {
		t.Helper()
		if err := rs.RecordActions(ctx, id, attempt, applied); err != nil {
			t.Fatal(err)
		}
	}

	after := running()
	finish(after)
	record(after, 1)
	if got := actions(after); !reflect.DeepEqual(got, applied) {
		t.Errorf("recorded after Finish: actions %+v, want %+v", got, applied)
	}

	before := running()
	record(before, 1)
	finish(before)
	if got := actions(before); !reflect.DeepEqual(got, applied) {
		t.Errorf("recorded before Finish: actions %+v, want the recorded %+v", got, applied)
	}

	other := running()
	finish(other)
	record(other, 2)
	if got := actions(other); !reflect.DeepEqual(got, failed) {
		t.Errorf("recorded for another attempt: actions %+v, want %+v kept", got, failed)
	}

	// A stale claim taken over: the next attempt's record starts without
	// what the earlier attempt's outbox recorded.
	taken := running()
	record(taken, 1)
	req := &queue.RunRequest{ID: taken, Workflow: "w"}
	res, err := rs.Claim(ctx, req, ClaimSpec{Claimant: "next", Now: now.Add(time.Minute), StaleAfter: 15 * time.Second})
	if err != nil || res.Outcome != Claimed || res.Record.Attempt != 2 || res.Record.Actions != nil {
		t.Errorf("claim after a stale one: %+v, %v; want attempt 2 without actions", res.Record, err)
	}
}
