package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// errStepTimeout is the cause when a step's (or a handler's) context ends
// at its timeout.
var errStepTimeout = errors.New("step timed out")

// maxOutput caps a step's captured `output`.
const maxOutput = 1 << 20

// stepOutcome is how a step's attempts ended.
type stepOutcome struct {
	status   workflows.Status
	exit     *int   // exit code of the last attempt; nil when none ran
	attempts int    // how many attempts ran
	err      string // why it failed or stopped; "" when it succeeded
	executor string // where it ran (executorName); "none" when it could not be routed
}

// execStep runs one step (idx in x.states) with its retry policy and
// timeout, and records its state.
func (x *execution) execStep(ctx context.Context, idx int, st workflows.Step, extra []workflows.EnvVar) {
	ctx, span := x.e.tracer.Start(ctx, "step", trace.WithAttributes(
		telemetry.AttrWorkflow.String(x.wf.Name), telemetry.AttrStepID.String(st.ID)))
	defer span.End()
	started := x.now()
	x.mu.Lock()
	x.states[idx].Status = workflows.StatusRunning
	x.states[idx].StartedAt = &started
	x.mu.Unlock()
	x.changed()

	out := x.attempts(ctx, &st, extra)
	x.scanResults(ctx, &st, &out)

	finished := x.now()
	x.mu.Lock()
	s := &x.states[idx]
	s.Status = out.status
	s.Attempts = out.attempts
	s.FinishedAt = &finished
	if out.exit != nil {
		s.ExitCode = out.exit
	}
	s.Error = x.red.String(out.err)
	x.mu.Unlock()
	x.changed()

	// The error text stays in the record: it may quote the step's output.
	span.SetAttributes(telemetry.AttrExecutor.String(out.executor), telemetry.AttrStatus.String(string(out.status)),
		telemetry.AttrAttempts.Int(out.attempts))
	if out.exit != nil {
		span.SetAttributes(telemetry.AttrExitCode.Int(*out.exit))
	}
	if out.status == workflows.StatusFailed {
		span.SetStatus(codes.Error, "step failed")
	}
	x.e.cfg.Metrics.StepFinished(x.wf.Name, out.executor, finished.Sub(started))
}

// executorName is where a step routed to r runs, for metrics and spans:
// host, container (its own), root_container, sbx, or none.
func executorName(st *workflows.Step, r route) string {
	switch {
	case r.err != nil:
		return "none"
	case st.Container != nil:
		return "container"
	case r.place == placeSandbox:
		return "sbx"
	case r.place == placeContainer:
		return "root_container"
	}
	return "host"
}

// runnable says why a step routed to r cannot run on this runner, or nil.
func (x *execution) runnable(st *workflows.Step, r route) error {
	if r.err != nil {
		return r.err
	}
	if st.Action == workflows.ActionHarnessRun {
		if st.Harness == nil {
			return fmt.Errorf("step %s is a harness.run step without a provider", st.ID)
		}
		if x.e.cfg.Providers.Harness == nil {
			return fmt.Errorf("step %s is a harness.run step but this runner has no harness runner configured", st.ID)
		}
	}
	return nil
}

// attempts runs the step until it succeeds or its retry policy gives up.
func (x *execution) attempts(ctx context.Context, st *workflows.Step, extra []workflows.EnvVar) stepOutcome {
	r := x.routeFor(st, primaryHarness(x.wf, st))
	out := x.attemptsOn(ctx, st, r, extra)
	out.executor = executorName(st, r)
	return out
}

// attemptsOn is attempts on the route of the step's first attempt.
func (x *execution) attemptsOn(ctx context.Context, st *workflows.Step, r route, extra []workflows.EnvVar) stepOutcome {
	if err := x.runnable(st, r); err != nil {
		x.stepSysf(st.ID, "%s", err)
		return stepOutcome{status: workflows.StatusFailed, err: err.Error()}
	}
	stdout := x.logWriter(st.ID, contract.StreamStdout)
	stderr := x.logWriter(st.ID, contract.StreamStderr)
	defer stdout.Close()
	defer stderr.Close()
	s := &stepRun{x: x, st: st, extra: extra, stdout: stdout, stderr: stderr}
	if st.Output != "" {
		s.capture = &cappedBuffer{limit: maxOutput}
	}
	if len(st.Preconditions) > 0 {
		// Command conditions run where the step's first attempt runs.
		a := s.attempt(r)
		check := &conditionCheck{exec: a.Exec, req: a.Base, lookup: a.Lookup}
		reason, err := check.unmet(ctx, st.Preconditions)
		switch {
		case err != nil && ctx.Err() != nil:
			return stepOutcome{status: stopped(ctx), err: x.stoppedMsg(ctx, st)}
		case err != nil:
			x.stepSysf(st.ID, "failed: %s", err)
			return stepOutcome{status: workflows.StatusFailed, err: err.Error()}
		case reason != "":
			x.stepSysf(st.ID, "skipped: %s", reason)
			return stepOutcome{status: workflows.StatusSkipped, err: reason}
		}
	}
	return s.run(ctx, st)
}

