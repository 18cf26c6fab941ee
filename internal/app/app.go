package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/ingress/ui"
	"github.com/hookrun/hookrun/providers/docker"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// App is the stack of one hookrun process, built from its Config for its
// Mode: the queue, the workflow set, the forge clients, and the runner with
// its executors, the ingress server with the API, or both.
type App struct {
	mode   Mode
	cfg    Config
	logger *slog.Logger

	queue      *queue.Queue
	stores     *stores.Stores
	set        *workflows.WorkflowSet
	stopReload context.CancelFunc
	consumer   *queue.Consumer // nil without a runner
	srv        *ingress.Server // nil without ingress
	outbox     *runner.Outbox  // nil without a runner
	metrics    *runner.Metrics // nil without a runner
	metricsSrv *metricsServer  // runner.metrics_listen of `hookrun runner`; nil without
	tracing    *telemetry.Tracing
	// requestKey authenticates run requests (requestKey); never logged.
	requestKey []byte
	// closers are closed last, in reverse order: the executors, then the
	// queue.
	closers closers
}

// Start builds the stack of mode m from cfg (its defaults filled in a copy)
// and starts it: data_dir private to hookrun where this process keeps data
// in it, the queue (embedded without nats.url), the workflow set (reloaded
// until Shutdown), one client per forge shared by the runner and ingress's
// lookups, the runner consuming, and ingress listening with the API. ctx
// bounds the start; the runner's runs are detached from it (Shutdown
// decides what happens to them). On an error, what was started is stopped
// again.
func Start(ctx context.Context, m Mode, cfg *Config, logger *slog.Logger) (_ *App, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &App{mode: m, cfg: *cfg, logger: logger, stopReload: func() {}}
	c := &a.cfg
	c.SetDefaults()
	if err := errors.Join(c.Validate(), m.Check(c)); err != nil {
		return nil, fmt.Errorf("validating config: %w", err)
	}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Shutdown)
			defer cancel()
			_ = a.Shutdown(sctx)
		}
	}()
	if c.Tracing == nil {
		if c.Tracing, err = telemetry.Setup(ctx, m.Name, logger); err != nil {
			return nil, fmt.Errorf("configuring tracing: %w", err)
		}
	}
	a.tracing = c.Tracing
	// Closed last of all: the spans of runs shut down are flushed.
	a.closers = append(a.closers, a.tracing)
	if m.Runner || c.NATS.URL == "" {
		if err := secureDataDir(c.DataDir); err != nil {
			return nil, err
		}
	}
	if a.requestKey, err = requestKey(c, m, logger); err != nil {
		return nil, err
	}
	if c.NATS.Listen != "" && c.Runs.RequestKey == "" && c.Runs.RequestKeyFile == "" {
		logger.Info("a `hookrun runner` against this server needs its request key: copy the file (mode 0600) and name it in the runner's runs.request_key_file",
			"file", filepath.Join(c.DataDir, RequestKeyFile))
	}
	if err := a.openQueue(ctx); err != nil {
		return nil, err
	}
	reloadCtx, err := a.loadWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	labels, err := giteaLabels(ctx, c, m, a.stores)
	if err != nil {
		return nil, err
	}
	forges, err := newForges(c, logger, labels)
	if err != nil {
		return nil, err
	}

	var r *runner.Runner
	if m.Runner {
		if r, err = a.newRunner(ctx, forges); err != nil {
			return nil, err
		}
		// Detached from ctx: on SIGTERM, Shutdown decides what happens to
		// runs in flight (finish within the grace, else hand them back),
		// not a blanket cancellation.
		if a.consumer, err = r.Start(context.WithoutCancel(ctx), a.queue); err != nil {
			return nil, fmt.Errorf("starting runner: %w", err)
		}
	}
	if m.Ingress {
		if err := a.startIngress(ctx, forges, r); err != nil {
			return nil, err
		}
		a.startRecovery(reloadCtx, forges)
		if err := a.startSchedules(ctx, reloadCtx, a.srv); err != nil {
			return nil, err
		}
	} else if c.Runner.MetricsListen != "" {
		if a.metricsSrv, err = startMetricsServer(ctx, c.Runner.MetricsListen, a.collectors(), logger); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// loadWorkflows loads the workflow set and keeps reloading it until
// Shutdown; the returned context lives as long as that reloading (the
// background work of ingress is bound to it).
func (a *App) loadWorkflows(ctx context.Context) (reloadCtx context.Context, err error) {
	if a.set, err = workflows.NewWorkflowSet(a.cfg.Workflows, a.logger); err != nil {
		return nil, fmt.Errorf("loading workflows: %w", err)
	}
	reloadCtx, stopReload := context.WithCancel(context.WithoutCancel(ctx))
	a.stopReload = stopReload
	go a.set.Run(reloadCtx, workflows.DefaultReloadInterval)
	return reloadCtx, nil
}

// openQueue opens the queue and the run stores beside it (closed before
// it).
func (a *App) openQueue(ctx context.Context) (err error) {
	qc := a.cfg.queueConfig()
	qc.RequestKey, qc.Logger = a.requestKey, a.logger
	if a.queue, err = queue.Open(ctx, qc); err != nil {
		return fmt.Errorf("opening queue: %w", err)
	}
	a.closers = append(a.closers, a.queue)
	if a.stores, err = stores.Open(ctx, a.queue, a.cfg.storesOptions()); err != nil {
		return fmt.Errorf("opening stores: %w", err)
	}
	a.closers = append(a.closers, a.stores)
	return nil
}

// newRunner builds the runner half: how host steps run, the workspaces, the
// executors (their closers kept for Shutdown; orphaned containers removed
// first), the engine, and the runner itself.
func (a *App) newRunner(ctx context.Context, forges *Forges) (*runner.Runner, error) {
	c := &a.cfg
	steps := newHostSteps(ctx, c, os.Geteuid(), a.logger)
	ws, err := forges.Workspaces(c, steps.owner)
	if err != nil {
		return nil, fmt.Errorf("configuring workspaces: %w", err)
	}
	if dev, discard := git.UnjournaledExt4(c.DataDir); dev != "" {
		msg := "data_dir is on ext4 without a journal: the directories every run makes and removes cost more there, " +
			"the more runs went before (ext4 passes over recently freed inodes); put data_dir on a journaled file system, mkfs.ext4's default (docs/operations.md)"
		if discard {
			msg = "data_dir is on ext4 without a journal mounted with discard: the directories every run makes and removes cost more there, " +
				"the more runs went before (ext4 passes over recently freed inodes), and each removal waits for the device to discard the freed block; " +
				"put data_dir on a journaled file system, mkfs.ext4's default, or mount it without discard and trim with fstrim (docs/operations.md)"
		}
		a.logger.Warn(msg, "data_dir", c.DataDir, "device", dev)
	}
	staging, err := filepath.Abs(filepath.Join(c.DataDir, VolumeStagingDir))
	if err != nil {
		return nil, fmt.Errorf("resolving data_dir: %w", err)
	}
	execs, err := newExecutors(steps.exec, docker.Config{AllowDockerSocket: c.Runner.AllowDockerSocket, VolumeStaging: staging}, c.sbxConfig())
	a.closers = append(a.closers, execs.closers...)
	if err != nil {
		return nil, err
	}
	if err := execs.docker.VolumePinning(); err != nil {
		a.logger.Warn("relative volume sources of containers are checked but not pinned: a process of the run that swaps a directory on such a path for a symlink while its container starts could mount a host folder; run hookrun as root beside the Docker daemon (docs/operations.md, Trust boundary)",
			"reason", err)
	}
	execs.Deliverer = ws
	removeOrphans(ctx, execs, a.stores.Runs(), runner.DefaultStaleAfter(c.Runner.Heartbeat), c.Runner.OrphanAge, a.logger)
	oc := c.outboxConfig()
	oc.Runs, oc.Logger = a.stores.Runs(), a.logger
	// The engine and the outbox report alike: never over a newer run's
	// sticky comment, and a run's actions in the order of the runs.
	reporter := runner.NewestOnly(forges, a.stores.Groups(), a.logger)
	outbox, err := runner.NewOutbox(oc, a.stores.Outbox(), reporter)
	if err != nil {
		return nil, fmt.Errorf("configuring report outbox: %w", err)
	}
	outbox.Start() // also what an earlier process left undelivered
	a.closers = append(a.closers, outbox)
	a.outbox = outbox
	a.metrics = runner.NewMetrics()
	eng, err := engine.New(engine.Config{
		Tracer:    a.tracing.Provider,
		Metrics:   a.metrics,
		Providers: execs.Providers,
		Logs:      a.stores.Logs(),
		Reporter:  reporter,
		Outbox:    outbox,
		Logger:    a.logger,
		Redact:    append(serverCredentials(c), string(a.requestKey)),
		// The bound of runs whose workflow sets no timeout.
		DefaultTimeout: c.Runner.DefaultTimeout,
		// What a harness that runs sbx itself on the host needs of this
		// process's environment (docs/operations.md, "sbx on the host").
		SbxHostEnv: steps.sbxHostEnv(sbx.HostEnv(os.Environ()), append(serverCredentials(c), string(a.requestKey))),
	})
	if err != nil {
		return nil, fmt.Errorf("configuring engine: %w", err)
	}
	rc := c.runnerConfig()
	rc.Admit, rc.Logger, rc.Tracer, rc.Metrics = admitRepos(c.AllowRepos), a.logger, a.tracing.Provider, a.metrics
	r, err := runner.New(rc, runner.Deps{
		Runs:       a.stores.Runs(),
		Workflows:  a.set,
		Workspaces: ws,
		Engine:     eng,
		Groups:     a.stores.Groups(),
	})
	if err != nil {
		return nil, fmt.Errorf("configuring runner: %w", err)
	}
	return r, nil
}

// indexReadyWait is how long Start waits for the list indexes.
const indexReadyWait = 2 * time.Second

// startIngress builds the ingress server with the API and starts it. r,
// when this process runs one, cancels runs; else cancelling goes through
// the run record alone.
func (a *App) startIngress(ctx context.Context, forges *Forges, r *runner.Runner) error {
	c := &a.cfg
	ic := c.ingressConfig()
	ic.Forges, ic.Collectors, ic.Tracer = forges.Registry, a.collectors(), a.ingressTracer()
	pub := a.stores.Publisher()
	srv, err := ingress.New(ic, ingress.Deps{
		Publisher:  pub,
		Workflows:  a.set,
		Acceptor:   pub,
		Deliveries: a.stores.Received(),
		Runs:       a.stores.Runs(),
		Heads:      a.stores.Heads(),
		Index:      a.stores,
		Seen:       a.queue,
		Logger:     a.logger,
	})
	if err != nil {
		return fmt.Errorf("configuring ingress: %w", err)
	}
	var canceller ingress.Canceller = recordCanceller{a.stores.Runs()}
	if r != nil {
		canceller = r
	}
	// The list indexes open (and catch up) while ingress starts (the
	// API's lists wait for them); the retention sweep reads the runs'.
	// Start waits for them a little (a restart resumes them within it),
	// not for a first load of a large bucket: /readyz tells when that is
	// done.
	a.stores.StartIndexes()
	wctx, cancel := context.WithTimeout(ctx, indexReadyWait)
	if err := a.stores.WaitIndexes(wctx); err != nil {
		a.logger.Info("the list indexes are still loading; /readyz answers 503 until they are", "err", err)
	}
	cancel()
	stopSweep, err := a.stores.StartRetention(c.retentionConfig())
	if err != nil {
		return err
	}
	a.closers = append(a.closers, closerFunc(stopSweep))
	srv.RegisterAPI(ingress.APIConfig{Token: c.API.Token}, a.stores.Runs(), a.stores.Logs(), canceller)
	if err := a.registerUI(ctx, srv, canceller, forges.Registry.Links); err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("starting ingress: %w", err)
	}
	a.srv = srv
	a.logger.Info("hookrun listening", "mode", a.mode.Name, "url", a.URL(), "workflows", len(a.set.Workflows()))
	return nil
}

