package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookrun/hookrun/providers/host/stepinit"
	"github.com/hookrun/hookrun/providers/internal/proc"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Config configures the host executor.
type Config struct {
	// Grace is the time between SIGTERM and SIGKILL when a step is stopped
	// and the request carries no Grace of its own. Default 5s.
	Grace time.Duration
	// Shell is the program run when a request's Argv[0] is "sh" (every
	// `run:` step): a name looked up in the step's PATH, or an absolute path.
	// Default "sh".
	Shell string
	// DrainTimeout bounds how long Exec waits for stdout/stderr to reach EOF
	// after the step's process group is gone (a process that escaped the
	// group with setsid may still hold the pipes). Default 2s.
	DrainTimeout time.Duration
	// Isolation, when set, runs every command as an unprivileged user in
	// its own mount, PID, IPC and UTS namespaces (see Isolation). nil: commands run
	// as this process's user, seeing what it sees.
	Isolation *Isolation
	// Contain (without Isolation) runs every command through the init in
	// PID, IPC and UTS namespaces of its own, as this process's user (in a user
	// namespace that maps it to itself when not root), so that none of
	// its processes outlives the command or this process (contain.go).
	// ProbeContain tells whether the platform allows it.
	Contain bool
	// InitBinary is the init of Contain (see Isolation.InitBinary); default
	// hookrun-step-init beside the executable, else the executable itself.
	InitBinary string
	// LeftoversDir, when set (without Isolation and Contain), is where each
	// running command's process group is recorded, for ReapLeftovers to
	// kill at the next start what a killed runner left; the command also
	// dies with this process (Pdeathsig). Its children that left the group
	// (setsid) escape both.
	LeftoversDir string
}

func (c *Config) setDefaults() {
	c.Grace = cmp.Or(c.Grace, 5*time.Second)
	c.Shell = cmp.Or(c.Shell, "sh")
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 2*time.Second)
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	if c.Grace < 0 {
		return fmt.Errorf("validating host executor config: grace %s is negative", c.Grace)
	}
	if c.DrainTimeout < 0 {
		return fmt.Errorf("validating host executor config: drain timeout %s is negative", c.DrainTimeout)
	}
	if strings.ContainsAny(c.Shell, " \t\n") {
		return fmt.Errorf("validating host executor config: shell %q must be a program, not a command line", c.Shell)
	}
	if c.LeftoversDir != "" && !filepath.IsAbs(c.LeftoversDir) {
		return fmt.Errorf("validating host executor config: leftovers dir %q is not absolute", c.LeftoversDir)
	}
	if c.Isolation != nil {
		return c.Isolation.Validate()
	}
	return nil
}

// Executor runs commands as processes on this machine. Each command gets its
// own process group; when the command ends (by itself or because ctx ended)
// every process left in that group is stopped, so no child outlives its step.
type Executor struct {
	cfg Config
}

// New returns a host executor. Zero fields of cfg take their defaults; an
// invalid cfg makes New panic (callers validate configuration at startup with
// cfg.Validate).
func New(cfg Config) *Executor {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Executor{cfg: cfg}
}

// Exec runs req.Argv with exactly req.Env as its environment, in req.Dir.
// See contract.Executor for the exit code and error semantics. A program that
// cannot be found gives exit code 127 and one that cannot be executed 126, as
// a shell would, with a line on req.Stderr.
func (e *Executor) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	start := time.Now()
	res := contract.ExecResult{ExitCode: -1}
	exposed, err := e.check(ctx, &req)
	if err != nil {
		return res, fmt.Errorf("running step %s: %w", req.StepID, err)
	}
	stderr := proc.OrDiscard(req.Stderr)
	grace := req.Grace
	if grace <= 0 {
		grace = e.cfg.Grace
	}
	name := req.Argv[0]
	if name == "sh" {
		name = e.cfg.Shell
	}
	path, err := lookPath(name, req.Env, req.Dir)
	if err != nil {
		code := 127
		if errors.Is(err, errNotExecutable) {
			code = 126
		}
		fmt.Fprintf(stderr, "hookrun: %s: %v\n", req.Argv[0], err)
		res.ExitCode, res.Duration = code, time.Since(start)
		return res, nil
	}
	p, code, err := e.start(req, path, grace, exposed)
	switch {
	case err != nil:
		return res, fmt.Errorf("running step %s: %w", req.StepID, err)
	case p == nil: // could not be executed: a shell's exit code
		fmt.Fprintf(stderr, "hookrun: %s: %v\n", req.Argv[0], code.err)
		res.ExitCode, res.Duration = code.code, time.Since(start)
		return res, nil
	}
	defer p.started.done()
	if e.cfg.LeftoversDir != "" && e.cfg.Isolation == nil && !e.cfg.Contain {
		remove, err := recordGroup(e.cfg.LeftoversDir, p.cmd.Process.Pid)
		if err != nil {
			fmt.Fprintf(stderr, "hookrun: %v (a killed runner would leave this step's processes running)\n", err)
		}
		defer remove()
	}
	return p.wait(ctx, req, grace, start)
}

