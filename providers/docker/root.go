package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hookrun/hookrun/providers/internal/proc"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// keepAlive is the root container's command: it idles until SIGTERM.
var keepAlive = []string{"sh", "-c", `trap "exit 0" TERM; while :; do sleep 3600 & wait; done`}

// execWrapper runs a step's argv inside the root container. `docker exec`
// starts the process as the leader of its own session and process group;
// the wrapper records that group's id (its own pid) in the file named by $0,
// runs argv unchanged ("$@": argv stays data, never shell source), removes
// the file and exits with argv's status. A timeout signals the whole group
// through a second exec (killScript).
const execWrapper = `{ echo $$ > "$0"; } 2>/dev/null; "$@"; s=$?; rm -f "$0"; exit $s`

// killScript signals the process group recorded in the file named by $0 with
// the signal $1.
const killScript = `p=$(cat "$0" 2>/dev/null) || exit 0; [ -n "$p" ] || exit 0; kill -"$1" -"$p" 2>/dev/null || kill -"$1" "$p" 2>/dev/null; exit 0`

// Open creates and starts the run's root container from
// req.Workflow.Container, kept alive until Close, with the workspace
// bind-mounted. A container of the same name left by an earlier attempt of
// the run is removed first.
func (d *Docker) Open(ctx context.Context, req contract.OpenRequest) (contract.Session, error) {
	if req.Workflow == nil || req.Workflow.Container == nil {
		return nil, fmt.Errorf("opening root container for run %s: the workflow has no container", req.RunID)
	}
	c := req.Workflow.Container
	if err := d.ensureImage(ctx, c.Image, c.PullPolicy, req.Stdout); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("opening root container for run %s: %w", req.RunID, err)
	}
	binds, releaseVolumes, err := d.binds(req.RunID, c.Volumes, req.Workspace)
	binds = withResults(withEventFile(binds, req.EventFile), req.Results)
	if err != nil {
		return nil, fmt.Errorf("opening root container for run %s: %w", req.RunID, err)
	}
	opened := false
	defer func() {
		if !opened {
			releaseVolumes() // the session did not take them
		}
	}()
	name := containerName(req.RunID)
	if err := d.removeContainer(ctx, name); err != nil {
		return nil, fmt.Errorf("opening root container for run %s: removing a leftover: %w", req.RunID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("opening root container for run %s: %w", req.RunID, err)
	}
	cfg := &container.Config{
		Image:      c.Image,
		Cmd:        keepAlive,
		Env:        proc.Env(c.Env, req.Env),
		WorkingDir: workingDir(c),
		User:       c.User,
		Labels:     map[string]string{LabelRun: req.RunID, LabelRole: "root"},
	}
	netMode, releaseNet, err := d.acquireNetwork(ctx, req.RunID, c)
	if err != nil {
		return nil, fmt.Errorf("opening root container for run %s: %w", req.RunID, err)
	}
	hc := d.hostConfig(c, binds)
	hc.NetworkMode = container.NetworkMode(netMode)
	actx, cancel := d.apiCtx(ctx)
	created, err := d.api(actx).ContainerCreate(actx, cfg, hc, nil, nil, name)
	cancel()
	if err != nil {
		releaseNet()
		return nil, fmt.Errorf("creating root container for run %s from %s: %w", req.RunID, c.Image, err)
	}
	s := &Session{d: d, id: created.ID, runID: req.RunID, c: c, releaseNet: releaseNet, releaseVolumes: releaseVolumes}
	opened = true // s.Close releases the volumes from now on
	actx, cancel = d.apiCtx(ctx)
	err = d.api(actx).ContainerStart(actx, s.id, container.StartOptions{})
	cancel()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = s.Close(ctx)
		return nil, fmt.Errorf("starting root container for run %s: %w", req.RunID, err)
	}
	return s, nil
}

// Session is an open root container. Steps run in it as execs.
type Session struct {
	d     *Docker
	id    string
	runID string
	c     *workflows.Container

	releaseNet     func() // lets go of the run's network once the container is removed
	releaseVolumes func() // unmounts the pinned volume sources once the container is removed

	closeOnce sync.Once
	closeErr  error
}

// ID is the container's id.
func (s *Session) ID() string { return s.id }

