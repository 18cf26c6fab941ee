package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// Handle executes one delivery; it is the queue.Handler of Start.
//
// Its span "run" is a child of the delivery's (the message carries it);
// "claim" covers admitting and claiming, the engine's "step" and "report"
// spans follow under "run".
func (r *Runner) Handle(ctx context.Context, d *queue.Delivery) (err error) {
	req := d.Request
	ctx, span := r.tracer.Start(ctx, "run", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		telemetry.AttrWorkflow.String(req.Workflow), telemetry.AttrRunID.String(req.ID),
		telemetry.AttrNumDelivered.Int64(int64(d.NumDelivered))))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, "handed back or failed")
		}
		span.End()
	}()
	log := r.log.With("run", req.ID, "workflow", req.Workflow, "delivery", d.NumDelivered)
	traceID := telemetry.TraceID(ctx)
	if traceID != "" {
		log = log.With("trace_id", traceID)
	}
	if r.isActive(req.ID) {
		// See ErrRunningHere.
		return r.leaveToLiveAttempt(d, fmt.Errorf("run %s: %w", req.ID, ErrRunningHere), log)
	}
	res, lock, refusal, wf, err := r.claim(ctx, d, traceID, log)
	if err != nil {
		return err
	}
	rec := res.Record
	if res.TakeOver {
		log.Warn("taking over a run whose claimant stopped heartbeating", "claimant", res.StaleClaimant, "heartbeat", res.StaleHeartbeat)
	}
	switch res.Outcome {
	case stores.ClaimFinished:
		log.Info("run already finished; acking the redelivery", "status", rec.Status)
		return nil
	case stores.ClaimHeld:
		return r.leaveToLiveAttempt(d, fmt.Errorf("run %s is running on %s (last heartbeat %s)",
			req.ID, rec.Claimant, rec.HeartbeatAt.Format(time.RFC3339)), log)
	case stores.ClaimRefused:
		if queue.IsTerm(refusal) {
			log.Warn("refusing run", "err", refusal)
		} else {
			log.Info("handing the run back", "err", refusal)
		}
		return refusal
	case stores.ClaimCancelled:
		log.Info("run was cancelled before it started")
		return nil
	}
	log = log.With("attempt", rec.Attempt)
	span.SetAttributes(telemetry.AttrAttempt.Int(rec.Attempt))
	log.Info("claimed run")
	if wf.Concurrency != nil && wf.Concurrency.CancelInProgress && rec.ConcurrencyGroup != "" {
		superseded, err := r.cancelOlder(ctx, rec, log)
		if err != nil || superseded {
			return err
		}
		defer r.leaveGroup(ctx, rec.ConcurrencyGroup, rec.ID, log)
	}
	group := r.holdGroup(lock, log)
	err = r.execute(ctx, req, wf, rec, group, log)
	// A run handed back (any error but a Term) runs again later and keeps
	// its place in the group (unless it ended and freed the group already).
	if rerr := group.release(ctx, err != nil && !queue.IsTerm(err)); rerr != nil && err == nil {
		// Delivered again, the finished run is acked after another
		// release, rather than leaving the group to the lock's expiry.
		return queue.Retry(rerr, time.Second)
	}
	return err
}

