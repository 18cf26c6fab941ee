package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Providers are the implementations the engine executes steps with. The
// engine never imports providers/*: cmd/hookrun (or a test) fills this in.
type Providers struct {
	Host          contract.Executor      // steps without container or sandbox; required
	Containers    contract.Executor      // steps with their own `container:`; nil: such a step fails with a clear error
	RootContainer contract.Sandbox       // the workflow's root `container:`; nil: such a workflow fails with a clear error
	SBX           contract.Sandbox       // the workflow's `sandbox:`; nil: such a workflow fails with a clear error
	Harness       contract.HarnessRunner // harness.run steps; nil: such a step fails with a clear error
}

// EngineConfig configures an Engine.
type EngineConfig struct {
	Providers Providers                   // where steps run
	Logs      contract.LogSink            // step output; nil: discarded
	Reporter  contract.Reporter           // where the run is shown; nil: not reported
	LookupEnv func(string) (string, bool) // the runner's environment (secrets, base env); default os.LookupEnv
	// Redact are values masked in every run's logs, errors and report
	// besides the workflow's secrets: the server's own credentials, which
	// no step should see, masked should one leak anyway.
	Redact           []string
	Logger           *slog.Logger     // operator log; default slog.Default()
	ProgressInterval time.Duration    // at most one progress report per run this often; default 2s
	Grace            time.Duration    // SIGTERM → SIGKILL on timeout or cancel; 0: the executor's default
	HandlerTimeout   time.Duration    // bound for a handler_on step without its own timeout; default 5m
	ReportTimeout    time.Duration    // bound for one Reporter call; default 30s
	Now              func() time.Time // clock; default time.Now
}

func (c *EngineConfig) setDefaults() {
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
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
}

// Validate reports a configuration the engine cannot work with.
func (c *EngineConfig) Validate() error {
	if c.Providers.Host == nil {
		return errors.New("validating engine config: providers.host is required")
	}
	if c.Grace < 0 {
		return errors.New("validating engine config: grace must not be negative")
	}
	return nil
}

// Engine executes one validated Workflow for one Event in a prepared
// workspace. It is safe for concurrent use by several runs.
type Engine struct {
	cfg EngineConfig
}

// NewEngine returns an engine for cfg.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg}, nil
}

// RunSpec is one run to execute.
type RunSpec struct {
	ID        string              // run id
	Attempt   int                 // 1 for the first execution
	Workflow  *workflows.Workflow // validated
	Event     *workflows.Event    // what triggered it; nil: an empty event
	Workspace string              // host directory the steps work in; "" = none (no event file is written)
	Home      string              // the run's own HOME for host steps; "" keeps the runner's
	TmpDir    string              // the run's own TMPDIR for host steps; "" keeps the runner's
	HeadSHA   string              // resolved head (checkout), else the event's
	Ref       contract.ReportRef  // what an earlier attempt's reporter stored
	// Refused, when set, fails the run with this message without executing
	// anything: no session, no step, no handler; only the final report is
	// sent (queue.RunRequest.Refused).
	Refused string
	// OnChange is called with a copy of all step states after every change
	// (from the step's goroutine; keep it short).
	OnChange func(steps []workflows.StepState)
}

// Result is how a run ended. Every string in it is redacted.
type Result struct {
	Status      workflows.Status      `json:"status"` // succeeded | failed | cancelled
	Steps       []workflows.StepState `json:"steps"`  // DAG steps in file order, then the handlers that ran
	Outputs     []workflows.EnvVar    `json:"outputs,omitempty"`
	Error       string                `json:"error,omitempty"`
	Body        string                `json:"body,omitempty"`         // report.body rendered
	ReportError string                `json:"report_error,omitempty"` // last reporting failure; never fails the run
	Ref         contract.ReportRef    `json:"ref,omitzero"`
	StartedAt   time.Time             `json:"started_at"`
	FinishedAt  time.Time             `json:"finished_at"`
	// Abandoned is set when the run was stopped because the runner is
	// shutting down or lost its claim: no handler ran and no final report was
	// sent; another runner will execute it again.
	Abandoned bool `json:"abandoned,omitempty"`
}