// check validates a request and, with Isolation, settles its working
// directory; it returns the run directories the isolation must keep.
func (e *Executor) check(ctx context.Context, req *contract.ExecRequest) (exposed []string, err error) {
	if len(req.Argv) == 0 {
		return nil, errors.New("empty argv")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if iso := e.cfg.Isolation; iso != nil {
		exposed = expose(req.Workspace, req.Home, req.TmpDir, req.EventFile, req.Results)
		if req.Dir == "" {
			// Never the runner's own working directory, which may lie in
			// what the isolation hides.
			req.Dir = req.Workspace
			if req.Dir == "" {
				req.Dir = "/"
			}
		}
		if err := checkReachable(iso.Hide, exposed, req.Dir); err != nil {
			return nil, err
		}
	}
	if req.Dir != "" {
		if fi, err := os.Stat(req.Dir); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("working directory %s is not a directory", req.Dir)
		}
	}
	return exposed, nil
}

// process is a started command with its output being copied.
type process struct {
	cmd       *exec.Cmd
	started   startedCmd
	outR      *os.File
	errR      *os.File
	copied    chan struct{}   // one value per stream copied to its end
	ready     <-chan struct{} // the init catches signals (closed at once without isolation)
	isolation <-chan string   // the init's failure to isolate, "" without one
	drainFor  time.Duration   // how long the output may take to end once the group is gone
}

// startFailure is a program that could not be executed, as a shell would
// report it (126, 127).
type startFailure struct {
	code int
	err  error
}

// start starts the command (through its init with Isolation) with its
// output copied to the request's writers. A program that cannot be executed
// (not isolated) gives a nil process and its startFailure.
func (e *Executor) start(req contract.ExecRequest, path string, grace time.Duration, exposed []string) (*process, startFailure, error) {
	outR, outW, err := outputPipe()
	if err != nil {
		return nil, startFailure{}, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := outputPipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, startFailure{}, fmt.Errorf("creating stderr pipe: %w", err)
	}
	l, err := e.command(req, path, grace, exposed)
	if err != nil {
		closeAll(outR, outW, errR, errW)
		return nil, startFailure{}, err
	}
	cmd := l.cmd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, outW, errW
	// Only the stdin copier is managed by os/exec (stdout and stderr are
	// our own pipes); don't let a blocking stdin reader hold Wait.
	cmd.WaitDelay = e.cfg.DrainTimeout
	started := l.start()
	if err := started.err; err != nil {
		closeAll(outR, outW, errR, errW)
		if l.isoErr != nil {
			_ = l.isoErr.Close()
		}
		var iso errIsolating
		if errors.As(err, &iso) {
			return nil, startFailure{}, err
		}
		if code := stepinit.StartErrorCode(err); code != 0 && l.isoErr == nil {
			return nil, startFailure{code: code, err: err}, nil
		}
		return nil, startFailure{}, fmt.Errorf("starting %s: %w", req.Argv[0], err)
	}
	p := &process{cmd: cmd, started: started, outR: outR, errR: errR, copied: make(chan struct{}, 2), drainFor: e.cfg.DrainTimeout}
	p.ready, p.isolation = readIsolationErrors(l.isoErr)
	// The child has its own copies; ours must go so that EOF arrives.
	closeAll(outW, errW)
	var mu sync.Mutex // one writer at a time, in case Stdout and Stderr are the same
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{outR, proc.OrDiscard(req.Stdout)}, {errR, proc.OrDiscard(req.Stderr)}} {
		go func() {
			buf := copyBuffers.Get().(*[copyBufferSize]byte)
			defer copyBuffers.Put(buf)
			if _, err := io.CopyBuffer(&lockedWriter{mu: &mu, w: c.w}, readerOnly{c.r}, buf[:]); err != nil {
				// The writer failed: keep draining so the child never blocks
				// on a full pipe.
				_, _ = io.Copy(io.Discard, c.r)
			}
			p.copied <- struct{}{}
		}()
	}
	return p, startFailure{}, nil
}

