package sbx

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookrun/hookrun/providers/internal/proc"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// DefaultBinary is Config.Binary's default.
const DefaultBinary = "sbx"

// Config configures the sbx sandbox provider.
type Config struct {
	// Binary is the sbx CLI, a path or a name looked up in PATH. Default "sbx".
	Binary string
	// Git is the git CLI used to collect the agent's commits into the
	// workspace. Default "git".
	Git string
	// Env is the environment of every sbx and git process hookrun starts
	// (HOME, PATH and DOCKER_* let sbx find its session). Default: the
	// runner's own environment. Only variables named with `-e` reach the
	// sandbox.
	Env []string
	// StopGrace is the time between SIGTERM and SIGKILL when a step is
	// stopped and its request sets no Grace. Default 5s.
	StopGrace time.Duration
	// CommandTimeout bounds each lifecycle command (rm, create, git fetch,
	// ...); Close uses it with a fresh context when the run's context is
	// done. Default 5m (creating a sandbox may pull its image).
	CommandTimeout time.Duration
}

func (c *Config) setDefaults() {
	c.Binary = cmp.Or(c.Binary, DefaultBinary)
	c.Git = cmp.Or(c.Git, "git")
	if c.Env == nil {
		c.Env = os.Environ()
	}
	c.StopGrace = cmp.Or(c.StopGrace, 5*time.Second)
	c.CommandTimeout = cmp.Or(c.CommandTimeout, 5*time.Minute)
}

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c Config) WithDefaults() Config { c.setDefaults(); return c }

// Validate reports every invalid field.
func (c *Config) Validate() error {
	var errs []error
	if c.StopGrace < 0 {
		errs = append(errs, fmt.Errorf("stop_grace %s: negative", c.StopGrace))
	}
	if c.CommandTimeout < 0 {
		errs = append(errs, fmt.Errorf("command_timeout %s: negative", c.CommandTimeout))
	}
	return errors.Join(errs...)
}

// Provider opens one fresh sbx sandbox per run (DESIGN.md §4).
type Provider struct {
	cfg Config
}

// New returns a provider; it runs nothing yet.
func New(cfg Config) (*Provider, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating sbx config: %w", err)
	}
	return &Provider{cfg: cfg}, nil
}

// SandboxName is the sandbox of a run.
func SandboxName(runID string) string { return contract.SandboxName(runID) }

// RemoteName is the git remote sbx adds to the workspace for a run's sandbox.
func RemoteName(runID string) string { return "sandbox-" + SandboxName(runID) }

// BranchName is the workspace branch that receives the agent's commits.
func BranchName(runID string) string { return "hookrun/" + runID }

// Open removes a leftover sandbox of the run, then creates a fresh one with
// `sbx create --name hookrun-<run> --clone --no-progress <agent> <workspace>`.
// The agent is req.Workflow.Sandbox.Agent. The run's event file
// (req.EventFile) is then copied into the sandbox (writeEventFile).
func (p *Provider) Open(ctx context.Context, req contract.OpenRequest) (contract.Session, error) {
	if req.Workflow == nil || req.Workflow.Sandbox == nil || req.Workflow.Sandbox.Agent == "" {
		return nil, fmt.Errorf("opening sbx sandbox for run %s: the workflow names no sandbox agent", req.RunID)
	}
	if req.Workspace == "" {
		return nil, fmt.Errorf("opening sbx sandbox for run %s: no workspace", req.RunID)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("opening sbx sandbox for run %s: %w", req.RunID, err)
	}
	name := SandboxName(req.RunID)
	s := &Session{p: p, runID: req.RunID, name: name, workspace: req.Workspace, log: req.Stderr}
	// A sandbox of an earlier attempt of this run would make create fail.
	if err := p.sbx(ctx, req.Stderr, name, "rm", "--force", name); err != nil && !errors.Is(err, ErrSandboxNotFound) {
		return nil, fmt.Errorf("removing leftover sandbox %s: %w", name, err)
	}
	// The branch the workspace is on, in case the sandbox does not tell.
	if out, err := p.output(ctx, p.cfg.Git, append(workspaceGit(req.Workspace, RemoteName(req.RunID)), "symbolic-ref", "--quiet", "--short", "HEAD")...); err == nil {
		s.branch = strings.TrimSpace(out)
	}
	if err := p.sbx(ctx, req.Stderr, name, "create", "--name", name, "--clone", "--no-progress", req.Workflow.Sandbox.Agent, req.Workspace); err != nil {
		// create may have got far enough to leave something behind.
		_ = s.Close(ctx)
		return nil, fmt.Errorf("creating sandbox %s: %w", name, err)
	}
	if req.Results != "" {
		if err := s.makeResults(ctx); err != nil {
			_ = s.Close(ctx)
			return nil, fmt.Errorf("creating the results folder in sandbox %s: %w", name, err)
		}
	}
	if req.EventFile != "" {
		if err := s.writeEventFile(ctx, req.EventFile); err != nil {
			_ = s.Close(ctx)
			return nil, fmt.Errorf("writing the event file into sandbox %s: %w", name, err)
		}
	}
	return s, nil
}