// Duration is how long the run took.
func (r *Result) Duration() time.Duration { return r.FinishedAt.Sub(r.StartedAt) }

// Causes of the engine's own timeouts (the run's causes are contract's
// ErrCancelled and ErrAbandoned).
var (
	errRunTimeout  = errors.New("run timed out")
	errStepTimeout = errors.New("step timed out")
)

// maxOutput caps a step's captured `output`.
const maxOutput = 1 << 20

// execution is the state of one run in progress.
type execution struct {
	e    *Engine
	spec RunSpec
	wf   *workflows.Workflow
	ev   *workflows.Event
	red  *Redactor

	secrets        []workflows.EnvVar
	secretNames    []string
	missingSecrets []string

	session     contract.Session
	sessionKind string // "container", "sandbox" or ""
	sandboxName string

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
	x := &execution{e: e, spec: spec, wf: spec.Workflow, ev: spec.Event}
	if x.ev == nil {
		x.ev = &workflows.Event{}
	}
	if spec.Attempt == 0 {
		x.spec.Attempt = 1
	}
	return x.run(ctx)
}

func (x *execution) now() time.Time { return x.e.cfg.Now().UTC() }

func (x *execution) run(ctx context.Context) *Result {
	if x.spec.Refused != "" {
		return x.refuse(ctx)
	}
	res := &Result{StartedAt: x.now()}
	x.loadSecrets()
	x.sys = x.logWriter(RunLogStep, StreamSystem)
	defer x.sys.Close()
	for _, name := range x.missingSecrets {
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

	runCtx := ctx
	if x.wf.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, x.wf.Timeout, errRunTimeout)
		defer cancel()
	}

	var runErr error
	if err := x.writeEventFile(); err != nil {
		runErr = err
	} else if err := x.openSession(runCtx); err != nil {
		runErr = err
	} else {
		x.runDAG(runCtx)
	}

	// Decide the status.
	cause := context.Cause(runCtx)
	switch {
	case runCtx.Err() != nil && errors.Is(cause, ErrAbandoned):
		res.Status = workflows.StatusCancelled
		res.Abandoned = true
		runErr = ErrAbandoned
	case runCtx.Err() != nil && errors.Is(cause, errRunTimeout):
		res.Status = workflows.StatusFailed
		runErr = fmt.Errorf("run timed out after %s", x.wf.Timeout)
	case runCtx.Err() != nil:
		res.Status = workflows.StatusCancelled
		runErr = ErrCancelled
	case runErr != nil:
		res.Status = workflows.StatusFailed
	default:
		res.Status = workflows.StatusSucceeded
		if failed := x.failedStep(); failed != nil {
			res.Status = workflows.StatusFailed
			msg := "step " + failed.ID + " failed"
			if failed.Error != "" {
				msg += ": " + failed.Error
			}
			runErr = errors.New(msg)
		}
	}
	x.markUnfinished(res.Status)

	if !res.Abandoned {
		x.runHandlers(ctx, res.Status)
	}
	x.closeSession(ctx)

	res.FinishedAt = x.now()
	x.mu.Lock()
	res.Steps = append([]workflows.StepState(nil), x.states...)
	res.Outputs = append([]workflows.EnvVar(nil), x.outputs...)
	x.mu.Unlock()
	if runErr != nil {
		res.Error = x.red.String(runErr.Error())
		x.sysf("run %s: %s", res.Status, res.Error)
	}
	if !res.Abandoned && x.wf.Report.Body != "" {
		res.Body = x.red.String(workflows.Expand(x.wf.Report.Body, x.reportLookup(res.Status)))
	}
	if x.progress != nil {
		x.progress.finish(ctx, res)
	} else {
		res.Ref = x.spec.Ref
	}
	return res
}

