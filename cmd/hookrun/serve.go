package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/workflows"
)

// mode says which halves a process runs.
type mode struct {
	name         string
	ingress      bool
	runner       bool
	needsNATSURL bool
}

var (
	modeServe   = mode{name: "serve", ingress: true, runner: true}
	modeIngress = mode{name: "ingress", ingress: true, needsNATSURL: true}
	modeRunner  = mode{name: "runner", runner: true, needsNATSURL: true}
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serveMode(ctx, modeServe, args, stdout, stderr,
		"Run everything in one process: an embedded NATS JetStream server (store under\n"+
			"data_dir), the webhook ingress with the API, and a runner. Stops on SIGTERM:\n"+
			"ingress stops accepting, in-flight publishes finish, running workflows get the\n"+
			"shutdown grace to finish and are otherwise handed back to the queue.")
}

func cmdIngress(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serveMode(ctx, modeIngress, args, stdout, stderr,
		"Run only the webhook ingress and the API against an external NATS cluster\n"+
			"(nats.url). Scale it out behind a load balancer; runners consume what it\n"+
			"publishes.")
}

func cmdRunner(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serveMode(ctx, modeRunner, args, stdout, stderr,
		"Run only a runner against an external NATS cluster (nats.url): it claims run\n"+
			"requests, executes them and reports back. Run as many as you need.")
}

// serverFlags are the flags that override the configuration file.
type serverFlags struct {
	config, listen, dataDir, workflows, natsURL, logLevel, logFormat string
	insecureNoVerify                                                 bool
	devCurl                                                          string
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "configuration file (YAML, ${ENV} references expanded); flags override it")
	fs.StringVar(&f.listen, "listen", "", "HTTP listen address (config: listen; default 127.0.0.1:8080)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory: NATS store, git mirrors, workspaces (config: data_dir)")
	fs.StringVar(&f.workflows, "workflows", "", "directory of workflow files (config: workflows)")
	fs.StringVar(&f.natsURL, "nats-url", "", "external NATS URL list; empty runs an embedded server (config: nats.url)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (config: log.level)")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json (default: text on a terminal, json otherwise)")
	fs.BoolVar(&f.insecureNoVerify, "insecure-no-verify", false, "accept webhooks of a forge that has no secret configured (each request logs a warning); for local experiments only")
	fs.StringVar(&f.devCurl, "dev-curl", "", "development: print a signed curl command that posts this GitHub pull_request payload file")
}

func (f *serverFlags) apply(c *Config) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Listen, f.listen)
	set(&c.DataDir, f.dataDir)
	set(&c.Workflows, f.workflows)
	set(&c.NATS.URL, f.natsURL)
	set(&c.Log.Level, f.logLevel)
	set(&c.Log.Format, f.logFormat)
	c.InsecureNoVerify = f.insecureNoVerify
}

func serveMode(ctx context.Context, m mode, args []string, stdout, stderr io.Writer, description string) int {
	fs := newFlagSet(m.name, "[--config hookrun.yaml] [flags]", description, stderr)
	var flags serverFlags
	flags.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	cfg, err := loadConfig(flags.config, os.LookupEnv)
	if err == nil {
		flags.apply(cfg)
		err = cfg.Validate()
	}
	if err == nil && m.needsNATSURL && cfg.NATS.URL == "" {
		err = errors.New("nats.url: required for `hookrun " + m.name + "` (use `hookrun serve` for an embedded server)")
	}
	if err == nil && m.ingress && len(cfg.AllowRepos) == 0 {
		err = errAllowReposRequired
	}
	if err != nil {
		fmt.Fprintf(stderr, "hookrun %s: %v\n", m.name, err)
		return exitUsage
	}
	logger := newLogger(cfg.Log, stderr)
	if err := runServer(ctx, m, cfg, &flags, logger, stdout); err != nil {
		logger.Error("hookrun stopped", "mode", m.name, "err", err)
		return 1
	}
	return 0
}

