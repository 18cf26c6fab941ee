package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hookrun/hookrun/internal/app"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serveMode(ctx, app.ModeServe, args, stdout, stderr,
		"Run everything in one process: an embedded NATS JetStream server (store under\n"+
			"data_dir), the webhook ingress with the API, and a runner. Stops on SIGTERM:\n"+
			"ingress stops accepting, in-flight publishes finish, running workflows get the\n"+
			"shutdown grace to finish and are otherwise handed back to the queue.")
}

func cmdIngress(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serveMode(ctx, app.ModeIngress, args, stdout, stderr,
		"Run only the webhook ingress and the API against an external NATS cluster\n"+
			"(nats.url). Scale it out behind a load balancer; runners consume what it\n"+
			"publishes.")
}

func cmdRunner(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serveMode(ctx, app.ModeRunner, args, stdout, stderr,
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

func (f *serverFlags) apply(c *app.Config) {
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

func serveMode(ctx context.Context, m app.Mode, args []string, stdout, stderr io.Writer, description string) int {
	fs := newFlagSet(m.Name, "[--config hookrun.yaml] [flags]", description, stderr)
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
	if err == nil {
		err = m.Check(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hookrun %s: %v\n", m.Name, err)
		return exitUsage
	}
	logger := newLogger(cfg.Log, stderr)
	if err := runServer(ctx, m, cfg, &flags, logger, stdout); err != nil {
		logger.Error("hookrun stopped", "mode", m.Name, "err", err)
		return 1
	}
	return 0
}

// runServer starts the stack of a mode (internal/app) and blocks until ctx
// ends, then shuts it down within the shutdown grace. The process concerns
// stay here: the GC pacing, returning idle memory, --dev-curl.
func runServer(ctx context.Context, m app.Mode, cfg *app.Config, flags *serverFlags, logger *slog.Logger, stdout io.Writer) error {
	memCtx, stopMem := context.WithCancel(ctx)
	defer stopMem()
	(&gcPacing{}).start(memCtx)
	go (&idleRelease{}).run(memCtx)

	a, err := app.Start(ctx, m, cfg, logger)
	if err != nil {
		return err
	}
	if flags.devCurl != "" && a.URL() != "" {
		if err := printDevCurl(stdout, a.URL(), flags.devCurl, cfg.GitHubSecrets()); err != nil {
			return errors.Join(err, shutdown(a, cfg, logger))
		}
	}
	<-ctx.Done()
	return shutdown(a, cfg, logger)
}

func shutdown(a *app.App, cfg *app.Config, logger *slog.Logger) error {
	logger.Info("shutting down", "grace", cfg.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown)
	defer cancel()
	return a.Shutdown(ctx)
}

// printDevCurl prints a ready curl command that posts a GitHub
// pull_request payload signed with the first configured secret.
func printDevCurl(w io.Writer, baseURL, payloadPath string, secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("--dev-curl needs github.webhook_secret")
	}
	body, err := os.ReadFile(payloadPath)
	if err != nil {
		return fmt.Errorf("reading --dev-curl payload: %w", err)
	}
	mac := hmac.New(sha256.New, []byte(secrets[0]))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	abs, _ := filepath.Abs(payloadPath)
	delivery := "dev-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fmt.Fprintf(w, "\nhookrun is up. Webhook URL: %s/hooks/github\n\nTry it (triggers examples/hello.yaml):\n\n", baseURL)
	fmt.Fprintf(w, "  curl -sS -X POST %s/hooks/github \\\n    -H 'Content-Type: application/json' \\\n    -H 'X-GitHub-Event: pull_request' \\\n    -H 'X-GitHub-Delivery: %s' \\\n    -H 'X-Hub-Signature-256: %s' \\\n    --data-binary @%s\n\n",
		baseURL, delivery, sig, abs)
	return nil
}

// newLogger builds the slog logger: text on a terminal, JSON otherwise.
func newLogger(c app.LogConfig, w io.Writer) *slog.Logger {
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
