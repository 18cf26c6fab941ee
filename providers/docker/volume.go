package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"github.com/cyphar/filepath-securejoin/pathrs-lite/procfs"
	"golang.org/x/sys/unix"
)

// errLeavesWorkspace is why a relative volume source is refused: resolved
// as the host would resolve it, it names something outside the workspace
// (a `..` above it, an absolute symlink, a relative symlink climbing out).
var errLeavesWorkspace = errors.New("host path leaves the workspace")

// resolveInWorkspace resolves rel, the relative host path of a volume,
// inside workspace and returns the host path to bind-mount. The workspace
// is the pull request's: any component of rel may be a symlink it planted.
//
//   - rel is resolved with filepath-securejoin (openat2 RESOLVE_IN_ROOT where
//     the kernel has it, its hardened emulation elsewhere): symlinks are
//     followed, but never above the workspace. What that resolution reached
//     is an open O_PATH handle, and the path returned is the kernel's name
//     of that handle (/proc/self/fd/N): it has no symlink in it.
//   - The host's own view of the path must reach the same inode. When it
//     does not, a symlink or `..` points outside the workspace (a symlink
//     to /etc, or an absolute symlink, which the in-root resolution would
//     otherwise silently re-root): refused with errLeavesWorkspace, so the
//     run fails with a message naming the volume instead of mounting
//     something else than the workflow's author expects.
//   - A path that does not exist is created (0755, like the engine creates
//     a missing bind source), inside the workspace only (MkdirAllHandle),
//     and only when the host's view finds nothing either. A dangling
//     symlink on the way is not followed to create its target: an error.
//
// The Docker daemon resolves the bind source again by path when it starts
// the container, so the returned path alone would leave a race: a process
// of the same run writing the workspace at that moment (a parallel step, a
// background process left in the root container) could replace a directory
// on it by a symlink between this check and the mount. openInWorkspace
// therefore also returns the open handle, and binds pins it (pinner): the
// handle is bind-mounted, through /proc/self/fd/N, onto a staging entry
// outside the workspace that only root can reach, and the engine gets the
// staging path, whose components the run cannot change and whose mount is
// the very inode this resolution found. Where pinning is impossible (hookrun
// not root, or not in the engine's mount namespace) the returned path is
// handed over as before, and hookrun says so once at start
// (Docker.VolumePinning): the race above then remains.
func resolveInWorkspace(workspace, rel string) (string, error) {
	h, p, err := openInWorkspace(workspace, rel)
	if err != nil {
		return "", err
	}
	h.Close()
	return p, nil
}

// openInWorkspace is resolveInWorkspace that also returns the O_PATH handle
// of what it resolved, for the caller to pin and close.
func openInWorkspace(workspace, rel string) (_ *os.File, p string, err error) {
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(clean) {
		return nil, "", errLeavesWorkspace
	}
	ws, err := filepath.EvalSymlinks(workspace) // hookrun's own path, not the pull request's
	if err != nil {
		return nil, "", fmt.Errorf("resolving the workspace: %w", err)
	}
	root, err := os.OpenFile(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	hostView := filepath.Join(ws, clean)

	f, err := pathrs.OpenatInRoot(root, clean)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(hostView); serr == nil {
			return nil, "", errLeavesWorkspace // absent inside, present outside
		}
		f, err = pathrs.MkdirAllHandle(root, clean, 0o755)
		if err != nil {
			return nil, "", fmt.Errorf("creating the missing host path inside the workspace (a dangling symlink on it is not followed): %w", err)
		}
	} else if err != nil {
		return nil, "", fmt.Errorf("opening the host path inside the workspace: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()

	var in, host unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &in); err != nil {
		return nil, "", fmt.Errorf("inspecting the host path: %w", err)
	}
	if err := unix.Stat(hostView, &host); err != nil || in.Dev != host.Dev || in.Ino != host.Ino {
		return nil, "", errLeavesWorkspace
	}
	p, err = procfs.ProcSelfFdReadlink(f)
	if err != nil {
		return nil, "", fmt.Errorf("naming the host path: %w", err)
	}
	if p != ws && !strings.HasPrefix(p, ws+"/") {
		return nil, "", errLeavesWorkspace // moved out under our feet
	}
	return f, p, nil
}
