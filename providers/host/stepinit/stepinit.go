package stepinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Name is the argv[0] of an init, whichever binary runs it.
const Name = "hookrun-step-init"

// Spec is what the executor tells the init on fd 3 (MarshalBinary).
type Spec struct {
	Path   string // the program, resolved
	Argv   []string
	Env    []string
	Dir    string
	UID    uint32
	GID    uint32
	Hide   []string      // absolute paths to cover
	Expose []string      // absolute paths to bring back under covered ones: directories, or a regular file alone
	Grace  time.Duration // SIGTERM → SIGKILL for processes the command leaves behind
	// Hostname is set in the step's own UTS namespace (the NIS domain
	// name becomes the kernel's default, "(none)"), so that the step does
	// not learn the host's; "" leaves both as they are.
	Hostname string
	// ShmSize is the size limit, in bytes, of the fresh tmpfs mounted on
	// /dev/shm for the step (POSIX shared memory); 0 leaves /dev/shm alone.
	ShmSize uint64
	// SameUser runs the command as the init's own user, in the init's
	// mounts, without no_new_privs (UID, GID, Hide, Expose, Hostname and
	// ShmSize unused): the init only contains the command's processes in
	// its namespaces (host.Config.Contain).
	SameUser bool
}

// Covering returns the path in hide that is p or one of its ancestors, or "".
func Covering(hide []string, p string) string {
	for _, h := range hide {
		if Within(h, p) {
			return h
		}
	}
	return ""
}

// Within reports whether p is dir or below it.
func Within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// StartErrorCode maps an exec failure to the shell's exit code (126 cannot
// execute, 127 not found), or 0 when it is not the program's fault.
func StartErrorCode(err error) int {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return 127
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		return 126
	}
	return 0
}

// Ready is the byte the init writes on fd 4 first, once it catches
// signals (see Main).
const Ready = 'R'

