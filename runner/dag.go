package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// dependencies returns, for each step, the indexes of the steps it waits
// for. A chain runs in file order whatever `depends` says; a graph follows
// `depends` (unknown ids were rejected by validation and are ignored here).
func dependencies(w *workflows.Workflow) [][]int {
	deps := make([][]int, len(w.Steps))
	if w.Type == workflows.TypeChain {
		for i := 1; i < len(w.Steps); i++ {
			deps[i] = []int{i - 1}
		}
		return deps
	}
	index := make(map[string]int, len(w.Steps))
	for i, st := range w.Steps {
		index[st.ID] = i
	}
	for i, st := range w.Steps {
		for _, d := range st.Depends {
			if j, ok := index[d]; ok && j != i && !slices.Contains(deps[i], j) {
				deps[i] = append(deps[i], j)
			}
		}
	}
	return deps
}

// runDAG runs the workflow's steps: each as soon as its dependencies have
// ended, at most max_active_steps at a time, ready steps in file order. A
// step whose dependency failed (or was skipped) is skipped unless that
// dependency has continue_on failed (skipped). When ctx ends, running steps
// are stopped and nothing new starts.
func (x *execution) runDAG(ctx context.Context) {
	n := len(x.wf.Steps)
	if n == 0 {
		return
	}
	deps := dependencies(x.wf)
	dependents := make([][]int, n)
	waiting := make([]int, n)
	for i, ds := range deps {
		waiting[i] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	maxActive := x.wf.MaxActiveSteps
	if maxActive <= 0 {
		maxActive = workflows.DefaultMaxActiveSteps
	}
	if x.wf.Type == workflows.TypeChain {
		maxActive = 1
	}

	var ready []int // kept sorted: file order among ready steps
	for i := range n {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	release := func(i int) {
		for _, d := range dependents[i] {
			waiting[d]--
			if waiting[d] == 0 {
				pos, _ := slices.BinarySearch(ready, d)
				ready = slices.Insert(ready, pos, d)
			}
		}
	}

	done := make(chan int, n)
	running, finished := 0, 0
	for finished < n {
		for len(ready) > 0 && running < maxActive && ctx.Err() == nil {
			i := ready[0]
			ready = ready[1:]
			if reason := x.skipReason(i, deps[i]); reason != "" {
				x.setSkipped(i, reason)
				finished++
				release(i)
				continue
			}
			running++
			go func() {
				x.execStep(ctx, i, x.wf.Steps[i], nil)
				done <- i
			}()
		}
		if running == 0 {
			// Cancelled (or nothing runnable): what never started is
			// marked by markUnfinished.
			return
		}
		i := <-done
		running--
		finished++
		release(i)
	}
}

// skipReason says why step i must not run, or "".
func (x *execution) skipReason(i int, deps []int) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, d := range deps {
		dep := x.wf.Steps[d]
		switch x.states[d].Status {
		case workflows.StatusFailed:
			if !dep.ContinueOn.Failed {
				return "dependency " + dep.ID + " failed"
			}
		case workflows.StatusSkipped:
			if !dep.ContinueOn.Skipped {
				return "dependency " + dep.ID + " was skipped"
			}
		case workflows.StatusCancelled:
			return "dependency " + dep.ID + " was cancelled"
		}
	}
	return ""
}

func (x *execution) setSkipped(i int, reason string) {
	x.mu.Lock()
	x.states[i].Status = workflows.StatusSkipped
	x.states[i].Error = reason
	x.mu.Unlock()
	x.stepSysf(x.wf.Steps[i].ID, "skipped: %s", reason)
	x.changed()
}

// runHandlers runs handler_on.success/failure/cancel for status, then
// handler_on.exit, each with HOOKRUN_RUN_STATUS. They run even after a
// cancel or a run timeout (with a fresh context bounded by the step's
// timeout or HandlerTimeout) but stop when the run is abandoned.
func (x *execution) runHandlers(ctx context.Context, status workflows.Status) {
	h := x.wf.HandlerOn
	type handler struct {
		step *workflows.Step
		id   string
	}
	var list []handler
	switch status {
	case workflows.StatusSucceeded:
		list = append(list, handler{h.Success, "on_success"})
	case workflows.StatusFailed:
		list = append(list, handler{h.Failure, "on_failure"})
	case workflows.StatusCancelled:
		list = append(list, handler{h.Cancel, "on_cancel"})
	}
	list = append(list, handler{h.Exit, "on_exit"})
	for _, hd := range list {
		if hd.step == nil {
			continue
		}
		if errors.Is(context.Cause(ctx), ErrAbandoned) {
			return
		}
		st := *hd.step
		if st.ID == "" {
			st.ID = hd.id
		}
		hctx, cancel := x.handlerContext(ctx, st.Timeout)
		x.mu.Lock()
		idx := len(x.states)
		x.states = append(x.states, workflows.StepState{ID: st.ID, Status: workflows.StatusPending})
		x.mu.Unlock()
		x.execStep(hctx, idx, st, []workflows.EnvVar{{Name: "HOOKRUN_RUN_STATUS", Value: string(status)}})
		cancel()
	}
}

// handlerContext detaches a handler from the run's cancellation and
// timeout, bounds it, and still stops it when the run is abandoned.
func (x *execution) handlerContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = x.e.cfg.HandlerTimeout
	}
	hctx, cancelCause := context.WithCancelCause(context.WithoutCancel(ctx))
	hctx, cancelTimeout := context.WithTimeoutCause(hctx, timeout, errStepTimeout)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), ErrAbandoned) {
			cancelCause(ErrAbandoned)
		}
	})
	return hctx, func() {
		stop()
		cancelTimeout()
		cancelCause(nil)
	}
}

