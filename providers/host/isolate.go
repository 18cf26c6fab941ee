package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/moby/sys/reexec"

	"github.com/hookrun/hookrun/providers/host/stepinit"
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
//   - in its own IPC namespace, with a /dev/shm of its own (a fresh tmpfs
//     of ShmSize): a SysV shared-memory segment, semaphore or message
//     queue, a POSIX message queue or a /dev/shm file that one step makes
//     is gone when it ends, and no step sees the host's or another run's;
//   - in its own UTS namespace, named Hostname ("hookrun-step"): the step
//     does not learn the host's name and cannot change it;
//   - in its own mount namespace, where each path in Hide is covered: a
//     directory by an empty read-only tmpfs, a file by /dev/null. The run's
//     workspace, HOME and TMPDIR (ExecRequest.Workspace, Home, TmpDir) stay
//     reachable at their paths even when they lie under a hidden directory
//     (hookrun's data_dir), and so does the directory of its event file
//     (ExecRequest.EventFile) and its results folder (ExecRequest.Results,
//     which its preparer gave to the step user); other runs' workspaces
//     do not.
//
// It needs root (CAP_SYS_ADMIN for the namespaces, CAP_SETUID for the
// user); Probe tells whether this process can do it. Where the kernel
// allows (Linux 6.18), the commands start without an init (Launch,
// direct.go); else through an init (package stepinit): the small
// hookrun-step-init program, or a re-execution of this binary
// (moby/sys/reexec), for which a program that uses an isolated executor
// calls reexec.Init first thing in main (and in TestMain). Both ways keep
// every guarantee above.
type Isolation struct {
	UID, GID uint32 // the step user; 0 is refused
	// Username is what USER and LOGNAME say in the command's environment;
	// default "hookrun-step".
	Username string
	// Hide lists absolute paths the command must not reach (data_dir, the
	// configuration file, key files). Missing paths are ignored.
	Hide []string
	// Launch is how each command starts: by default without an init where
	// this kernel and process allow it (direct.go), else through an init.
	Launch Launch
	// InitBinary is the program each command starts through (its init,
	// see package stepinit). Default: hookrun-step-init beside the running
	// executable when it is there (make build puts it there: it starts in
	// about a millisecond), else the running executable re-executed, which
	// costs its own start-up (some 25 ms for hookrun) per step.
	InitBinary string
	// ShmSize bounds, in bytes, the step's own /dev/shm (a tmpfs that
	// lives as long as the step, in memory); default DefaultShmSize.
	ShmSize uint64
}

// DefaultShmSize is the size of an isolated step's /dev/shm when
// Isolation.ShmSize is 0: 4 times Docker's default (64 MiB), which
// browsers and multi-process data loaders are known to outgrow.
const DefaultShmSize = 256 << 20

// Hostname is the host name an isolated step sees (its UTS namespace's).
const Hostname = "hookrun-step"

// InitPath is the program that runs as each command's init.
func (i *Isolation) InitPath() string { return initPath(i.InitBinary) }

// initPath is binary, or by default the init beside the running executable
// (see Isolation.InitBinary).
func initPath(binary string) string {
	if binary != "" {
		return binary
	}
	return defaultInit()
}

// defaultInit finds hookrun-step-init beside the running executable, owned
// by the same user and writable by nobody else, or falls back to the
// executable itself.
var defaultInit = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return reexec.Self()
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	self, err1 := os.Stat(exe)
	sibling := filepath.Join(filepath.Dir(exe), stepinit.Name)
	fi, err2 := os.Stat(sibling)
	if err1 != nil || err2 != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || fi.Mode().Perm()&0o022 != 0 {
		return reexec.Self()
	}
	a, ok1 := self.Sys().(*syscall.Stat_t)
	b, ok2 := fi.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || a.Uid != b.Uid {
		return reexec.Self()
	}
	return sibling
})

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
	if i.Launch != LaunchAuto && i.Launch != LaunchDirect && i.Launch != LaunchInit {
		return fmt.Errorf("validating host isolation: launch %q is none of %q, %q, %q", i.Launch, LaunchAuto, LaunchDirect, LaunchInit)
	}
	return nil
}

// Probe runs one trivial command isolated and reports why it could not be
// (no root, no namespaces: a container without CAP_SYS_ADMIN, a kernel or
// security profile that forbids them).
func (i *Isolation) Probe(ctx context.Context) error {
	return probe(ctx, Config{Isolation: i}, "isolation-probe", "isolation", fmt.Sprintf(" as uid %d", i.UID))
}

func init() {
	// A binary without hookrun-step-init beside it runs the init itself.
	// syscall.Exit, not os.Exit: nothing is left to flush, and in a binary
	// built with -race os.Exit would sleep a second at every step's end.
	reexec.Register(stepinit.Name, func() { syscall.Exit(stepinit.Main()) })
}

// launch is how spec runs isolated: directly (direct.go) or through the
// init.
func (i *Isolation) launch(spec stepinit.Spec) (launch, error) {
	spec.UID, spec.GID = i.UID, i.GID
	spec.Hide = append(append([]string(nil), i.Hide...), i.blockedAncestors(spec.Expose)...)
	spec.Hostname = Hostname
	spec.ShmSize = i.ShmSize
	if spec.ShmSize == 0 {
		spec.ShmSize = DefaultShmSize
	}
	if i.direct() {
		return directLaunch(spec), nil
	}
	return initLaunch(i.initCommand(spec))
}

// initCommand builds the init that runs spec (completed by launch)
// isolated. The caller sets the standard streams, starts it, and must
// read errR to EOF: a non-empty text there is a failure to isolate
// (reported as an error, not as the command's exit code).
func (i *Isolation) initCommand(spec stepinit.Spec) (cmd *exec.Cmd, errR *os.File, cleanup func(), err error) {
	return initProcess(i.InitPath(), spec, &syscall.SysProcAttr{
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		// The runner dying (kill -9 included) kills the init, and with
		// it, as PID 1 of its namespace, every process of the step.
		Pdeathsig: syscall.SIGKILL,
	})
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
	// The run's directories share most of their ancestors: each is looked
	// at once.
	traversable := map[string]bool{}
	for _, p := range exposed {
		parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
		a := "/"
		for _, name := range parts[:len(parts)-1] {
			a = filepath.Join(a, name)
			ok, seen := traversable[a]
			if !seen {
				ok = i.mayTraverse(a)
				traversable[a] = ok
			}
			if !ok {
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

// checkReachable refuses a working directory that the isolation would hide.
func checkReachable(hide, exposed []string, dir string) error {
	if dir == "" || stepinit.Covering(hide, dir) == "" {
		return nil
	}
	for _, e := range exposed {
		if stepinit.Within(e, dir) {
			return nil
		}
	}
	return fmt.Errorf("working directory %s is hidden from host steps (it lies in %s)", dir, stepinit.Covering(hide, dir))
}