// Session is an open sbx sandbox.
type Session struct {
	p         *Provider
	runID     string
	name      string
	workspace string
	branch    string // the workspace's branch at Open, "" when detached
	log       io.Writer

	stopped atomic.Bool // sbx stop ran and no sbx exec since: the git daemon is down

	resultsMu sync.Mutex // one copy of the results folder at a time

	closeOnce  sync.Once
	closeErr   error
	collectErr error // why Close collected nothing; nil once it collected
	closed     bool
}

// stop halts everything running in the sandbox (`sbx stop`), with a fresh
// context: a stopped step's command goes on inside the sandbox otherwise.
// Other steps running in the sandbox at that moment are stopped too; the
// next sbx exec starts the sandbox again, its files kept.
func (s *Session) stop(ctx context.Context, stepID string) error {
	fmt.Fprintf(proc.OrDiscard(s.log), "hookrun: step %s stopped: stopping sandbox %s so that its command stops too\n", stepID, s.name)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.p.cfg.CommandTimeout)
	defer cancel()
	if err := s.p.sbx(cctx, s.log, s.name, "stop", s.name); err != nil {
		return fmt.Errorf("stopping sandbox %s after step %s: %w", s.name, stepID, err)
	}
	s.stopped.Store(true)
	return nil
}

// Name is the sandbox's name.
func (s *Session) Name() string { return s.name }

// hostOnly are variables that describe the runner's host; they are never
// forwarded into the sandbox, which has its own.
var hostOnly = map[string]bool{"PATH": true, "HOME": true, "PWD": true, "SHELL": true, "USER": true,
	"LOGNAME": true, "TMPDIR": true, "HOSTNAME": true, "SHLVL": true, "OLDPWD": true, "_": true}

// Exec runs req.Argv in the sandbox: `sbx exec [-i] [-w DIR] -e NAME...
// hookrun-<run> argv...`. Variables are passed by bare name, their values
// set in the sbx process's own environment, so no value appears on a
// command line. Secrets (req.SecretNames) are not forwarded at all: the
// agent authenticates through sbx's own credential proxy. When ctx ends,
// the sbx process group gets SIGTERM, then SIGKILL after the grace period.
func (s *Session) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	res, done := contract.Timed()
	if len(req.Argv) == 0 {
		return done(fmt.Errorf("running step %s in sandbox %s: empty command", req.StepID, s.name))
	}
	if err := ctx.Err(); err != nil {
		return done(fmt.Errorf("running step %s: %w", req.StepID, err))
	}
	args, forward, secret := s.execArgs(req)
	cmd := exec.Command(s.p.cfg.Binary, args...)
	cmd.Env = s.p.env(forward, secret)
	cmd.Stdin = req.Stdin
	var stdoutTail, stderrTail tailBuffer
	cmd.Stdout = io.MultiWriter(proc.OrDiscard(req.Stdout), &stdoutTail)
	cmd.Stderr = io.MultiWriter(proc.OrDiscard(req.Stderr), &stderrTail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return done(fmt.Errorf("starting sbx exec for step %s: %w", req.StepID, err))
	}
	s.stopped.Store(false) // sbx exec starts a stopped sandbox first
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		grace := req.Grace
		if grace <= 0 {
			grace = s.p.cfg.StopGrace
		}
		_ = proc.Stop(cmd.Process.Pid, grace, waited, nil)
		// Ending sbx exec does not end the command inside the sandbox:
		// only sbx stop does, before a retry, a fallback or the next step.
		stopErr := s.stop(ctx, req.StepID)
		return done(errors.Join(fmt.Errorf("running step %s in sandbox %s: stopped: %w", req.StepID, s.name, ctx.Err()), stopErr))
	}
	if res.ExitCode, err = s.exitCode(req, err, stdoutTail.String(), stderrTail.String()); err != nil {
		return done(err)
	}
	if req.Results != "" {
		// The sandbox's results folder back to the host, whatever the
		// command's exit (a linter that found something exits 1).
		if err := s.copyResults(ctx, req.Results); err != nil {
			return done(fmt.Errorf("running step %s: %w", req.StepID, err))
		}
	}
	return done(nil)
}