// claim admits d and claims its run, within a "claim" span: the claim's
// result, the group lock it holds (nil: none), the refusal the claim was
// made with, and the run's workflow; or the error to hand d back with.
func (r *Runner) claim(ctx context.Context, d *queue.Delivery, traceID string, log *slog.Logger) (_ stores.ClaimResult, _ *stores.GroupLock, refusal error, _ *workflows.Workflow, err error) {
	req := d.Request
	ctx, span := r.tracer.Start(ctx, "claim")
	defer span.End()
	wf, refusal := r.admit(d)
	spec := stores.ClaimSpec{Claimant: r.cfg.ID, StaleAfter: r.cfg.StaleAfter,
		Resume: !r.isActive(req.ID), Refuse: refusal != nil, TraceID: traceID}
	var lock *stores.GroupLock
	if wf != nil {
		spec.Group = concurrencyGroup(wf, &req.Event)
		if refusal == nil && spec.Group != "" && !wf.Concurrency.CancelInProgress {
			lock = &stores.GroupLock{Group: spec.Group, RunID: req.ID, Claimant: r.cfg.ID, TTL: r.cfg.StaleAfter}
			if err := r.acquireGroup(ctx, lock, log); err != nil {
				span.SetAttributes(attribute.String("hookrun.claim.outcome", "waiting"))
				return stores.ClaimResult{}, nil, refusal, wf, err
			}
		}
	}
	// The claim's clock (the run's StartedAt, its first heartbeat) is read
	// once the group is held: asking for it is a round trip, and a run
	// stamped before it would seem to start before the one it waited for
	// ended.
	spec.Now = r.now()
	res, err := r.deps.Runs.Claim(ctx, req, spec)
	if lock != nil && (err != nil || res.Outcome != stores.Claimed) {
		// Not ours to run now: the group goes to the next run (a claim
		// that failed is retried and keeps its place).
		_ = r.releaseGroup(ctx, lock, err != nil, log) // logged; the lock expires
		lock = nil
	}
	if err != nil {
		span.SetStatus(codes.Error, "claim failed")
		if errors.Is(err, stores.ErrConflict) {
			err = queue.Retry(err, time.Second)
		}
		return stores.ClaimResult{}, nil, refusal, wf, err
	}
	span.SetAttributes(attribute.String("hookrun.claim.outcome", claimOutcomes[res.Outcome]))
	return res, lock, refusal, wf, nil
}

// claimOutcomes name stores.ClaimOutcome values in spans.
var claimOutcomes = map[stores.ClaimOutcome]string{
	stores.Claimed: "claimed", stores.ClaimFinished: "finished", stores.ClaimHeld: "held",
	stores.ClaimRefused: "refused", stores.ClaimCancelled: "cancelled",
}

// admit decides whether this runner runs d: the workflow it runs, or the
// error to hand the run back with: a queue.Retry while another runner, or
// this one after a reload, may have the run's workflow at the digest it
// was queued with (a rolling deploy), else a queue.Term to fail it with
// (Config.Admit or Config.Recheck refused it, or the workflow never came).
func (r *Runner) admit(d *queue.Delivery) (*workflows.Workflow, error) {
	req := d.Request
	if r.cfg.Admit != nil {
		if err := r.cfg.Admit(&req.Event); err != nil {
			return nil, queue.Term(fmt.Errorf("refusing run: %w", err))
		}
	}
	wf, ok := r.deps.Workflows.Lookup(req.Workflow)
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("workflow %s is not loaded on runner %s", req.Workflow, r.cfg.ID)
	case wf.Digest != "" && req.WorkflowDigest != "" && wf.Digest != req.WorkflowDigest:
		err = fmt.Errorf("workflow %s at %s, which the run was queued with, is not loaded on runner %s (it has %s)",
			req.Workflow, req.WorkflowDigest, r.cfg.ID, wf.Digest)
	default:
		if err := r.cfg.Recheck(wf, req); err != nil {
			return nil, queue.Term(fmt.Errorf("refusing run: %w", err))
		}
		return wf, nil
	}
	if d.NumDelivered < uint64(r.cfg.WorkflowDeliveries) {
		return nil, queue.HandBack(err, r.cfg.WorkflowRetry)
	}
	return nil, queue.Term(fmt.Errorf("%w, after %d deliveries", err, d.NumDelivered))
}

// concurrencyGroup resolves a workflow's `concurrency.group` for an event:
// pull_request → one group per workflow and pull/merge request (or issue;
// for a push, one per pushed ref),
// workflow → one per workflow, repo → one per repository, anything else is
// a literal name shared across workflows.
func concurrencyGroup(w *workflows.Workflow, e *workflows.Event) string {
	if w.Concurrency == nil || w.Concurrency.Group == "" {
		return ""
	}
	switch g := w.Concurrency.Group; g {
	case "pull_request":
		if e.Push != nil && e.Number() == 0 {
			// A push belongs to no pull request: its branch is its group.
			return "branch:" + w.Name + ":" + e.Repo + "@" + e.Push.Ref
		}
		return "pr:" + w.Name + ":" + e.Repo + "#" + strconv.Itoa(e.Number())
	case "workflow":
		return "workflow:" + w.Name
	case "repo":
		return "repo:" + e.Repo
	default:
		return "group:" + g
	}
}

