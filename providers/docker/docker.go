package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hookrun/hookrun/providers/internal/proc"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Labels set on every container hookrun creates.
const (
	LabelRun  = "hookrun.run"  // the run id
	LabelStep = "hookrun.step" // the step id (per-step containers)
	LabelRole = "hookrun.role" // "step" or "root"
)

// WorkspaceMount is where the run's workspace appears inside containers,
// unless a volume of the workflow already targets it.
const WorkspaceMount = "/workspace"

// Docker runs steps in containers of one Docker (or Podman) engine. Its Exec
// method is the per-step container executor; its Open method opens a run's
// root container.
type Docker struct {
	cfg Config
	cli *client.Client

	negotiateMu sync.Mutex
	negotiated  atomic.Bool

	nets runNets // the per-run networks of the runs this process executes
	pins *pinner // pins relative volume sources; off when it cannot
}

// New connects to the engine (client.FromEnv or cfg.Host, with API version
// negotiation: engines in the field are often older than the SDK). It does
// not call the engine's API yet; with Config.VolumeStaging it probes once
// whether volume sources can be pinned (connecting to a local engine socket
// to find the daemon's mount namespace; VolumePinning).
func New(cfg Config) (*Docker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating docker config: %w", err)
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating docker client: %w", err)
	}
	return &Docker{cfg: cfg, cli: cli, pins: newPinner(cfg.VolumeStaging, cli.DaemonHost())}, nil
}

// VolumePinning is nil when relative volume sources are pinned (bind-mounted
// from their resolved handle under Config.VolumeStaging), else why they are
// only checked: the engine then resolves the checked path again, and a
// process of the run that swaps a directory on it for a symlink at that
// moment could escape the workspace (resolveInWorkspace).
func (d *Docker) VolumePinning() error { return d.pins.off }

// Client is the underlying Docker client (tests, benchmarks), its API
// version negotiated.
func (d *Docker) Client() *client.Client {
	ctx, cancel := d.apiCtx(context.Background())
	defer cancel()
	return d.api(ctx)
}

// api returns the client after negotiating the API version with the engine
// once. The SDK would negotiate lazily inside the first request, and two
// concurrent first requests then race on the client's version field (the
// race detector caught a step's image check against a concurrent container
// list). When the engine cannot be reached the SDK's lazy negotiation is left
// to retry.
func (d *Docker) api(ctx context.Context) *client.Client {
	if d.negotiated.Load() {
		return d.cli
	}
	d.negotiateMu.Lock()
	defer d.negotiateMu.Unlock()
	if !d.negotiated.Load() {
		if ping, err := d.cli.Ping(ctx); err == nil {
			d.cli.NegotiateAPIVersionPing(ping)
			d.negotiated.Store(true)
		}
	}
	return d.cli
}

// Ping checks that the engine answers.
func (d *Docker) Ping(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx); err != nil {
		return fmt.Errorf("pinging docker engine at %s: %w", d.cli.DaemonHost(), err)
	}
	return nil
}

// Close releases the client's connections.
func (d *Docker) Close() error { return d.cli.Close() }

// apiCtx is a context for calls that must complete even when ctx is done
// (creating something that must then be removed, removing, inspecting).
func (d *Docker) apiCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d.cfg.APITimeout)
}

// ensureImage applies the pull policy to ref.
func (d *Docker) ensureImage(ctx context.Context, ref, policy string, progress io.Writer) error {
	if ref == "" {
		return errors.New("checking image: no image given")
	}
	if policy == "" {
		policy = workflows.PullMissing
	}
	switch policy {
	case workflows.PullNever, workflows.PullMissing:
		_, err := d.api(ctx).ImageInspect(ctx, ref)
		if err == nil {
			return nil
		}
		if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("inspecting image %s: %w", ref, err)
		}
		if policy == workflows.PullNever {
			return fmt.Errorf("image %s is not present on the engine and pull_policy is %q: load or build it first, or set pull_policy to missing", ref, policy)
		}
	case workflows.PullAlways:
	default:
		return fmt.Errorf("checking image %s: unknown pull_policy %q (always, missing or never)", ref, policy)
	}
	return d.pull(ctx, ref, policy, progress)
}

