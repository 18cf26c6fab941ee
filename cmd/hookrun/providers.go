package main

import (
	"context"
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

// runtimeOptions are the settings the executors take from the server
// configuration.
type runtimeOptions struct {
	AllowDockerSocket bool              // let workflows mount the Docker socket
	SbxBinary         string            // path of the sbx CLI
	Host              contract.Executor // host steps; nil: as this process's user (`hookrun run`)
}

// newProviders builds the executors steps run in: the host, Docker (per-step
// and root containers; the client connects lazily, so a machine without
// Docker still runs host-only workflows) and sbx. close releases the Docker
// client.
func newProviders(o runtimeOptions) (runner.Providers, *docker.Docker, func(), error) {
	p := runner.Providers{
		Host:    o.Host,
		Harness: runner.HarnessFunc(harness.Run),
	}
	if p.Host == nil {
		p.Host = host.New(host.Config{})
	}
	d, err := docker.New(docker.Config{AllowDockerSocket: o.AllowDockerSocket})
	if err != nil {
		return p, nil, func() {}, fmt.Errorf("configuring docker: %w", err)
	}
	p.Containers, p.RootContainer = d, d
	s, err := sbx.New(sbx.Config{Binary: o.SbxBinary})
	if err != nil {
		_ = d.Close()
		return p, nil, func() {}, fmt.Errorf("configuring sbx: %w", err)
	}
	p.SBX = s
	return p, d, func() { _ = d.Close() }, nil
}

// localProviders is newProviders for `hookrun run`: a provider that cannot
// be configured is left out (its steps then fail with a clear error) and the
// reason is printed.
func localProviders(o runtimeOptions, stderr io.Writer) (runner.Providers, func()) {
	p, _, closeFn, err := newProviders(o)
	if err != nil {
		fmt.Fprintf(stderr, "hookrun run: %v (container and sandbox steps will fail)\n", err)
	}
	return p, closeFn
}

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