// route is where a step runs.
type route struct {
	exec  contract.Executor
	place place
	err   error
}

// routeFor picks the executor of a step: its own container; a harness whose
// binary is sbx on the host as written; the workflow's sandbox; the root
// container; else the host.
func (x *execution) routeFor(st *workflows.Step) route {
	p := x.e.cfg.Providers
	if st.Container != nil {
		if p.Containers == nil {
			return route{err: fmt.Errorf("step %s has its own container but this runner has no container executor configured", st.ID)}
		}
		return route{exec: p.Containers, place: placeContainer}
	}
	if st.Harness != nil {
		if h, ok := x.wf.LookupHarness(st.Harness.Provider); ok && h.RunsSbx() {
			return route{exec: p.Host, place: placeHost}
		}
	}
	if x.session != nil {
		if x.sessionKind == "sandbox" {
			return route{exec: x.session, place: placeSandbox}
		}
		return route{exec: x.session, place: placeContainer}
	}
	return route{exec: p.Host, place: placeHost}
}

// stepDir resolves a step's working_dir for its route.
func (x *execution) stepDir(st *workflows.Step, r route) string {
	wd := st.WorkingDir
	switch r.place {
	case placeContainer:
		if wd == "" || path.IsAbs(wd) {
			return wd
		}
		return path.Join(containerWorkspace, wd)
	case placeHost:
		if filepath.IsAbs(wd) {
			return wd
		}
		if x.spec.Workspace == "" {
			return wd
		}
		return filepath.Join(x.spec.Workspace, wd)
	default: // sandbox: the workspace keeps its host path inside the VM
		if wd == "" || path.IsAbs(wd) || x.spec.Workspace == "" {
			return wd
		}
		return path.Join(x.spec.Workspace, wd)
	}
}

// stepEnv builds the environment of one step: the run prefix, outputs of
// earlier steps, the step's env (which may reference all of these), extra
// (HOOKRUN_RUN_STATUS for handlers), then the secrets. It also returns the
// lookup for harness prompts, which does not resolve secrets.
func (x *execution) stepEnv(st *workflows.Step, r route, extra []workflows.EnvVar) ([]workflows.EnvVar, func(string) (string, bool)) {
	pre := x.prefix(r.place)
	x.mu.Lock()
	l := pre.clone(len(x.outputs) + len(st.Env) + len(extra) + len(x.secrets))
	l.setAll(x.outputs)
	x.mu.Unlock()
	if r.place == placeContainer && st.Container != nil {
		l.expandAll(st.Container.Env)
	}
	l.expandAll(st.Env)
	l.setAll(extra)
	lookup := l.clone(0).lookup
	l.setAll(x.secrets)
	return l.vars, lookup
}

// execStep runs one step (idx in x.states) with its retry policy and
// timeout, and records its state.
func (x *execution) execStep(ctx context.Context, idx int, st workflows.Step, extra []workflows.EnvVar) {
	started := x.now()
	x.mu.Lock()
	x.states[idx].Status = workflows.StatusRunning
	x.states[idx].StartedAt = &started
	x.mu.Unlock()
	x.changed()

	status, exit, attempts, errMsg := x.attempts(ctx, &st, extra)

	finished := x.now()
	x.mu.Lock()
	s := &x.states[idx]
	s.Status = status
	s.Attempts = attempts
	s.FinishedAt = &finished
	if exit != nil {
		s.ExitCode = exit
	}
	s.Error = x.red.String(errMsg)
	x.mu.Unlock()
	x.changed()
}

