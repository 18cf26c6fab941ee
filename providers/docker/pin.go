package docker

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// pinner pins the relative volume sources of containers (see
// resolveInWorkspace): each resolved handle is bind-mounted onto a staging
// entry <base>/<run>/<container>/<n> and the engine mounts that path. base
// is root's, mode 0700, outside every workspace: no step can reach it, so
// no component of a staging path can be swapped, and the bind mount holds
// the inode the in-root resolution found.
type pinner struct {
	base string // the staging directory; "" when off
	off  error  // why volume sources are not pinned; nil when they are

	mu   sync.Mutex
	held map[string]int // open stagings by run id (the orphan sweep skips them)
}

// afterResolve, when set (tests), runs after a relative volume source was
// resolved and before it is pinned and handed to the engine: the moment a
// hostile process of the run would swap the path for a symlink.
var afterResolve func(resolved string)

// newPinner probes whether pinning works: base configured, hookrun root,
// in the mount namespace of the engine (whose daemon must see the staging
// mounts), and a trial bind mount under base succeeds. Otherwise pinning is
// off and off says why.
func newPinner(base, engineHost string) *pinner {
	p := &pinner{held: map[string]int{}}
	if err := probePinning(base, engineHost); err != nil {
		p.off = err
		return p
	}
	p.base = base
	return p
}

func probePinning(base, engineHost string) error {
	if base == "" {
		return errors.New("no volume staging directory configured")
	}
	if os.Geteuid() != 0 {
		return errors.New("hookrun does not run as root (bind mounts need CAP_SYS_ADMIN)")
	}
	if err := sameMountNamespace(engineHost); err != nil {
		return err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return fmt.Errorf("creating the volume staging directory: %w", err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		return fmt.Errorf("securing the volume staging directory: %w", err)
	}
	src, err := os.OpenFile(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the volume staging directory: %w", err)
	}
	defer src.Close()
	trial := filepath.Join(base, ".probe-"+randomID())
	if err := os.Mkdir(trial, 0o700); err != nil {
		return fmt.Errorf("creating a trial staging entry: %w", err)
	}
	defer os.Remove(trial)
	if err := bindHandle(src, trial); err != nil {
		return fmt.Errorf("trying a bind mount: %w", err)
	}
	if err := unix.Unmount(trial, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("removing the trial bind mount: %w", err)
	}
	return nil
}

// sameMountNamespace checks that the engine's daemon, found as the peer of
// its local unix socket (SO_PEERCRED), shares hookrun's mount namespace:
// only then does it see the staging mounts at their paths.
func sameMountNamespace(engineHost string) error {
	sock, ok := strings.CutPrefix(engineHost, "unix://")
	if !ok {
		return fmt.Errorf("the engine at %s is not reached through a local unix socket", engineHost)
	}
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return fmt.Errorf("connecting to the engine's socket: %w", err)
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return fmt.Errorf("inspecting the engine's socket: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		credErr = err
	}
	if credErr != nil {
		return fmt.Errorf("finding the engine's process: %w", credErr)
	}
	if cred.Pid <= 0 {
		return errors.New("the engine's process is outside hookrun's PID namespace")
	}
	mine, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("reading hookrun's mount namespace: %w", err)
	}
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(int(cred.Pid)) + "/ns/mnt")
	if err != nil {
		return fmt.Errorf("reading the engine's mount namespace: %w", err)
	}
	if mine != theirs {
		return errors.New("the engine runs in another mount namespace than hookrun")
	}
	return nil
}

// bindHandle bind-mounts what h names (through its /proc/self/fd entry,
// never its path) onto target, recursively, and makes the new mount
// private: nothing mounted under it propagates back to the host or in
// from it.
func bindHandle(h *os.File, target string) error {
	src := "/proc/self/fd/" + strconv.Itoa(int(h.Fd()))
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting: %w", err)
	}
	if err := unix.Mount("", target, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("making the bind mount private: %w", err)
	}
	return nil
}

// staging holds the pinned sources of one container.
type staging struct {
	p       *pinner
	runID   string
	dir     string   // <base>/<run>/<random>
	entries []string // its pinned entries, mounted
}