// refuse ends a run that must not execute (RunSpec.Refused): every step is
// skipped, the run fails with the reason, and the final report shows it.
// Nothing of the workflow runs, its handlers included.
func (x *execution) refuse(ctx context.Context) *Result {
	x.red = NewRedactor()
	x.sys = x.logWriter(RunLogStep, StreamSystem)
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
		res.Ref, res.ReportError = p.ref, p.lastErr
	}
	return res
}

// loadSecrets reads the workflow's secrets from the runner's environment.
// A secret that is not set is reported in the run log; steps see it unset.
func (x *execution) loadSecrets() {
	var values []string
	for _, name := range x.wf.Secrets {
		v, ok := x.e.cfg.LookupEnv(name)
		if !ok {
			x.missingSecrets = append(x.missingSecrets, name)
			continue
		}
		x.secrets = append(x.secrets, workflows.EnvVar{Name: name, Value: v})
		x.secretNames = append(x.secretNames, name)
		values = append(values, v)
	}
	x.red = NewRedactor(append(values, x.e.cfg.Redact...)...)
}

// logWriter returns a redacting line writer for one stream of one step.
func (x *execution) logWriter(stepID, stream string) io.WriteCloser {
	var dst io.Writer
	if x.e.cfg.Logs != nil {
		dst = x.e.cfg.Logs.Writer(x.spec.ID, stepID, stream)
	}
	return newLineWriter(dst, x.red)
}

// sysf writes one line to the run's system log.
func (x *execution) sysf(format string, args ...any) {
	if x.sys == nil {
		return
	}
	fmt.Fprintf(x.sys, format+"\n", args...)
}

// stepSysf writes one line to a step's system stream (retries, failures,
// skips, truncation). These are rare, so the writer is opened per line.
func (x *execution) stepSysf(stepID, format string, args ...any) {
	w := x.logWriter(stepID, StreamSystem)
	fmt.Fprintf(w, format+"\n", args...)
	w.Close()
}

// writeEventFile writes the raw payload to <workspace>/.hookrun/event.json
// for HOOKRUN_EVENT_PATH.
func (x *execution) writeEventFile() error {
	if x.spec.Workspace == "" {
		return nil
	}
	raw := []byte(x.ev.Raw)
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(x.ev); err != nil {
			return fmt.Errorf("encoding event: %w", err)
		}
	}
	dir := filepath.Join(x.spec.Workspace, ".hookrun")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing event file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "event.json"), raw, 0o644); err != nil {
		return fmt.Errorf("writing event file: %w", err)
	}
	return nil
}

// openSession opens the workflow's sandbox or root container, if any.
func (x *execution) openSession(ctx context.Context) error {
	var sb contract.Sandbox
	var what string
	pl := placeContainer
	switch {
	case x.wf.Sandbox != nil:
		if x.e.cfg.Providers.SBX == nil {
			return fmt.Errorf("opening sandbox: this runner has no %q sandbox provider configured", x.wf.Sandbox.Provider)
		}
		sb, what, x.sessionKind, x.sandboxName = x.e.cfg.Providers.SBX, "sandbox", "sandbox", contract.SandboxName(x.spec.ID)
		pl = placeSandbox
	case x.wf.Container != nil:
		if x.e.cfg.Providers.RootContainer == nil {
			return errors.New("opening root container: this runner has no container provider configured")
		}
		sb, what, x.sessionKind = x.e.cfg.Providers.RootContainer, "root container", "container"
	default:
		return nil
	}
	env := x.prefix(pl)
	s, err := sb.Open(ctx, contract.OpenRequest{
		RunID:     x.spec.ID,
		Workspace: x.spec.Workspace,
		Workflow:  x.wf,
		Env:       append([]workflows.EnvVar(nil), env.vars...),
		Stdout:    x.sys,
		Stderr:    x.sys,
	})
	if err != nil {
		x.sessionKind, x.sandboxName = "", ""
		return fmt.Errorf("opening %s: %w", what, err)
	}
	x.session = s
	return nil
}