// runServer wires the halves a mode runs and blocks until ctx ends, then
// shuts down in order: ingress stops accepting (in-flight publishes finish),
// the runner finishes or hands back its runs, the queue drains.
func runServer(ctx context.Context, m mode, cfg *Config, flags *serverFlags, logger *slog.Logger, stdout io.Writer) error {
	if m.runner || cfg.NATS.URL == "" {
		if err := secureDataDir(cfg.DataDir); err != nil {
			return err
		}
	}
	q, err := queue.Open(ctx, queue.Config{
		URL:       cfg.NATS.URL,
		CredsFile: cfg.NATS.CredsFile,
		CAFile:    cfg.NATS.CAFile,
		CertFile:  cfg.NATS.CertFile,
		KeyFile:   cfg.NATS.KeyFile,
		DataDir:   filepath.Join(cfg.DataDir, "nats"),
		Listen:    cfg.NATS.Listen,
		Replicas:  cfg.NATS.Replicas,
		Logger:    logger,
	})
	if err != nil {
		return fmt.Errorf("opening queue: %w", err)
	}
	defer q.Close()
	tuneGC()
	relCtx, stopRelease := context.WithCancel(ctx)
	defer stopRelease()
	go (&idleRelease{}).run(relCtx)

	set, err := workflows.NewWorkflowSet(cfg.Workflows, logger)
	if err != nil {
		return fmt.Errorf("loading workflows: %w", err)
	}
	go set.Run(ctx, workflows.DefaultReloadInterval)

	// One client per forge: the runner reports and clones with it, ingress
	// asks it what payloads leave out.
	reporters, err := newReporter(cfg, logger)
	if err != nil {
		return err
	}
	var r *runner.Runner
	var consumer *queue.Consumer
	if m.runner {
		r, err = newRunner(ctx, cfg, q, set, reporters, logger)
		if err != nil {
			return err
		}
		// Detached from the signal: on SIGTERM, consumer.Close below decides
		// what happens to runs in flight (finish within the grace, else hand
		// them back), not a blanket cancellation.
		consumer, err = r.Start(context.WithoutCancel(ctx), q)
		if err != nil {
			return fmt.Errorf("starting runner: %w", err)
		}
	}

	var srv *ingress.Server
	if m.ingress {
		srv, err = ingress.New(ingress.Config{
			Listen:           cfg.Listen,
			GitHub:           ingress.GitHubConfig{Enabled: cfg.GitHubEnabled(), Secrets: cfg.GitHubSecrets()},
			GitLab:           ingress.GitLabConfig{Enabled: cfg.GitLabEnabled(), Tokens: cfg.GitLabTokens()},
			InsecureNoVerify: cfg.InsecureNoVerify,
			AllowRepos:       cfg.AllowRepos,
			Trust:            trustLookups(reporters),
		}, q, set, logger)
		if err != nil {
			return fmt.Errorf("configuring ingress: %w", err)
		}
		registerAPI(srv, cfg, q, r, logger)
		if err := srv.Start(ctx); err != nil {
			return fmt.Errorf("starting ingress: %w", err)
		}
		url := "http://" + srv.Addr().String()
		logger.Info("hookrun listening", "mode", m.name, "url", url, "workflows", len(set.Workflows()))
		if flags.devCurl != "" {
			if err := printDevCurl(stdout, url, flags.devCurl, cfg.GitHubSecrets()); err != nil {
				return err
			}
		}
	}

	<-ctx.Done()
	logger.Info("shutting down", "grace", cfg.Shutdown)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown)
	defer cancel()
	var errs []error
	if srv != nil {
		errs = append(errs, srv.Shutdown(shutdownCtx))
	}
	if consumer != nil {
		errs = append(errs, consumer.Close(shutdownCtx))
	}
	return errors.Join(errs...)
}

func newRunner(ctx context.Context, cfg *Config, q *queue.Queue, set *workflows.WorkflowSet, reporter forgeReporters, logger *slog.Logger) (*runner.Runner, error) {
	steps := newHostSteps(ctx, cfg, os.Geteuid(), logger)
	ws, err := newWorkspaces(cfg, reporter, steps.owner)
	if err != nil {
		return nil, fmt.Errorf("configuring workspaces: %w", err)
	}
	providers, dock, _, err := newProviders(runtimeOptions{AllowDockerSocket: cfg.Runner.AllowDockerSocket, SbxBinary: cfg.Runner.SbxBinary, Host: steps.exec})
	if err != nil {
		return nil, err
	}
	removeOrphans(ctx, dock, q.Runs(), 3*cfg.Runner.Heartbeat, logger)
	engine, err := runner.NewEngine(runner.EngineConfig{
		Providers: providers,
		Logs:      q.Logs(),
		Reporter:  reporter,
		Logger:    logger,
		Redact:    serverCredentials(cfg),
	})
	if err != nil {
		return nil, fmt.Errorf("configuring engine: %w", err)
	}
	r, err := runner.New(runner.Config{
		Concurrency:       cfg.Runner.Concurrency,
		HeartbeatInterval: cfg.Runner.Heartbeat,
		Consumer:          queue.ConsumerConfig{AckWait: cfg.Runner.AckWait, MaxAckPending: cfg.Runner.MaxAckPending},
		Admit:             admitRepos(cfg.AllowRepos),
		Logger:            logger,
	}, runner.Deps{
		Runs:       q.Runs(),
		Workflows:  set,
		Workspaces: ws,
		Engine:     engine,
	})
	if err != nil {
		return nil, fmt.Errorf("configuring runner: %w", err)
	}
	return r, nil
}

// newLogger builds the slog logger: text on a terminal, JSON otherwise.
func newLogger(c LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	format := c.Format
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