// wait waits for the command, stops it (and what it left in its group)
// when ctx ends, drains its output and says how it ended.
func (p *process) wait(ctx context.Context, req contract.ExecRequest, grace time.Duration, start time.Time) (contract.ExecResult, error) {
	res := contract.ExecResult{ExitCode: -1}
	pgid := p.cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()

	var waitErr, ctxErr error
	var termAt time.Time
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		select {
		case waitErr = <-waited: // it had exited already: that is its result
		default:
			ctxErr = ctx.Err()
			termAt = time.Now()
			waitErr = proc.Stop(pgid, grace, waited, p.ready)
		}
	}
	// The main process is gone; stop whatever it left behind in its group.
	proc.StopLeftovers(pgid, termAt, grace)
	p.drain()
	res.Duration = time.Since(start)

	if msg := <-p.isolation; msg != "" {
		return res, fmt.Errorf("running step %s: isolating it: %s", req.StepID, msg)
	}
	if ctxErr != nil {
		return res, fmt.Errorf("running step %s: %w", req.StepID, ctxErr)
	}
	if waitErr != nil && p.cmd.ProcessState == nil {
		return res, fmt.Errorf("running step %s: waiting for %s: %w", req.StepID, req.Argv[0], waitErr)
	}
	res.ExitCode = exitCode(p.cmd.ProcessState)
	return res, nil
}

// drain waits for the output to reach its end; a process that escaped the
// group (setsid) may still hold the pipes, so the wait is bounded.
func (p *process) drain() {
	t := time.NewTimer(p.drainFor)
	for n := 0; n < 2; {
		select {
		case <-p.copied:
			n++
		case <-t.C:
			closeAll(p.outR, p.errR) // unblocks the copiers
			t.Reset(time.Hour)
		}
	}
	t.Stop()
	closeAll(p.outR, p.errR)
}

// launch is a command ready to start: its process, the init's status pipe
// (nil without an init), and how it starts.
type launch struct {
	cmd    *exec.Cmd
	isoErr *os.File
	start  func() startedCmd
}

// initLaunch is the launch of an init's command (the init enters the
// step's directory itself, so it starts in /); cleanup runs once it has
// started.
func initLaunch(cmd *exec.Cmd, isoErr *os.File, cleanup func(), err error) (launch, error) {
	if err != nil {
		return launch{}, err
	}
	cmd.Dir = "/"
	return launch{cmd: cmd, isoErr: isoErr, start: func() startedCmd {
		s := startLocked(cmd)
		cleanup()
		return s
	}}, nil
}

// command builds the launch of one request: the program itself, or, with
// Isolation, the program isolated (directly or through its init).
func (e *Executor) command(req contract.ExecRequest, path string, grace time.Duration, exposed []string) (launch, error) {
	iso := e.cfg.Isolation
	if iso == nil && e.cfg.Contain {
		dir := req.Dir
		if dir == "" { // this process's own, as without Contain
			var err error
			if dir, err = os.Getwd(); err != nil {
				return launch{}, fmt.Errorf("finding the working directory: %w", err)
			}
		}
		return initLaunch(containedCommand(initPath(e.cfg.InitBinary), stepinit.Spec{
			Path: path, Argv: req.Argv, Env: proc.Env(req.Env), Dir: dir, Grace: grace,
		}))
	}
	if iso == nil {
		sys := &syscall.SysProcAttr{Setpgid: true}
		if e.cfg.LeftoversDir != "" {
			sys.Pdeathsig = syscall.SIGKILL // the command, not its children, dies with the runner
		}
		cmd := &exec.Cmd{
			Path:        path,
			Args:        req.Argv,
			Env:         proc.Env(req.Env),
			Dir:         req.Dir,
			SysProcAttr: sys,
		}
		return launch{cmd: cmd, start: func() startedCmd { return startLocked(cmd) }}, nil
	}
	user := iso.Username
	if user == "" {
		user = "hookrun-step"
	}
	env := make([]workflows.EnvVar, 0, len(req.Env)+2)
	for _, v := range req.Env {
		if v.Name != "USER" && v.Name != "LOGNAME" {
			env = append(env, v)
		}
	}
	env = append(env, workflows.EnvVar{Name: "USER", Value: user}, workflows.EnvVar{Name: "LOGNAME", Value: user})
	return iso.launch(stepinit.Spec{
		Path: path, Argv: req.Argv, Env: proc.Env(env), Dir: req.Dir, Expose: exposed, Grace: grace,
	})
}