// primaryHarness is the harness of wf's harness.run step st's first attempt,
// nil for a `run:` step.
func primaryHarness(wf *workflows.Workflow, st *workflows.Step) *workflows.Harness {
	if st.Harness == nil {
		return nil
	}
	if h, ok := wf.LookupHarness(st.Harness.Provider); ok {
		return &h
	}
	return nil
}

// stepRun is one step being executed: its logs, extra environment and the
// capture of its `output`.
type stepRun struct {
	x              *execution
	st             *workflows.Step
	extra          []workflows.EnvVar // HOOKRUN_RUN_STATUS for handlers
	stdout, stderr io.Writer
	capture        *cappedBuffer // nil: the step has no `output`
}

// attempt is where a command of the step runs when routed to r: the
// executor and its request (everything but Argv), and the lookup of
// ${NAME} in harness prompts there.
func (s *stepRun) attempt(r route) contract.Attempt {
	x, st := s.x, s.st
	env := x.stepEnv(st, r, s.extra)
	var out io.Writer = s.stdout
	exec := r.exec
	if s.capture != nil {
		out = io.MultiWriter(s.stdout, s.capture)
		exec = resetOnExec{exec, s.capture} // a fallback's output replaces the failed attempt's
	}
	return contract.Attempt{Exec: exec, Lookup: env.lookup, Base: contract.ExecRequest{
		RunID:       x.spec.ID,
		StepID:      st.ID,
		Env:         env.vars,
		SecretNames: x.secrets.names,
		Dir:         x.stepDir(st, r),
		Workspace:   x.spec.Workspace,
		Home:        x.spec.Home,
		TmpDir:      x.spec.TmpDir,
		EventFile:   x.eventFile,
		Results:     x.resultsDir.path,
		Container:   st.Container,
		Stdout:      out,
		Stderr:      s.stderr,
		Grace:       x.e.cfg.Grace,
	}}
}

// route is contract.HarnessRoute for the step: each attempt where its own
// harness runs.
func (s *stepRun) route(h workflows.Harness) (contract.Attempt, error) {
	r := s.x.routeFor(s.st, &h)
	if r.err != nil {
		return contract.Attempt{}, r.err
	}
	return s.attempt(r), nil
}

// run makes the attempts the retry policy allows, logs how the step ended
// and keeps its output.
func (s *stepRun) run(ctx context.Context, st *workflows.Step) stepOutcome {
	x := s.x
	retry := newRetry(st.RetryPolicy)
	var out stepOutcome
	for attempt := 1; attempt <= retry.attempts; attempt++ {
		if s.capture != nil {
			s.capture.Reset()
		}
		if attempt > 1 {
			x.stepSysf(st.ID, "attempt %d of %d in %s", attempt, retry.attempts, retry.interval)
			if !retry.wait(ctx) {
				return stepOutcome{status: stopped(ctx), exit: out.exit, attempts: attempt - 1, err: x.stoppedMsg(ctx, st)}
			}
		}
		out = s.once(ctx, st)
		out.attempts = attempt
		if out.status != workflows.StatusFailed || ctx.Err() != nil || !retryable(st, *out.exit) {
			break
		}
		if attempt < retry.attempts {
			x.stepSysf(st.ID, "attempt %d failed: %s", attempt, out.err)
		}
	}
	if out.status == workflows.StatusFailed || out.status == workflows.StatusCancelled {
		x.stepSysf(st.ID, "%s: %s", out.status, out.err)
	}
	if out.status == workflows.StatusFailed && st.ContinueOn.MarkSuccess && st.ContinueOn.Tolerates(out.exit) {
		x.stepSysf(st.ID, "continue_on.mark_success: the failure counts as succeeded")
		out.status, out.err = workflows.StatusSucceeded, ""
	}
	if s.capture != nil && out.status == workflows.StatusSucceeded {
		x.keepOutput(st, s.capture)
	}
	return out
}

