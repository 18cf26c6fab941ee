package host

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cloneArgs is the kernel's struct clone_args, as far as its first
// version goes (CLONE_ARGS_SIZE_VER0); the blanks are pidfd, child_tid,
// parent_tid and tls, which a holder does not use.
type cloneArgs struct {
	flags, _, _, _, exitSignal, stack, stackSize, _ uint64
}

// holderStack is the stack every holder starts on. A holder never writes
// to it (it only makes system calls and has no signal handlers), so all
// of them share it.
var holderStack [32]uint64

// cloneHolder is clone3(args, size) whose child is a holder
// (holder_amd64.s): it sets its parent-death signal to SIGKILL, then
// pauses until it is killed. Were the runner killed in the few
// instructions between the clone and that prctl, the holder would stay,
// paused, in a namespace nothing else can enter (an init's ForkExec checks
// getppid for this; in a fresh PID namespace getppid is always 0).
func cloneHolder(args *cloneArgs, size uintptr) (pid int, errno uintptr)

// startHolder starts a fresh PID namespace's holder (see the top of
// direct.go): a process of the calling thread, sharing the runner's
// memory and its table of open files (a copy would hold every file the
// runner has open, the pipes of other steps' output among them, until
// the holder dies), with every signal handler reset to its default.
func startHolder() (int, error) {
	args := &cloneArgs{
		flags:      unix.CLONE_VM | unix.CLONE_FILES | unix.CLONE_NEWPID | unix.CLONE_CLEAR_SIGHAND,
		exitSignal: uint64(syscall.SIGCHLD),
		stack:      uint64(uintptr(unsafe.Pointer(&holderStack[0]))),
		stackSize:  uint64(unsafe.Sizeof(holderStack)),
	}
	pid, errno := cloneHolder(args, unsafe.Sizeof(*args))
	if errno != 0 {
		return 0, fmt.Errorf("starting the step's PID namespace: %w", syscall.Errno(errno))
	}
	return pid, nil
}