// newStaging creates the staging directory of one container of runID.
func (p *pinner) newStaging(runID string) (*staging, error) {
	if runID == "" || runID == "." || runID == ".." || strings.ContainsAny(runID, "/\x00") {
		return nil, fmt.Errorf("staging volumes: run id %q cannot name a directory", runID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	runDir := filepath.Join(p.base, runID)
	if err := os.Mkdir(runDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("staging volumes: %w", err)
	}
	dir := filepath.Join(runDir, randomID())
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("staging volumes: %w", err)
	}
	p.held[runID]++
	return &staging{p: p, runID: runID, dir: dir}, nil
}

// pin bind-mounts h onto a new entry of s and returns the entry's path: a
// directory for a directory, an empty file for anything else.
func (s *staging) pin(h *os.File) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.Fd()), &st); err != nil {
		return "", fmt.Errorf("pinning: inspecting the host path: %w", err)
	}
	target := filepath.Join(s.dir, strconv.Itoa(len(s.entries)))
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := os.Mkdir(target, 0o700); err != nil {
			return "", fmt.Errorf("pinning: %w", err)
		}
	} else {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return "", fmt.Errorf("pinning: %w", err)
		}
		f.Close()
	}
	if err := bindHandle(h, target); err != nil {
		_ = os.Remove(target)
		return "", fmt.Errorf("pinning: %w", err)
	}
	s.entries = append(s.entries, target)
	return target, nil
}

// release unmounts and removes the entries of s, its directory and, when
// it was the run's last, the run's directory. Only empty entries are
// removed (never recursively): an entry whose unmount failed stays, busy,
// for the orphan sweep.
func (s *staging) release() {
	for _, e := range s.entries {
		_ = unix.Unmount(e, unix.MNT_DETACH)
		_ = os.Remove(e)
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = os.Remove(s.dir)
	if p.held[s.runID]--; p.held[s.runID] <= 0 {
		delete(p.held, s.runID)
		_ = os.Remove(filepath.Join(p.base, s.runID))
	}
}

// removeOrphans unmounts and removes the staging directories of runs that
// are not live and that this process does not hold; removed counts runs.
func (p *pinner) removeOrphans(live func(runID string) bool) (removed int, err error) {
	if p.base == "" {
		return 0, nil
	}
	dirs, err := os.ReadDir(p.base)
	if err != nil {
		return 0, fmt.Errorf("listing volume stagings: %w", err)
	}
	mounts, err := mountPoints()
	if err != nil {
		return 0, err
	}
	return removeEach("volume stagings", dirs, func(de os.DirEntry) bool {
		runID := de.Name()
		if !de.IsDir() || strings.HasPrefix(runID, ".") {
			return true
		}
		p.mu.Lock()
		held := p.held[runID] > 0
		p.mu.Unlock()
		return held || (live != nil && live(runID))
	}, func(de os.DirEntry) error { return removeStagingTree(filepath.Join(p.base, de.Name()), mounts) })
}

// removeStagingTree detaches every mount under dir, deepest first, then
// removes what is left bottom-up with os.Remove only: were a mount still
// there, its content (a workspace) is never deleted, the removal fails.
func removeStagingTree(dir string, mounts []string) error {
	var under []string
	for _, m := range mounts {
		if strings.HasPrefix(m, dir+"/") {
			under = append(under, m)
		}
	}
	sort.Slice(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	for _, m := range under {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmounting %s: %w", m, err)
		}
	}
	containers, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	var errs []error
	for _, c := range containers {
		cdir := filepath.Join(dir, c.Name())
		if c.IsDir() {
			entries, err := os.ReadDir(cdir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, e := range entries {
				errs = append(errs, os.Remove(filepath.Join(cdir, e.Name())))
			}
		}
		errs = append(errs, os.Remove(cdir))
	}
	errs = append(errs, os.Remove(dir))
	return errors.Join(errs...)
}

// mountPoints lists the mount points of hookrun's mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMountinfo(fields[4]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	return out, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, \011,
// \012, \134) of a mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