// execArgs are the arguments of sbx exec for req, the variables whose
// values the sbx process's environment carries (forward: no secret, none
// of the host's own, a later entry wins) and req's secret names.
func (s *Session) execArgs(req contract.ExecRequest) (args []string, forward []workflows.EnvVar, secret map[string]bool) {
	secret = map[string]bool{}
	for _, n := range req.SecretNames {
		secret[n] = true
	}
	args = []string{"exec"}
	if req.Stdin != nil {
		args = append(args, "-i")
	}
	if req.Dir != "" {
		args = append(args, "-w", req.Dir)
	}
	seen := map[string]bool{}
	for _, e := range req.Env {
		if secret[e.Name] || hostOnly[e.Name] || !workflows.IsEnvName(e.Name) {
			continue
		}
		if !seen[e.Name] {
			seen[e.Name] = true
			args = append(args, "-e", e.Name)
		}
		forward = append(forward, e)
	}
	args = append(args, s.name)
	return append(args, req.Argv...), forward, secret
}

// exitCode is the step's exit code from sbx exec's wait error err (its
// output's tails tell a known sbx failure, an error, from the command's
// own exit).
func (s *Session) exitCode(req contract.ExecRequest, err error, stdout, stderr string) (int, error) {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exitErr):
		// sbx, like docker exec, exits with the command's status. A known
		// sbx failure is an error, not a step's exit code.
		if mapped := classifyExec(stdout, stderr, s.name); mapped != nil {
			return -1, fmt.Errorf("running step %s in sandbox %s: %w", req.StepID, s.name, mapped)
		}
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exitErr.ExitCode(), nil
	default:
		return -1, fmt.Errorf("running step %s in sandbox %s: %w", req.StepID, s.name, err)
	}
}

// Close collects the agent's commits onto branch hookrun/<run> of the
// workspace (`git fetch sandbox-hookrun-<run>`, `git branch -f`), then
// always removes the sandbox (`sbx rm --force`) and the sandbox-... remote
// when sbx left it. It runs with a fresh context when ctx is done and may
// be called more than once.
func (s *Session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		cctx := context.WithoutCancel(ctx)
		var errs []error
		if err := s.collect(cctx); err != nil {
			s.collectErr = fmt.Errorf("collecting the agent's commits of sandbox %s: %w", s.name, err)
			errs = append(errs, s.collectErr)
		}
		s.closed = true
		// The remote goes first, by hookrun's hardened git: `sbx rm` would
		// otherwise remove it with git of its own in the workspace.
		if err := s.removeRemote(cctx); err != nil {
			errs = append(errs, err)
		}
		if err := s.p.sbx(cctx, s.log, s.name, "rm", "--force", s.name); err != nil && !errors.Is(err, ErrSandboxNotFound) {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", s.name, err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// removeRemote removes the sandbox-<name> remote from the workspace: its
// remote-tracking refs, then its configuration. Not `git remote remove`,
// which runs the workspace's hooks whatever core.hooksPath the command line
// says (git 2.39).
func (s *Session) removeRemote(ctx context.Context) error {
	remote := RemoteName(s.runID)
	wsGit := func(args ...string) []string { return append(workspaceGit(s.workspace, remote), args...) }
	if _, err := s.p.output(ctx, s.p.cfg.Git, wsGit("remote", "get-url", remote)...); err != nil {
		return nil // none (sbx removed it, or never added it)
	}
	refs, err := s.p.output(ctx, s.p.cfg.Git, wsGit("for-each-ref", "--format=%(refname)", "refs/remotes/"+remote+"/")...)
	if err != nil {
		return fmt.Errorf("removing git remote %s: listing its refs: %w", remote, err)
	}
	for _, ref := range strings.Fields(refs) {
		if err := s.p.git(ctx, s.log, wsGit("update-ref", "-d", ref)...); err != nil {
			return fmt.Errorf("removing git remote %s: %w", remote, err)
		}
	}
	if err := s.p.git(ctx, s.log, wsGit("config", "--remove-section", "remote."+remote)...); err != nil {
		return fmt.Errorf("removing git remote %s: %w", remote, err)
	}
	return nil
}

// Collected names the workspace branch Close put the agent's commits on,
// hookrun/<run>, or says why there is none.
func (s *Session) Collected() (string, error) {
	switch {
	case !s.closed:
		return "", fmt.Errorf("sandbox %s is not closed yet: nothing collected", s.name)
	case s.collectErr != nil:
		return "", s.collectErr
	}
	return BranchName(s.runID), nil
}

// collect fetches the sandbox's clone and points hookrun/<run> at the
// commit its current branch (or detached HEAD) is on.
func (s *Session) collect(ctx context.Context) error {
	remote := RemoteName(s.runID)
	if _, err := s.p.output(ctx, s.p.cfg.Git, append(workspaceGit(s.workspace, remote), "remote", "get-url", remote)...); err != nil {
		return fmt.Errorf("the workspace has no git remote %s", remote)
	}
	if s.stopped.Load() {
		// The sandbox's git daemon runs only while the sandbox does; sbx
		// exec starts it again.
		if err := s.p.sbx(ctx, s.log, s.name, "exec", s.name, "true"); err != nil {
			return fmt.Errorf("starting stopped sandbox %s: %w", s.name, err)
		}
		s.stopped.Store(false)
	}
	git := func(args ...string) error {
		return s.p.git(ctx, s.log, append(workspaceGit(s.workspace, remote), args...)...)
	}
	if err := git("fetch", "--quiet", uploadPack, remote); err != nil {
		return err
	}
	// The sandbox's current branch: what its HEAD points at.
	branch := s.branch
	if out, err := s.p.output(ctx, s.p.cfg.Git, append(workspaceGit(s.workspace, remote), "ls-remote", uploadPack, "--symref", remote, "HEAD")...); err == nil {
		if b, ok := symrefBranch(out); ok {
			branch = b
		} else {
			branch = "" // detached
		}
	}
	target := BranchName(s.runID)
	if branch != "" {
		return git("branch", "--no-track", "-f", target, remote+"/"+branch)
	}
	if err := git("fetch", "--quiet", uploadPack, remote, "HEAD"); err != nil {
		return err
	}
	return git("branch", "--no-track", "-f", target, "FETCH_HEAD")
}

// symrefBranch reads "ref: refs/heads/B\tHEAD" from `git ls-remote --symref`.
func symrefBranch(out string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "ref: refs/heads/"); ok {
			if b, _, ok := strings.Cut(rest, "\t"); ok && strings.HasSuffix(line, "\tHEAD") {
				return b, true
			}
		}
	}
	return "", false
}

