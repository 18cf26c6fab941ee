package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/reexec"
	"golang.org/x/sys/unix"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Isolation runs every command of an executor as an unprivileged user, out
// of reach of the runner's own credentials:
//
//   - the command runs as UID:GID with no supplementary groups and
//     no_new_privs (a setuid binary cannot give root back);
//   - in its own PID namespace, so it sees only its own processes: the
//     runner's /proc/PID/environ and /proc/PID/mem are not even there (and a
//     different uid may not read them anyway), and when the step ends or the
//     runner dies (even by SIGKILL) every process of the step is killed by
//     the kernel;
//   - in its own mount namespace, where each path in Hide is covered: a
//     directory by an empty read-only tmpfs, a file by /dev/null. The run's
//     workspace, HOME and TMPDIR (ExecRequest.Workspace, Home, TmpDir) stay
//     reachable at their paths even when they lie under a hidden directory
//     (hookrun's data_dir), other runs' workspaces do not.
//
// It needs root (CAP_SYS_ADMIN for the namespaces, CAP_SETUID for the
// user); Probe tells whether this process can do it. The commands start
// through a re-execution of this binary (moby/sys/reexec): a program that
// uses an isolated executor calls reexec.Init first thing in main (and in
// TestMain).
type Isolation struct {
	UID, GID uint32 // the step user; 0 is refused
	// Username is what USER and LOGNAME say in the command's environment;
	// default "hookrun-step".
	Username string
	// Hide lists absolute paths the command must not reach (data_dir, the
	// configuration file, key files). Missing paths are ignored.
	Hide []string
}

// Validate reports an isolation that would not isolate.
func (i *Isolation) Validate() error {
	if i.UID == 0 || i.GID == 0 {
		return fmt.Errorf("validating host isolation: the step user must not be root (uid %d, gid %d)", i.UID, i.GID)
	}
	for _, p := range i.Hide {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("validating host isolation: hidden path %q is not absolute", p)
		}
		if filepath.Clean(p) == "/" {
			return errors.New("validating host isolation: cannot hide /")
		}
	}
	return nil
}

