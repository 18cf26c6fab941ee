package stores

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// The run-record state machine. Every change of a record goes through one
// of the transitions below, and each of them through change, the one
// compare-and-set loop with the one retry policy:
//
//	(none)     ─queued──────▶ queued (Publish; enqueue; Claim and fail create it when missing)
//	queued     ─Claim───────▶ running (attempt+1 if it ran before), or cancelled if cancel was requested
//	running    ─Claim───────▶ running under the new claimant, once the old claim's heartbeat is stale
//	running    ─Heartbeat───▶ running (HeartbeatAt, steps and head refreshed)
//	running    ─Release─────▶ queued (attempt kept)
//	running    ─Finish──────▶ succeeded | partially_succeeded | failed | cancelled
//	queued     ─RequestCancel▶ cancelled;  running ─RequestCancel▶ running with CancelRequested
//	unfinished ─fail────────▶ failed (a Term; MaxDeliver exhausted)
//	any        ─LinkRerun───▶ the same, with the re-run's id added to Reruns
//
// The runner decides what to do about a run (run it, retry later, hand it
// back); this file decides how its record changes.

// Retry policy of change: a transition that keeps losing the race to
// other writers reads and tries again at most casAttempts times, the n-th
// retry (n-1)×casBackoff after the previous one (the first at once).
const (
	casAttempts = 20
	casBackoff  = 2 * time.Millisecond
)

// Errors of the transitions.
var (
	// ErrRunFinished is returned by RequestCancel for a run that already ended.
	ErrRunFinished = errors.New("run already finished")
	// ErrCancelled is the error a run cancelled before it started carries.
	ErrCancelled = errors.New("run cancelled")
	// ErrClaimLost: the run is no longer running under the caller's claim
	// (another runner took it over, it ended, or it was handed back);
	// Heartbeat, Release and Finish then write nothing.
	ErrClaimLost = errors.New("run no longer claimed by this runner")
)

// change reads record id, lets apply decide on it and change it, and
// writes the result if the record is still at the revision read (else it
// reads again, under the retry policy above). A missing record is made by
// create (nil: ErrNotFound), given to apply and written create-only.
// apply returning false or an error leaves the store as it is; change then
// returns the record as read with apply's error, else the record as written.
// awaitMissing: a missing record is read again under the retry policy
// before ErrNotFound is returned (a claimant's record exists; a replica
// may not have applied its creation yet), as is a record for which apply
// returns a *readAgain.
func (s *RunStore) change(ctx context.Context, id string, create func() *RunRecord, awaitMissing bool, apply func(*RunRecord) (bool, error)) (*RunRecord, error) {
	for n := range casAttempts {
		if n > 1 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("changing run record %s: %w", id, ctx.Err())
			case <-time.After(time.Duration(n-1) * casBackoff):
			}
		}
		rec, rev, hinted, err := s.startFrom(ctx, id, n == 0)
		missing := create != nil && errors.Is(err, ErrNotFound)
		if missing {
			rec = create()
		} else if errors.Is(err, ErrNotFound) && create == nil && awaitMissing && n < casAttempts-1 {
			continue // a replica that has not applied the record's creation
		} else if err != nil {
			return nil, err
		}
		write, err := apply(rec)
		if hinted && (err != nil || !write) {
			// Only a write's compare-and-set checks a hint: a decision to
			// write nothing is made again on the record as stored.
			continue
		}
		var again *readAgain
		if errors.As(err, &again) {
			if n < casAttempts-1 {
				continue
			}
			err = again.err
		}
		if err != nil || !write {
			return rec, err
		}
		if missing {
			_, err = s.Create(ctx, rec)
		} else {
			_, err = s.Update(ctx, rec, rev)
		}
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("changing run record %s: %w after %d attempts", id, ErrConflict, casAttempts)
}

// startFrom is the record a transition's attempt starts from: on its
// first attempt (first) the one this process last wrote or read for an
// unfinished run (recentRecords), hinted, else the one stored.
func (s *RunStore) startFrom(ctx context.Context, id string, first bool) (*RunRecord, uint64, bool, error) {
	if first {
		if h, ok := s.recent.lookup(id); ok {
			if rec, err := decodeRecord(h.data); err == nil {
				return rec, h.rev, true, nil
			}
			s.recent.forget(id)
		}
	}
	rec, rev, err := s.getRemembered(ctx, id)
	return rec, rev, false, err
}

