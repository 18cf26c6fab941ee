package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hookrun/hookrun/providers/docker"
	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// executors are the providers steps run in, with what must be released
// when the process stops.
type executors struct {
	runner.Providers
	docker  *docker.Docker // nil when Docker could not be configured
	closers closers        // the Docker client
}

// newExecutors builds the executors steps run in: the host (hostExec; nil:
// as this process's user, for `hookrun run`), Docker (per-step and root
// containers; the client connects lazily, so a machine without Docker still
// runs host-only workflows) and sbx. On an error the executors that could
// be built come with it, and their closers.
func newExecutors(hostExec contract.Executor, allowDockerSocket bool, sbxBinary string) (executors, error) {
	e := executors{Providers: runner.Providers{Host: hostExec, Harness: contract.HarnessFunc(harness.Run)}}
	if e.Host == nil {
		e.Host = host.New(host.Config{})
	}
	d, err := docker.New(docker.Config{AllowDockerSocket: allowDockerSocket})
	if err != nil {
		return e, fmt.Errorf("configuring docker: %w", err)
	}
	e.Containers, e.RootContainer, e.docker = d, d, d
	e.closers = append(e.closers, d)
	s, err := sbx.New(sbx.Config{Binary: sbxBinary})
	if err != nil {
		return e, fmt.Errorf("configuring sbx: %w", err)
	}
	e.SBX = s
	return e, nil
}

// LocalProviders are the executors of `hookrun run`: host steps as this
// process's user; a provider that cannot be configured is left out (its
// steps then fail with a clear error) and the reason is printed. Close
// releases them.
func LocalProviders(stderr io.Writer) (runner.Providers, io.Closer) {
	e, err := newExecutors(nil, false, "")
	if err != nil {
		fmt.Fprintf(stderr, "hookrun run: %v (container and sandbox steps will fail)\n", err)
	}
	return e.Providers, e.closers
}

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

// removeOrphans removes containers left by runs that no runner is executing
// any more (a runner that crashed, or this one before a restart).
func removeOrphans(ctx context.Context, d *docker.Docker, runs *queue.RunStore, staleAfter time.Duration, logger *slog.Logger) {
	if d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.Ping(ctx); err != nil {
		logger.Info("no container engine reachable; container steps will fail until one is", "err", err)
		return
	}
	n, err := d.RemoveOrphans(ctx, func(runID string) bool {
		rec, _, err := runs.Get(ctx, runID)
		return keepContainer(rec, err, time.Now(), staleAfter)
	})
	if err != nil {
		logger.Warn("removing orphaned containers", "err", err)
	}
	if n > 0 {
		logger.Info("removed orphaned containers", "count", n)
	}
}

// keepContainer decides whether a labelled container must stay. Only a
// container whose run this installation knows, and which is finished or
// whose claimant stopped heartbeating, is an orphan: a run the store does
// not know belongs to another hookrun sharing the engine (or its tests), and
// an unreadable record is not evidence of anything.
func keepContainer(rec *queue.RunRecord, err error, now time.Time, staleAfter time.Duration) bool {
	if err != nil {
		return true
	}
	if rec.Status.Terminal() {
		return false
	}
	return rec.Status != workflows.StatusRunning || now.Sub(rec.HeartbeatAt) < staleAfter
}