// acquireGroup takes the lock of a serialized concurrency group for a run
// about to be claimed, or returns the queue.Wait that makes the run wait
// (queued) for it.
func (r *Runner) acquireGroup(ctx context.Context, lock *stores.GroupLock, log *slog.Logger) error {
	lock.Now = r.now()
	held, holder, err := r.deps.Groups.Acquire(ctx, *lock)
	if err != nil {
		return err
	}
	if held {
		return nil
	}
	if holder == "" {
		holder = "an older run"
	}
	log.Debug("waiting for the concurrency group", "group", lock.Group, "holder", holder)
	return queue.Wait(fmt.Errorf("run %s waits for concurrency group %s, held by %s", lock.RunID, lock.Group, holder), r.cfg.GroupPoll)
}

// releaseGroup frees a run's concurrency group lock (keepPlace: the run was
// handed back and waits again where it was).
func (r *Runner) releaseGroup(ctx context.Context, lock *stores.GroupLock, keepPlace bool, log *slog.Logger) error {
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	l := *lock
	l.Now = r.now()
	err := r.deps.Groups.Release(sctx, l, keepPlace)
	if err != nil {
		log.Warn("releasing the concurrency group; it frees itself when its lock expires", "group", l.Group, "err", err)
	}
	return err
}

// groupHold is the concurrency group lock of an executing run (none when
// its lock is nil): the heartbeat renews it until it is released, once,
// when the run ended (engine.RunSpec.OnEnd: before its final report, so
// that the group's next run does not wait for a slow forge) or else when
// Handle returns.
type groupHold struct {
	r   *Runner
	log *slog.Logger
	// mu keeps a renewal and the release apart: a renewal that landed
	// after the release would take the lock again.
	mu   sync.Mutex
	lock *stores.GroupLock // nil once released
}

// holdGroup is the hold of lock (nil: the run holds no group).
func (r *Runner) holdGroup(lock *stores.GroupLock, log *slog.Logger) *groupHold {
	if lock == nil {
		return nil
	}
	return &groupHold{r: r, log: log, lock: lock}
}

// renew extends the lock while it is held.
func (g *groupHold) renew(ctx context.Context, now time.Time) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lock == nil {
		return
	}
	l := *g.lock
	l.Now = now
	if err := g.r.deps.Groups.Renew(ctx, l); err != nil && ctx.Err() == nil {
		g.log.Warn("heartbeat: renewing the concurrency group lock", "group", l.Group, "err", err)
	}
}

// release frees the lock unless it was freed already (keepPlace: the run
// was handed back and waits again where it was). A release that failed
// leaves the lock held (renewed), to be released again.
func (g *groupHold) release(ctx context.Context, keepPlace bool) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lock == nil {
		return nil
	}
	if err := g.r.releaseGroup(ctx, g.lock, keepPlace, g.log); err != nil {
		return err
	}
	g.lock = nil
	return nil
}

