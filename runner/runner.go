package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookrun/hookrun/internal/telemetry"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// RunStore is what the runner needs of the run records: the transitions
// it makes (the queue owns how records change) and watch (cancel
// requests, takeovers). *queue.RunStore satisfies it.
type RunStore interface {
	Claim(ctx context.Context, req *queue.RunRequest, c queue.ClaimSpec) (queue.ClaimResult, error)
	Heartbeat(ctx context.Context, id string, h queue.HeartbeatSpec) (*queue.RunRecord, error)
	Release(ctx context.Context, id, claimant, reason string) error
	Finish(ctx context.Context, id string, f queue.FinishSpec) error
	RequestCancel(ctx context.Context, id string) (*queue.RunRecord, error)
	Watch(ctx context.Context, id string) (<-chan *queue.RunRecord, error)
}

var _ RunStore = (*queue.RunStore)(nil)

// GroupLocks serializes the runs of a concurrency group across runners
// (Acquire, Renew, Release) and tells a cancel_in_progress group's runs
// which older ones to cancel (StartNewest, LeaveNewest).
// *queue.GroupStore satisfies it.
type GroupLocks interface {
	Acquire(ctx context.Context, l queue.GroupLock) (held bool, holder string, err error)
	Renew(ctx context.Context, l queue.GroupLock) error
	Release(ctx context.Context, l queue.GroupLock, keepPlace bool) error
	StartNewest(ctx context.Context, group, runID string, now time.Time) (older []string, newer string, err error)
	LeaveNewest(ctx context.Context, group, runID string) error
}

var _ GroupLocks = (*queue.GroupStore)(nil)

// Config configures a Runner.
type Config struct {
	// ID names this runner as the claimant in run records. Default
	// <hostname>-<pid>.
	ID string
	// Concurrency is how many runs execute at once in this process.
	// Default queue.DefaultConcurrency.
	Concurrency int
	// HeartbeatInterval is how often the claim in the run record is
	// refreshed (and the latest step states written). Default 5s.
	HeartbeatInterval time.Duration
	// StaleAfter is how old a claimant's heartbeat may be before another
	// runner takes the run over. Default 3 × HeartbeatInterval.
	StaleAfter time.Duration
	// PrepareRetry is the delay before a run whose workspace could not be
	// prepared (an infrastructure failure) is delivered again. Default 10s.
	PrepareRetry time.Duration
	// WorkflowRetry is the delay before a run whose workflow this runner
	// has not loaded (or has at another digest than the run was queued
	// with: a rolling deploy, a file being changed) is delivered again, to
	// this runner after its workflows reloaded or to another one.
	// Default 10s.
	WorkflowRetry time.Duration
	// WorkflowDeliveries is how many deliveries such a run is handed back
	// for; at the last one it fails with the reason. Default, and at most,
	// the consumer's MaxDeliver.
	WorkflowDeliveries int
	// GroupPoll is how often a run waiting for its concurrency group (one
	// without cancel_in_progress, whose group another run holds) asks for
	// the group's lock again; it waits without holding a handler slot.
	// Default 250ms.
	GroupPoll time.Duration
	// StoreTimeout bounds run-record writes made after the run's context
	// ended (final state, hand-back on shutdown). Default 10s.
	StoreTimeout time.Duration
	// Consumer tunes the queue consumer used by Start; its Concurrency is
	// taken from Concurrency.
	Consumer queue.ConsumerConfig
	// Admit, when set, is asked about every run before it is claimed; a run
	// it refuses fails at once with its error (no workspace, no step, no
	// report), since retrying cannot change the answer. internal/app checks the
	// server's allow_repos here.
	Admit func(e *workflows.Event) error
	// Recheck is asked about every run whose workflow is loaded, before
	// it is claimed: whether the request's event matches one of the
	// workflow's triggers and its `authorize` lets the sender through, as
	// ingress decided (the queue authenticated the request already). A
	// refusal fails the run like Admit's. Default CheckRequest; only tests
	// of the runner's mechanics, whose events match no trigger, replace it.
	Recheck func(wf *workflows.Workflow, req *queue.RunRequest) error
	// Logger is the operator log. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Tracer starts a "run" span per delivery handled (the child of the
	// delivery's "publish" span that its message carries) and its
	// "claim" child. Default a no-op.
	Tracer trace.TracerProvider
	// Metrics counts finished runs and their durations, deliveries and
	// redeliveries (as the consumer's observer); nil: none.
	Metrics *Metrics
}

