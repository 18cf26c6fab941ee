package contracttest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// fakeSandbox opens sessions that are directories under root: commands run
// on this machine in their session's directory. broken names a way to
// break the contract ("" keeps it), for checking that the suite notices.
type fakeSandbox struct {
	root   string
	broken string
}

func (f *fakeSandbox) dir(runID string) string { return filepath.Join(f.root, runID) }

func (f *fakeSandbox) Open(ctx context.Context, req contract.OpenRequest) (contract.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("opening fake session %s: %w", req.RunID, err)
	}
	dir := f.dir(req.RunID)
	if _, err := os.Stat(dir); err == nil {
		if f.broken == "no-replace" {
			return nil, fmt.Errorf("opening fake session %s: it already exists", req.RunID)
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("removing leftover fake session %s: %w", req.RunID, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opening fake session %s: %w", req.RunID, err)
	}
	if req.Workflow.Container.Image == failImage {
		if f.broken != "leaky-open" {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("starting fake session %s: image %s cannot start", req.RunID, failImage)
	}
	return &fakeSession{dir: dir, broken: f.broken}, nil
}

// failImage makes fakeSandbox.Open fail after it created the session.
const failImage = "fail-to-start"

type fakeSession struct {
	dir    string
	broken string
}

func (s *fakeSession) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return contract.ExecResult{ExitCode: -1}, fmt.Errorf("running step %s: %w", req.StepID, err)
	}
	dir := s.dir
	if s.broken == "fresh-exec" {
		var err error
		if dir, err = os.MkdirTemp(s.dir, "exec-"); err != nil {
			return contract.ExecResult{ExitCode: -1}, err
		}
	}
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, req.Stdin, req.Stdout, req.Stderr
	for _, v := range req.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	res := contract.ExecResult{Duration: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.ExitCode = -1
		return res, fmt.Errorf("running step %s: %w", req.StepID, ctx.Err())
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		res.ExitCode = -1
		return res, fmt.Errorf("running step %s: %w", req.StepID, err)
	}
	if s.broken == "exit-zero" {
		res.ExitCode = 0
	}
	return res, nil
}

func (s *fakeSession) Close(ctx context.Context) error {
	switch s.broken {
	case "leaky-close":
		return nil
	case "ctx-close":
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("closing fake session: %w", err)
		}
	}
	return os.RemoveAll(s.dir)
}

// fakeWorkspaces keeps workspaces under root/ws and HOME and TMPDIR under
// root/scratch; a checkout writes checkoutFiles. broken as for fakeSandbox.
type fakeWorkspaces struct {
	root   string
	broken string
}

var checkoutFiles = map[string]string{"README": "hello\n", "src/main.go": "package main\n"}

func (f *fakeWorkspaces) paths(runID string) (dir, scratch string) {
	if f.broken == "shared-dir" {
		runID = "shared"
	}
	return filepath.Join(f.root, "ws", runID), filepath.Join(f.root, "scratch", runID)
}

func (f *fakeWorkspaces) Prepare(_ context.Context, runID string, e *workflows.Event, o contract.PrepareOptions) (contract.Workspace, error) {
	checkout := o.Checkout
	dir, scratch := f.paths(runID)
	w := contract.Workspace{Dir: dir, Home: filepath.Join(scratch, "home"), TmpDir: filepath.Join(scratch, "tmp")}
	if f.broken != "keeps-leftovers" && !(checkout && f.broken == "stale-checkout") {
		if err := f.Remove(runID); err != nil {
			return w, err
		}
	}
	for _, d := range []string{w.Dir, w.Home, w.TmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return w, fmt.Errorf("preparing workspace of run %s: %w", runID, err)
		}
	}
	if f.broken == "not-empty" {
		_ = os.WriteFile(filepath.Join(w.Dir, ".junk"), nil, 0o644)
	}
	if !checkout {
		return w, nil
	}
	for name, content := range checkoutFiles {
		p := filepath.Join(w.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return w, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return w, err
		}
	}
	if f.broken != "wrong-sha" {
		w.HeadSHA = e.PullRequest.HeadSHA
	}
	return w, nil
}

func (f *fakeWorkspaces) Remove(runID string) error {
	dir, scratch := f.paths(runID)
	if _, err := os.Stat(dir); err != nil && f.broken == "remove-missing-errors" {
		return fmt.Errorf("removing workspace of run %s: %w", runID, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if f.broken == "remove-keeps-home" {
		return nil
	}
	return os.RemoveAll(scratch)
}

var (
	_ contract.Sandbox    = (*fakeSandbox)(nil)
	_ contract.Session    = (*fakeSession)(nil)
	_ contract.Workspaces = (*fakeWorkspaces)(nil)
)