// cancelOlder starts a claimed run in its cancel_in_progress group: the
// group's key (one read, one write, whatever the number of run records)
// names the older members, whose cancel it requests (queued ones end at
// once); a member found finished is forgotten. When a newer run of the
// group has started already, the run is superseded: it ends cancelled
// without running (its report would be overwritten by the newer run's),
// and superseded is true. An error hands the run back.
func (r *Runner) cancelOlder(ctx context.Context, rec *stores.RunRecord, log *slog.Logger) (superseded bool, _ error) {
	group := rec.ConcurrencyGroup
	older, newer, err := r.deps.Groups.StartNewest(ctx, group, rec.ID, r.now())
	if err != nil {
		r.release(ctx, rec.ID, rec.Attempt, fmt.Sprintf("starting in concurrency group: %v", err), log)
		return true, queue.Retry(err, time.Second)
	}
	if newer != "" {
		log.Info("a newer run of the concurrency group started already; ending this one cancelled", "newer", newer, "group", group)
		now := r.now()
		err := r.deps.Runs.Finish(ctx, rec.ID, stores.FinishSpec{Claimant: r.cfg.ID, Attempt: rec.Attempt, Now: now, Status: workflows.StatusCancelled,
			Error: fmt.Sprintf("superseded by the newer run %s of its concurrency group", newer), FinishedAt: now})
		if err != nil && !errors.Is(err, stores.ErrClaimLost) {
			return true, err
		}
		return true, nil
	}
	for _, id := range older {
		log.Info("cancelling an older run of the same concurrency group", "older", id, "group", group)
		err := r.Cancel(ctx, id)
		switch {
		case errors.Is(err, ErrRunFinished) || errors.Is(err, stores.ErrNotFound):
			r.leaveGroup(ctx, group, id, log) // it ended without leaving (its runner died)
		case err != nil:
			log.Warn("cancelling an older run", "older", id, "err", err)
		}
	}
	return false, nil
}

// leaveGroup removes a run from its cancel_in_progress group's members.
func (r *Runner) leaveGroup(ctx context.Context, group, id string, log *slog.Logger) {
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	if err := r.deps.Groups.LeaveNewest(sctx, group, id); err != nil {
		log.Warn("leaving the concurrency group; the next run of the group forgets it", "group", group, "err", err)
	}
}

// execute runs a claimed run to its end and writes the outcome.
func (r *Runner) execute(ctx context.Context, req *queue.RunRequest, wf *workflows.Workflow, rec *stores.RunRecord, group *groupHold, log *slog.Logger) error {
	c := r.track(ctx, req.ID, rec.Attempt, group, log)
	defer c.done()
	params, err := wf.SetParams(req.Params) // checked when queued; the loaded workflow may have changed since
	if err != nil && req.Refused == "" {
		req.Refused = err.Error()
	}
	if req.Refused != "" {
		return r.failRefused(ctx, c, req, wf, rec, log)
	}
	ws, err := r.deps.Workspaces.Prepare(c.ctx, req.ID, &req.Event, contract.PrepareOptions{Checkout: wf.Checkout, HostSteps: wf.Sandbox == nil})
	if err != nil {
		return r.prepareFailed(ctx, c, req.ID, err, log)
	}
	defer func() {
		if err := r.deps.Workspaces.Remove(req.ID); err != nil {
			log.Warn("removing workspace", "err", err)
		}
	}()
	if ws.HeadSHA != "" {
		c.hb.setHeadSHA(ws.HeadSHA)
	}
	res := r.deps.Engine.Run(c.ctx, engine.RunSpec{
		ID:        req.ID,
		Attempt:   rec.Attempt,
		Workflow:  wf,
		Event:     &req.Event,
		Workspace: ws.Dir,
		Home:      ws.Home,
		TmpDir:    ws.TmpDir,
		EventFile: ws.EventFile,
		Results:   ws.Results,
		HeadSHA:   firstNonEmpty(ws.HeadSHA, rec.HeadSHA, req.Event.HeadSHA()),
		Params:    params,
		Ref:       refOf(rec),
		OnChange:  c.hb.setSteps,
		// The group's next run starts while this one reports.
		OnEnd: func() { _ = group.release(ctx, false) }, // logged; released again at the end
	})
	c.stopHeartbeat()
	return r.outcome(ctx, c, req, res, ws.HeadSHA, log)
}

// claimed is a run this runner executes: its context (cancelled by a
// cancel request, a newer run of its group or shutdown), the attempt its
// claim started and its heartbeat.
type claimed struct {
	ctx           context.Context
	attempt       int
	hb            *heartbeat
	stopHeartbeat func() // stops the heartbeat and waits for it; idempotent
	done          func() // releases everything track set up
}