// Modify reads the record, applies fn and writes it back, retrying on
// conflicts (the transitions' retry policy). fn returning false leaves the
// record as is. It is for changes no named transition covers (tests, tools).
func (s *RunStore) Modify(ctx context.Context, id string, fn func(*RunRecord) bool) (*RunRecord, error) {
	return s.change(ctx, id, nil, false, func(r *RunRecord) (bool, error) { return fn(r), nil })
}

// newRecord is the one constructor of run records: the queued record of
// req, created at req.CreatedAt (now when unset), its event without Raw.
func newRecord(req *queue.RunRequest, now time.Time) *RunRecord {
	ev := req.Event
	ev.Raw = nil
	created := req.CreatedAt
	if created.IsZero() {
		created = now
	}
	return &RunRecord{
		ID:             req.ID,
		Workflow:       req.Workflow,
		WorkflowDigest: req.WorkflowDigest,
		Repo:           req.Event.Repo,
		Status:         workflows.StatusQueued,
		Attempt:        req.Attempt,
		Event:          ev,
		HeadSHA:        req.Event.HeadSHA(),
		CreatedAt:      created,
		Params:         req.Params,
		RerunOf:        req.RerunOf,
		CommentID:      req.CommentID,
		Origin:         req.Origin,
	}
}

// OriginOf is the stored delivery (hookrun_received) a record's event
// came with: Origin for a re-run or a replay, else its delivery id.
func OriginOf(r *RunRecord) string {
	if r.Origin != "" {
		return r.Origin
	}
	return r.Event.DeliveryID
}

