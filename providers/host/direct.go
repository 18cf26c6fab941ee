package host

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hookrun/hookrun/providers/host/stepinit"
)

// This file starts an isolated command without running an init
// (Isolation.Launch, LaunchDirect). Starting a second program for every
// step was most of an isolated step's cost (docs/performance.md, "An
// isolated host step's init"); here, on an OS thread of its own, hookrun
//
//  1. makes fresh mount, IPC and UTS namespaces for the thread;
//  2. starts the PID namespace's first process, its holder: a process of
//     a few instructions (holder_amd64.s) that shares the runner's memory
//     instead of executing a program, and only waits to be killed, PID 1
//     only so that the namespace lives as long as the step and dies with
//     it. It is root's, has no signal handlers, and dies with the thread
//     (parent-death signal), so with the runner;
//  3. sets the namespaces up as the init would (stepinit.Confine), mounts
//     the namespace's own /proc (procfs's pidns option, Linux 6.18; it
//     shows a step only its user's processes, so not the holder), and
//     enters it (setns) for the processes the thread starts next;
//  4. starts the command there as the step user, with no_new_privs (set
//     on the thread, inherited), in a process group of its own.
//
// The command is an ordinary process of its namespace: signals reach it
// as they would anywhere (Executor stops its group, then what is left of
// it), and a step that kills itself dies. Once it has been waited for,
// the holder gets SIGKILL and the kernel kills every process left in the
// namespace with it, those that left the group too. The holder does not
// reap: a process orphaned in the namespace stays a zombie until the step
// ends.
//
// The thread is never handed back to the runtime: its namespaces are not
// the process's, so it ends with the goroutine that locked it, after the
// holder.

// Launch says how an isolated command starts.
type Launch string

const (
	// LaunchAuto (the default) is LaunchDirect where a dry run of it works
	// here (DirectLaunchError), else LaunchInit.
	LaunchAuto Launch = ""
	// LaunchDirect starts the command without an init (this file).
	LaunchDirect Launch = "direct"
	// LaunchInit starts it through an init (Isolation.InitBinary).
	LaunchInit Launch = "init"
)

// CanLaunchDirect reports whether this kernel and process can start an
// isolated command without an init (DirectLaunchError says why not).
func CanLaunchDirect() bool { return DirectLaunchError() == nil }

// DirectLaunchError is why isolated commands cannot start without an init
// here, or nil: a dry run, once per process, of what each launch does
// (fresh namespaces, a holder, the /proc of its PID namespace), which
// fails without root, on a kernel older than 6.18 (no pidns option for
// proc), where a seccomp profile forbids clone3, or on another
// architecture than amd64 (holder_other.go).
var DirectLaunchError = sync.OnceValue(func() error { return dryRunDirect(stepinit.Spec{}) })

// dryRunDirect goes through a direct launch's setup (confineThread) of
// spec (nothing to confine, for DirectLaunchError) on a thread of its
// own, and ends it.
func dryRunDirect(spec stepinit.Spec) error {
	errc := make(chan error, 1)
	goLockedOffMain(func() {
		h, err := confineThread(spec)
		if h != 0 {
			endHolder(h)
		}
		errc <- err
	})
	if err := <-errc; err != nil {
		return fmt.Errorf("trying an isolated launch without an init: %w", err)
	}
	return nil
}

// direct reports whether the isolation starts commands without an init.
func (i *Isolation) direct() bool {
	switch i.Launch {
	case LaunchDirect:
		return true
	case LaunchInit:
		return false
	}
	return CanLaunchDirect()
}

// LaunchUsed is how the isolation starts commands: LaunchDirect or
// LaunchInit (LaunchAuto resolved).
func (i *Isolation) LaunchUsed() Launch {
	if i.direct() {
		return LaunchDirect
	}
	return LaunchInit
}

