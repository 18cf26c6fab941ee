package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/results"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// Providers are the implementations the engine executes steps with. The
// engine never imports providers/*: internal/app (or a test) fills this in.
type Providers struct {
	Host          contract.Executor      // steps without container or sandbox; required
	Containers    contract.Executor      // steps with their own `container:`; nil: such a step fails with a clear error
	RootContainer contract.Sandbox       // the workflow's root `container:`; nil: such a workflow fails with a clear error
	SBX           contract.Sandbox       // the workflow's `sandbox:`; nil: such a workflow fails with a clear error
	Harness       contract.HarnessRunner // harness.run steps; nil: such a step fails with a clear error
	// Deliverer pushes the commits an agent made in the workflow's sandbox
	// (sandbox.push); nil: they are not delivered, and the report says so.
	Deliverer contract.Deliverer
}

// Config configures an Engine.
type Config struct {
	Providers Providers         // where steps run
	Logs      contract.LogSink  // step output; nil: discarded
	Reporter  contract.Reporter // where the run is shown; nil: not reported
	// Outbox keeps a final report that could not be delivered within
	// ReportTimeout, to be delivered later (runner.Outbox); nil: it is dropped.
	Outbox    ReportKeeper
	LookupEnv func(string) (string, bool) // the runner's environment (secrets, base env); default os.LookupEnv
	// Redact are values masked in every run's logs, errors and report
	// besides the workflow's secrets: the server's own credentials, which
	// no step should see, masked should one leak anyway.
	Redact []string
	// SbxHostEnv is what a harness that runs sbx itself on the host (Dagu's
	// long-lived sandbox pattern) gets from the runner's environment over a
	// host step's own, so that sbx finds its login state and its engine:
	// HOME, XDG_* and DOCKER_* variables and PATH, nothing secret. The
	// composition root fills it in (sbx.HostEnv); nil: nothing more.
	SbxHostEnv       []workflows.EnvVar
	Logger           *slog.Logger  // operator log; default slog.Default()
	ProgressInterval time.Duration // at most one progress report per run this often; default 2s
	Grace            time.Duration // SIGTERM → SIGKILL on timeout or cancel; 0: the executor's default
	HandlerTimeout   time.Duration // bound for a handler_on step without its own timeout; default 5m
	// DefaultTimeout bounds a run whose workflow sets no timeout of its own;
	// 0: no bound. The server sets runner.default_timeout (internal/app).
	DefaultTimeout time.Duration
	ReportTimeout  time.Duration    // bound for one Reporter call; default 30s
	Now            func() time.Time // clock; default time.Now
	// Tracer starts a "step" span per step and a "report" span per
	// Reporter call, in the trace of the run's context; default a no-op.
	Tracer trace.TracerProvider
	// Metrics counts step durations and report failures (runner.Metrics);
	// nil: none.
	Metrics Observer
}

// ReportKeeper keeps a final report the engine could not deliver in time,
// to be delivered later. runner.Outbox satisfies it.
type ReportKeeper interface {
	Keep(ctx context.Context, r *contract.RunReport, cause error) error
}

// Observer counts what the engine measures: step durations (by workflow
// and executor) and reports the forge did not take (by forge and phase).
// runner.Metrics satisfies it.
type Observer interface {
	StepFinished(workflow, executor string, d time.Duration)
	ReportFailed(forge workflows.Forge, phase string)
}

// noObserver counts nothing: the Observer of a Config without Metrics.
type noObserver struct{}

func (noObserver) StepFinished(string, string, time.Duration) {}
func (noObserver) ReportFailed(workflows.Forge, string)       {}

var _ Observer = noObserver{}

func (c *Config) setDefaults() {
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = 2 * time.Second
	}
	if c.HandlerTimeout <= 0 {
		c.HandlerTimeout = 5 * time.Minute
	}
	if c.ReportTimeout <= 0 {
		c.ReportTimeout = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	if c.Metrics == nil {
		c.Metrics = noObserver{}
	}
}