// track sets up what executing a claimed run needs: a context detached
// from ctx but stopped with it (shutdown hands the run back, any other end
// cancels it), the entry in r.active that Cancel finds, and the heartbeat.
func (r *Runner) track(ctx context.Context, id string, attempt int, group *groupHold, log *slog.Logger) *claimed {
	runCtx, cancelRun := context.WithCancelCause(context.WithoutCancel(ctx))
	stopWatch := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), queue.ErrShuttingDown) {
			cancelRun(ErrAbandoned)
		} else {
			cancelRun(ErrCancelled)
		}
	})
	r.mu.Lock()
	entry := &activeRun{cancel: cancelRun}
	r.active[id] = entry
	r.mu.Unlock()

	hb := &heartbeat{r: r, id: id, attempt: attempt, group: group, cancel: cancelRun, log: log}
	hbCtx, stopHB := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); hb.loop(hbCtx) }()
	var once sync.Once
	stop := func() { once.Do(func() { stopHB(); <-hbDone }) }
	return &claimed{ctx: runCtx, attempt: attempt, hb: hb, stopHeartbeat: stop, done: func() {
		stop()
		r.mu.Lock()
		if r.active[id] == entry {
			delete(r.active, id)
		}
		r.mu.Unlock()
		stopWatch()
		cancelRun(nil)
	}}
}

// failRefused ends a run ingress accepted but could not make safe to run
// (the commented pull request's head is unknown), or whose params the
// loaded workflow does not declare: it fails visibly, with no workspace and
// no step.
func (r *Runner) failRefused(ctx context.Context, c *claimed, req *queue.RunRequest, wf *workflows.Workflow, rec *stores.RunRecord, log *slog.Logger) error {
	log.Warn("failing a refused run", "reason", req.Refused)
	res := r.deps.Engine.Run(c.ctx, engine.RunSpec{ID: req.ID, Attempt: rec.Attempt, Workflow: wf, Event: &req.Event,
		Ref: refOf(rec), Refused: req.Refused, OnChange: c.hb.setSteps})
	c.stopHeartbeat()
	if c.hb.lost.Load() {
		return r.lostRun(req.ID, c.hb.lostError(), log)
	}
	return r.finish(ctx, req, rec.Attempt, res, "", log)
}

// prepareFailed decides what a workspace that could not be prepared means:
// a policy refusal fails the run; anything else hands it back to be retried.
func (r *Runner) prepareFailed(ctx context.Context, c *claimed, id string, err error, log *slog.Logger) error {
	c.stopHeartbeat()
	if c.hb.lost.Load() {
		return r.lostRun(id, c.hb.lostError(), log)
	}
	if errors.Is(err, contract.ErrRefused) {
		log.Warn("workspace refused by policy; failing the run", "err", err)
		return queue.Term(fmt.Errorf("preparing workspace: %w", err))
	}
	log.Warn("preparing workspace failed; handing the run back", "err", err)
	r.release(ctx, id, c.attempt, fmt.Sprintf("preparing workspace: %v", err), log)
	if errors.Is(context.Cause(c.ctx), ErrAbandoned) {
		return fmt.Errorf("preparing workspace for run %s: %w", id, ErrAbandoned)
	}
	return queue.Retry(fmt.Errorf("preparing workspace for run %s: %w", id, err), r.cfg.PrepareRetry)
}

// outcome writes how an executed run ended: not at all when another claim
// took it over, handed back when it was abandoned, else its result.
func (r *Runner) outcome(ctx context.Context, c *claimed, req *queue.RunRequest, res *engine.Result, headSHA string, log *slog.Logger) error {
	id := req.ID
	switch {
	case c.hb.lost.Load():
		log.Warn("another claim took this run over; dropping our result", "status", res.Status)
		return r.lostRun(id, c.hb.lostError(), log)
	case res.Abandoned:
		r.release(ctx, id, c.attempt, "", log)
		return fmt.Errorf("running %s: %w", id, ErrAbandoned)
	}
	return r.finish(ctx, req, c.attempt, res, headSHA, log)
}

