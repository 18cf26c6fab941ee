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

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// RunStore is what the runner needs of the run records: read, create and
// compare-and-set, list (concurrency groups) and watch (cancel requests).
// *queue.RunStore satisfies it.
type RunStore interface {
	Create(ctx context.Context, rec *queue.RunRecord) (uint64, error)
	Get(ctx context.Context, id string) (*queue.RunRecord, uint64, error)
	Update(ctx context.Context, rec *queue.RunRecord, rev uint64) (uint64, error)
	List(ctx context.Context, f queue.ListFilter) ([]*queue.RunRecord, error)
	Watch(ctx context.Context, id string) (<-chan *queue.RunRecord, error)
	RequestCancel(ctx context.Context, id string) (*queue.RunRecord, error)
}

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
	// StoreTimeout bounds run-record writes made after the run's context
	// ended (final state, hand-back on shutdown). Default 10s.
	StoreTimeout time.Duration
	// Consumer tunes the queue consumer used by Start; its Concurrency is
	// taken from Concurrency.
	Consumer queue.ConsumerConfig
	// Admit, when set, is asked about every run before it is claimed; a run
	// it refuses fails at once with its error (no workspace, no step, no
	// report), since retrying cannot change the answer. cmd checks the
	// server's allow_repos here.
	Admit func(e *workflows.Event) error
	// Logger is the operator log. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
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
	if c.StoreTimeout == 0 {
		c.StoreTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Consumer.Concurrency = c.Concurrency
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
}

// Runner claims run requests from the queue and executes them.
type Runner struct {
	cfg  Config
	deps Deps
	log  *slog.Logger

	mu     sync.Mutex
	active map[string]context.CancelCauseFunc // runs executing in this process
}

// New returns a runner.
func New(cfg Config, deps Deps) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Runs == nil || deps.Workflows == nil || deps.Workspaces == nil || deps.Engine == nil {
		return nil, errors.New("creating runner: runs, workflows, workspaces and engine are required")
	}
	return &Runner{cfg: cfg, deps: deps, log: cfg.Logger.With("runner", cfg.ID), active: map[string]context.CancelCauseFunc{}}, nil
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
func (r *Runner) maxDeliver() int {
	if r.cfg.Consumer.MaxDeliver > 0 {
		return r.cfg.Consumer.MaxDeliver
	}
	return queue.DefaultMaxDeliver
}

func (r *Runner) now() time.Time { return r.cfg.Now().UTC() }

// storeCtx is a context for record writes that must happen even though ctx
// ended (final state, hand-back).
func (r *Runner) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StoreTimeout)
}

// errRetryClaim is an internal signal: the record changed under us; read it
// again and decide again.
var errRetryClaim = errors.New("record changed while claiming")

// Handle executes one delivery; it is the queue.Handler of Start.
func (r *Runner) Handle(ctx context.Context, d *queue.Delivery) error {
	req := d.Request
	log := r.log.With("run", req.ID, "workflow", req.Workflow, "delivery", d.NumDelivered)
	for range 10 {
		err := r.handleOnce(ctx, d, log)
		if !errors.Is(err, errRetryClaim) {
			return err
		}
	}
	return queue.Retry(fmt.Errorf("claiming run %s: %w", req.ID, queue.ErrConflict), time.Second)
}