// registerUI mounts the web UI (ingress/ui) beside the API, behind the same
// token: it cancels through the API's canceller, links to the forges'
// pages as each lays them out (links: the registry's Links), re-runs through the ingress server, as POST
// /api/v1/runs/{id}/rerun does, and keeps its sessions in the
// hookrun_sessions bucket (entries live ui.DefaultSessionTTL).
func (a *App) registerUI(ctx context.Context, srv *ingress.Server, canceller ingress.Canceller, links func(workflows.Forge) forge.Links) error {
	c := &a.cfg
	if c.API.Token == "" {
		return nil
	}
	sessions, err := a.stores.Sessions(ctx, ui.DefaultSessionTTL)
	if err != nil {
		return fmt.Errorf("configuring ui: %w", err)
	}
	err = ui.Register(srv, ui.Config{Token: c.API.Token, SessionTTL: ui.DefaultSessionTTL}, ui.Deps{
		Runs:       a.stores.Runs(),
		Logs:       a.stores.Logs(),
		Stream:     ingress.NewLogStream(a.stores.Runs(), a.stores.Logs(), 0),
		Cancel:     canceller,
		Rerun:      srv, // POST .../rerun's Server.Rerun
		Deliveries: srv, // GET /api/v1/deliveries' and POST .../replay's
		Sessions:   sessions,
		Links:      links,
		Workflows:  a.set,
		Logger:     a.logger,
	})
	if err != nil {
		return fmt.Errorf("configuring ui: %w", err)
	}
	return nil
}