// finish writes the outcome of the run's attempt, unless the run was taken
// over. A result written is logged ("run finished"), counted (Metrics) and
// is the "run" span's status; one not written is none of these, so that a
// run's result is told once, by the attempt whose result the record holds.
func (r *Runner) finish(ctx context.Context, req *queue.RunRequest, attempt int, res *engine.Result, headSHA string, log *slog.Logger) error {
	id := req.ID
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	err := r.writeResult(sctx, id, stores.FinishSpec{
		Claimant:    r.cfg.ID,
		Attempt:     attempt,
		Now:         r.now(),
		Status:      res.Status,
		Steps:       res.Steps,
		Error:       res.Error,
		ReportError: res.ReportError,
		CommentID:   res.Ref.CommentID,
		HeadSHA:     headSHA,
		Delivery:    res.Delivery,
		Actions:     res.Acted,
		FinishedAt:  res.FinishedAt,
	}, log)
	if errors.Is(err, stores.ErrClaimLost) {
		log.Warn("run record no longer ours; not writing the result", "err", err)
		return r.lostRun(id, err, log)
	}
	if err == nil {
		log.Info("run finished", "status", res.Status, "duration", res.Duration().Round(time.Millisecond))
		r.cfg.Metrics.runFinished(req.Workflow, res.Status, res.Duration())
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(telemetry.AttrStatus.String(string(res.Status)))
		if res.Status == workflows.StatusFailed {
			span.SetStatus(codes.Error, "run failed")
		}
	}
	return err
}

// writeResult writes a run's result (Finish). A write that failed
// without an answer (the stream's leader lost, a timeout) is made again,
// waiting resultRetry doubling up to resultRetryMax between tries, until
// ctx (StoreTimeout) ends: a message handed back instead would have the
// run executed again once its claim went stale. Each try may take a
// resultTries-th of StoreTimeout, so that a request whose answer never
// comes (lost with a NATS node) leaves time for the next. When an earlier
// try did land, the next finds the run ended under this runner with the
// same status (a *ClaimLostError), which is the result written: nil.
func (r *Runner) writeResult(ctx context.Context, id string, f stores.FinishSpec, log *slog.Logger) error {
	try := func() error {
		tctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout/resultTries)
		defer cancel()
		return r.deps.Runs.Finish(tctx, id, f)
	}
	err := try()
	for wait := resultRetry; err != nil && !errors.Is(err, stores.ErrClaimLost); wait = min(2*wait, resultRetryMax) {
		log.Warn("writing the run's result got no answer; writing it again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		err = try()
		var lost *stores.ClaimLostError
		if errors.As(err, &lost) && lost.Record.Claimant == f.Claimant && lost.Record.Attempt == f.Attempt && lost.Record.Status == f.Status {
			return nil // an earlier try landed
		}
	}
	return err
}

// resultRetry and resultRetryMax space writeResult's tries; each try
// takes at most StoreTimeout/resultTries.
const (
	resultRetry    = 250 * time.Millisecond
	resultRetryMax = 2 * time.Second
	resultTries    = 4
)

// ErrRunningHere: a delivery of a run that an earlier delivery still
// executes in this runner, handed back (leaveToLiveAttempt). Its claim may
// look stale to the store (the stream took none of its heartbeats for a
// while, as while a NATS node is lost, and the message came again), but
// the run is alive here, and taking it over here would run it twice in
// the same directories: the later attempt's Prepare clears them under the
// earlier attempt, and the earlier one's Remove deletes them under the
// later (TestComposeUp saw the later attempt's second step fail in a
// removed workspace). The earlier attempt writes its result and acks the
// message meanwhile, or, should it hand it back or die, a later delivery
// finds no attempt here and takes the stale claim over.
var ErrRunningHere = errors.New("an earlier delivery of the run still executes in this runner")

// leaveToLiveAttempt answers a delivery of a run that a live attempt
// executes, another runner's (a live claim) or this runner's own
// (ErrRunningHere; held says which): the message is handed back, to be
// delivered again after the stale limit, when that attempt may have died.
// On the last delivery the queue allows it is acked instead: another nak
// would make the queue give up and mark the run failed under its live
// attempt, which holds its own delivery of the message (this one is a
// duplicate, or that attempt's ack fails harmlessly) and finishes the
// record itself.
func (r *Runner) leaveToLiveAttempt(d *queue.Delivery, held error, log *slog.Logger) error {
	if d.NumDelivered+1 >= uint64(r.cfg.maxDeliver()) {
		log.Warn("run is still executing under a live attempt; leaving it to that attempt", "why", held)
		return nil
	}
	log.Info("run is executing under a live attempt; handing this delivery back", "why", held)
	return queue.HandBack(held, r.cfg.StaleAfter)
}