func (c *Config) setDefaults() {
	if c.ID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "runner"
		}
		c.ID = host + "-" + strconv.Itoa(os.Getpid())
	}
	if c.Concurrency == 0 {
		c.Concurrency = queue.DefaultConcurrency
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = 3 * c.HeartbeatInterval
	}
	if c.PrepareRetry == 0 {
		c.PrepareRetry = 10 * time.Second
	}
	if c.WorkflowRetry == 0 {
		c.WorkflowRetry = 10 * time.Second
	}
	if c.WorkflowDeliveries == 0 {
		c.WorkflowDeliveries = c.maxDeliver()
	}
	if c.GroupPoll == 0 {
		c.GroupPoll = 250 * time.Millisecond
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	if c.Recheck == nil {
		c.Recheck = CheckRequest
	}
	c.Consumer.Concurrency = c.Concurrency
	if c.Consumer.Observer == nil && c.Metrics != nil {
		c.Consumer.Observer = c.Metrics
	}
}

// Validate reports a configuration the runner cannot work with.
func (c *Config) Validate() error {
	var errs []error
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency must be at least 1, got %d", c.Concurrency))
	}
	if c.HeartbeatInterval <= 0 {
		errs = append(errs, fmt.Errorf("heartbeat interval must be positive, got %s", c.HeartbeatInterval))
	}
	if c.StaleAfter <= c.HeartbeatInterval {
		errs = append(errs, fmt.Errorf("stale after (%s) must be longer than the heartbeat interval (%s)", c.StaleAfter, c.HeartbeatInterval))
	}
	if c.WorkflowRetry < 0 || c.WorkflowDeliveries < 1 || c.WorkflowDeliveries > c.maxDeliver() {
		errs = append(errs, fmt.Errorf("workflow retry must not be negative and workflow deliveries must be between 1 and max deliver (%d), got %s and %d",
			c.maxDeliver(), c.WorkflowRetry, c.WorkflowDeliveries))
	}
	if c.GroupPoll <= 0 {
		errs = append(errs, fmt.Errorf("group poll must be positive, got %s", c.GroupPoll))
	}
	if c.PrepareRetry < 0 || c.StoreTimeout <= 0 {
		errs = append(errs, errors.New("prepare retry must not be negative and store timeout must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validating runner config: %w", err)
	}
	return nil
}

// Deps are what a Runner works with; all are required.
type Deps struct {
	Runs       RunStore       // run records
	Workflows  WorkflowSource // loaded workflows by name
	Workspaces Workspaces     // per-run directories (checkouts)
	Engine     *Engine        // executes the DAG
	Groups     GroupLocks     // concurrency group locks
}

// Runner claims run requests from the queue and executes them.
type Runner struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	tracer trace.Tracer

	mu     sync.Mutex
	active map[string]context.CancelCauseFunc // runs executing in this process
}

// New returns a runner.
func New(cfg Config, deps Deps) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Runs == nil || deps.Workflows == nil || deps.Workspaces == nil || deps.Engine == nil || deps.Groups == nil {
		return nil, errors.New("creating runner: runs, workflows, workspaces, engine and groups are required")
	}
	return &Runner{cfg: cfg, deps: deps, log: cfg.Logger.With("runner", cfg.ID), tracer: telemetry.Tracer(cfg.Tracer),
		active: map[string]context.CancelCauseFunc{}}, nil
}

// ID is the claimant name this runner writes into run records.
func (r *Runner) ID() string { return r.cfg.ID }

// Start consumes run requests from q until the returned consumer is closed
// (Close cancels in-flight runs with queue.ErrShuttingDown; they are handed
// back to the queue).
func (r *Runner) Start(ctx context.Context, q *queue.Queue) (*queue.Consumer, error) {
	c, err := q.Consume(ctx, r.cfg.Consumer, r.Handle)
	if err != nil {
		return nil, fmt.Errorf("starting runner %s: %w", r.cfg.ID, err)
	}
	return c, nil
}

// ErrRunFinished is returned by Cancel for a run that already ended.
var ErrRunFinished = queue.ErrRunFinished