// Main is the init of an isolated command: PID 1 of a fresh PID
// namespace, in fresh mount, IPC and UTS namespaces, still root. It hides
// what the spec says, gives the command a /dev/shm of its own and names
// the host (Spec.Hostname), starts the command as the step user in a process group of its own
// (with Spec.SameUser: PID 1 of a fresh PID namespace only, and the command
// as the init's own user, nothing hidden),
// forwards the signals it gets to that group, reaps every process of the
// namespace, and exits with the command's status. A failure to isolate is
// written to fd 4 and exits 125 without running anything.
//
// The executor signals only the init: the kernel drops a signal sent to a
// namespace's PID 1 before it has a handler, so the init says on fd 4 when
// it has one (Ready), and the executor waits for that before it sends
// SIGTERM. A signal that arrives before the command exists is forwarded as
// soon as it does; each reaches the command's group exactly once.
func Main() int {
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
	if _, err := errW.Write([]byte{Ready}); err != nil {
		return 125
	}
	specR := os.NewFile(3, "isolation-spec")
	data, err := io.ReadAll(specR)
	_ = specR.Close()
	var spec Spec
	if err == nil {
		err = spec.UnmarshalBinary(data)
	}
	if err != nil {
		return fail(fmt.Errorf("reading isolation spec: %w", err))
	}
	if !spec.SameUser {
		if err := Confine(spec); err != nil {
			return fail(err)
		}
		if err := unix.Mount("proc", "/proc", "proc", procFlags, "hidepid="+procHidePID); err != nil {
			return fail(fmt.Errorf("mounting /proc for the step's PID namespace: %w", err))
		}
	}
	syscall.CloseOnExec(4)

	// no_new_privs is per thread and inherited by the children it forks:
	// set it on the thread that starts the command.
	runtime.LockOSThread()
	if !spec.SameUser {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fail(fmt.Errorf("setting no_new_privs: %w", err))
		}
	}
	var cred *syscall.Credential
	if !spec.SameUser {
		cred = &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: []uint32{}}
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
			Credential: cred,
		},
	})
	if err != nil {
		if code := StartErrorCode(err); code != 0 {
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

// Confine sets up what an isolated step sees, in the mount, IPC and UTS
// namespaces of the calling thread (fresh ones, made by its caller): the
// paths of spec.Hide covered, spec.Expose brought back, a /dev/shm and
// /dev/mqueue of its own, spec.Hostname. Everything but the step's /proc,
// which shows a PID namespace: the init mounts its own (Main), hookrun
// one for a namespace it made without an init (MountProcOf).
func Confine(spec Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	// The step's own /dev/shm covers the host's like a hidden path: a
	// directory exposed below it (a data_dir in /dev/shm) is brought back.
	covered := spec.Hide
	if spec.ShmSize > 0 && isDir("/dev/shm") {
		covered = append(slices.Clone(covered), "/dev/shm")
	}
	keep, err := openExposed(covered, spec.Expose)
	defer func() {
		for _, k := range keep {
			_ = unix.Close(k.fd)
		}
	}()
	if err != nil {
		return err
	}
	if err := privateIPC(spec.ShmSize); err != nil {
		return err
	}
	if err := isolateMounts(spec.Hide, keep); err != nil {
		return err
	}
	return setHostname(spec.Hostname)
}

// procFlags are the mount flags of a step's /proc.
const procFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// procHidePID is the hidepid option of a step's /proc: it shows the step's
// processes, not the namespace's PID 1 (the init, or hookrun's holder,
// which shares the runner's memory and command line), nor any other
// process the step's user could not trace. It is "invisible" by number:
// the init runs on kernels older than 5.8, which take only the number.
const procHidePID = "2"

// MountProcOf mounts on /proc, in the calling thread's mount namespace, a
// proc file system that shows the PID namespace ns (a file descriptor of
// it; procfs's pidns option, Linux 6.18): the /proc of a step started from
// outside its PID namespace.
func MountProcOf(ns int) error {
	mnt, err := procOf(ns)
	if err != nil {
		return fmt.Errorf("mounting the step's /proc: %w", err)
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, "/proc", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting the step's /proc: %w", err)
	}
	return nil
}

// procOf makes a detached proc mount of the PID namespace ns (a file
// descriptor of it).
func procOf(ns int) (mnt int, err error) {
	fs, err := unix.Fsopen("proc", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetFd(fs, "pidns", ns); err != nil {
		return -1, fmt.Errorf("setting the pidns option (Linux 6.18 or later): %w", err)
	}
	if err := unix.FsconfigSetString(fs, "hidepid", procHidePID); err != nil {
		return -1, fmt.Errorf("setting the hidepid option: %w", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, err
	}
	return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
}

// exposedDir is a directory (or a regular file) to bring back, and a
// handle on it taken before anything covered it.
type exposedDir struct {
	path string
	fd   int
	file bool // a regular file, brought back alone
}

// openExposed takes handles on the exposed directories and files that a
// covered path would hide. Anything else (a device, a socket, a fifo) is
// refused.
func openExposed(covered, exposed []string) ([]exposedDir, error) {
	var keep []exposedDir
	for _, p := range exposed {
		if Covering(covered, p) == "" {
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return keep, fmt.Errorf("opening %s: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return keep, fmt.Errorf("opening %s: %w", p, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR, unix.S_IFREG:
		default:
			_ = unix.Close(fd)
			return keep, fmt.Errorf("opening %s: neither a directory nor a regular file", p)
		}
		keep = append(keep, exposedDir{path: p, fd: fd, file: st.Mode&unix.S_IFMT == unix.S_IFREG})
	}
	return keep, nil
}

// isolateMounts covers every hidden path and brings the kept directories
// back at their paths.
func isolateMounts(hide []string, keep []exposedDir) error {
	// Outer paths first: a path inside an already hidden one needs nothing.
	sorted := append([]string(nil), hide...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) < len(sorted[j]) })
	var tmpfs []string
	for i, h := range sorted {
		if Covering(sorted[:i], h) != "" {
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
		mountPoint := mkdirs
		if k.file {
			mountPoint = mkfile
		}
		if err := mountPoint(k.path); err != nil {
			return fmt.Errorf("exposing %s: %w", k.path, err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("exposing %s: %w", k.path, err)
		}
	}
	for _, h := range tmpfs {
		if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	return nil
}

// mkdirs makes dir and its missing parents (mode 0755) on a fresh cover,
// where most exist after the first exposed directory: a mkdir first, and a
// look only when it fails (os.MkdirAll looks at every level first).
func mkdirs(dir string) error {
	err := unix.Mkdir(dir, 0o755)
	if errors.Is(err, unix.ENOENT) {
		if parent := filepath.Dir(dir); parent != dir {
			if err := mkdirs(parent); err != nil {
				return err
			}
			err = unix.Mkdir(dir, 0o755)
		}
	}
	if errors.Is(err, unix.EEXIST) && isDir(dir) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}

// mkfile makes an empty file at path (mode 0444) and its missing parent
// directories, on a fresh cover: the mount point of a file brought back
// alone. A regular file there already will do. mknod, not open: a file
// open for writing on the cover, even for an instant, would be open in any
// process the runner forks meanwhile, until that one execs, and the cover's
// remount read-only would then fail (EBUSY).
func mkfile(path string) error {
	if err := mkdirs(filepath.Dir(path)); err != nil {
		return err
	}
	err := unix.Mknod(path, unix.S_IFREG|0o444, 0)
	if errors.Is(err, unix.EEXIST) {
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode().IsRegular() {
			return nil
		}
	}
	if err != nil {
		return &os.PathError{Op: "mknod", Path: path, Err: err}
	}
	return nil
}

// privateIPC gives the step a /dev/shm of its own: POSIX shared memory
// (shm_open) is files on that tmpfs, which the IPC namespace does not
// separate. A fresh mqueue file system on /dev/mqueue, where the host has
// one, shows the step's own IPC namespace's message queues instead of the
// host's. Either is left alone where the host has no such directory.
func privateIPC(shmSize uint64) error {
	if shmSize > 0 && isDir("/dev/shm") {
		opts := fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", shmSize, 65536)
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mounting a private /dev/shm: %w", err)
		}
	}
	if isDir("/dev/mqueue") {
		if err := unix.Mount("mqueue", "/dev/mqueue", "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting a private /dev/mqueue: %w", err)
		}
	}
	return nil
}

// setHostname names the step's UTS namespace.
func setHostname(name string) error {
	if name == "" {
		return nil
	}
	if err := unix.Sethostname([]byte(name)); err != nil {
		return fmt.Errorf("setting the step's hostname: %w", err)
	}
	if err := unix.Setdomainname([]byte("(none)")); err != nil {
		return fmt.Errorf("setting the step's domain name: %w", err)
	}
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
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
