package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hookrun/hookrun/providers/docker"
	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// executors are the providers steps run in, with what must be released
// when the process stops.
type executors struct {
	engine.Providers
	docker  *docker.Docker // nil when Docker could not be configured
	sbx     *sbx.Provider  // nil when sbx could not be configured
	closers closers        // the Docker client
}

// VolumeStagingDir is the directory of data_dir under which a runner pins
// the relative volume sources of its containers (docker.Config.VolumeStaging):
// root's, 0700, one mount per volume while its container lives.
const VolumeStagingDir = "volumes"

// newExecutors builds the executors steps run in: the host (hostExec; nil:
// as this process's user, for `hookrun run`), Docker (per-step and root
// containers; the client connects lazily, so a machine without Docker still
// runs host-only workflows; dc) and sbx (sc). dc.VolumeStaging is where
// Docker pins relative volume sources ("": checked, not pinned). On an
// error the executors that could be built come with it, and their
// closers.
func newExecutors(hostExec contract.Executor, dc docker.Config, sc sbx.Config) (executors, error) {
	e := executors{Providers: engine.Providers{Host: hostExec, Harness: contract.HarnessFunc(harness.Run)}}
	if e.Host == nil {
		e.Host = host.New(host.Config{})
	}
	d, err := docker.New(dc)
	if err != nil {
		return e, fmt.Errorf("configuring docker: %w", err)
	}
	e.Containers, e.RootContainer, e.docker = d, d, d
	e.closers = append(e.closers, d)
	s, err := sbx.New(sc)
	if err != nil {
		return e, fmt.Errorf("configuring sbx: %w", err)
	}
	e.SBX, e.sbx = s, s
	return e, nil
}

// LocalProviders are the executors of `hookrun run`: host steps as this
// process's user; a provider that cannot be configured is left out (its
// steps then fail with a clear error) and the reason is printed. Close
// releases them.
func LocalProviders(stderr io.Writer) (engine.Providers, io.Closer) {
	e, err := newExecutors(nil, docker.Config{}, sbx.Config{})
	if err != nil {
		fmt.Fprintf(stderr, "hookrun run: %v (container and sandbox steps will fail)\n", err)
	}
	return e.Providers, e.closers
}

// LocalSbxHostEnv is what a harness that runs sbx itself on the host gets
// of the environment of `hookrun run`, whose steps run as its user.
func LocalSbxHostEnv() []workflows.EnvVar { return sbx.HostEnv(os.Environ()) }

// closers close in the reverse order of their adding, as defers run.
type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i].Close())
	}
	return errors.Join(errs...)
}

var _ io.Closer = closers(nil)

// removeOrphans removes the labelled containers and hookrun-* sandboxes
// left by runs that no runner is executing any more (a runner that crashed,
// or this one before a restart); see keepLeftover.
func removeOrphans(ctx context.Context, e executors, runs *stores.RunStore, staleAfter, orphanAge time.Duration, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keep := func(runID string) bool {
		rec, err := runRecord(ctx, runs, runID)
		return keepLeftover(runID, rec, err, time.Now(), staleAfter, orphanAge)
	}
	if d := e.docker; d != nil {
		if err := d.Ping(ctx); err != nil {
			logger.Info("no container engine reachable; container steps will fail until one is", "err", err)
		} else {
			n, err := d.RemoveOrphans(ctx, keep)
			if err != nil {
				logger.Warn("removing orphaned containers", "err", err)
			}
			if n > 0 {
				logger.Info("removed orphaned containers", "count", n)
			}
		}
	}
	if s := e.sbx; s != nil {
		n, err := s.RemoveOrphans(ctx, keep)
		switch {
		case errors.Is(err, exec.ErrNotFound):
			logger.Debug("no sbx on this machine; nothing to sweep", "err", err)
		case err != nil:
			logger.Info("removing orphaned sandboxes", "err", err)
		}
		if n > 0 {
			logger.Info("removed orphaned sandboxes", "count", n)
		}
	}
}

// runRecord reads the record of a run whose id a container label or a
// sandbox name carries; a sandbox name has it in lowercase, the store in
// the case it was made with (a ULID's capitals).
func runRecord(ctx context.Context, runs *stores.RunStore, runID string) (*stores.RunRecord, error) {
	rec, _, err := runs.Get(ctx, runID)
	if up := strings.ToUpper(runID); errors.Is(err, stores.ErrNotFound) && up != runID {
		rec, _, err = runs.Get(ctx, up)
	}
	return rec, err
}

// keepLeftover decides whether a labelled container or a hookrun-*
// sandbox of run runID must stay. It goes when its run is finished, when
// the run's claimant stopped heartbeating, or when this installation has no
// record of the run and the run is older than orphanAge (its ULID tells
// when it was made): younger, it may belong to another hookrun sharing the
// engine or the sbx login, and a run id that is no ULID has no age. An
// unreadable record is not evidence of anything.
func keepLeftover(runID string, rec *stores.RunRecord, err error, now time.Time, staleAfter, orphanAge time.Duration) bool {
	if errors.Is(err, stores.ErrNotFound) {
		made, ok := queue.RunIDTime(runID)
		return !ok || now.Sub(made) < orphanAge
	}
	if err != nil {
		return true
	}
	if rec.Status.Terminal() {
		return false
	}
	return rec.Status != workflows.StatusRunning || now.Sub(rec.HeartbeatAt) < staleAfter
}

// closerFunc closes by calling itself (a stop function among closers).
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }
