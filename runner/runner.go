package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// RunStore is what the runner needs of the run records: the transitions
// it makes (the stores own how records change). *stores.RunStore
// satisfies it.
type RunStore interface {
	Claim(ctx context.Context, req *queue.RunRequest, c stores.ClaimSpec) (stores.ClaimResult, error)
	Heartbeat(ctx context.Context, id string, h stores.HeartbeatSpec) (*stores.RunRecord, error)
	Release(ctx context.Context, id, claimant string, attempt int, reason string) error
	Finish(ctx context.Context, id string, f stores.FinishSpec) error
	RequestCancel(ctx context.Context, id string) (*stores.RunRecord, error)
}

var _ RunStore = (*stores.RunStore)(nil)

// GroupLocks serializes the runs of a concurrency group across runners
// (Acquire, Renew, Release) and tells a cancel_in_progress group's runs
// which older ones to cancel (StartNewest, LeaveNewest).
// *stores.GroupStore satisfies it.
type GroupLocks interface {
	Acquire(ctx context.Context, l stores.GroupLock) (held bool, holder string, err error)
	Renew(ctx context.Context, l stores.GroupLock) error
	Release(ctx context.Context, l stores.GroupLock, keepPlace bool) error
	StartNewest(ctx context.Context, group, runID string, now time.Time) (older []string, newer string, err error)
	LeaveNewest(ctx context.Context, group, runID string) error
}

var _ GroupLocks = (*stores.GroupStore)(nil)

// Engine executes a claimed run's DAG. *engine.Engine satisfies it.
type Engine interface {
	Run(ctx context.Context, spec engine.RunSpec) *engine.Result
}

var _ Engine = (*engine.Engine)(nil)

// DefaultHeartbeat is Config.HeartbeatInterval's default.
const DefaultHeartbeat = 5 * time.Second

// StaleHeartbeats is how many heartbeats a claimant may miss before
// another runner takes its run over.
const StaleHeartbeats = 3

// DefaultStaleAfter is Config.StaleAfter's default for a heartbeat
// interval: StaleHeartbeats of them.
func DefaultStaleAfter(heartbeat time.Duration) time.Duration { return StaleHeartbeats * heartbeat }

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
	c.Concurrency = cmp.Or(c.Concurrency, queue.DefaultConcurrency)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, DefaultHeartbeat)
	c.StaleAfter = cmp.Or(c.StaleAfter, DefaultStaleAfter(c.HeartbeatInterval))
	c.PrepareRetry = cmp.Or(c.PrepareRetry, 10*time.Second)
	c.WorkflowRetry = cmp.Or(c.WorkflowRetry, 10*time.Second)
	c.WorkflowDeliveries = cmp.Or(c.WorkflowDeliveries, c.maxDeliver())
	c.GroupPoll = cmp.Or(c.GroupPoll, 250*time.Millisecond)
	c.StoreTimeout = cmp.Or(c.StoreTimeout, 10*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.Default())
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

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c Config) WithDefaults() Config { c.setDefaults(); return c }

// Validate reports a configuration the runner cannot work with, its
// defaults applied.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency must be at least 1, got %d", c.Concurrency))
	}
	// The claim's heartbeat is what a runner that stopped misses first:
	// it beats within the consumer's ack wait (queue's rule).
	if err := queue.CheckHeartbeat(c.HeartbeatInterval, c.ackWait()); err != nil {
		errs = append(errs, fmt.Errorf("heartbeat interval: %w", err))
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
	Engine     Engine         // executes the DAG (*engine.Engine)
	Groups     GroupLocks     // concurrency group locks
}

// Runner claims run requests from the queue and executes them.
type Runner struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	tracer trace.Tracer

	mu     sync.Mutex
	active map[string]*activeRun // runs executing in this process
}

// activeRun is an attempt executing in this process: what stops it. A
// delivery of a run that has an entry here is handed back (ErrRunningHere).
// An attempt leaves r.active only when its entry is still its own, should
// a later attempt of the same run have started here all the same (a
// delivery that passed that check just before the earlier one's entry was
// made).
type activeRun struct {
	cancel context.CancelCauseFunc
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
		active: map[string]*activeRun{}}, nil
}

// ID is the claimant name this runner writes into run records.
func (r *Runner) ID() string { return r.cfg.ID }

// Start consumes run requests from q until the returned consumer is closed
// (Close cancels in-flight runs with queue.ErrShuttingDown; they are handed
// back to the queue).
//
// The runner hears the cancel requests of the runs it executes, from any
// process, on its own subject (queue.CancelNotices) until ctx ends.
func (r *Runner) Start(ctx context.Context, q *queue.Queue) (*queue.Consumer, error) {
	stop, err := q.CancelNotices(r.cfg.ID, r.cancelActive)
	if err != nil {
		return nil, fmt.Errorf("starting runner %s: %w", r.cfg.ID, err)
	}
	c, err := q.Consume(ctx, r.cfg.Consumer, r.Handle)
	if err != nil {
		stop()
		return nil, fmt.Errorf("starting runner %s: %w", r.cfg.ID, err)
	}
	context.AfterFunc(ctx, stop)
	return c, nil
}

// cancelActive stops runID if it executes here (its cancel was requested:
// the record says so).
func (r *Runner) cancelActive(runID string) {
	r.mu.Lock()
	a := r.active[runID]
	r.mu.Unlock()
	if a != nil {
		a.cancel(ErrCancelled)
	}
}

// ErrRunFinished is returned by Cancel for a run that already ended.
var ErrRunFinished = stores.ErrRunFinished

// Cancel asks for a run to stop. A queued run is marked cancelled at once
// (its message is acked and skipped when delivered); a running one gets
// CancelRequested, which its claimant (this process or another) sees and
// acts on: the run ends cancelled after its cancel and exit handlers. When
// this process is the claimant it stops the run right away.
// stores.ErrNotFound: no such run; ErrRunFinished: it already ended.
func (r *Runner) Cancel(ctx context.Context, runID string) error {
	if _, err := r.deps.Runs.RequestCancel(ctx, runID); err != nil {
		return err
	}
	r.cancelActive(runID)
	return nil
}

// maxDeliver is the consumer's MaxDeliver (the queue's default when unset).
func (c *Config) maxDeliver() int {
	if c.Consumer.MaxDeliver > 0 {
		return c.Consumer.MaxDeliver
	}
	return queue.DefaultMaxDeliver
}

// ackWait is the consumer's AckWait (the queue's default when unset).
func (c *Config) ackWait() time.Duration {
	if c.Consumer.AckWait > 0 {
		return c.Consumer.AckWait
	}
	return queue.DefaultAckWait
}

func (r *Runner) now() time.Time { return r.cfg.Now().UTC() }

// storeCtx is a context for record writes that must happen even though ctx
// ended (final state, hand-back).
func (r *Runner) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StoreTimeout)
}

func (r *Runner) isActive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[id]
	return ok
}