// Cancel asks for a run to stop. A queued run is marked cancelled at once
// (its message is acked and skipped when delivered); a running one gets
// CancelRequested, which its claimant (this process or another) sees and
// acts on: the run ends cancelled after its cancel and exit handlers. When
// this process is the claimant it stops the run right away.
// queue.ErrNotFound: no such run; ErrRunFinished: it already ended.
func (r *Runner) Cancel(ctx context.Context, runID string) error {
	if _, err := r.deps.Runs.RequestCancel(ctx, runID); err != nil {
		return err
	}
	r.mu.Lock()
	cancel := r.active[runID]
	r.mu.Unlock()
	if cancel != nil {
		cancel(ErrCancelled)
	}
	return nil
}

// maxDeliver is the consumer's MaxDeliver (the queue's default when unset).
func (c *Config) maxDeliver() int {
	if c.Consumer.MaxDeliver > 0 {
		return c.Consumer.MaxDeliver
	}
	return queue.DefaultMaxDeliver
}

func (r *Runner) now() time.Time { return r.cfg.Now().UTC() }

// storeCtx is a context for record writes that must happen even though ctx
// ended (final state, hand-back).
func (r *Runner) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StoreTimeout)
}

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
	res, lock, refusal, wf, err := r.claim(ctx, d, traceID, log)
	if err != nil {
		return err
	}
	rec := res.Record
	if res.TakeOver {
		log.Warn("taking over a run whose claimant stopped heartbeating", "claimant", res.StaleClaimant, "heartbeat", res.StaleHeartbeat)
	}
	switch res.Outcome {
	case queue.ClaimFinished:
		log.Info("run already finished; acking the redelivery", "status", rec.Status)
		return nil
	case queue.ClaimHeld:
		if d.NumDelivered+1 >= uint64(r.cfg.maxDeliver()) {
			// Another nak would make the queue give up and mark the run
			// failed under its live claimant. The claimant holds its own
			// message (this is a duplicate, or the claimant's ack will
			// fail harmlessly) and finishes the record itself.
			log.Warn("run is still executing elsewhere; leaving it to its claimant", "claimant", rec.Claimant)
			return nil
		}
		log.Info("run is being executed elsewhere; retrying later", "claimant", rec.Claimant, "heartbeat", rec.HeartbeatAt)
		return queue.Retry(fmt.Errorf("run %s is running on %s", req.ID, rec.Claimant), r.cfg.StaleAfter)
	case queue.ClaimRefused:
		if queue.IsTerm(refusal) {
			log.Warn("refusing run", "err", refusal)
		} else {
			log.Info("handing the run back", "err", refusal)
		}
		return refusal
	case queue.ClaimCancelled:
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
	err = r.execute(ctx, req, wf, rec, lock, log)
	if lock != nil {
		// A run handed back (any error but a Term) runs again later and
		// keeps its place in the group.
		if rerr := r.releaseGroup(ctx, lock, err != nil && !queue.IsTerm(err), log); rerr != nil && err == nil {
			// Delivered again, the finished run is acked after another
			// release, rather than leaving the group to the lock's expiry.
			return queue.Retry(rerr, time.Second)
		}
	}
	return err
}

// claim admits d and claims its run, within a "claim" span: the claim's
// result, the group lock it holds (nil: none), the refusal the claim was
// made with, and the run's workflow; or the error to hand d back with.
func (r *Runner) claim(ctx context.Context, d *queue.Delivery, traceID string, log *slog.Logger) (_ queue.ClaimResult, _ *queue.GroupLock, refusal error, _ *workflows.Workflow, err error) {
	req := d.Request
	ctx, span := r.tracer.Start(ctx, "claim")
	defer span.End()
	wf, refusal := r.admit(d)
	spec := queue.ClaimSpec{Claimant: r.cfg.ID, Now: r.now(), StaleAfter: r.cfg.StaleAfter,
		Resume: !r.isActive(req.ID), Refuse: refusal != nil, TraceID: traceID}
	var lock *queue.GroupLock
	if wf != nil {
		spec.Group = concurrencyGroup(wf, &req.Event)
		if refusal == nil && spec.Group != "" && !wf.Concurrency.CancelInProgress {
			lock = &queue.GroupLock{Group: spec.Group, RunID: req.ID, Claimant: r.cfg.ID, TTL: r.cfg.StaleAfter}
			if err := r.acquireGroup(ctx, lock, log); err != nil {
				span.SetAttributes(attribute.String("hookrun.claim.outcome", "waiting"))
				return queue.ClaimResult{}, nil, refusal, wf, err
			}
		}
	}
	res, err := r.deps.Runs.Claim(ctx, req, spec)
	if lock != nil && (err != nil || res.Outcome != queue.Claimed) {
		// Not ours to run now: the group goes to the next run (a claim
		// that failed is retried and keeps its place).
		_ = r.releaseGroup(ctx, lock, err != nil, log) // logged; the lock expires
		lock = nil
	}
	if err != nil {
		span.SetStatus(codes.Error, "claim failed")
		if errors.Is(err, queue.ErrConflict) {
			err = queue.Retry(err, time.Second)
		}
		return queue.ClaimResult{}, nil, refusal, wf, err
	}
	span.SetAttributes(attribute.String("hookrun.claim.outcome", claimOutcomes[res.Outcome]))
	return res, lock, refusal, wf, nil
}