// lostRetry is how soon a run whose claim was lost to a queued record is
// delivered again.
const lostRetry = time.Second

// lostRun decides what a lost claim means for the run's message:
//   - nil (ack it) when the run ended: nothing of it is left to run;
//   - a queue.Retry after lostRetry when the record that ended the claim is
//     queued with no claimant: nobody runs it then, and acking the message
//     would leave it queued for good; the redelivery claims it again;
//   - a queue.Retry after StaleAfter when another claim holds it (another
//     runner's, or this runner's later attempt after it took its own stale
//     run over). That claimant holds a later delivery of the same message,
//     keeps it from being delivered again while it lives (its in-progress
//     signals) and acks it when the run ends. An ack here would end the
//     message for it too (JetStream acks a message, not one delivery of
//     it): should that claimant die, nothing would deliver the run again
//     and it would stay running for good. Handed back, it is delivered
//     again only once that claimant stops signalling, and its stale claim
//     is then taken over.
func (r *Runner) lostRun(id string, lost error, log *slog.Logger) error {
	var cl *stores.ClaimLostError
	switch {
	case !errors.As(lost, &cl) || cl.Record.Status.Terminal():
		return nil
	case cl.Record.Unclaimed():
		log.Warn("our claim was lost to a queued record that nobody holds; handing the message back so that the run is claimed again", "err", lost)
		return queue.HandBack(fmt.Errorf("running %s: %w", id, lost), lostRetry)
	default:
		log.Info("another claim holds this run; handing the message back to be delivered again only should that claimant stop",
			"claimant", cl.Record.Claimant, "attempt", cl.Record.Attempt)
		return queue.HandBack(fmt.Errorf("running %s: %w", id, lost), r.cfg.StaleAfter)
	}
}

// release puts a claimed run back to queued (attempt kept) so that another
// delivery can take it; msg, when set, says why in the record's error.
func (r *Runner) release(ctx context.Context, id string, attempt int, msg string, log *slog.Logger) {
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	if err := r.deps.Runs.Release(sctx, id, r.cfg.ID, attempt, msg); err != nil && !errors.Is(err, stores.ErrClaimLost) {
		log.Warn("handing run back", "err", err)
	}
}

