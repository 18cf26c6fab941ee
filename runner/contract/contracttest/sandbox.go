package contracttest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// SandboxOptions adapts the Sandbox suite to an implementation.
type SandboxOptions struct {
	// Request returns the OpenRequest of one subtest's run without RunID
	// (the suite sets it): Workspace, and a Workflow whose Container or
	// Sandbox says what to open. Required.
	Request func(t *testing.T) contract.OpenRequest
	// Leftovers describes what remains on this machine of req's run
	// (containers, sandboxes, git remotes in the workspace). The suite
	// wants nothing left after Close, whatever happened before, and after
	// a failed Open. Required.
	Leftovers func(t *testing.T, req contract.OpenRequest) []string
	// FailOpen, when set, changes req so that Open fails, preferably after
	// it has created something (a container that cannot start), and
	// returns the Sandbox to open it with. Without it that subtest skips.
	FailOpen func(t *testing.T, req *contract.OpenRequest) contract.Sandbox
	// PrivateDir is a directory of a session that belongs to it alone,
	// outside the run's workspace (a container's /tmp); "" = the session's
	// default working directory, when that is its own (an sbx clone).
	PrivateDir string
	// RunIDPrefix starts every run id the suite uses. Default
	// defaultRunIDPrefix ("contracttest-").
	RunIDPrefix string
	// Env is every ExecRequest's Env. Default: PATH=DefaultPath.
	Env []workflows.EnvVar
	// ResultsPath is $HOOKRUN_RESULTS inside a session opened for req
	// (contract.ContainerResultsPath, contract.SandboxResultsPath); ""
	// skips the results subtest.
	ResultsPath func(req contract.OpenRequest) string
	// Startup and StopWithin are as in Options.
	Startup, StopWithin time.Duration
}

func (o *SandboxOptions) setDefaults() {
	if o.RunIDPrefix == "" {
		o.RunIDPrefix = defaultRunIDPrefix
	}
	if o.Env == nil {
		o.Env = defaultEnv()
	}
	if o.StopWithin == 0 {
		o.StopWithin = defaultStopWithin
	}
}

// RunSandbox runs the conformance suite of a contract.Sandbox and the
// lifecycle of its Sessions: open, exec, close; state kept between the
// execs of a session; Close cleaning up everything, also after a cancelled
// step with the run's context done; an Open that replaces what an earlier
// attempt of the run left; a failed Open leaving nothing. The Executor
// behaviour of a Session is Run's business.
func RunSandbox(t *testing.T, newSandbox func(t *testing.T) contract.Sandbox, opts SandboxOptions) {
	if opts.Request == nil || opts.Leftovers == nil {
		t.Fatal("contracttest.RunSandbox: SandboxOptions.Request and Leftovers are required")
	}
	opts.setDefaults()
	s := &sandboxSuite{newSandbox: newSandbox, opts: opts}
	t.Run("OpenExecClose", s.openExecClose)
	t.Run("StateKeptBetweenExecs", s.stateKept)
	t.Run("CloseAfterCancelledStep", s.closeAfterCancel)
	t.Run("OpenReplacesEarlierAttempt", s.reopen)
	t.Run("FailedOpenLeavesNothing", s.failedOpen)
	t.Run("Results", s.results)
}

// results: a session opened with a results folder gives its steps
// $HOOKRUN_RESULTS; what a step writes there is in OpenRequest.Results on
// the runner's side once Exec has returned.
func (s *sandboxSuite) results(t *testing.T) {
	if s.opts.ResultsPath == nil {
		t.Skip("SandboxOptions.ResultsPath not set")
	}
	req := s.request(t)
	req.Results = ResultsDir(t)
	sess := s.open(t, context.Background(), s.newSandbox(t), req)
	c := &call{}
	c.res, c.err = sess.Exec(context.Background(), contract.ExecRequest{
		RunID: req.RunID, StepID: "step", Argv: []string{"sh", "-c", resultsScript, "sh", "from-session"},
		Env:       append(append([]workflows.EnvVar(nil), s.opts.Env...), workflows.EnvVar{Name: "HOOKRUN_RESULTS", Value: s.opts.ResultsPath(req)}),
		Workspace: req.Workspace, Results: req.Results, Stdout: &c.stdout, Stderr: &c.stderr,
	})
	if c.err != nil || c.res.ExitCode != 3 {
		t.Fatalf("exit %d, err %v; want 3, nil (stderr %q)", c.res.ExitCode, c.err, c.stderr.String())
	}
	for name, want := range map[string]string{"x": "from-session\n", "sub/y": "deep\n"} {
		got, err := os.ReadFile(filepath.Join(req.Results, name))
		if err != nil || string(got) != want {
			t.Errorf("runner side %s: %q, %v; want %q", name, got, err, want)
		}
	}
	s.closeClean(t, context.Background(), sess, req)
}

type sandboxSuite struct {
	newSandbox func(t *testing.T) contract.Sandbox
	opts       SandboxOptions
}

// request is a fresh run's OpenRequest.
func (s *sandboxSuite) request(t *testing.T) contract.OpenRequest {
	t.Helper()
	req := s.opts.Request(t)
	req.RunID = newRunID(s.opts.RunIDPrefix)
	return req
}