// directLaunch is the launch of spec (completed by Isolation.launch)
// without an init.
func directLaunch(spec stepinit.Spec) launch {
	cmd := &exec.Cmd{
		Path: spec.Path,
		Args: spec.Argv,
		Env:  spec.Env,
		Dir:  spec.Dir,
		// No parent-death signal: the command is not PID 1 of the
		// namespace the thread made (the holder is, and dies with the
		// runner), so os/exec's child would take its parent for dead.
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Credential: &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: []uint32{}},
		},
	}
	return launch{cmd: cmd, start: func() startedCmd { return startConfinedLocked(cmd, spec) }}
}

// errIsolating marks a failure to isolate (not the command's).
type errIsolating struct{ err error }

func (e errIsolating) Error() string { return "isolating it: " + e.err.Error() }
func (e errIsolating) Unwrap() error { return e.err }

// startConfinedLocked runs startConfined on a thread locked for good; done
// kills the holder (and with it what is left of the step) and returns
// once it is reaped.
func startConfinedLocked(cmd *exec.Cmd, spec stepinit.Spec) startedCmd {
	errc := make(chan error, 1)
	release, finished := make(chan struct{}), make(chan struct{})
	goLockedOffMain(func() {
		defer close(finished)
		h, err := startConfined(cmd, spec)
		errc <- err
		if h == 0 {
			return
		}
		if err == nil {
			<-release
		}
		endHolder(h)
	})
	if err := <-errc; err != nil {
		<-finished
		return startedCmd{err: err, done: func() {}}
	}
	return startedCmd{done: func() {
		close(release)
		<-finished
	}}
}

// goLockedOffMain runs f in a goroutine locked to a thread other than the
// process's main one, and never unlocked (see the top of this file). The
// runtime ends such a thread with its goroutine, but parks the main thread
// for good instead, and /proc/self shows the main thread's namespaces
// (mountinfo among them): a step's must never be those.
func goLockedOffMain(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		// While this goroutine holds the main thread, the next one runs
		// on another.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			f()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// startConfined sets up the calling thread's namespaces (confineThread)
// and starts cmd in them. The caller has locked the thread and never
// unlocks it, and ends the holder (h, 0 when there is none).
func startConfined(cmd *exec.Cmd, spec stepinit.Spec) (h int, err error) {
	if h, err = confineThread(spec); err != nil {
		return h, errIsolating{err}
	}
	// Per thread, and inherited by the command forked from it.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return h, errIsolating{fmt.Errorf("setting no_new_privs: %w", err)}
	}
	// The program's own failure: a shell's exit code (stepinit.StartErrorCode).
	return h, cmd.Start()
}

// confineThread gives the calling thread fresh mount, IPC and UTS
// namespaces set up as spec says, and makes a holder's fresh PID
// namespace, with its /proc, the one of the thread's next children.
func confineThread(spec stepinit.Spec) (h int, err error) {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS); err != nil {
		return 0, fmt.Errorf("creating the step's namespaces: %w", err)
	}
	if h, err = startHolder(); err != nil {
		return h, err
	}
	if err := stepinit.Confine(spec); err != nil {
		return h, err
	}
	return h, enterPIDNamespace(h)
}

// enterPIDNamespace mounts the /proc of the holder's PID namespace and
// makes it the namespace of the thread's next children.
func enterPIDNamespace(holder int) error {
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/pid", holder), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the step's PID namespace: %w", err)
	}
	defer unix.Close(ns)
	if err := stepinit.MountProcOf(ns); err != nil {
		return err
	}
	if err := unix.Setns(ns, unix.CLONE_NEWPID); err != nil {
		return fmt.Errorf("entering the step's PID namespace: %w", err)
	}
	return nil
}

// endHolder kills the holder, and with it every process of its namespace
// (the kernel's doing, before the holder can be reaped), and reaps it.
func endHolder(h int) {
	_ = syscall.Kill(h, syscall.SIGKILL)
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(h, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}