// Probe runs one trivial command isolated and reports why it could not be
// (no root, no namespaces: a container without CAP_SYS_ADMIN, a kernel or
// security profile that forbids them).
func (i *Isolation) Probe(ctx context.Context) error {
	var out bytes.Buffer
	res, err := New(Config{Isolation: i}).Exec(ctx, contract.ExecRequest{
		StepID: "isolation-probe",
		Argv:   []string{"sh", "-c", "exit 0"},
		Env:    []workflows.EnvVar{{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"}},
		Dir:    "/",
		Stdout: &out,
		Stderr: &out,
	})
	switch {
	case err != nil:
		return fmt.Errorf("probing host step isolation: %w", err)
	case res.ExitCode != 0:
		return fmt.Errorf("probing host step isolation: `sh -c \"exit 0\"` as uid %d exited %d: %s", i.UID, res.ExitCode, strings.TrimSpace(out.String()))
	}
	return nil
}

// initName is the argv[0] under which this binary runs as a step's init.
const initName = "hookrun-step-init"

func init() {
	// syscall.Exit, not os.Exit: nothing is left to flush, and in a binary
	// built with -race os.Exit would sleep a second at every step's end.
	reexec.Register(initName, func() { syscall.Exit(stepInit()) })
}

// initSpec is what the executor tells the init, as JSON on fd 3.
type initSpec struct {
	Path   string        `json:"path"` // resolved program
	Argv   []string      `json:"argv"`
	Env    []string      `json:"env"`
	Dir    string        `json:"dir"`
	UID    uint32        `json:"uid"`
	GID    uint32        `json:"gid"`
	Hide   []string      `json:"hide"`
	Expose []string      `json:"expose"`
	Grace  time.Duration `json:"grace"` // for processes left behind by the command
}

// initCommand builds the process that runs spec isolated. The caller sets
// the standard streams and the process group, starts it, and must read
// errR to EOF: a non-empty text there is a failure to isolate (reported
// as an error, not as the command's exit code).
func (i *Isolation) initCommand(spec initSpec) (cmd *exec.Cmd, errR *os.File, cleanup func(), err error) {
	spec.UID, spec.GID = i.UID, i.GID
	spec.Hide = append(append([]string(nil), i.Hide...), i.blockedAncestors(spec.Expose)...)
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating isolation pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(specR, specW)
		return nil, nil, nil, fmt.Errorf("creating isolation pipe: %w", err)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		closeAll(specR, specW, errR, errW)
		return nil, nil, nil, fmt.Errorf("encoding isolation spec: %w", err)
	}
	// Written in the background: a spec larger than the pipe buffer would
	// otherwise block until the init reads it.
	go func() {
		_, _ = specW.Write(data)
		_ = specW.Close()
	}()
	cmd = &exec.Cmd{
		Path:       reexec.Self(),
		Args:       []string{initName},
		Env:        []string{}, // the init needs nothing; the command's env travels in the spec
		ExtraFiles: []*os.File{specR, errW},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
			// The runner dying (kill -9 included) kills the init, and with
			// it, as PID 1 of its namespace, every process of the step.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	return cmd, errR, func() { closeAll(specR, errW) }, nil
}

// expose lists the run directories of a request that must stay reachable.
func expose(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// blockedAncestors returns, for each exposed directory, its outermost
// ancestor that the step user may not traverse (a data_dir under root's
// 0700 home, a test's 0700 temporary directory). Covering it hides nothing
// the step could reach anyway, and lets the exposed directory be brought
// back at its path.
func (i *Isolation) blockedAncestors(exposed []string) []string {
	var out []string
	for _, p := range exposed {
		parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
		a := "/"
		for _, name := range parts[:len(parts)-1] {
			a = filepath.Join(a, name)
			if !i.mayTraverse(a) {
				if !slices.Contains(out, a) {
					out = append(out, a)
				}
				break
			}
		}
	}
	return out
}

// mayTraverse reports whether the step user may search directory dir.
func (i *Isolation) mayTraverse(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return true // nothing to cover; the bind below will say what is wrong
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	mode := fi.Mode().Perm()
	switch {
	case st.Uid == i.UID:
		return mode&0o100 != 0
	case st.Gid == i.GID:
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

// hiddenBy returns the hidden path that covers p, or "".
func hiddenBy(hide []string, p string) string {
	for _, h := range hide {
		if within(h, p) {
			return h
		}
	}
	return ""
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// checkReachable refuses a working directory that the isolation would hide.
func checkReachable(hide, exposed []string, dir string) error {
	if dir == "" || hiddenBy(hide, dir) == "" {
		return nil
	}
	for _, e := range exposed {
		if within(e, dir) {
			return nil
		}
	}
	return fmt.Errorf("working directory %s is hidden from host steps (it lies in %s)", dir, hiddenBy(hide, dir))
}

// Bytes the init writes on fd 4 before anything else.
const initReady = 'R' // signals are caught from now on (see stepInit)

// stepInit is the init of an isolated command: PID 1 of a fresh PID
// namespace, in a fresh mount namespace, still root. It hides what the spec
// says, starts the command as the step user in a process group of its own,
// forwards the signals it gets to that group, reaps every process of the
// namespace, and exits with the command's status. A failure to isolate is
// written to fd 4 and exits 125 without running anything.
//
// The executor signals only the init: the kernel drops a signal sent to a
// namespace's PID 1 before it has a handler, so the init says on fd 4 when
// it has one (initReady), and the executor waits for that before it sends
// SIGTERM. A signal that arrives before the command exists is forwarded as
// soon as it does; each reaches the command's group exactly once.
func stepInit() int {
	errW := os.NewFile(4, "isolation-errors")
	fail := func(err error) int {
		_, _ = io.WriteString(errW, err.Error())
		return 125
	}
	fwd := &forwarder{}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)
	go func() {
		for sig := range sigs {
			fwd.signal(sig.(syscall.Signal))
		}
	}()
	if _, err := errW.Write([]byte{initReady}); err != nil {
		return 125
	}
	specR := os.NewFile(3, "isolation-spec")
	var spec initSpec
	err := json.NewDecoder(specR).Decode(&spec)
	_ = specR.Close()
	if err != nil {
		return fail(fmt.Errorf("reading isolation spec: %w", err))
	}
	if err := isolateMounts(spec.Hide, spec.Expose); err != nil {
		return fail(err)
	}
	syscall.CloseOnExec(4)

	// no_new_privs is per thread and inherited by the children it forks:
	// set it on the thread that starts the command.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("setting no_new_privs: %w", err))
	}
	if sig := fwd.pending(); sig != 0 {
		_ = errW.Close()
		return 128 + int(sig) // stopped before it started
	}
	pid, err := syscall.ForkExec(spec.Path, spec.Argv, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{
			Setpgid:    true,
			Credential: &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: []uint32{}},
		},
	})
	if err != nil {
		if code := startErrorCode(err); code != 0 {
			fmt.Fprintf(os.Stderr, "hookrun: %s: %v\n", spec.Argv[0], err)
			_ = errW.Close()
			return code
		}
		return fail(fmt.Errorf("starting %s as uid %d: %w", spec.Argv[0], spec.UID, err))
	}
	_ = errW.Close()
	runtime.UnlockOSThread()
	fwd.started(pid)
	return reapAll(pid, spec.Grace)
}

// forwardedSignals are passed on from the init to the command's group.
var forwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// forwarder passes signals to the command's process group, holding those
// that arrive before it exists.
type forwarder struct {
	mu   sync.Mutex
	pgid int
	held []syscall.Signal
}

func (f *forwarder) signal(sig syscall.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pgid == 0 {
		f.held = append(f.held, sig)
		return
	}
	_ = syscall.Kill(-f.pgid, sig)
}

// pending is the first stop signal held so far, or 0.
func (f *forwarder) pending() syscall.Signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.held {
		if s == syscall.SIGTERM || s == syscall.SIGINT || s == syscall.SIGHUP || s == syscall.SIGQUIT {
			return s
		}
	}
	return 0
}

// started records the command's group and forwards what was held.
func (f *forwarder) started(pgid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pgid = pgid
	for _, s := range f.held {
		_ = syscall.Kill(-pgid, s)
	}
	f.held = nil
}

// isolateMounts makes the mount namespace private, covers every hidden
// path, brings the exposed directories back at their paths, and mounts a
// /proc that shows only this PID namespace.
func isolateMounts(hide, exposed []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	// Handles on the exposed directories, taken before anything is covered.
	type handle struct {
		path string
		fd   int
	}
	var keep []handle
	for _, p := range exposed {
		if hiddenBy(hide, p) == "" {
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", p, err)
		}
		keep = append(keep, handle{p, fd})
	}
	// Outer paths first: a path inside an already hidden one needs nothing.
	sorted := append([]string(nil), hide...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) < len(sorted[j]) })
	var tmpfs []string
	for i, h := range sorted {
		if hiddenBy(sorted[:i], h) != "" {
			continue
		}
		fi, err := os.Stat(h)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("hiding %s: %w", h, err)
		case fi.IsDir():
			if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=1024"); err != nil {
				return fmt.Errorf("hiding %s: %w", h, err)
			}
			tmpfs = append(tmpfs, h)
		default:
			if err := unix.Mount("/dev/null", h, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("hiding %s: %w", h, err)
			}
			if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("hiding %s: %w", h, err)
			}
		}
	}
	for _, k := range keep {
		if err := os.MkdirAll(k.path, 0o755); err != nil {
			return fmt.Errorf("exposing %s: %w", k.path, err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("exposing %s: %w", k.path, err)
		}
		_ = unix.Close(k.fd)
	}
	for _, h := range tmpfs {
		if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc for the step's PID namespace: %w", err)
	}
	return nil
}

// reapAll waits for the command (pid), reaping every other process of the
// namespace that ends meanwhile. Once the command has exited, whatever it
// left behind gets SIGTERM, SIGKILL after grace. It returns the command's
// status as a shell would (128+N when killed by signal N).
func reapAll(pid int, grace time.Duration) int {
	code := -1
	for code < 0 {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 125 // ECHILD: cannot happen while the command runs
		case got == pid:
			code = ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
	}
	// Leftovers: -1 is every process of this namespace but the init.
	if syscall.Kill(-1, syscall.SIGTERM) == nil {
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return code
			}
			if got <= 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		_ = syscall.Kill(-1, syscall.SIGKILL)
		for {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil && !errors.Is(err, syscall.EINTR) {
				break
			}
		}
	}
	return code
}