// attempts runs the step until it succeeds or its retry policy gives up.
func (x *execution) attempts(ctx context.Context, st *workflows.Step, extra []workflows.EnvVar) (workflows.Status, *int, int, string) {
	r := x.routeFor(st)
	if r.err != nil {
		x.stepSysf(st.ID, "%s", r.err)
		return workflows.StatusFailed, nil, 0, r.err.Error()
	}
	if st.Action == workflows.ActionHarnessRun && (st.Harness == nil || x.e.cfg.Providers.Harness == nil) {
		err := fmt.Sprintf("step %s is a harness.run step but this runner has no harness runner configured", st.ID)
		if st.Harness == nil {
			err = fmt.Sprintf("step %s is a harness.run step without a provider", st.ID)
		}
		x.stepSysf(st.ID, "%s", err)
		return workflows.StatusFailed, nil, 0, err
	}
	env, lookup := x.stepEnv(st, r, extra)

	stdout := x.logWriter(st.ID, StreamStdout)
	stderr := x.logWriter(st.ID, StreamStderr)
	defer stdout.Close()
	defer stderr.Close()
	var capture *cappedBuffer
	var out io.Writer = stdout
	if st.Output != "" {
		capture = &cappedBuffer{limit: maxOutput}
		out = io.MultiWriter(stdout, capture)
	}

	req := contract.ExecRequest{
		RunID:       x.spec.ID,
		StepID:      st.ID,
		Env:         env,
		SecretNames: x.secretNames,
		Dir:         x.stepDir(st, r),
		Workspace:   x.spec.Workspace,
		Home:        x.spec.Home,
		TmpDir:      x.spec.TmpDir,
		Container:   st.Container,
		Stdout:      out,
		Stderr:      stderr,
		Grace:       x.e.cfg.Grace,
	}
	if st.Action != workflows.ActionHarnessRun {
		req.Argv = []string{"sh", "-c", st.Run}
	}

	maxAttempts := 1
	var interval time.Duration
	if rp := st.RetryPolicy; rp != nil {
		maxAttempts += max(rp.Limit, 0)
		interval = rp.Interval
	}
	var (
		status  workflows.Status
		exit    *int
		errMsg  string
		attempt int
	)
	for attempt = 1; attempt <= maxAttempts; attempt++ {
		if capture != nil {
			capture.Reset()
		}
		if attempt > 1 {
			x.stepSysf(st.ID, "attempt %d of %d in %s", attempt, maxAttempts, interval)
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return x.stopped(ctx), exit, attempt - 1, x.stoppedMsg(ctx, st)
			case <-t.C:
			}
			if rp := st.RetryPolicy; rp.Backoff > 1 {
				interval = time.Duration(float64(interval) * rp.Backoff)
				if rp.MaxInterval > 0 && interval > rp.MaxInterval {
					interval = rp.MaxInterval
				}
			}
		}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if st.Timeout > 0 {
			sctx, cancel = context.WithTimeoutCause(ctx, st.Timeout, errStepTimeout)
		}
		var res contract.ExecResult
		var err error
		if st.Action == workflows.ActionHarnessRun {
			var exec contract.Executor = r.exec
			if capture != nil {
				exec = resetOnExec{exec, capture} // a fallback's output replaces the failed attempt's
			}
			res, err = x.e.cfg.Providers.Harness.RunHarness(sctx, exec, req, x.wf, st.Harness, lookup)
		} else {
			res, err = r.exec.Exec(sctx, req)
		}
		code := res.ExitCode
		exit = &code
		switch {
		case err == nil && code == 0:
			cancel()
			status, errMsg = workflows.StatusSucceeded, ""
		case sctx.Err() != nil:
			status, errMsg = x.stopped(sctx), x.stoppedMsg(sctx, st)
			cancel()
		case err != nil:
			cancel()
			status, errMsg = workflows.StatusFailed, err.Error()
		default:
			cancel()
			status, errMsg = workflows.StatusFailed, "exit status "+strconv.Itoa(code)
		}
		if status != workflows.StatusFailed || ctx.Err() != nil || !x.retryable(st, code) {
			break
		}
		if attempt < maxAttempts {
			x.stepSysf(st.ID, "attempt %d failed: %s", attempt, errMsg)
		}
	}
	attempt = min(attempt, maxAttempts)
	if status == workflows.StatusFailed || status == workflows.StatusCancelled {
		x.stepSysf(st.ID, "%s: %s", status, errMsg)
	}
	if capture != nil && status == workflows.StatusSucceeded {
		val := x.red.String(strings.TrimSpace(capture.String()))
		if capture.truncated {
			x.stepSysf(st.ID, "output %s truncated at %d bytes", st.Output, maxOutput)
		}
		x.mu.Lock()
		x.setOutput(st.Output, val)
		x.mu.Unlock()
	}
	return status, exit, attempt, errMsg
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

// retryable reports whether the retry policy covers this failure.
func (x *execution) retryable(st *workflows.Step, code int) bool {
	rp := st.RetryPolicy
	if rp == nil || rp.Limit <= 0 {
		return false
	}
	return len(rp.ExitCodes) == 0 || slices.Contains(rp.ExitCodes, code)
}

// stopped classifies a step stopped by its context: a step or run timeout
// is a failure, anything else (API cancel, newer run, shutdown) a cancel.
func (x *execution) stopped(ctx context.Context) workflows.Status {
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
		return fmt.Sprintf("stopped: run timed out after %s", x.wf.Timeout)
	case errors.Is(cause, ErrAbandoned):
		return "stopped: " + ErrAbandoned.Error()
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