// collectors are the metrics this process serves beside ingress's own
// (docs/operations.md lists them all): the queue's state, and with a
// runner its families and its report outbox's.
func (a *App) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{a.queue.Collector("", a.stores.Outbox())}
	if a.metrics != nil {
		cs = append(cs, a.metrics.Collectors()...)
	}
	if a.outbox != nil {
		cs = append(cs, a.outbox.Collectors()...)
	}
	return cs
}

// ingressTracer is the provider ingress traces deliveries with; nil (no
// spans, not even no-op ones) with tracing off.
func (a *App) ingressTracer() trace.TracerProvider {
	if !a.tracing.Enabled {
		return nil
	}
	return a.tracing.Provider
}

// recordCanceller cancels through the run record alone (for `hookrun
// ingress`, which runs no runner): the claimant sees CancelRequested.
type recordCanceller struct{ runs *stores.RunStore }

func (c recordCanceller) Cancel(ctx context.Context, id string) error {
	_, err := c.runs.RequestCancel(ctx, id)
	return err
}

var _ ingress.Canceller = recordCanceller{}

// Addr is the address ingress listens on; nil without ingress.
func (a *App) Addr() net.Addr {
	if a.srv == nil {
		return nil
	}
	return a.srv.Addr()
}

// URL is http:// and Addr; "" without ingress.
func (a *App) URL() string {
	if addr := a.Addr(); addr != nil {
		return "http://" + addr.String()
	}
	return ""
}

// Queue is the queue the stack publishes to and consumes from.
func (a *App) Queue() *queue.Queue { return a.queue }

// Stores are the run stores beside the queue.
func (a *App) Stores() *stores.Stores { return a.stores }

// Workflows is the loaded workflow set.
func (a *App) Workflows() *workflows.WorkflowSet { return a.set }

// Shutdown stops in order: ingress stops accepting (in-flight publishes
// finish), the runner finishes its runs within ctx or hands them back, the
// workflow set stops reloading, then the executors and the queue are closed.
func (a *App) Shutdown(ctx context.Context) error {
	var errs []error
	if a.srv != nil {
		errs = append(errs, a.srv.Shutdown(ctx))
	}
	if a.consumer != nil {
		errs = append(errs, a.consumer.Close(ctx))
	}
	if a.metricsSrv != nil {
		errs = append(errs, a.metricsSrv.shutdown(ctx))
	}
	a.stopReload()
	cl := a.closers
	a.closers = nil // a second Shutdown closes nothing twice
	errs = append(errs, cl.Close())
	return errors.Join(errs...)
}