// open opens req's run and makes sure the test leaves nothing behind even
// when it fails half-way.
func (s *sandboxSuite) open(t *testing.T, ctx context.Context, sb contract.Sandbox, req contract.OpenRequest) contract.Session {
	t.Helper()
	var progress bytes.Buffer
	req.Stdout, req.Stderr = &progress, &progress
	sess, err := sb.Open(ctx, req)
	if err != nil {
		t.Fatalf("Open: %v\n%s", err, progress.String())
	}
	if sess == nil {
		t.Fatal("Open returned neither a session nor an error")
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	return sess
}

// exec runs script in sess, in SandboxOptions.PrivateDir.
func (s *sandboxSuite) exec(ctx context.Context, sess contract.Session, req contract.OpenRequest, script string) *call {
	c := &call{}
	start := time.Now()
	c.res, c.err = sess.Exec(ctx, contract.ExecRequest{
		RunID: req.RunID, StepID: "step", Argv: sh(script), Env: s.opts.Env, Dir: s.opts.PrivateDir,
		Workspace: req.Workspace, Stdout: &c.stdout, Stderr: &c.stderr, Grace: time.Second,
	})
	c.elapsed = time.Since(start)
	return c
}

// closeClean closes sess with ctx and checks that nothing of req's run remains.
func (s *sandboxSuite) closeClean(t *testing.T, ctx context.Context, sess contract.Session, req contract.OpenRequest) {
	t.Helper()
	if err := sess.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	s.checkGone(t, req, "after Close")
}

func (s *sandboxSuite) checkGone(t *testing.T, req contract.OpenRequest, when string) {
	t.Helper()
	if left := s.opts.Leftovers(t, req); len(left) > 0 {
		t.Errorf("%s, run %s left:\n  %s", when, req.RunID, strings.Join(left, "\n  "))
	}
}

func (s *sandboxSuite) openExecClose(t *testing.T) {
	req := s.request(t)
	sess := s.open(t, context.Background(), s.newSandbox(t), req)
	c := s.exec(context.Background(), sess, req, "echo hello; echo oops >&2; exit 3")
	if c.err != nil || c.res.ExitCode != 3 {
		t.Errorf("Exec: exit %d, err %v; want 3, nil (stderr %q)", c.res.ExitCode, c.err, c.stderr.String())
	}
	if c.stdout.String() != "hello\n" || c.stderr.String() != "oops\n" {
		t.Errorf("stdout %q, stderr %q; want %q, %q", c.stdout.String(), c.stderr.String(), "hello\n", "oops\n")
	}
	s.closeClean(t, context.Background(), sess, req)
}

func (s *sandboxSuite) stateKept(t *testing.T) {
	req := s.request(t)
	sess := s.open(t, context.Background(), s.newSandbox(t), req)
	if c := s.exec(context.Background(), sess, req, "echo kept > hookrun-contracttest-state"); c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("first Exec: exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	c := s.exec(context.Background(), sess, req, "cat hookrun-contracttest-state")
	if c.err != nil || c.res.ExitCode != 0 || c.stdout.String() != "kept\n" {
		t.Errorf("a file written by one Exec is not there for the next: exit %d, err %v, stdout %q, stderr %q",
			c.res.ExitCode, c.err, c.stdout.String(), c.stderr.String())
	}
	s.closeClean(t, context.Background(), sess, req)
}

func (s *sandboxSuite) closeAfterCancel(t *testing.T) {
	req := s.request(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess := s.open(t, ctx, s.newSandbox(t), req)
	time.AfterFunc(500*time.Millisecond+s.opts.Startup, cancel)
	c := s.exec(ctx, sess, req, "echo started; sleep 30")
	if !errors.Is(c.err, context.Canceled) || c.res.ExitCode != -1 {
		t.Errorf("cancelled Exec: exit %d, err %v; want -1 and an error wrapping context.Canceled", c.res.ExitCode, c.err)
	}
	if within := 500*time.Millisecond + s.opts.Startup + s.opts.StopWithin; c.elapsed > within {
		t.Errorf("cancelled Exec returned after %s, want within %s", c.elapsed, within)
	}
	// The run's context is done: Close must clean up all the same.
	s.closeClean(t, ctx, sess, req)
}

func (s *sandboxSuite) reopen(t *testing.T) {
	req := s.request(t)
	sb := s.newSandbox(t)
	// An earlier attempt of the run opened a session and died without
	// closing it.
	first := s.open(t, context.Background(), sb, req)
	if c := s.exec(context.Background(), first, req, "echo stale > hookrun-contracttest-stale"); c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("Exec in the first session: exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	second := s.open(t, context.Background(), sb, req)
	c := s.exec(context.Background(), second, req, "echo fresh; cat hookrun-contracttest-stale 2>/dev/null || true")
	if c.err != nil || c.res.ExitCode != 0 {
		t.Errorf("Exec in the reopened session: exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	if c.stdout.String() != "fresh\n" {
		t.Errorf("the reopened session is not fresh: stdout %q, want %q", c.stdout.String(), "fresh\n")
	}
	s.closeClean(t, context.Background(), second, req)
}

func (s *sandboxSuite) failedOpen(t *testing.T) {
	if s.opts.FailOpen == nil {
		t.Skip("no SandboxOptions.FailOpen")
	}
	req := s.request(t)
	sb := s.opts.FailOpen(t, &req)
	sess, err := sb.Open(context.Background(), req)
	if err == nil {
		t.Cleanup(func() { _ = sess.Close(context.Background()) })
		t.Fatal("Open succeeded; FailOpen should have made it fail")
	}
	if sess != nil {
		t.Errorf("Open returned a session with its error %v", err)
	}
	s.checkGone(t, req, "after a failed Open")
}