// Exec runs req as an exec in the root container; a step with its own
// container (req.Container set) gets a fresh one instead (Docker.Exec). The
// exit code comes from exec inspect. When ctx ends first, the exec's process
// group gets SIGTERM, then SIGKILL after the grace period; the container
// stays for the next step.
func (s *Session) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	if req.Container != nil {
		return s.d.Exec(ctx, req)
	}
	res, done := contract.Timed()
	if len(req.Argv) == 0 {
		return done(fmt.Errorf("running step %s in the root container: empty command", req.StepID))
	}
	if err := ctx.Err(); err != nil {
		return done(fmt.Errorf("running step %s: %w", req.StepID, err))
	}
	dir := insideDir(req.Dir, workingDir(s.c))
	pidFile := "/tmp/.hookrun-exec-" + randomID()
	cmd := append([]string{"sh", "-c", execWrapper, pidFile}, req.Argv...)

	actx, cancel := s.d.apiCtx(ctx)
	defer cancel()
	created, err := s.d.api(actx).ContainerExecCreate(actx, s.id, container.ExecOptions{
		User:         s.c.User,
		AttachStdin:  req.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          proc.Env(req.Env),
		WorkingDir:   dir,
		Cmd:          cmd,
	})
	if err != nil {
		return done(fmt.Errorf("creating exec for step %s in root container: %w", req.StepID, err))
	}
	hj, err := s.d.api(actx).ContainerExecAttach(actx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return done(fmt.Errorf("starting exec for step %s in root container: %w", req.StepID, err))
	}
	defer hj.Close()
	outDone := streams(hj, req.Stdin, req.Stdout, req.Stderr)

	select {
	case <-outDone:
	case <-ctx.Done():
		grace := s.d.grace(req.Grace)
		s.signal(ctx, pidFile, "TERM")
		if !waitDone(outDone, grace) {
			s.signal(ctx, pidFile, "KILL")
			waitDone(outDone, 5*time.Second)
		}
		s.signal(ctx, pidFile, "rm")
		return done(fmt.Errorf("running step %s: stopped: %w", req.StepID, ctx.Err()))
	}

	// The output has ended; the exit code follows shortly after.
	ictx, icancel := s.d.apiCtx(ctx)
	defer icancel()
	for i := 0; ; i++ {
		ins, err := s.d.api(ictx).ContainerExecInspect(ictx, created.ID)
		if err != nil {
			return done(fmt.Errorf("inspecting exec of step %s: %w", req.StepID, err))
		}
		if !ins.Running {
			res.ExitCode = ins.ExitCode
			break
		}
		if i == 200 {
			return done(fmt.Errorf("inspecting exec of step %s: still running after its output ended", req.StepID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return done(nil)
}

// signal sends sig ("TERM", "KILL") to the process group recorded in
// pidFile, or removes pidFile when sig is "rm", through a second exec.
func (s *Session) signal(ctx context.Context, pidFile, sig string) {
	cmd := []string{"sh", "-c", killScript, pidFile, sig}
	if sig == "rm" {
		cmd = []string{"rm", "-f", pidFile}
	}
	actx, cancel := s.d.apiCtx(ctx)
	defer cancel()
	created, err := s.d.api(actx).ContainerExecCreate(actx, s.id, container.ExecOptions{User: s.c.User, Cmd: cmd})
	if err != nil {
		return
	}
	hj, err := s.d.api(actx).ContainerExecAttach(actx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return
	}
	defer hj.Close()
	waitDone(streams(hj, nil, nil, nil), 10*time.Second)
}

// Close force-removes the root container, with a fresh context when ctx is
// done. It may be called more than once.
func (s *Session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closeErr = s.d.removeContainer(ctx, s.id)
		s.releaseNet()
		s.releaseVolumes()
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("closing root container of run %s: %w", s.runID, s.closeErr)
		}
	})
	return s.closeErr
}

// RemoveOrphans removes every container labelled hookrun.run whose run is
// not live, then every such network, then the volume stagings of such
// runs (a runner calls it at start, before claiming runs). removed counts
// all three.
func (d *Docker) RemoveOrphans(ctx context.Context, live func(runID string) bool) (removed int, err error) {
	list, err := d.api(ctx).ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelRun))})
	if err != nil {
		return 0, fmt.Errorf("listing hookrun containers: %w", err)
	}
	removed, err = removeEach("containers", list,
		func(c container.Summary) bool { return live != nil && live(c.Labels[LabelRun]) },
		func(c container.Summary) error { return d.removeContainer(ctx, c.ID) })
	if err != nil {
		return removed, err
	}
	// The networks after the containers: a network with a container
	// attached cannot be removed.
	n, err := d.removeOrphanNetworks(ctx, live)
	removed += n
	// The volume stagings after the containers that mounted them.
	n, serr := d.pins.removeOrphans(live)
	return removed + n, errors.Join(err, serr)
}

// removeEach removes each of items that keep does not hold: how many it
// removed, and every removal's error, joined as "removing orphaned
// <what>: %w".
func removeEach[T any](what string, items []T, keep func(T) bool, remove func(T) error) (removed int, err error) {
	var errs []error
	for _, it := range items {
		if keep(it) {
			continue
		}
		if err := remove(it); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("removing orphaned %s: %w", what, errors.Join(errs...))
	}
	return removed, nil
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var (
	_ contract.Sandbox = (*Docker)(nil)
	_ contract.Session = (*Session)(nil)
)