func (d *Docker) pull(ctx context.Context, ref, policy string, progress io.Writer) error {
	pctx, cancel := context.WithTimeout(ctx, d.cfg.PullTimeout)
	defer cancel()
	fail := func(err error) error {
		if errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s: %w", d.cfg.PullTimeout, err)
		}
		return fmt.Errorf("pulling image %s (pull_policy %s): %w", ref, policy, err)
	}
	rc, err := d.api(pctx).ImagePull(pctx, ref, image.PullOptions{})
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	if progress == nil {
		progress = io.Discard
	}
	// The pull reports failures inside its JSON stream, not as an HTTP error.
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Status      string `json:"status"`
			ID          string `json:"id"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fail(err)
		}
		if m.Error != "" || m.ErrorDetail.Message != "" {
			msg := m.ErrorDetail.Message
			if msg == "" {
				msg = m.Error
			}
			return fail(errors.New(msg))
		}
		if m.Status != "" && m.ID == "" {
			fmt.Fprintf(progress, "%s\n", m.Status)
		}
	}
}

// binds turns the workflow's volumes into Docker binds: relative host paths
// are resolved inside the workspace, symlinks followed only within it
// (resolveInWorkspace: one leaving it is an error naming the volume), the
// workspace is mounted at
// WorkspaceMount unless a volume targets it, and the engine's socket is
// refused unless allowed. When pinning is on, relative sources are pinned
// for a container of runID (pinner) and release, which must be called once
// the container is removed, unmounts them; release is never nil.
func (d *Docker) binds(runID string, volumes []string, workspace string) (_ []string, release func(), err error) {
	var out []string
	var st *staging
	release = func() {
		if st != nil {
			st.release()
		}
	}
	defer func() {
		if err != nil {
			release()
			release = func() {}
		}
	}()
	workspaceTargeted := false
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return nil, release, fmt.Errorf("parsing volume %q: want host:container[:options]", v)
		}
		src, dst := parts[0], parts[1]
		if !path.IsAbs(dst) {
			return nil, release, fmt.Errorf("parsing volume %q: container path %q is not absolute", v, dst)
		}
		dst = path.Clean(dst)
		if dst == WorkspaceMount {
			workspaceTargeted = true
		}
		// Every source is a host path; a relative one is resolved against
		// the workspace. Named volumes are not supported: they would outlive
		// the run and be shared between runs of untrusted code.
		if !filepath.IsAbs(src) {
			if workspace == "" {
				return nil, release, fmt.Errorf("resolving volume %q: relative host path without a workspace", v)
			}
			h, resolved, err := openInWorkspace(workspace, src)
			if err != nil {
				return nil, release, fmt.Errorf("resolving volume %q: %w", v, err)
			}
			if afterResolve != nil {
				afterResolve(resolved)
			}
			if !d.cfg.AllowDockerSocket && d.exposesSocket(resolved) { // what the pin will hold
				h.Close()
				return nil, release, fmt.Errorf("mounting volume %q: it exposes the Docker socket, which the server configuration does not allow (allow_docker_socket)", v)
			}
			src, err = d.pinned(&st, runID, h, resolved)
			h.Close()
			if err != nil {
				return nil, release, fmt.Errorf("mounting volume %q: %w", v, err)
			}
		}
		src = filepath.Clean(src)
		if !d.cfg.AllowDockerSocket && d.exposesSocket(src) {
			return nil, release, fmt.Errorf("mounting volume %q: it exposes the Docker socket, which the server configuration does not allow (allow_docker_socket)", v)
		}
		parts[0], parts[1] = src, dst
		out = append(out, strings.Join(parts, ":"))
	}
	if workspace != "" && !workspaceTargeted {
		out = append(out, workspace+":"+WorkspaceMount)
	}
	return out, release, nil
}

// pinned returns the source to hand the engine for the resolved handle h:
// its staging entry when pinning is on (creating *st, the container's
// staging, on first use), else resolved, the path that was checked.
func (d *Docker) pinned(st **staging, runID string, h *os.File, resolved string) (string, error) {
	if d.pins.off != nil {
		return resolved, nil
	}
	if *st == nil {
		s, err := d.pins.newStaging(runID)
		if err != nil {
			return "", err
		}
		*st = s
	}
	return (*st).pin(h)
}

// withEventFile adds the run's event file (contract.ExecRequest.EventFile),
// read-only at contract.ContainerEventPath, to binds (withBind).
func withEventFile(binds []string, eventFile string) []string {
	return withBind(binds, eventFile, contract.ContainerEventPath, "ro")
}

// withResults adds the run's results folder (contract.ExecRequest.Results),
// read-write at contract.ContainerResultsPath, to binds (withBind).
func withResults(binds []string, dir string) []string {
	return withBind(binds, dir, contract.ContainerResultsPath, "rw")
}

// withBind adds src at target with mode to binds; nothing without a src
// or when a volume of the workflow targets that path already.
func withBind(binds []string, src, target, mode string) []string {
	if src == "" {
		return binds
	}
	for _, b := range binds {
		if parts := strings.Split(b, ":"); len(parts) > 1 && parts[1] == target {
			return binds
		}
	}
	return append(binds, src+":"+target+":"+mode)
}

// exposesSocket reports whether mounting src would give a container the
// engine's socket: src is the socket or a directory above it.
func (d *Docker) exposesSocket(src string) bool {
	resolved := src
	if r, err := filepath.EvalSymlinks(src); err == nil {
		resolved = r
	}
	for _, p := range []string{src, resolved} {
		switch filepath.Base(p) {
		case "docker.sock", "podman.sock":
			return true
		}
	}
	for _, sock := range d.socketPaths() {
		for _, p := range []string{src, resolved} {
			if p == sock || p == "/" || strings.HasPrefix(sock, p+"/") {
				return true
			}
		}
	}
	return false
}

func (d *Docker) socketPaths() []string {
	cands := []string{"/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock"}
	if h := d.cli.DaemonHost(); strings.HasPrefix(h, "unix://") {
		cands = append(cands, strings.TrimPrefix(h, "unix://"))
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		cands = append(cands, filepath.Join(x, "docker.sock"), filepath.Join(x, "podman", "podman.sock"))
	}
	var out []string
	for _, c := range cands {
		out = append(out, filepath.Clean(c))
		if r, err := filepath.EvalSymlinks(c); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// limits returns the workflow's limits, else the server's.
func (d *Docker) limits(c *workflows.Container) (memory, nanoCPUs int64, pids *int64) {
	memory = c.Memory
	if memory == 0 && d.cfg.Memory > 0 {
		memory = d.cfg.Memory
	}
	cpus := c.CPUs
	if cpus == 0 && d.cfg.CPUs > 0 {
		cpus = d.cfg.CPUs
	}
	nanoCPUs = int64(cpus * 1e9)
	p := c.PIDs
	if p == 0 && d.cfg.PIDs > 0 {
		p = d.cfg.PIDs
	}
	if p > 0 {
		pids = &p
	}
	return memory, nanoCPUs, pids
}

func (d *Docker) grace(g time.Duration) time.Duration {
	if g > 0 {
		return g
	}
	return d.cfg.StopGrace
}

// streams copies a hijacked connection's multiplexed output to stdout and
// stderr (kept apart) and, when stdin is set, feeds it then half-closes.
// The returned channel is closed when the output has ended.
func streams(hj types.HijackedResponse, stdin io.Reader, stdout, stderr io.Writer) <-chan struct{} {
	stdout, stderr = proc.OrDiscard(stdout), proc.OrDiscard(stderr)
	if stdin != nil {
		go func() {
			_, _ = io.Copy(hj.Conn, stdin)
			_ = hj.CloseWrite()
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = stdcopy.StdCopy(stdout, stderr, hj.Reader)
	}()
	return done
}

// waitDone waits for ch at most d.
func waitDone(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// insideDir resolves a step's directory inside a container: "" is def, a
// relative path is taken from the workspace mount.
func insideDir(dir, def string) string {
	switch {
	case dir == "":
		return def
	case path.IsAbs(dir):
		return path.Clean(dir)
	default:
		return path.Join(WorkspaceMount, dir)
	}
}

// containerName makes a Docker container name from a run id.
func containerName(runID string) string {
	var b strings.Builder
	b.WriteString("hookrun-")
	for _, r := range runID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