func (r *Runner) handleOnce(ctx context.Context, d *queue.Delivery, log *slog.Logger) error {
	req := d.Request
	rec, rev, err := r.deps.Runs.Get(ctx, req.ID)
	if errors.Is(err, queue.ErrNotFound) {
		rec = newRecord(req)
		if rev, err = r.deps.Runs.Create(ctx, rec); errors.Is(err, queue.ErrConflict) {
			return errRetryClaim
		}
	}
	if err != nil {
		return fmt.Errorf("reading run %s: %w", req.ID, err)
	}

	switch {
	case rec.Status.Terminal():
		log.Info("run already finished; acking the redelivery", "status", rec.Status)
		return nil
	case rec.Status == workflows.StatusRunning && rec.Claimant != "" && r.now().Sub(rec.HeartbeatAt) < r.cfg.StaleAfter:
		if rec.Claimant == r.cfg.ID && !r.isActive(req.ID) {
			break // our own claim from before a restart with the same id: take it back
		}
		if d.NumDelivered+1 >= uint64(r.maxDeliver()) {
			// Another nak would make the queue give up and mark the run
			// failed under its live claimant. The claimant holds its own
			// message (this is a duplicate, or the claimant's ack will
			// fail harmlessly) and finishes the record itself.
			log.Warn("run is still executing elsewhere; leaving it to its claimant", "claimant", rec.Claimant)
			return nil
		}
		log.Info("run is being executed elsewhere; retrying later", "claimant", rec.Claimant, "heartbeat", rec.HeartbeatAt)
		return queue.Retry(fmt.Errorf("run %s is running on %s", req.ID, rec.Claimant), r.cfg.StaleAfter)
	case rec.Status == workflows.StatusRunning:
		log.Warn("taking over a run whose claimant stopped heartbeating", "claimant", rec.Claimant, "heartbeat", rec.HeartbeatAt)
	}

	if r.cfg.Admit != nil {
		if err := r.cfg.Admit(&req.Event); err != nil {
			log.Warn("refusing run", "err", err)
			return queue.Term(fmt.Errorf("refusing run: %w", err))
		}
	}
	wf, ok := r.deps.Workflows.Lookup(req.Workflow)
	if !ok {
		return queue.Term(fmt.Errorf("workflow %s is not loaded on runner %s", req.Workflow, r.cfg.ID))
	}
	if wf.Digest != "" && req.WorkflowDigest != "" && wf.Digest != req.WorkflowDigest {
		log.Info("workflow changed since the run was queued; running the loaded version", "queued", req.WorkflowDigest, "loaded", wf.Digest)
	}

	// Claim by compare-and-set.
	now := r.now()
	if rec.StartedAt == nil {
		rec.Attempt = max(rec.Attempt, 1)
	} else {
		rec.Attempt++
	}
	rec.Status = workflows.StatusRunning
	rec.Claimant = r.cfg.ID
	rec.HeartbeatAt = now
	rec.StartedAt = &now
	rec.FinishedAt = nil
	rec.Error = ""
	rec.Steps = nil
	rec.ConcurrencyGroup = concurrencyGroup(wf, &req.Event)
	if rec.CancelRequested {
		rec.Status = workflows.StatusCancelled
		rec.Error = ErrCancelled.Error()
		rec.FinishedAt = &now
	}
	if _, err = r.deps.Runs.Update(ctx, rec, rev); errors.Is(err, queue.ErrConflict) {
		return errRetryClaim
	} else if err != nil {
		return fmt.Errorf("claiming run %s: %w", req.ID, err)
	}
	if rec.Status == workflows.StatusCancelled {
		log.Info("run was cancelled before it started")
		return nil
	}
	log = log.With("attempt", rec.Attempt)
	log.Info("claimed run")
	return r.execute(ctx, req, wf, rec, log)
}

