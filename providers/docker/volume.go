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
// the container; an open descriptor of hookrun cannot be handed to it (a
// /proc/self/fd path would be the daemon's own, and /proc/<pid>/fd/N of
// hookrun breaks when hookrun runs in a container and is resolved to a
// plain path by the engine anyway). So one race remains: a process of the
// same run that writes the workspace at the same moment (a parallel step)
// could replace a directory of the returned path by a symlink between this
// check and the mount, within milliseconds. docs/operations.md says so.
func resolveInWorkspace(workspace, rel string) (string, error) {
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(clean) {
		return "", errLeavesWorkspace
	}
	ws, err := filepath.EvalSymlinks(workspace) // hookrun's own path, not the pull request's
	if err != nil {
		return "", fmt.Errorf("resolving the workspace: %w", err)
	}
	root, err := os.OpenFile(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	hostView := filepath.Join(ws, clean)

	h, err := pathrs.OpenatInRoot(root, clean)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(hostView); serr == nil {
			return "", errLeavesWorkspace // absent inside, present outside
		}
		h, err = pathrs.MkdirAllHandle(root, clean, 0o755)
		if err != nil {
			return "", fmt.Errorf("creating the missing host path inside the workspace (a dangling symlink on it is not followed): %w", err)
		}
	} else if err != nil {
		return "", fmt.Errorf("opening the host path inside the workspace: %w", err)
	}
	defer h.Close()

	var in, host unix.Stat_t
	if err := unix.Fstat(int(h.Fd()), &in); err != nil {
		return "", fmt.Errorf("inspecting the host path: %w", err)
	}
	if err := unix.Stat(hostView, &host); err != nil || in.Dev != host.Dev || in.Ino != host.Ino {
		return "", errLeavesWorkspace
	}
	p, err := procfs.ProcSelfFdReadlink(h)
	if err != nil {
		return "", fmt.Errorf("naming the host path: %w", err)
	}
	if p != ws && !strings.HasPrefix(p, ws+"/") {
		return "", errLeavesWorkspace // moved out under our feet
	}
	return p, nil
}