// closeSession closes the session whatever happened, with a fresh context.
func (x *execution) closeSession(ctx context.Context) {
	if x.session == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := x.session.Close(cctx); err != nil {
		x.sysf("closing %s: %s", x.sessionKind, x.red.String(err.Error()))
		x.e.cfg.Logger.Warn("closing run session", "run", x.spec.ID, "kind", x.sessionKind, "err", x.red.String(err.Error()))
	}
}

// place is where a step runs, as far as its environment is concerned.
type place int

const (
	placeHost      place = iota // host paths, the base environment
	placeContainer              // the workspace is at /workspace; the image brings PATH and HOME
	placeSandbox                // host paths (sbx clones the workspace at its path); the VM brings PATH and HOME
	placeCount
)

// prefix returns the environment every step of the run at p starts from.
func (x *execution) prefix(p place) *envList {
	x.prefixOnce.Do(func() {
		for i := range x.prefixes {
			x.prefixes[i] = x.buildPrefix(place(i))
		}
	})
	return x.prefixes[p]
}

func (x *execution) buildPrefix(p place) *envList {
	evEnv := x.ev.Env()
	l := newEnvList(len(baseEnvNames) + len(x.wf.Env) + len(x.wf.Params) + len(evEnv) + 6)
	workspace := x.spec.Workspace
	host := p != placeContainer
	if p == placeHost {
		for _, n := range baseEnvNames {
			if v, ok := x.e.cfg.LookupEnv(n); ok {
				l.set(n, v)
			}
		}
		if x.spec.Home != "" {
			l.set("HOME", x.spec.Home)
		}
		if x.spec.TmpDir != "" {
			l.set("TMPDIR", x.spec.TmpDir)
		}
	} else if p == placeContainer && workspace != "" {
		workspace = containerWorkspace
	}
	run := newEnvList(len(evEnv) + 6)
	run.setAll(evEnv)
	run.set("HOOKRUN_RUN_ID", x.spec.ID)
	run.set("HOOKRUN_WORKFLOW", x.wf.Name)
	run.set("HOOKRUN_WORKSPACE", workspace)
	eventPath := ""
	if workspace != "" {
		if host {
			eventPath = filepath.Join(workspace, ".hookrun", "event.json")
		} else {
			eventPath = path.Join(workspace, ".hookrun", "event.json")
		}
	}
	run.set("HOOKRUN_EVENT_PATH", eventPath)
	run.set("HOOKRUN_SANDBOX", x.sandboxName)
	if x.spec.HeadSHA != "" {
		run.set("HOOKRUN_HEAD_SHA", x.spec.HeadSHA)
	}
	l.expandAllWith(x.wf.Env, run)
	l.expandAllWith(x.wf.Params, run)
	l.setAll(run.vars)
	return l
}

// failedStep returns the first DAG step that failed without continue_on.failed.
func (x *execution) failedStep() *workflows.StepState {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range x.states {
		if x.states[i].Status == workflows.StatusFailed && !x.wf.Steps[i].ContinueOn.Failed {
			s := x.states[i]
			return &s
		}
	}
	return nil
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

// reportLookup resolves ${NAME} in report.body: step outputs, the run's
// HOOKRUN_* variables and HOOKRUN_RUN_STATUS. Secrets are not resolvable.
func (x *execution) reportLookup(status workflows.Status) func(string) (string, bool) {
	l := x.prefix(placeHost).clone(len(x.outputs) + 1)
	x.mu.Lock()
	l.setAll(x.outputs)
	x.mu.Unlock()
	l.set("HOOKRUN_RUN_STATUS", string(status))
	return func(name string) (string, bool) {
		if !strings.HasPrefix(name, "HOOKRUN_") && !x.isOutput(name) && !x.isWorkflowVar(name) {
			return "", false
		}
		return l.lookup(name)
	}
}

func (x *execution) isOutput(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, o := range x.outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

func (x *execution) isWorkflowVar(name string) bool {
	for _, list := range [][]workflows.EnvVar{x.wf.Env, x.wf.Params} {
		for _, v := range list {
			if v.Name == name {
				return true
			}
		}
	}
	return false
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