// startedCmd is a started command whose starting thread stays locked until
// done: the kernel delivers a child's parent-death signal when the thread
// that forked it exits, not the process.
type startedCmd struct {
	err  error
	done func()
}

// startLocked starts cmd from a goroutine locked to its OS thread, which
// stays parked until done is called (after Wait).
func startLocked(cmd *exec.Cmd) startedCmd {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig == 0 {
		return startedCmd{err: cmd.Start(), done: func() {}}
	}
	errc := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- cmd.Start()
		<-release
	}()
	err := <-errc
	if err != nil {
		close(release)
		return startedCmd{err: err, done: func() {}}
	}
	return startedCmd{done: func() { close(release) }}
}

// readIsolationErrors follows what the init reports on its status pipe:
// ready is closed once the init catches signals (or is gone), msg carries
// its failure to isolate ("" when it succeeded) once it closes the pipe.
// Without isolation (r nil) ready is closed and msg is "" at once.
func readIsolationErrors(r *os.File) (ready <-chan struct{}, msg <-chan string) {
	readyc, msgc := make(chan struct{}), make(chan string, 1)
	if r == nil {
		close(readyc)
		msgc <- ""
		return readyc, msgc
	}
	go func() {
		defer r.Close()
		first := make([]byte, 1)
		n, _ := io.ReadFull(r, first)
		close(readyc)
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		if n == 1 && first[0] != stepinit.Ready {
			b = append(first, b...)
		}
		msgc <- strings.TrimSpace(string(b))
	}()
	return readyc, msgc
}

// exitCode maps a process state to a shell-style exit code: 128+N for a
// process killed by signal N.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

var errNotExecutable = errors.New("permission denied")

// lookPath finds name the way a shell would with the step's PATH (the
// runner's own PATH when the step's environment has none). Names with a slash
// are taken relative to dir.
func lookPath(name string, env []workflows.EnvVar, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, checkExecutable(p)
	}
	pathList, found := "", false
	for _, v := range env {
		if v.Name == "PATH" {
			pathList, found = v.Value, true
		}
	}
	if !found {
		pathList = os.Getenv("PATH")
	}
	denied := false
	for _, d := range filepath.SplitList(pathList) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) && dir != "" {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		switch err := checkExecutable(p); {
		case err == nil:
			return p, nil
		case errors.Is(err, errNotExecutable):
			denied = true
		}
	}
	if denied {
		return "", errNotExecutable
	}
	return "", errors.New("command not found")
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return errors.New("command not found")
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errNotExecutable
	}
	return nil
}

// outputPipe is os.Pipe for a child's output: the read end is this
// process's, in the runtime's poller (so that closing it ends a read in
// progress: drain); the write end is the child's and stays blocking, out
// of the poller (os.Pipe puts both ends there, and the child's end is made
// blocking again when the child is started).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		_, _ = syscall.Close(p[0]), syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// copyBufferSize is what one read of a step's output takes at most (as
// io.Copy's own buffer).
const copyBufferSize = 32 << 10

// copyBuffers are the buffers the output copiers read into, kept from one
// step to the next: io.Copy would allocate one per stream and step.
var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

// readerOnly hides *os.File's WriteTo, which would copy through a buffer of
// its own instead of the one given to io.CopyBuffer.
type readerOnly struct{ io.Reader }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var _ contract.Executor = (*Executor)(nil)

// Refusing is an executor that runs nothing: every Exec fails with Reason,
// a sentence telling the user why and what to do instead. internal/app uses
// it for host steps a server must not run.
type Refusing struct {
	Reason string
}

// Exec fails with the reason.
func (r Refusing) Exec(_ context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	return contract.ExecResult{ExitCode: -1}, fmt.Errorf("running step %s: %s", req.StepID, r.Reason)
}

var _ contract.Executor = Refusing{}
