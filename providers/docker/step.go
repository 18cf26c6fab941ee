package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/hookrun/hookrun/providers/internal/proc"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Exec runs req in a fresh container made from req.Container: pull policy,
// create, attach, start, wait, remove (always, with a fresh context). When
// ctx ends first, the container gets SIGTERM, SIGKILL after the grace
// period, and Exec returns an error wrapping ctx.Err() with ExitCode -1.
func (d *Docker) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	res, done := contract.Timed()
	if err := ctx.Err(); err != nil {
		return done(fmt.Errorf("running step %s: %w", req.StepID, err))
	}
	c := req.Container
	if c == nil {
		return done(fmt.Errorf("running step %s in a container: the step has no container", req.StepID))
	}
	if len(req.Argv) == 0 {
		return done(fmt.Errorf("running step %s in a container: empty command", req.StepID))
	}
	cfg, hc, release, err := d.prepare(ctx, req)
	if err != nil {
		return done(fmt.Errorf("running step %s: %w", req.StepID, err))
	}
	defer release() // after the container's removal below

	// Create with a context that outlives ctx: a container created after
	// ctx ended would otherwise be left behind without our knowing its id.
	actx, cancel := d.apiCtx(ctx)
	created, err := d.api(actx).ContainerCreate(actx, cfg, hc, nil, nil, "")
	cancel()
	if err != nil {
		return done(fmt.Errorf("creating container for step %s from %s: %w", req.StepID, c.Image, err))
	}
	defer d.removeContainer(ctx, created.ID)
	res.ExitCode, err = d.run(ctx, req, created.ID)
	return done(err)
}

// prepare readies what req's container needs before it is created: its
// image (pull policy), its configuration and volumes, its network. release
// gives back the volumes and the network once the container is removed.
func (d *Docker) prepare(ctx context.Context, req contract.ExecRequest) (*container.Config, *container.HostConfig, func(), error) {
	c := req.Container
	if err := d.ensureImage(ctx, c.Image, c.PullPolicy, nil); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	cfg, hc, releaseVolumes, err := d.stepConfig(req)
	if err != nil {
		return nil, nil, nil, err
	}
	netMode, releaseNet, err := d.acquireNetwork(ctx, req.RunID, c)
	if err != nil {
		releaseVolumes()
		return nil, nil, nil, err
	}
	hc.NetworkMode = container.NetworkMode(netMode)
	return cfg, hc, func() { releaseNet(); releaseVolumes() }, nil
}

// run attaches to the created container id, starts it and waits for its
// exit code; when ctx ends first it stops the container (SIGTERM, SIGKILL
// after the grace period) and answers -1 and an error wrapping ctx.Err().
func (d *Docker) run(ctx context.Context, req contract.ExecRequest, id string) (int, error) {
	actx, cancel := d.apiCtx(ctx)
	hj, err := d.api(actx).ContainerAttach(actx, id, container.AttachOptions{
		Stream: true, Stdin: req.Stdin != nil, Stdout: true, Stderr: true,
	})
	cancel()
	if err != nil {
		return -1, fmt.Errorf("attaching to container of step %s: %w", req.StepID, err)
	}
	defer hj.Close()

	// Wait for the next exit before starting, so a fast exit is not missed.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	waitCh, waitErr := d.api(wctx).ContainerWait(wctx, id, container.WaitConditionNextExit)

	if err := ctx.Err(); err != nil {
		return -1, fmt.Errorf("running step %s: %w", req.StepID, err)
	}
	actx, cancel = d.apiCtx(ctx)
	err = d.api(actx).ContainerStart(actx, id, container.StartOptions{})
	cancel()
	if err != nil {
		return -1, fmt.Errorf("starting container of step %s: %w", req.StepID, err)
	}
	outDone := streams(hj, req.Stdin, req.Stdout, req.Stderr)

	select {
	case w := <-waitCh:
		// The output ends when the container's streams close; bounded in
		// case a detached process kept one open.
		waitDone(outDone, 10*time.Second)
		if w.Error != nil {
			return -1, fmt.Errorf("waiting for container of step %s: %s", req.StepID, w.Error.Message)
		}
		return int(w.StatusCode), nil
	case err := <-waitErr:
		return -1, fmt.Errorf("waiting for container of step %s: %w", req.StepID, err)
	case <-ctx.Done():
	}

	// Stopped by ctx: SIGTERM, SIGKILL after the grace period.
	d.stop(ctx, id, d.grace(req.Grace), waitCh)
	waitDone(outDone, 5*time.Second)
	return -1, fmt.Errorf("running step %s: stopped: %w", req.StepID, ctx.Err())
}