// refOf is what the reporter stored in the record on an earlier attempt.
func refOf(rec *stores.RunRecord) contract.ReportRef {
	return contract.ReportRef{CommentID: rec.CommentID}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// CheckRequest decides again, against the event the run request carries, what
// ingress decided before it queued the run: that the event matches one of
// the workflow's triggers and that the workflow's `authorize` policy lets
// its sender through (allow_repos is Config.Admit's). It calls the very
// functions ingress calls (workflows.Workflow.Match and Authorize), so each
// rule lives in one place. The queue authenticated the request already
// (queue/request.go): this is the second line, against a request ingress
// should not have made (a bug, a runner whose policy is stricter than an
// ingress's, a leaked key) — a refusal fails the run with the reason.
//
// What each kind of request allows:
//   - an event without a kind: a run started through the API (POST
//     /api/v1/workflows/{name}/runs) or a re-run of one; it has no sender
//     and no trigger, and the API's bearer token authorized it: nothing to
//     re-check (a workflow without `on:` runs only this way);
//   - a re-run (RerunOf: the API's rerun, a /retry comment): ingress runs
//     the workflow loaded now on the earlier run's event, whose triggers may
//     have changed since, authorized by the API token or by the workflow's
//     authorize for the /retry commenter, who is not in the request: not
//     re-checked either;
//   - every other request (a webhook delivery, a replay, a Slack command):
//     the event must match a trigger, a command's arguments must be one of
//     the commands the comment holds for the workflow, a Slack command's
//     repository must be its trigger's, and authorize must allow the
//     sender.
//
// Two inputs of matching are ingress's alone and are left out: the list of
// changed files (a run carries only whether it was complete, so `paths`
// filters are not re-checked) and the command arguments ingress fills in
// after matching (cleared, as they were when ingress matched).
//
// It is Config.Recheck's default.
func CheckRequest(wf *workflows.Workflow, req *queue.RunRequest) error {
	if req.Event.Kind == "" || req.RerunOf != "" {
		return nil
	}
	ev := req.Event
	ev.Files, ev.CommandArgs = nil, ""
	m := wf.Match(&ev)
	if !m.Matched {
		return fmt.Errorf("the event does not match a trigger of workflow %s: %s", wf.Name, m.Reason)
	}
	if m.Commands != nil && !slices.Contains(m.Commands, req.Event.CommandArgs) {
		return fmt.Errorf("the run's command arguments %q are not a command of the event for workflow %s", req.Event.CommandArgs, wf.Name)
	}
	if ev.Kind == workflows.KindChat {
		if forge, repo := wf.On[m.Trigger].ChatTarget(); forge != ev.Forge || repo != ev.Repo {
			return fmt.Errorf("the chat command's run acts on %s %s, not on its trigger's %s %s", ev.Forge, ev.Repo, forge, repo)
		}
	}
	if ok, reason := wf.Authorize(&ev); !ok {
		return fmt.Errorf("workflow %s does not authorize the event: %s", wf.Name, reason)
	}
	return nil
}

// heartbeat keeps a claim alive: it refreshes HeartbeatAt (with the latest
// step states) every interval and acts on what the record says (a cancel
// request, a takeover). A cancel request is also heard at once, on the
// runner's subject (Runner.Start): no run watches its record.
type heartbeat struct {
	r       *Runner
	id      string
	attempt int        // the attempt the claim started
	group   *groupHold // the run's concurrency group lock, renewed with each beat; nil: none
	cancel  context.CancelCauseFunc
	log     *slog.Logger

	mu      sync.Mutex
	steps   []workflows.StepState
	headSHA string

	lost    atomic.Bool
	lostErr atomic.Pointer[error] // why, once lost
}

// lostError is why the claim was lost (nil while it was not).
func (h *heartbeat) lostError() error {
	if p := h.lostErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (h *heartbeat) setSteps(s []workflows.StepState) {
	h.mu.Lock()
	h.steps = s
	h.mu.Unlock()
}

func (h *heartbeat) setHeadSHA(sha string) {
	h.mu.Lock()
	h.headSHA = sha
	h.mu.Unlock()
}

func (h *heartbeat) loop(ctx context.Context) {
	t := time.NewTicker(h.r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if h.beat(ctx) {
				return
			}
		}
	}
}

// check acts on the record as written by a heartbeat; true when we lost
// the run.
func (h *heartbeat) check(rec *stores.RunRecord) bool {
	if err := rec.CheckClaim(h.r.cfg.ID, h.attempt); err != nil {
		h.lose(err)
		return true
	}
	if rec.CancelRequested {
		h.cancel(ErrCancelled)
	}
	return false
}

// lose stops a run whose claim another runner (or an ended run) took.
func (h *heartbeat) lose(err error) {
	h.log.Warn("lost the claim on this run; stopping it", "err", err)
	h.lostErr.Store(&err)
	h.lost.Store(true)
	h.cancel(ErrAbandoned)
}

// beat refreshes the claim; true when we lost the run.
func (h *heartbeat) beat(ctx context.Context) bool {
	h.mu.Lock()
	spec := stores.HeartbeatSpec{Claimant: h.r.cfg.ID, Attempt: h.attempt, Now: h.r.now(), Steps: h.steps, HeadSHA: h.headSHA}
	h.mu.Unlock()
	h.group.renew(ctx, spec.Now)
	rec, err := h.r.deps.Runs.Heartbeat(ctx, h.id, spec)
	switch {
	case errors.Is(err, stores.ErrClaimLost):
		h.lose(err)
		return true
	case err != nil:
		if ctx.Err() == nil {
			h.log.Warn("heartbeat: refreshing the claim", "err", err)
		}
		return false
	}
	return h.check(rec)
}