// once makes one attempt, bounded by the step's timeout.
func (s *stepRun) once(ctx context.Context, st *workflows.Step) stepOutcome {
	x := s.x
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if st.Timeout > 0 {
		sctx, cancel = context.WithTimeoutCause(ctx, st.Timeout, errStepTimeout)
	}
	defer cancel()
	var res contract.ExecResult
	var err error
	if st.Action == workflows.ActionHarnessRun {
		res, err = x.e.cfg.Providers.Harness.RunHarness(sctx, s.route, x.wf, st.Harness)
	} else {
		a := s.attempt(x.routeFor(st, nil))
		a.Base.Argv = []string{"sh", "-c", st.Run}
		res, err = a.Exec.Exec(sctx, a.Base)
	}
	code := res.ExitCode
	out := stepOutcome{exit: &code}
	switch {
	case err == nil && code == 0:
		out.status = workflows.StatusSucceeded
	case sctx.Err() != nil:
		out.status, out.err = stopped(sctx), x.stoppedMsg(sctx, st)
	case err != nil:
		out.status, out.err = workflows.StatusFailed, err.Error()
	default:
		out.status, out.err = workflows.StatusFailed, "exit status "+strconv.Itoa(code)
	}
	return out
}

// keepOutput stores the captured output of a step that succeeded.
func (x *execution) keepOutput(st *workflows.Step, capture *cappedBuffer) {
	val := x.red.String(strings.TrimSpace(capture.String()))
	if capture.truncated {
		x.stepSysf(st.ID, "output %s truncated at %d bytes", st.Output, maxOutput)
	}
	x.mu.Lock()
	x.setOutput(st.Output, val)
	x.mu.Unlock()
}

// setOutput stores an output; a later step's output of the same name wins.
// Called with x.mu held.
func (x *execution) setOutput(name, val string) {
	for i := range x.outputs {
		if x.outputs[i].Name == name {
			x.outputs[i].Value = val
			return
		}
	}
	x.outputs = append(x.outputs, workflows.EnvVar{Name: name, Value: val})
}

// retry is a step's retry policy in progress.
type retry struct {
	attempts int           // at most, the first included
	interval time.Duration // before the next attempt
	policy   *workflows.RetryPolicy
}

func newRetry(rp *workflows.RetryPolicy) *retry {
	r := &retry{attempts: 1, policy: rp}
	if rp != nil {
		r.attempts += max(rp.Limit, 0)
		r.interval = rp.Interval
	}
	return r
}

// wait waits for the interval, then lengthens it by the backoff; false when
// ctx ended first.
func (r *retry) wait(ctx context.Context) bool {
	t := time.NewTimer(r.interval)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.C:
	}
	if rp := r.policy; rp.Backoff > 1 {
		r.interval = time.Duration(float64(r.interval) * rp.Backoff)
		if rp.MaxInterval > 0 && r.interval > rp.MaxInterval {
			r.interval = rp.MaxInterval
		}
	}
	return true
}

// retryable reports whether the retry policy covers this failure.
func retryable(st *workflows.Step, code int) bool {
	rp := st.RetryPolicy
	if rp == nil || rp.Limit <= 0 {
		return false
	}
	return len(rp.ExitCodes) == 0 || slices.Contains(rp.ExitCodes, code)
}

// stopped classifies a step stopped by its context: a step or run timeout
// is a failure, anything else (API cancel, newer run, shutdown) a cancel.
func stopped(ctx context.Context) workflows.Status {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errStepTimeout), errors.Is(cause, errRunTimeout):
		return workflows.StatusFailed
	default:
		return workflows.StatusCancelled
	}
}

func (x *execution) stoppedMsg(ctx context.Context, st *workflows.Step) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errStepTimeout):
		if st.Timeout > 0 {
			return fmt.Sprintf("timed out after %s", st.Timeout)
		}
		return "timed out"
	case errors.Is(cause, errRunTimeout):
		return fmt.Sprintf("stopped: run timed out after %s", x.timeout())
	case errors.Is(cause, contract.ErrAbandoned):
		return "stopped: " + contract.ErrAbandoned.Error()
	default:
		return "cancelled"
	}
}

// resetOnExec empties the output capture before each command, so that the
// output of a harness step is the one of the provider that ran last.
type resetOnExec struct {
	contract.Executor
	capture *cappedBuffer
}

func (e resetOnExec) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	e.capture.Reset()
	return e.Executor.Exec(ctx, req)
}

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	limit     int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - b.buf.Len()
	if len(p) > room {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *cappedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
	b.truncated = false
}

var _ contract.Executor = resetOnExec{}