// sbx runs a bounded sbx command about the sandbox name, copying its
// output to log; a failure the troubleshooting table knows becomes its
// *KnownError.
func (p *Provider) sbx(ctx context.Context, log io.Writer, name string, args ...string) error {
	out, err := p.run(ctx, log, p.cfg.Binary, args...)
	if err == nil {
		return nil
	}
	if k := classify(string(out), name); k != nil {
		return fmt.Errorf("sbx %s: %w", args[0], k)
	}
	return failed("sbx "+args[0], out, err)
}

// git runs a bounded git command, copying its output to log.
func (p *Provider) git(ctx context.Context, log io.Writer, args ...string) error {
	out, err := p.run(ctx, log, p.cfg.Git, args...)
	if err == nil {
		return nil
	}
	return failed("git "+strings.Join(args, " "), out, err)
}

// failed is the error of a command that failed in a way nobody knows: its
// own last line.
func failed(what string, out []byte, err error) error {
	if msg := lastLine(string(out)); msg != "" {
		return fmt.Errorf("%s: %w: %s", what, err, msg)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// output runs a bounded command and returns its stdout.
func (p *Provider) output(ctx context.Context, bin string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Env = p.cmdEnv(bin)
	out, err := cmd.Output()
	return string(out), err
}

// run runs a bounded command and returns its combined output, also copied
// to log.
func (p *Provider) run(ctx context.Context, log io.Writer, bin string, args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Env = p.cmdEnv(bin)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if log != nil && len(out) > 0 {
		_, _ = log.Write(out)
	}
	return out, err
}

// cmdEnv is the environment of a command the provider runs itself: git
// gets gitEnv besides (see workspaceGit).
func (p *Provider) cmdEnv(bin string) []string {
	env := p.env(nil, nil)
	if bin == p.cfg.Git {
		env = append(env, gitEnv...)
	}
	return env
}

// env is the configured environment with secret names removed and vars
// set over it.
func (p *Provider) env(vars []workflows.EnvVar, secret map[string]bool) []string {
	base := make([]string, 0, len(p.cfg.Env))
	for _, kv := range p.cfg.Env {
		if name, _, _ := strings.Cut(kv, "="); !secret[name] {
			base = append(base, kv)
		}
	}
	return proc.Merge(base, vars)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if t.b.Len() > 8<<10 {
		keep := t.b.Bytes()[t.b.Len()-4<<10:]
		t.b = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

var (
	_ contract.Sandbox   = (*Provider)(nil)
	_ contract.Session   = (*Session)(nil)
	_ contract.Collector = (*Session)(nil)
)