// LinkRerun notes on run id that run rerun re-runs it (Reruns, in order,
// once): the other direction of the new record's RerunOf.
func (s *RunStore) LinkRerun(ctx context.Context, id, rerun string) error {
	_, err := s.change(ctx, id, nil, true, func(r *RunRecord) (bool, error) {
		if slices.Contains(r.Reruns, rerun) {
			return false, nil
		}
		r.Reruns = append(r.Reruns, rerun)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("linking run %s to its re-run %s: %w", id, rerun, err)
	}
	return nil
}

// queued is the first transition: the record of a run just accepted.
// Publish writes it create-only beside the run's message (Queued);
// Enqueue creates it when no write of Publish's landed.
// traceID is the trace of the delivery ("" without one).
func (s *RunStore) queued(req *queue.RunRequest, traceID string) *RunRecord {
	rec := newRecord(req, s.now())
	rec.TraceID = traceID
	return rec
}

// Queued is the encoded queued record of req (queue.Records).
func (s *RunStore) Queued(req *queue.RunRequest, traceID string) ([]byte, error) {
	return encodeRecord(s.queued(req, traceID))
}

// Enqueue creates the queued record of req unless one exists, with the
// trace of its message (queue.Records).
func (s *RunStore) Enqueue(ctx context.Context, req *queue.RunRequest, traceID string) error {
	if _, ok := s.recent.lookup(req.ID); ok {
		return nil // this process created or saw it, and it has not ended
	}
	if _, _, err := s.getRemembered(ctx, req.ID); !errors.Is(err, ErrNotFound) {
		return err
	}
	if _, err := s.Create(ctx, s.queued(req, traceID)); err != nil && !errors.Is(err, ErrConflict) {
		return err
	}
	return nil
}

// DropQueued deletes the record of a run id that was superseded before it
// started (see queue's reconcile); a record that left queued stays
// (queue.Records).
func (s *RunStore) DropQueued(ctx context.Context, id string) error {
	rec, rev, err := s.Get(ctx, id)
	if err != nil || rec.Status != workflows.StatusQueued {
		return nil
	}
	return s.delete(ctx, id, rev)
}

// ClaimSpec says who claims a run and on what terms.
type ClaimSpec struct {
	// Claimant is the runner claiming the run (its id in records).
	Claimant string
	// Now is the claimant's clock: heartbeats are judged by it and the
	// claim is stamped with it (and a record made here is created at it).
	Now time.Time
	// StaleAfter is how old a claimant's heartbeat may be before its
	// claim is taken over.
	StaleAfter time.Duration
	// Resume takes back a live claim of Claimant itself, which Claimant
	// knows it is not executing (a restart under the same id). Without it
	// such a claim holds the run like any other's (a duplicate delivery).
	Resume bool
	// Refuse says Claimant will not run it (it is not admitted, or its
	// workflow is not loaded): a run that could be claimed is left as it
	// is (ClaimRefused) for the caller to fail; a finished or held run is
	// reported as such, as to any claim.
	Refuse bool
	// Group is the run's resolved concurrency group, recorded by the claim.
	Group string
	// TraceID is the trace the claim is made in: recorded when the
	// record has none yet (ingress traced nothing), else kept.
	TraceID string
}

// ClaimOutcome is what Claim found and did.
type ClaimOutcome int

// Outcomes of Claim.
const (
	// Claimed: the run is running under the claim.
	Claimed ClaimOutcome = iota + 1
	// ClaimFinished: the run already ended; nothing was written.
	ClaimFinished
	// ClaimHeld: a live claim holds the run (Record.Claimant, whose
	// heartbeat is Record.HeartbeatAt); nothing was written.
	ClaimHeld
	// ClaimRefused: ClaimSpec.Refuse; nothing was written.
	ClaimRefused
	// ClaimCancelled: a cancel was requested before the run started; the
	// claim ended it cancelled.
	ClaimCancelled
)

// ClaimResult is the outcome of Claim.
type ClaimResult struct {
	Outcome ClaimOutcome
	// Record is the record as written (Claimed, ClaimCancelled), else as read.
	Record *RunRecord
	// TakeOver: the run was running under a claim whose heartbeat is stale
	// (StaleClaimant's, last at StaleHeartbeat), which a claim replaces.
	TakeOver       bool
	StaleClaimant  string
	StaleHeartbeat time.Time
}

// Claim makes c.Claimant the run's claimant, creating its record from req
// if there is none. A finished run is left alone; a run running under a
// live claim is held by it (unless it is c.Claimant's own and c.Resume);
// a stale claim is taken over with the next attempt; a run whose cancel
// was requested is ended cancelled instead of started.
func (s *RunStore) Claim(ctx context.Context, req *queue.RunRequest, c ClaimSpec) (ClaimResult, error) {
	var res ClaimResult
	rec, err := s.change(ctx, req.ID, func() *RunRecord { return newRecord(req, c.Now) }, false, func(r *RunRecord) (bool, error) {
		res = ClaimResult{}
		switch {
		case r.Status.Terminal():
			res.Outcome = ClaimFinished
			return false, nil
		case r.Status == workflows.StatusRunning && r.Claimant != "" && c.Now.Sub(r.HeartbeatAt) < c.StaleAfter:
			if r.Claimant != c.Claimant || !c.Resume {
				res.Outcome = ClaimHeld
				return false, nil
			}
		case r.Status == workflows.StatusRunning:
			res.TakeOver, res.StaleClaimant, res.StaleHeartbeat = true, r.Claimant, r.HeartbeatAt
		}
		if c.Refuse {
			res.Outcome = ClaimRefused
			return false, nil
		}
		now := c.Now
		if r.StartedAt == nil {
			r.Attempt = max(r.Attempt, 1)
		} else {
			r.Attempt++
		}
		r.Status = workflows.StatusRunning
		r.Claimant = c.Claimant
		r.HeartbeatAt = now
		r.StartedAt = &now
		r.FinishedAt = nil
		r.Error = ""
		r.Steps = nil
		r.Actions = nil // this attempt's are not applied yet
		r.ConcurrencyGroup = c.Group
		if r.TraceID == "" {
			r.TraceID = c.TraceID
		}
		res.Outcome = Claimed
		if r.CancelRequested {
			r.Status = workflows.StatusCancelled
			r.Error = ErrCancelled.Error()
			r.FinishedAt = &now
			res.Outcome = ClaimCancelled
		}
		return true, nil
	})
	if err != nil {
		return ClaimResult{}, fmt.Errorf("claiming run %s: %w", req.ID, err)
	}
	res.Record = rec
	return res, nil
}

// ClaimLostError is ErrClaimLost with the record that showed it: who
// holds the run now, if anyone, and in which status.
type ClaimLostError struct {
	Record *RunRecord
}

func (e *ClaimLostError) Error() string {
	return fmt.Sprintf("%v: claimant %q, status %s", ErrClaimLost, e.Record.Claimant, e.Record.Status)
}

// Unwrap makes errors.Is(err, ErrClaimLost) hold.
func (e *ClaimLostError) Unwrap() error { return ErrClaimLost }

// Unclaimed reports whether a run is queued with no claimant: nobody runs
// it, and only a delivery of its message will.
func (r *RunRecord) Unclaimed() bool {
	return r.Status == workflows.StatusQueued && r.Claimant == ""
}

// CheckClaim is the rule of every transition a claimant makes after its
// claim: nil while the run is running under the claim claimant made for
// attempt, else a *ClaimLostError (ErrClaimLost). The attempt tells two
// claims of one runner apart: a runner that takes its own stale run over
// (its heartbeat could not be written, the message came again) runs the
// next attempt, and what the earlier attempt still writes (a result
// whose first write got no answer) must not land on the later one.
func (r *RunRecord) CheckClaim(claimant string, attempt int) error {
	if r.Claimant == claimant && r.Attempt == attempt && r.Status == workflows.StatusRunning {
		return nil
	}
	return &ClaimLostError{Record: r}
}

// byClaimant is change for the transitions a claimant makes after its
// claim: apply runs only while the run is running under claimant's claim
// for attempt (CheckClaim); else
// nothing is written and the error is a *ClaimLostError.
//
// One read does not prove a claim lost: the bucket's reads are direct
// gets, which any replica answers from what it has applied, and a
// follower right after a write (or a node rejoining the cluster, until it
// caught up) serves the record as it was before, such as the queued
// record of a run just claimed, or no record at all (on three nodes a
// fifth of the reads made right after a write:
// TestClaimantTransitionsRightAfterTheClaim). So a record that says the
// claim is gone, or is missing, is read again under the retry policy, and
// the claim is reported lost only when every read says so; a read that
// shows the claim is acted on with a compare-and-set, which only the
// latest revision passes.
func (s *RunStore) byClaimant(ctx context.Context, id, claimant string, attempt int, apply func(*RunRecord)) (*RunRecord, error) {
	return s.change(ctx, id, nil, true, func(r *RunRecord) (bool, error) {
		if err := r.CheckClaim(claimant, attempt); err != nil {
			return false, &readAgain{err: err}
		}
		apply(r)
		return true, nil
	})
}

// readAgain, returned by a transition's apply, asks change to read the
// record again under the retry policy; after the last attempt change
// returns err.
type readAgain struct{ err error }

func (e *readAgain) Error() string { return e.err.Error() }

// HeartbeatSpec is one heartbeat of a claimant.
type HeartbeatSpec struct {
	Claimant string                // whose claim it refreshes
	Attempt  int                   // the attempt the claim started (the claimed record's)
	Now      time.Time             // the claimant's clock: the new HeartbeatAt
	Steps    []workflows.StepState // the latest step states; nil keeps the stored ones
	HeadSHA  string                // the resolved head commit; "" keeps the stored one
}

// Heartbeat refreshes a claim (HeartbeatAt, steps, head) and returns the
// record as written: its CancelRequested asks the claimant to stop.
// ErrClaimLost: the claim is not h.Claimant's any more.
func (s *RunStore) Heartbeat(ctx context.Context, id string, h HeartbeatSpec) (*RunRecord, error) {
	rec, err := s.byClaimant(ctx, id, h.Claimant, h.Attempt, func(r *RunRecord) {
		if h.Steps != nil {
			r.Steps = h.Steps
		}
		if h.HeadSHA != "" {
			r.HeadSHA = h.HeadSHA
		}
		r.HeartbeatAt = h.Now
	})
	if err != nil {
		return nil, fmt.Errorf("refreshing the claim on run %s: %w", id, err)
	}
	return rec, nil
}

// Release hands a claimed run back: queued again, its attempt kept and
// reason (may be empty) as its error, so that another delivery takes it.
// ErrClaimLost: the claim claimant made for attempt is not the run's any more.
func (s *RunStore) Release(ctx context.Context, id, claimant string, attempt int, reason string) error {
	_, err := s.byClaimant(ctx, id, claimant, attempt, func(r *RunRecord) {
		r.Status = workflows.StatusQueued
		r.Claimant = ""
		r.Error = reason
	})
	if err != nil {
		return fmt.Errorf("handing run %s back: %w", id, err)
	}
	return nil
}

// FinishSpec is how a claimed run ended, as Finish records it.
type FinishSpec struct {
	Claimant    string                // whose claim the run must still be under
	Attempt     int                   // the attempt that claim started (the claimed record's)
	Now         time.Time             // the claimant's clock: the last HeartbeatAt
	Status      workflows.Status      // the terminal status
	Steps       []workflows.StepState // the final step states
	Error       string                // why the run failed, if it did
	ReportError string                // the last failure to report to the forge
	CommentID   int64                 // the sticky comment; 0 keeps the stored one
	HeadSHA     string                // the resolved head commit; "" keeps the stored one
	Delivery    *workflows.Delivery   // what became of a sandboxed agent's commits; nil: none
	FinishedAt  time.Time             // when the run ended
	// Actions is what became of the actions the steps asked for
	// (actions.json); nil: none asked, or not known yet. What
	// RecordActions wrote while the run ran is kept instead.
	Actions *workflows.ActionsOutcome
}

// Finish records the outcome of a run still running under the claim
// f.Claimant made for f.Attempt.
// ErrClaimLost: it is not (taken over, cancelled while queued...).
func (s *RunStore) Finish(ctx context.Context, id string, f FinishSpec) error {
	_, err := s.byClaimant(ctx, id, f.Claimant, f.Attempt, func(r *RunRecord) {
		fin := f.FinishedAt
		r.Status = f.Status
		r.Steps = f.Steps
		r.Error = f.Error
		r.ReportError = f.ReportError
		if r.Actions == nil {
			// Else RecordActions wrote them while the run still ran: a
			// later delivery of this attempt's final report (the
			// outbox's), newer than what the run itself saw.
			r.Actions = f.Actions
		}
		if f.CommentID != 0 {
			r.CommentID = f.CommentID
		}
		if f.HeadSHA != "" {
			r.HeadSHA = f.HeadSHA
		}
		r.Delivery = f.Delivery
		r.FinishedAt = &fin
		r.HeartbeatAt = f.Now
	})
	if err != nil {
		return fmt.Errorf("finishing run %s: %w", id, err)
	}
	return nil
}

// RecordActions records out as what became of run id's actions when a
// later delivery of its final report (the outbox's) applied them: a
// compare-and-set of Actions alone, so that nothing written meanwhile is
// lost. Only the record of that report's attempt is changed (a later
// attempt reports its own); a run that has not finished yet keeps them
// (Finish does not overwrite them with what the run itself saw).
func (s *RunStore) RecordActions(ctx context.Context, id string, attempt int, out *workflows.ActionsOutcome) error {
	_, err := s.change(ctx, id, nil, true, func(r *RunRecord) (bool, error) {
		if r.Attempt != attempt || out == nil {
			return false, nil
		}
		r.Actions = out
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("recording what became of the actions of run %s: %w", id, err)
	}
	return nil
}

// RequestCancel asks a run to stop, through its record alone so that any
// process may call it: a queued run is marked cancelled at once (its message
// is acked and skipped when delivered); a running one gets CancelRequested,
// which its claimant sees and acts on (it is told at once: queue.CancelNotices).
// It returns the record as written.
// ErrNotFound: no such run; ErrRunFinished: it ended.
func (s *RunStore) RequestCancel(ctx context.Context, id string) (*RunRecord, error) {
	rec, err := s.change(ctx, id, nil, false, func(r *RunRecord) (bool, error) {
		if r.Status.Terminal() {
			return false, ErrRunFinished
		}
		r.CancelRequested = true
		if r.Status == workflows.StatusQueued {
			now := s.now()
			r.Status = workflows.StatusCancelled
			r.Error = ErrCancelled.Error()
			r.FinishedAt = &now
		}
		return true, nil
	})
	if err != nil {
		return rec, fmt.Errorf("cancelling run %s: %w", id, err)
	}
	s.noticeCancel(rec)
	return rec, nil
}

// noticeCancel tells the claimant of rec, a running run whose cancel was
// just requested, at once (queue.CancelSubject). Best effort (core NATS,
// at most once): the claimant's heartbeat reads CancelRequested anyway.
func (s *RunStore) noticeCancel(rec *RunRecord) {
	if s.nc == nil || rec == nil || rec.Status.Terminal() || rec.Claimant == "" {
		return
	}
	_ = s.nc.Publish(queue.CancelSubject(rec.Claimant), []byte(rec.ID))
}

// Fail ends a run failed with reason unless it already ended, whoever
// holds it: the queue gives up on it (a Term, MaxDeliver exhausted). A
// missing record is created from req. ended says whether this call ended
// it (false: it had ended already). It is the transition queue.Records
// asks for.
func (s *RunStore) Fail(ctx context.Context, req *queue.RunRequest, reason string) (ended bool, _ error) {
	now := s.now()
	_, err := s.change(ctx, req.ID, func() *RunRecord { return newRecord(req, now) }, false, func(r *RunRecord) (bool, error) {
		ended = false
		if r.Status.Terminal() {
			return false, nil
		}
		ended = true
		r.Status = workflows.StatusFailed
		r.Error = reason
		r.FinishedAt = &now
		r.Claimant = ""
		return true, nil
	})
	if err != nil {
		return false, fmt.Errorf("marking run %s failed: %w", req.ID, err)
	}
	return ended, nil
}

var _ queue.Records = (*RunStore)(nil)