// stop sends SIGTERM to the container, then SIGKILL when it has not exited
// within grace.
func (d *Docker) stop(ctx context.Context, id string, grace time.Duration, waitCh <-chan container.WaitResponse) {
	actx, cancel := d.apiCtx(ctx)
	defer cancel()
	_ = d.api(actx).ContainerKill(actx, id, "TERM")
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-waitCh:
		return
	case <-t.C:
	}
	_ = d.api(actx).ContainerKill(actx, id, "KILL")
	select {
	case <-waitCh:
	case <-actx.Done():
	}
}

// removeContainer force-removes a container with a fresh context.
func (d *Docker) removeContainer(ctx context.Context, id string) error {
	actx, cancel := d.apiCtx(ctx)
	defer cancel()
	err := d.api(actx).ContainerRemove(actx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
		return fmt.Errorf("removing container %s: %w", shortID(id), err)
	}
	return nil
}

// isRemovalInProgress: a concurrent remove of the same container answers 409.
func isRemovalInProgress(err error) bool { return cerrdefs.IsConflict(err) }

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// stepConfig builds the create request of a per-step container.
// release unmounts its pinned volumes once the container is removed.
func (d *Docker) stepConfig(req contract.ExecRequest) (_ *container.Config, _ *container.HostConfig, release func(), _ error) {
	c := req.Container
	binds, release, err := d.binds(req.RunID, c.Volumes, req.Workspace)
	binds = withResults(withEventFile(binds, req.EventFile), req.Results)
	if err != nil {
		return nil, nil, release, err
	}
	dir := insideDir(req.Dir, workingDir(c))
	cfg := &container.Config{
		Image:        c.Image,
		Cmd:          req.Argv,
		Env:          proc.Env(c.Env, req.Env),
		WorkingDir:   dir,
		User:         c.User,
		AttachStdout: true,
		AttachStderr: true,
		AttachStdin:  req.Stdin != nil,
		OpenStdin:    req.Stdin != nil,
		StdinOnce:    req.Stdin != nil,
		Labels:       map[string]string{LabelRun: req.RunID, LabelStep: req.StepID, LabelRole: "step"},
	}
	return cfg, d.hostConfig(c, binds), release, nil
}

// DefaultCapabilities are the capabilities a container keeps of Docker's
// default set; every other one is dropped (CapDrop ALL). They are what
// images that install packages or change users at start need: apt and
// dpkg (chown, file modes, dropping to _apt), su-exec/gosu entrypoints,
// killing a child of another user, a test server on a port below 1024.
// Gone, among Docker's defaults: NET_RAW (raw sockets: ARP and ICMP
// spoofing of the neighbours on the network), MKNOD, SYS_CHROOT, SETPCAP,
// SETFCAP and AUDIT_WRITE. A workflow adds more with capabilities.add.
var DefaultCapabilities = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}

// hostConfig applies limits, binds, capabilities and the no-new-privileges
// option shared by both container kinds; the caller sets the network.
func (d *Docker) hostConfig(c *workflows.Container, binds []string) *container.HostConfig {
	memory, nanoCPUs, pids := d.limits(c)
	init := true
	hc := &container.HostConfig{
		Binds:       binds,
		CapDrop:     []string{"ALL"},
		CapAdd:      append(append([]string(nil), DefaultCapabilities...), c.CapAdd...),
		SecurityOpt: []string{"no-new-privileges"},
		Init:        &init, // a real PID 1: signals reach the step, zombies are reaped
		Resources: container.Resources{
			Memory:    memory,
			NanoCPUs:  nanoCPUs,
			PidsLimit: pids,
		},
	}
	return hc
}

func workingDir(c *workflows.Container) string {
	if c.WorkingDir != "" {
		return c.WorkingDir
	}
	return WorkspaceMount
}

var _ contract.Executor = (*Docker)(nil)