// Validate reports a configuration the engine cannot work with.
func (c *Config) Validate() error {
	if c.Providers.Host == nil {
		return errors.New("validating engine config: providers.host is required")
	}
	if c.Grace < 0 {
		return errors.New("validating engine config: grace must not be negative")
	}
	if c.DefaultTimeout < 0 {
		return errors.New("validating engine config: default timeout must not be negative")
	}
	return nil
}

// Engine executes one validated Workflow for one Event in a prepared
// workspace. It is safe for concurrent use by several runs.
type Engine struct {
	cfg    Config
	tracer trace.Tracer
}

// New returns an engine for cfg.
func New(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, tracer: telemetry.Tracer(cfg.Tracer)}, nil
}

// RunSpec is one run to execute.
type RunSpec struct {
	ID        string              // run id
	Attempt   int                 // 1 for the first execution
	Workflow  *workflows.Workflow // validated
	Event     *workflows.Event    // what triggered it; nil: an empty event
	Workspace string              // host directory the steps work in; "" = none
	EventFile string              // host path the event file is written to, outside Workspace (contract.Workspace.EventFile); "" = a file of the run's own in TMPDIR
	Results   string              // the run's results folder, $HOOKRUN_RESULTS, outside Workspace (contract.Workspace.Results); "" = one of the run's own
	Home      string              // the run's own HOME for host steps; "" keeps the runner's
	TmpDir    string              // the run's own TMPDIR for host steps; "" keeps the runner's
	HeadSHA   string              // resolved head (checkout), else the event's
	// Params are values given at run time for the workflow's params
	// (workflows.Workflow.SetParams checked them): each replaces its
	// param's default. They are data, set as they are, never expanded.
	Params []workflows.EnvVar
	Ref    contract.ReportRef // what an earlier attempt's reporter stored
	// Refused, when set, fails the run with this message without executing
	// anything: no session, no step, no handler; only the final report is
	// sent (queue.RunRequest.Refused).
	Refused string
	// OnChange is called with a copy of all step states after every change
	// (from the step's goroutine; keep it short).
	OnChange func(steps []workflows.StepState)
	// OnEnd, when set, is called once the run's steps, handlers and
	// delivery are done and Result.FinishedAt is set, before the final
	// report (which may wait for a slow forge); not for an abandoned run,
	// nor a refused one. The runner frees the run's concurrency group
	// there, so that the group's next run does not wait for the report.
	OnEnd func()
}

// Result is how a run ended. Every string in it is redacted.
type Result struct {
	Status workflows.Status `json:"status"` // succeeded | failed | cancelled
	// TimedOut: the run failed because it ran past its timeout (the
	// workflow's, else Config.DefaultTimeout).
	TimedOut    bool                  `json:"timed_out,omitempty"`
	Steps       []workflows.StepState `json:"steps"` // DAG steps in file order, then the handlers that ran
	Outputs     []workflows.EnvVar    `json:"outputs,omitempty"`
	Error       string                `json:"error,omitempty"`
	Body        string                `json:"body,omitempty"`         // report.body rendered
	ReportError string                `json:"report_error,omitempty"` // last reporting failure; never fails the run
	Ref         contract.ReportRef    `json:"ref,omitzero"`
	// Delivery is what became of the agent's commits (sandbox.push); nil
	// when the run had nothing to deliver.
	Delivery *workflows.Delivery `json:"delivery,omitempty"`
	// Results are the findings and actions the steps left in
	// $HOOKRUN_RESULTS, redacted; nil when they left none.
	Results *contract.Results `json:"results,omitempty"`
	// Acted is what became of Results.Actions when the final report was
	// delivered during the run (forge.Report); nil otherwise (none asked,
	// or the report went to the outbox).
	Acted      *contract.ActionsOutcome `json:"acted,omitempty"`
	StartedAt  time.Time                `json:"started_at"`
	FinishedAt time.Time                `json:"finished_at"`
	// Abandoned is set when the run was stopped because the runner is
	// shutting down or lost its claim: no handler ran and no final report was
	// sent; another runner will execute it again.
	Abandoned bool `json:"abandoned,omitempty"`
}