// execute runs a claimed run to its end and writes the outcome.
func (r *Runner) execute(ctx context.Context, req *queue.RunRequest, wf *workflows.Workflow, rec *queue.RunRecord, log *slog.Logger) error {
	runCtx, cancelRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRun(nil)
	// The consumer cancels ctx on shutdown: hand the run back.
	stopWatch := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), queue.ErrShuttingDown) {
			cancelRun(ErrAbandoned)
		} else {
			cancelRun(ErrCancelled)
		}
	})
	defer stopWatch()
	r.mu.Lock()
	r.active[req.ID] = cancelRun
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.active, req.ID)
		r.mu.Unlock()
	}()

	hb := &heartbeat{r: r, id: req.ID, cancel: cancelRun, log: log}
	hbCtx, stopHB := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); hb.loop(hbCtx) }()
	stopHeartbeat := func() { stopHB(); <-hbDone }

	if req.Refused != "" {
		// Ingress accepted the event but could not make it safe to run
		// (the commented pull request's head is unknown): fail it visibly,
		// with no workspace and no step.
		log.Warn("failing a run ingress refused to pin", "reason", req.Refused)
		res := r.deps.Engine.Run(runCtx, RunSpec{ID: req.ID, Attempt: rec.Attempt, Workflow: wf, Event: &req.Event,
			Ref: refOf(rec), Refused: req.Refused, OnChange: hb.setSteps})
		stopHeartbeat()
		if hb.lost.Load() {
			return nil
		}
		return r.finish(ctx, req.ID, res, "", log)
	}

	ws, err := r.deps.Workspaces.Prepare(runCtx, req.ID, &req.Event, wf.Checkout)
	headSHA := ws.HeadSHA
	if err != nil {
		stopHeartbeat()
		if hb.lost.Load() {
			return nil
		}
		if errors.Is(err, contract.ErrRefused) {
			log.Warn("workspace refused by policy; failing the run", "err", err)
			return queue.Term(fmt.Errorf("preparing workspace: %w", err))
		}
		msg := fmt.Sprintf("preparing workspace: %v", err)
		log.Warn("preparing workspace failed; handing the run back", "err", err)
		r.release(ctx, req.ID, msg, log)
		if errors.Is(context.Cause(runCtx), ErrAbandoned) {
			return fmt.Errorf("preparing workspace for run %s: %w", req.ID, ErrAbandoned)
		}
		return queue.Retry(fmt.Errorf("preparing workspace for run %s: %w", req.ID, err), r.cfg.PrepareRetry)
	}
	defer func() {
		if err := r.deps.Workspaces.Remove(req.ID); err != nil {
			log.Warn("removing workspace", "err", err)
		}
	}()
	if headSHA != "" {
		hb.setHeadSHA(headSHA)
	}

	if wf.Concurrency != nil && wf.Concurrency.CancelInProgress {
		r.cancelOlder(runCtx, rec, log)
	}

	res := r.deps.Engine.Run(runCtx, RunSpec{
		ID:        req.ID,
		Attempt:   rec.Attempt,
		Workflow:  wf,
		Event:     &req.Event,
		Workspace: ws.Dir,
		Home:      ws.Home,
		TmpDir:    ws.TmpDir,
		HeadSHA:   firstNonEmpty(headSHA, rec.HeadSHA, req.Event.HeadSHA()),
		Ref:       refOf(rec),
		OnChange:  hb.setSteps,
	})
	stopHeartbeat()

	switch {
	case hb.lost.Load():
		log.Warn("another runner took this run over; dropping our result", "status", res.Status)
		return nil
	case res.Abandoned:
		r.release(ctx, req.ID, "", log)
		return fmt.Errorf("running %s: %w", req.ID, ErrAbandoned)
	}
	if err := r.finish(ctx, req.ID, res, headSHA, log); err != nil {
		return err
	}
	log.Info("run finished", "status", res.Status, "duration", res.Duration().Round(time.Millisecond))
	return nil
}