// claimOutcomes name queue.ClaimOutcome values in spans.
var claimOutcomes = map[queue.ClaimOutcome]string{
	queue.Claimed: "claimed", queue.ClaimFinished: "finished", queue.ClaimHeld: "held",
	queue.ClaimRefused: "refused", queue.ClaimCancelled: "cancelled",
}

// acquireGroup takes the lock of a serialized concurrency group for a run
// about to be claimed, or returns the queue.Wait that makes the run wait
// (queued) for it.
func (r *Runner) acquireGroup(ctx context.Context, lock *queue.GroupLock, log *slog.Logger) error {
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
func (r *Runner) releaseGroup(ctx context.Context, lock *queue.GroupLock, keepPlace bool, log *slog.Logger) error {
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
		return nil, queue.Retry(fmt.Errorf("%w; handing the run back", err), r.cfg.WorkflowRetry)
	}
	return nil, queue.Term(fmt.Errorf("%w, after %d deliveries", err, d.NumDelivered))
}

// execute runs a claimed run to its end and writes the outcome.
func (r *Runner) execute(ctx context.Context, req *queue.RunRequest, wf *workflows.Workflow, rec *queue.RunRecord, lock *queue.GroupLock, log *slog.Logger) error {
	c := r.track(ctx, req.ID, lock, log)
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
	res := r.deps.Engine.Run(c.ctx, RunSpec{
		ID:        req.ID,
		Attempt:   rec.Attempt,
		Workflow:  wf,
		Event:     &req.Event,
		Workspace: ws.Dir,
		Home:      ws.Home,
		TmpDir:    ws.TmpDir,
		EventDir:  ws.EventDir,
		Results:   ws.Results,
		HeadSHA:   firstNonEmpty(ws.HeadSHA, rec.HeadSHA, req.Event.HeadSHA()),
		Params:    params,
		Ref:       refOf(rec),
		OnChange:  c.hb.setSteps,
	})
	c.stopHeartbeat()
	return r.outcome(ctx, c, req, res, ws.HeadSHA, log)
}

// claimed is a run this runner executes: its context (cancelled by a
// cancel request, a newer run of its group or shutdown) and its heartbeat.
type claimed struct {
	ctx           context.Context
	hb            *heartbeat
	stopHeartbeat func() // stops the heartbeat and waits for it; idempotent
	done          func() // releases everything track set up
}

// track sets up what executing a claimed run needs: a context detached
// from ctx but stopped with it (shutdown hands the run back, any other end
// cancels it), the entry in r.active that Cancel finds, and the heartbeat.
func (r *Runner) track(ctx context.Context, id string, lock *queue.GroupLock, log *slog.Logger) *claimed {
	runCtx, cancelRun := context.WithCancelCause(context.WithoutCancel(ctx))
	stopWatch := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), queue.ErrShuttingDown) {
			cancelRun(ErrAbandoned)
		} else {
			cancelRun(ErrCancelled)
		}
	})
	r.mu.Lock()
	r.active[id] = cancelRun
	r.mu.Unlock()

	hb := &heartbeat{r: r, id: id, lock: lock, cancel: cancelRun, log: log}
	hbCtx, stopHB := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); hb.loop(hbCtx) }()
	var once sync.Once
	stop := func() { once.Do(func() { stopHB(); <-hbDone }) }
	return &claimed{ctx: runCtx, hb: hb, stopHeartbeat: stop, done: func() {
		stop()
		r.mu.Lock()
		delete(r.active, id)
		r.mu.Unlock()
		stopWatch()
		cancelRun(nil)
	}}
}