// Duration is how long the run took.
func (r *Result) Duration() time.Duration { return r.FinishedAt.Sub(r.StartedAt) }

// errRunTimeout is the cause when a run's context ends at its timeout (the
// workflow's, else the engine's DefaultTimeout; the causes from outside are
// contract.ErrCancelled and contract.ErrAbandoned).
var errRunTimeout = errors.New("run timed out")

// execution is the state of one run in progress. Its methods are spread
// over the files of this package by job: schedule.go (the DAG), route.go
// (where a step runs), env.go (environments), attempt.go (one step's
// attempts), session.go (the sandbox or root container), handlers.go
// (handler_on), logs.go (run and step logs, redacted), rundir.go (the
// run's folders outside its workspace: the event file's and the steps'
// results), session.go also delivers the agent's commits; report.go (reporting).
type execution struct {
	e    *Engine
	spec RunSpec
	wf   *workflows.Workflow
	ev   *workflows.Event
	red  *Redactor

	secrets runSecrets

	session *runSession // nil: no sandbox or root container
	// sessionErr says why the workflow's sandbox or root container is not
	// open (no provider, Open failed, the run failed before): steps and
	// handlers that would run in it do not run elsewhere.
	sessionErr  error
	sandboxName string // HOOKRUN_SANDBOX
	skipped     string // why the run was skipped (its root preconditions); "" when it ran

	eventFile    string          // host path of the event file; "" until written
	ownEventFile bool            // the run made eventFile (writeEventFile) and removes it
	resultsDir   runDir          // the results folder
	results      *results.Reader // reads it after each step; nil until made

	prefixes   [placeCount]*envList // by place: (base +) workflow env + params + event + run vars
	prefixOnce sync.Once

	sys io.WriteCloser // run-level system log

	mu       sync.Mutex
	states   []workflows.StepState
	outputs  []workflows.EnvVar
	progress *progress
}

// Run executes spec and returns how it ended. It does not return an error:
// failures of steps, sandboxes and executors are the run's failure and are
// described in Result.Error and the step states.
func (e *Engine) Run(ctx context.Context, spec RunSpec) *Result {
	if spec.Workflow == nil {
		now := e.cfg.Now().UTC()
		return &Result{Status: workflows.StatusFailed, Error: "running: no workflow", StartedAt: now, FinishedAt: now}
	}
	x := &execution{e: e, spec: spec, wf: spec.Workflow, ev: spec.Event,
		resultsDir: runDir{what: "results folder"}}
	if x.ev == nil {
		x.ev = &workflows.Event{}
	}
	if spec.Attempt == 0 {
		x.spec.Attempt = 1
	}
	return x.run(ctx)
}

func (x *execution) now() time.Time { return x.e.cfg.Now().UTC() }

// timeout is the run's bound: the workflow's own timeout, else the engine's
// DefaultTimeout (0: none).
func (x *execution) timeout() time.Duration {
	if x.wf.Timeout > 0 {
		return x.wf.Timeout
	}
	return x.e.cfg.DefaultTimeout
}

// run executes the run: the DAG in its session, then the handlers, then the
// final report.
func (x *execution) run(ctx context.Context) *Result {
	if x.spec.Refused != "" {
		return x.refuse(ctx)
	}
	res := &Result{StartedAt: x.now()}
	x.start(ctx)
	defer x.sys.Close()
	defer x.removeOwnEventFile() // after the handlers and the session
	defer x.resultsDir.remove(x.e.cfg.Logger, x.spec.ID)

	runCtx := ctx
	if t := x.timeout(); t > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, t, errRunTimeout)
		defer cancel()
	}
	end := x.outcome(runCtx, x.execute(runCtx))
	x.markUnfinished(end.status)
	if !end.abandoned {
		if notRun := x.runHandlers(ctx, end.status); len(notRun) > 0 {
			end.err = withNotes(end.err, notRun)
		}
	}
	x.closeSession(ctx)
	res.Delivery = x.deliver(ctx, &end)
	x.finish(ctx, res, end)
	return res
}