// finish writes the run's outcome, unless the run was taken over.
func (r *Runner) finish(ctx context.Context, id string, res *Result, headSHA string, log *slog.Logger) error {
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	for range 20 {
		rec, rev, err := r.deps.Runs.Get(sctx, id)
		if err != nil {
			return fmt.Errorf("finishing run %s: %w", id, err)
		}
		if rec.Claimant != r.cfg.ID || rec.Status != workflows.StatusRunning {
			log.Warn("run record no longer ours; not writing the result", "claimant", rec.Claimant, "status", rec.Status)
			return nil
		}
		fin := res.FinishedAt
		rec.Status = res.Status
		rec.Steps = res.Steps
		rec.Error = res.Error
		rec.ReportError = res.ReportError
		if res.Ref.CommentID != 0 {
			rec.CommentID = res.Ref.CommentID
		}
		if headSHA != "" {
			rec.HeadSHA = headSHA
		}
		rec.FinishedAt = &fin
		rec.HeartbeatAt = r.now()
		if _, err := r.deps.Runs.Update(sctx, rec, rev); errors.Is(err, queue.ErrConflict) {
			continue
		} else if err != nil {
			return fmt.Errorf("finishing run %s: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("finishing run %s: %w", id, queue.ErrConflict)
}

// release puts a claimed run back to queued (attempt kept) so that another
// delivery can take it; msg, when set, says why in the record's error.
func (r *Runner) release(ctx context.Context, id, msg string, log *slog.Logger) {
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	for range 20 {
		rec, rev, err := r.deps.Runs.Get(sctx, id)
		if err != nil {
			log.Warn("handing run back", "err", err)
			return
		}
		if rec.Claimant != r.cfg.ID || rec.Status != workflows.StatusRunning {
			return
		}
		rec.Status = workflows.StatusQueued
		rec.Claimant = ""
		rec.Error = msg
		if _, err := r.deps.Runs.Update(sctx, rec, rev); errors.Is(err, queue.ErrConflict) {
			continue
		} else if err != nil {
			log.Warn("handing run back", "err", err)
		}
		return
	}
}

func (r *Runner) isActive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[id]
	return ok
}

// cancelOlder sets CancelRequested on the older unfinished runs of rec's
// concurrency group (cancel_in_progress). Queued ones are cancelled at once.
func (r *Runner) cancelOlder(ctx context.Context, rec *queue.RunRecord, log *slog.Logger) {
	if rec.ConcurrencyGroup == "" {
		return
	}
	list, err := r.deps.Runs.List(ctx, queue.ListFilter{})
	if err != nil {
		log.Warn("listing runs of the concurrency group", "group", rec.ConcurrencyGroup, "err", err)
		return
	}
	for _, other := range list {
		if other.ID == rec.ID || other.ConcurrencyGroup != rec.ConcurrencyGroup || other.Status.Terminal() || other.CancelRequested {
			continue
		}
		if !older(other, rec) {
			continue
		}
		log.Info("cancelling an older run of the same concurrency group", "older", other.ID, "group", rec.ConcurrencyGroup)
		if err := r.Cancel(ctx, other.ID); err != nil && !errors.Is(err, ErrRunFinished) {
			log.Warn("cancelling an older run", "older", other.ID, "err", err)
		}
	}
}

// older reports whether a was created before b (run ids are ULIDs, sortable
// by creation time, which breaks ties).
func older(a, b *queue.RunRecord) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) && !a.CreatedAt.IsZero() && !b.CreatedAt.IsZero() {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// concurrencyGroup resolves a workflow's `concurrency.group` for an event:
// pull_request → one group per workflow and pull/merge request (or issue),
// workflow → one per workflow, repo → one per repository, anything else is
// a literal name shared across workflows.
func concurrencyGroup(w *workflows.Workflow, e *workflows.Event) string {
	if w.Concurrency == nil || w.Concurrency.Group == "" {
		return ""
	}
	switch g := w.Concurrency.Group; g {
	case "pull_request":
		return "pr:" + w.Name + ":" + e.Repo + "#" + strconv.Itoa(e.Number())
	case "workflow":
		return "workflow:" + w.Name
	case "repo":
		return "repo:" + e.Repo
	default:
		return "group:" + g
	}
}

func newRecord(req *queue.RunRequest) *queue.RunRecord {
	ev := req.Event
	ev.Raw = nil
	created := req.CreatedAt
	if created.IsZero() {
		created = time.Now().UTC()
	}
	return &queue.RunRecord{
		ID:             req.ID,
		Workflow:       req.Workflow,
		WorkflowDigest: req.WorkflowDigest,
		Repo:           req.Event.Repo,
		Status:         workflows.StatusQueued,
		Attempt:        req.Attempt,
		Event:          ev,
		HeadSHA:        req.Event.HeadSHA(),
		CreatedAt:      created,
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
	cancel context.CancelCauseFunc
	log    *slog.Logger

	mu      sync.Mutex
	steps   []workflows.StepState
	headSHA string

	lost atomic.Bool
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

// check acts on the record as stored; true when we lost the run.
func (h *heartbeat) check(rec *queue.RunRecord) bool {
	if rec.Claimant != h.r.cfg.ID || rec.Status != workflows.StatusRunning {
		h.log.Warn("lost the claim on this run; stopping it", "claimant", rec.Claimant, "status", rec.Status)
		h.lost.Store(true)
		h.cancel(ErrAbandoned)
		return true
	}
	if rec.CancelRequested {
		h.cancel(ErrCancelled)
	}
	return false
}

// beat refreshes the claim; true when we lost the run.
func (h *heartbeat) beat(ctx context.Context) bool {
	for range 5 {
		rec, rev, err := h.r.deps.Runs.Get(ctx, h.id)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("heartbeat: reading run record", "err", err)
			}
			return false
		}
		if h.check(rec) {
			return true
		}
		h.mu.Lock()
		if h.steps != nil {
			rec.Steps = h.steps
		}
		if h.headSHA != "" {
			rec.HeadSHA = h.headSHA
		}
		h.mu.Unlock()
		rec.HeartbeatAt = h.r.now()
		_, err = h.r.deps.Runs.Update(ctx, rec, rev)
		if errors.Is(err, queue.ErrConflict) {
			continue
		}
		if err != nil && ctx.Err() == nil {
			h.log.Warn("heartbeat: updating run record", "err", err)
		}
		return false
	}
	return false
}
