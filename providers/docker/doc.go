// Package docker runs steps in Docker (or Podman through its Docker API):
// a fresh container per step, or execs inside one root container kept alive
// for the whole run. It implements contract.Executor and contract.Sandbox and
// removes orphaned containers labelled hookrun.run.
//
// Every container is labelled hookrun.run=<run id> (and hookrun.step for a
// step container), runs with no-new-privileges, docker-init as PID 1, and the
// memory, CPU and PID limits of the workflow, else of the server (Config).
// The run's workspace is bind-mounted at /workspace unless a volume targets
// it, and the run's event file read-only at contract.ContainerEventPath
// (/hookrun/event.json), and its results folder read-write at
// contract.ContainerResultsPath (/hookrun/results). Volume sources are host paths; a relative one is
// resolved inside the workspace with filepath-securejoin, symlinks followed
// only within it, and one that leaves it (a symlink out, an absolute
// symlink, `..` above it) is an error naming the volume. What is mounted is
// what the resolution opened, pinned: its handle is bind-mounted onto a
// staging entry under Config.VolumeStaging (root's, 0700) and the engine
// gets that path, so that swapping a directory on the checked path for a
// symlink before the engine's mount changes nothing; the pins are unmounted
// after their container and swept with orphans. Where pinning cannot work
// (not root, not in the engine's mount namespace, no staging directory;
// VolumePinning says why) the symlink-free path of what was opened is
// handed over and that race remains (resolveInWorkspace). Named volumes are not supported (they would
// outlive the run and be shared between runs). A volume exposing the
// engine's socket (the socket itself, or a directory above it) is refused
// unless Config.AllowDockerSocket is set.
//
// Containers run with CapDrop ALL plus DefaultCapabilities (and the
// workflow's capabilities.add), as the image's user unless `user:` says
// otherwise. A run's containers join a bridge network of the run's own,
// labelled hookrun.run, created before its first container and removed
// after its last (acquireNetwork), unless the workflow names another
// network; RemoveOrphans sweeps such networks with the containers.
//
// In the root container a step runs as `sh -c WRAPPER PIDFILE ARGV...`: the
// wrapper records the pid of the exec's process (which docker exec makes
// the leader of its own session and process group) and runs ARGV unchanged
// as "$@", so ARGV is never parsed as shell source. On timeout or cancel a
// second exec sends SIGTERM, then SIGKILL after the grace period, to that
// process group; the container stays for the next step. The root image must
// therefore have a POSIX sh, kill and cat.
//
// Pull policies: never (an absent image is an error), missing (default:
// pull when absent), always (pull every time; fails when the registry
// cannot be reached). Pulls are bounded by Config.PullTimeout; errors name
// the image and the policy.
package docker