// start loads the secrets, opens the run log, marks every step pending and
// sends the start report.
func (x *execution) start(ctx context.Context) {
	x.secrets, x.red = loadSecrets(x.wf.Secrets, x.e.cfg.LookupEnv, x.e.cfg.Redact)
	x.sys = x.logWriter(contract.RunLogStep, contract.StreamSystem)
	for _, name := range x.secrets.missing {
		x.sysf("secret %s is not set in the runner's environment; steps see it unset", name)
	}
	x.states = make([]workflows.StepState, len(x.wf.Steps))
	for i, st := range x.wf.Steps {
		x.states[i] = workflows.StepState{ID: st.ID, Status: workflows.StatusPending}
	}
	if x.e.cfg.Reporter != nil {
		x.progress = newProgress(x)
		x.progress.start(ctx)
	}
}

// execute writes the event file, checks the root preconditions (unmet: the
// run is skipped, x.skipped says why), opens the session and runs the DAG;
// its error is the run's failure before any step could run.
func (x *execution) execute(ctx context.Context) error {
	var err error
	x.eventFile, x.ownEventFile, err = writeEventFile(x.ev, x.spec.EventFile)
	if err == nil {
		x.results, err = openResults(&x.resultsDir, x.spec.Results, x.spec.Workspace, x.wf)
	}
	if err != nil {
		if pl, perr := x.plan(); pl != nil || perr != nil {
			x.sessionErr = fmt.Errorf("its sandbox or root container was not opened: %w", err)
		}
		return err
	}
	if len(x.wf.Preconditions) > 0 {
		reason, err := x.rootConditions().unmet(ctx, x.wf.Preconditions)
		if pl, perr := x.plan(); (err != nil || reason != "") && (pl != nil || perr != nil) {
			why := "did not hold"
			if err != nil {
				why = "could not be checked"
			}
			x.sessionErr = errors.New("its sandbox or root container was not opened: the run's preconditions " + why)
		}
		if err != nil {
			return err
		}
		if reason != "" {
			x.skipped = reason
			return nil
		}
	}
	if err := x.openSession(ctx); err != nil {
		return err
	}
	x.runDAG(ctx)
	return nil
}

// runEnd is how the DAG part of a run ended.
type runEnd struct {
	status    workflows.Status
	abandoned bool  // stopped with contract.ErrAbandoned: no handler, no final report
	timedOut  bool  // stopped at the run's timeout
	err       error // the run's error; nil when it succeeded
}

// outcome decides the run's status from how runCtx ended, the error of
// execute and the steps' states.
func (x *execution) outcome(runCtx context.Context, runErr error) runEnd {
	cause := context.Cause(runCtx)
	switch {
	case runCtx.Err() != nil && errors.Is(cause, contract.ErrAbandoned):
		return runEnd{status: workflows.StatusCancelled, abandoned: true, err: contract.ErrAbandoned}
	case runCtx.Err() != nil && errors.Is(cause, errRunTimeout):
		return runEnd{status: workflows.StatusFailed, timedOut: true, err: fmt.Errorf("run timed out after %s", x.timeout())}
	case runCtx.Err() != nil:
		return runEnd{status: workflows.StatusCancelled, err: contract.ErrCancelled}
	case runErr != nil:
		return runEnd{status: workflows.StatusFailed, err: runErr}
	case x.skipped != "":
		return runEnd{status: workflows.StatusSkipped, err: errors.New(x.skipped)}
	}
	failed, tolerated := x.failedStep()
	if failed == nil && tolerated {
		return runEnd{status: workflows.StatusPartiallySucceeded}
	}
	if failed == nil {
		return runEnd{status: workflows.StatusSucceeded}
	}
	msg := "step " + failed.ID + " failed"
	if failed.Error != "" {
		msg += ": " + failed.Error
	}
	return runEnd{status: workflows.StatusFailed, err: errors.New(msg)}
}