// failRefused ends a run ingress accepted but could not make safe to run
// (the commented pull request's head is unknown), or whose params the
// loaded workflow does not declare: it fails visibly, with no workspace and
// no step.
func (r *Runner) failRefused(ctx context.Context, c *claimed, req *queue.RunRequest, wf *workflows.Workflow, rec *queue.RunRecord, log *slog.Logger) error {
	log.Warn("failing a refused run", "reason", req.Refused)
	res := r.deps.Engine.Run(c.ctx, RunSpec{ID: req.ID, Attempt: rec.Attempt, Workflow: wf, Event: &req.Event,
		Ref: refOf(rec), Refused: req.Refused, OnChange: c.hb.setSteps})
	c.stopHeartbeat()
	if c.hb.lost.Load() {
		return r.lostRun(req.ID, c.hb.lostError(), log)
	}
	return r.finish(ctx, req, res, "", log)
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
	r.release(ctx, id, fmt.Sprintf("preparing workspace: %v", err), log)
	if errors.Is(context.Cause(c.ctx), ErrAbandoned) {
		return fmt.Errorf("preparing workspace for run %s: %w", id, ErrAbandoned)
	}
	return queue.Retry(fmt.Errorf("preparing workspace for run %s: %w", id, err), r.cfg.PrepareRetry)
}

// outcome writes how an executed run ended: not at all when another runner
// took it over, handed back when it was abandoned, else its result.
func (r *Runner) outcome(ctx context.Context, c *claimed, req *queue.RunRequest, res *Result, headSHA string, log *slog.Logger) error {
	id := req.ID
	switch {
	case c.hb.lost.Load():
		if err := r.lostRun(id, c.hb.lostError(), log); err != nil {
			return err
		}
		log.Warn("another runner took this run over; dropping our result", "status", res.Status)
		return nil
	case res.Abandoned:
		r.release(ctx, id, "", log)
		return fmt.Errorf("running %s: %w", id, ErrAbandoned)
	}
	if err := r.finish(ctx, req, res, headSHA, log); err != nil {
		return err
	}
	log.Info("run finished", "status", res.Status, "duration", res.Duration().Round(time.Millisecond))
	return nil
}

// finish writes the run's outcome, unless the run was taken over.
// A result written is counted (Metrics) and is the "run" span's status.
func (r *Runner) finish(ctx context.Context, req *queue.RunRequest, res *Result, headSHA string, log *slog.Logger) error {
	id := req.ID
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	err := r.deps.Runs.Finish(sctx, id, queue.FinishSpec{
		Claimant:    r.cfg.ID,
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
	})
	if errors.Is(err, queue.ErrClaimLost) {
		if err := r.lostRun(id, err, log); err != nil {
			return err
		}
		log.Warn("run record no longer ours; not writing the result", "err", err)
		return nil
	}
	if err == nil {
		r.cfg.Metrics.runFinished(req.Workflow, res.Status, res.Duration())
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(telemetry.AttrStatus.String(string(res.Status)))
		if res.Status == workflows.StatusFailed {
			span.SetStatus(codes.Error, "run failed")
		}
	}
	return err
}

// lostRetry is how soon a run whose claim was lost to a queued record is
// delivered again.
const lostRetry = time.Second

// lostRun decides what a lost claim means for the run's message: nil (ack
// it) when another runner holds the run or it ended, since they finish it;
// a queue.Retry when the record that ended the claim is queued with no
// claimant, since nobody runs it then and acking the message would leave
// it queued forever: the redelivery claims it again.
func (r *Runner) lostRun(id string, lost error, log *slog.Logger) error {
	var cl *queue.ClaimLostError
	if !errors.As(lost, &cl) || !cl.Record.Unclaimed() {
		return nil
	}
	log.Warn("our claim was lost to a queued record that nobody holds; handing the message back so that the run is claimed again", "err", lost)
	return queue.Retry(fmt.Errorf("running %s: %w", id, lost), lostRetry)
}