// finish fills in res from the run's end and sends the final report.
func (x *execution) finish(ctx context.Context, res *Result, end runEnd) {
	res.Status, res.Abandoned, res.TimedOut = end.status, end.abandoned, end.timedOut
	res.FinishedAt = x.now()
	x.mu.Lock()
	res.Steps = append([]workflows.StepState(nil), x.states...)
	res.Outputs = append([]workflows.EnvVar(nil), x.outputs...)
	x.mu.Unlock()
	if end.err != nil {
		res.Error = x.red.String(end.err.Error())
		x.sysf("run %s: %s", res.Status, res.Error)
	}
	if !res.Abandoned {
		res.Results = x.collectResults()
	}
	if !res.Abandoned && x.wf.Report.Body != "" {
		res.Body = x.red.String(workflows.Expand(x.wf.Report.Body, x.reportLookup(res.Status)))
	}
	if !res.Abandoned && x.spec.OnEnd != nil {
		x.spec.OnEnd()
	}
	if x.progress != nil {
		x.progress.finish(ctx, res)
	} else {
		res.Ref = x.spec.Ref
	}
}

// refuse ends a run that must not execute (RunSpec.Refused): every step is
// skipped, the run fails with the reason, and the final report shows it.
// Nothing of the workflow runs, its handlers included.
func (x *execution) refuse(ctx context.Context) *Result {
	x.red = NewRedactor()
	x.sys = x.logWriter(contract.RunLogStep, contract.StreamSystem)
	defer x.sys.Close()
	res := &Result{Status: workflows.StatusFailed, StartedAt: x.now(), Error: x.red.String(x.spec.Refused)}
	for _, st := range x.wf.Steps {
		res.Steps = append(res.Steps, workflows.StepState{ID: st.ID, Status: workflows.StatusSkipped})
	}
	x.states = append([]workflows.StepState(nil), res.Steps...)
	x.sysf("run %s: %s", res.Status, res.Error)
	res.FinishedAt = x.now()
	res.Ref = x.spec.Ref
	if x.e.cfg.Reporter != nil {
		p := newProgress(x)
		p.send(ctx, p.snapshot(contract.PhaseFinal, res.Status, res))
		res.Ref, res.ReportError, res.Acted = p.ref, p.lastErr, p.acted
	}
	return res
}

// failedStep returns the first DAG step that failed without its
// continue_on tolerating it, and whether a DAG step failed with it
// tolerating it (the run then partially succeeded, if nothing else failed).
func (x *execution) failedStep() (failed *workflows.StepState, tolerated bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, st := range x.wf.Steps {
		s := x.states[i]
		switch {
		case s.Status != workflows.StatusFailed:
		case st.ContinueOn.Tolerates(s.ExitCode):
			tolerated = true
		case failed == nil:
			failed = &s
		}
	}
	return failed, tolerated
}

// markUnfinished gives every step that never started a terminal state:
// cancelled when the run was cancelled, skipped otherwise.
func (x *execution) markUnfinished(runStatus workflows.Status) {
	x.mu.Lock()
	changed := false
	for i := range x.states {
		if !x.states[i].Status.Terminal() {
			if runStatus == workflows.StatusCancelled {
				x.states[i].Status = workflows.StatusCancelled
			} else {
				x.states[i].Status = workflows.StatusSkipped
			}
			changed = true
		}
	}
	x.mu.Unlock()
	if changed {
		x.changed()
	}
}

// changed tells whoever listens that step states changed.
func (x *execution) changed() {
	if x.spec.OnChange != nil {
		x.mu.Lock()
		snap := append([]workflows.StepState(nil), x.states...)
		x.mu.Unlock()
		x.spec.OnChange(snap)
	}
	if x.progress != nil {
		x.progress.notify()
	}
}