// release puts a claimed run back to queued (attempt kept) so that another
// delivery can take it; msg, when set, says why in the record's error.
func (r *Runner) release(ctx context.Context, id, msg string, log *slog.Logger) {
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	if err := r.deps.Runs.Release(sctx, id, r.cfg.ID, msg); err != nil && !errors.Is(err, queue.ErrClaimLost) {
		log.Warn("handing run back", "err", err)
	}
}

func (r *Runner) isActive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[id]
	return ok
}

// cancelOlder starts a claimed run in its cancel_in_progress group: the
// group's key (one read, one write, whatever the number of run records)
// names the older members, whose cancel it requests (queued ones end at
// once); a member found finished is forgotten. When a newer run of the
// group has started already, the run is superseded: it ends cancelled
// without running (its report would be overwritten by the newer run's),
// and superseded is true. An error hands the run back.
func (r *Runner) cancelOlder(ctx context.Context, rec *queue.RunRecord, log *slog.Logger) (superseded bool, _ error) {
	group := rec.ConcurrencyGroup
	older, newer, err := r.deps.Groups.StartNewest(ctx, group, rec.ID, r.now())
	if err != nil {
		r.release(ctx, rec.ID, fmt.Sprintf("starting in concurrency group: %v", err), log)
		return true, queue.Retry(err, time.Second)
	}
	if newer != "" {
		log.Info("a newer run of the concurrency group started already; ending this one cancelled", "newer", newer, "group", group)
		now := r.now()
		err := r.deps.Runs.Finish(ctx, rec.ID, queue.FinishSpec{Claimant: r.cfg.ID, Now: now, Status: workflows.StatusCancelled,
			Error: fmt.Sprintf("superseded by the newer run %s of its concurrency group", newer), FinishedAt: now})
		if err != nil && !errors.Is(err, queue.ErrClaimLost) {
			return true, err
		}
		return true, nil
	}
	for _, id := range older {
		log.Info("cancelling an older run of the same concurrency group", "older", id, "group", group)
		err := r.Cancel(ctx, id)
		switch {
		case errors.Is(err, ErrRunFinished) || errors.Is(err, queue.ErrNotFound):
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

// refOf is what the reporter stored in the record on an earlier attempt.
func refOf(rec *queue.RunRecord) contract.ReportRef {
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

// heartbeat keeps a claim alive: it refreshes HeartbeatAt (with the latest
// step states) every interval, and watches the record so that a cancel
// request or a takeover is acted on at once.
type heartbeat struct {
	r      *Runner
	id     string
	lock   *queue.GroupLock // the run's concurrency group lock, renewed with each beat; nil: none
	cancel context.CancelCauseFunc
	log    *slog.Logger

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
	var updates <-chan *queue.RunRecord
	if ch, err := h.r.deps.Runs.Watch(ctx, h.id); err == nil {
		updates = ch
	} else {
		h.log.Warn("watching run record; cancel requests are seen at the next heartbeat", "err", err)
	}
	t := time.NewTicker(h.r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case rec, ok := <-updates:
			if !ok {
				updates = nil
				continue
			}
			if rec.CheckClaim(h.r.cfg.ID) != nil {
				// Only a hint: the watch's consumer may live on a replica
				// that has not applied our claim yet (a node rejoining the
				// cluster) and deliver the record as it was before, queued.
				// The heartbeat decides: it reads the record again before
				// it reports a loss, and writes only with a compare-and-set.
				if h.beat(ctx) {
					return
				}
				continue
			}
			if h.check(rec) {
				return
			}
		case <-t.C:
			if h.beat(ctx) {
				return
			}
		}
	}
}

// check acts on the record as written by a heartbeat; true when we lost
// the run.
func (h *heartbeat) check(rec *queue.RunRecord) bool {
	if err := rec.CheckClaim(h.r.cfg.ID); err != nil {
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
	spec := queue.HeartbeatSpec{Claimant: h.r.cfg.ID, Now: h.r.now(), Steps: h.steps, HeadSHA: h.headSHA}
	h.mu.Unlock()
	if h.lock != nil {
		l := *h.lock
		l.Now = spec.Now
		if err := h.r.deps.Groups.Renew(ctx, l); err != nil && ctx.Err() == nil {
			h.log.Warn("heartbeat: renewing the concurrency group lock", "group", l.Group, "err", err)
		}
	}
	rec, err := h.r.deps.Runs.Heartbeat(ctx, h.id, spec)
	switch {
	case errors.Is(err, queue.ErrClaimLost):
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
