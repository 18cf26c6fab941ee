package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/internal/telemetry"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/slack"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Config is the server configuration file (DESIGN.md §6), from which Start
// builds the stack. Values may reference the environment as ${NAME}
// (expanded by the loader, cmd/hookrun); flags override the file.
type Config struct {
	Listen    string         `yaml:"listen"`    // HTTP address of ingress and the API; default 127.0.0.1:8080
	DataDir   string         `yaml:"data_dir"`  // NATS store, git mirrors, workspaces; default ./.hookrun
	Workflows string         `yaml:"workflows"` // directory of workflow files; default ./workflows
	NATS      NATSConfig     `yaml:"nats"`
	GitHub    GitHubConfig   `yaml:"github"`
	GitLab    GitLabConfig   `yaml:"gitlab"`
	Gitea     GiteaConfig    `yaml:"gitea"`
	Slack     SlackConfig    `yaml:"slack"`
	Runner    RunnerConfig   `yaml:"runner"`
	API       APIConfig      `yaml:"api"`
	Commands  CommandsConfig `yaml:"commands"`
	Runs      RunsConfig     `yaml:"runs"`
	Log       LogConfig      `yaml:"log"`
	RunURL    string         `yaml:"run_url"`        // link from comments and statuses to a run; "{run}" is replaced by its id; empty: no link
	Shutdown  time.Duration  `yaml:"shutdown_grace"` // time runs get to finish on SIGTERM before they are handed back; default 30s

	// AllowRepos are the repositories this server acts for: globs over
	// owner/name (GitLab group/sub/project), `*` within a path segment, `**`
	// across, case-insensitive (workflows.MatchRepo). Required by serve and
	// ingress (a delivery for any other repository is ignored); a runner
	// that has it fails runs for other repositories before their checkout.
	AllowRepos []string `yaml:"allow_repos"`

	// Tracing is the process's OpenTelemetry tracing; nil: Start builds it
	// from the OTEL_* environment (telemetry.Setup). Tests set it; never
	// from a file.
	Tracing *telemetry.Tracing `yaml:"-"`

	// InsecureNoVerify accepts webhooks without a configured secret (flag
	// --insecure-no-verify only; never from a file).
	InsecureNoVerify bool `yaml:"-"`

	// Path is the file this configuration was read from ("" for defaults);
	// isolated host steps cannot see it. Set by the loader, never from a
	// file.
	Path string `yaml:"-"`
}

// NATSConfig says where the queue lives.
type NATSConfig struct {
	URL       string `yaml:"url"`        // empty: embedded server under data_dir; else a comma-separated URL list
	Replicas  int    `yaml:"replicas"`   // stream and KV replicas; default 1 (use 3 on a cluster)
	CredsFile string `yaml:"creds_file"` // NATS credentials file for an external cluster
	CAFile    string `yaml:"ca_file"`    // TLS: CA bundle
	CertFile  string `yaml:"cert_file"`  // TLS: client certificate
	KeyFile   string `yaml:"key_file"`   // TLS: client key
	Listen    string `yaml:"listen"`     // embedded server: also listen on this TCP address (default: in-process only)
	// User goes with password or password_file: the NATS user presented to
	// an external cluster, or required by the embedded server on
	// nats.listen. Default "hookrun" when a password is used.
	User string `yaml:"user"`
	// Password is the NATS password, usually ${VAR}: presented to an
	// external cluster, or required by the embedded server on nats.listen.
	// Masked in run logs; exclusive with password_file.
	Password string `yaml:"password"`
	// PasswordFile holds the NATS password. External cluster: read at
	// start and presented. Embedded server with nats.listen: the password
	// it requires, created with a random one (mode 0600) at the first
	// start and reused; default data_dir/nats/client.password.
	PasswordFile string `yaml:"password_file"`
	// InsecureNoAuth lets the embedded server's nats.listen accept clients
	// without credentials (a warning at every start); only with
	// nats.listen. Default false.
	InsecureNoAuth bool `yaml:"insecure_no_auth"`
	// Sync is when the embedded server's store reaches the disk: "always"
	// (before each acknowledgement) or an interval (default 1s).
	// An external cluster sets sync_interval in its own configuration.
	Sync string `yaml:"sync"`
}

// GitHubConfig enables the GitHub webhook and reporter.
type GitHubConfig struct {
	// Enabled turns /hooks/github on. Default: on when the github section
	// sets anything. An enabled forge without a webhook secret refuses to
	// start (unless --insecure-no-verify), also when the secret's ${VAR} is
	// unset.
	Enabled        *bool    `yaml:"enabled"`
	WebhookSecret  string   `yaml:"webhook_secret"`   // HMAC secret of the webhook; enables /hooks/github
	WebhookSecrets []string `yaml:"webhook_secrets"`  // more accepted secrets, for rotation
	Token          string   `yaml:"token"`            // token for comments and statuses
	AppID          int64    `yaml:"app_id"`           // GitHub App id (instead of token)
	PrivateKeyFile string   `yaml:"private_key_file"` // GitHub App private key (PEM)
	APIURL         string   `yaml:"api_url"`          // GitHub Enterprise Server: https://HOST/api/v3/
	// Recover gets back deliveries that failed while hookrun was down
	// (`hookrun recover`, and `serve` every Interval when set).
	Recover RecoverConfig `yaml:"recover"`
}

// RecoverConfig says which webhooks' deliveries `hookrun recover` reads
// and how often `serve` and `ingress` do it on their own.
type RecoverConfig struct {
	// Interval: how often serve and ingress look for failed deliveries;
	// 0 (default) = never on their own, only `hookrun recover`.
	Interval time.Duration `yaml:"interval"`
	// Since: how far back each look goes; default 6h, at most 72h (what
	// GitHub keeps).
	Since time.Duration `yaml:"since"`
	// Hooks are repository webhooks (Settings → Webhooks: the id is in the
	// hook's URL). An App's own webhook is read whenever app_id is set.
	Hooks []RecoverHook `yaml:"hooks"`
}

// RecoverHook names one repository webhook.
type RecoverHook struct {
	Repo string `yaml:"repo"` // owner/name
	ID   int64  `yaml:"id"`
}

// GitLabConfig enables the GitLab webhook and reporter.
type GitLabConfig struct {
	// Enabled turns /hooks/gitlab on; default as for github.
	Enabled       *bool    `yaml:"enabled"`
	WebhookToken  string   `yaml:"webhook_token"`  // X-Gitlab-Token secret; enables /hooks/gitlab
	WebhookTokens []string `yaml:"webhook_tokens"` // more accepted tokens, for rotation
	Token         string   `yaml:"token"`          // API token for notes and statuses
	BaseURL       string   `yaml:"base_url"`       // self-managed GitLab: https://HOST/
}

// GiteaConfig enables the Gitea webhook and reporter; Forgejo (and
// Codeberg) is configured the same way.
type GiteaConfig struct {
	// Enabled turns /hooks/gitea on; default as for github.
	Enabled        *bool    `yaml:"enabled"`
	WebhookSecret  string   `yaml:"webhook_secret"`  // the webhook's secret (X-Gitea-Signature); enables /hooks/gitea
	WebhookSecrets []string `yaml:"webhook_secrets"` // more accepted secrets, for rotation
	Token          string   `yaml:"token"`           // access token for comments, statuses, authors' permissions and clones
	BaseURL        string   `yaml:"base_url"`        // the server's web root, https://gitea.example/ (required with a token, and when enabled)
}

// SlackConfig enables Slack slash commands (POST /hooks/slack) and says
// how chat runs' results are posted back (docs/operations.md, "Slack").
type SlackConfig struct {
	// Enabled turns /hooks/slack on; default: on when the slack section
	// sets anything. It refuses to start without a signing secret (also
	// when the secret's ${VAR} is unset); --insecure-no-verify does not
	// apply.
	Enabled        *bool    `yaml:"enabled"`
	SigningSecret  string   `yaml:"signing_secret"`  // the Slack app's signing secret (Basic Information)
	SigningSecrets []string `yaml:"signing_secrets"` // more accepted secrets, for rotation
	Command        string   `yaml:"command"`         // the slash command as configured in the app; default /hookrun
	// ResponseType is who sees a chat run's result: in_channel (default,
	// the channel) or ephemeral (who typed the command).
	ResponseType string `yaml:"response_type"`
	// ResponseURLPrefix is the only place results are posted to; default
	// https://hooks.slack.com/. Change it only for tests.
	ResponseURLPrefix string `yaml:"response_url_prefix"`
}

// RunnerConfig tunes the runner half.
type RunnerConfig struct {
	Concurrency       int  `yaml:"concurrency"`         // runs at once (= MaxAckPending); default 4
	AllowDockerSocket bool `yaml:"allow_docker_socket"` // let workflows mount the Docker socket; default false
	// MaxAckPending caps the runs in flight across ALL runners sharing the
	// durable consumer (a server-side setting); default 256.
	MaxAckPending int `yaml:"max_ack_pending"`
	// AckWait is how long JetStream waits for a runner's heartbeat before it
	// redelivers a run (a crashed runner's runs resume after about this
	// long); default 30s.
	AckWait time.Duration `yaml:"ack_wait"`
	// Heartbeat is how often a runner refreshes its claim on a run; another
	// runner takes a run over after 3 missed heartbeats; default 5s.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// MaxDeliver is how many times a run is delivered before it fails (a
	// runner that has not loaded its workflow hands it back until then);
	// default 5.
	MaxDeliver int `yaml:"max_deliver"`
	// WorkflowRetry is how long a run whose workflow a runner has not
	// loaded, or has at another digest than the run was queued with (a
	// rolling deploy), waits before it is delivered again; default 10s.
	WorkflowRetry time.Duration `yaml:"workflow_retry"`
	SbxBinary     string        `yaml:"sbx_binary"` // path of the sbx CLI; default "sbx"
	// OrphanAge: at start a runner removes the hookrun-* sandboxes and
	// labelled containers of finished runs, of runs whose claimant stopped
	// heartbeating, and of runs this installation has no record of once
	// they are older than this (a run id tells its age). Keep it above the
	// longest run; default 24h.
	OrphanAge time.Duration `yaml:"orphan_age"`
	// DefaultTimeout bounds every run whose workflow sets no timeout of
	// its own (a workflow's timeout, longer or shorter, wins); default 1h.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// HostSteps says how steps that run on the host (no container, no
	// sandbox) run: "isolated" (default) as StepUser in their own mount,
	// PID, IPC and UTS namespaces, out of reach of hookrun's credentials, which needs
	// hookrun to run as root (otherwise host steps are refused); or
	// "same_user": as hookrun's own user, able to read everything hookrun
	// can (its environment, this file, data_dir). Untrusted code belongs in
	// containers or sbx either way.
	HostSteps string `yaml:"host_steps"`
	// StepUser is the user isolated host steps run as: "UID:GID", "UID" or
	// a user name from /etc/passwd; never root. Default "65534:65534"
	// (nobody). Give it a login of its own (for sbx, say) only on purpose.
	StepUser string `yaml:"step_user"`
	// ReportOutbox tunes how final reports the forge did not take in time
	// are retried from the hookrun_outbox bucket.
	ReportOutbox ReportOutboxConfig `yaml:"report_outbox"`
	// MetricsListen is where `hookrun runner` serves GET /metrics (the
	// runner's, the queue's and the outbox's families, Go and process
	// metrics), host:port; default "": none. serve and ingress serve them
	// on listen's /metrics and ignore it.
	MetricsListen string `yaml:"metrics_listen"`
}

// ReportOutboxConfig tunes the outbox of final reports (runner.OutboxConfig
// holds the defaults; zero keeps them).
type ReportOutboxConfig struct {
	// Poll is how often a runner looks for reports due; default 5s.
	Poll time.Duration `yaml:"poll"`
	// Backoff is the wait after a failed attempt when the forge said
	// nothing of when to retry (Retry-After is honoured); it doubles up
	// to 10m; default 30s.
	Backoff time.Duration `yaml:"backoff"`
	// MaxAge is how long a report is retried before it is given up (logged
	// and counted); default 24h.
	MaxAge time.Duration `yaml:"max_age"`
}

// Values of runner.host_steps.
const (
	HostStepsIsolated = "isolated"  // as runner.step_user, in namespaces of their own (needs root)
	HostStepsSameUser = "same_user" // as hookrun's own user, able to read its credentials
)

// APIConfig protects /api/v1.
type APIConfig struct {
	Token string `yaml:"token"` // bearer token; empty: the API is disabled
	// TrustedProxies are the reverse proxies in front of hookrun (CIDRs
	// such as 10.0.0.0/8, or single addresses): only from these peers are
	// X-Forwarded-For and X-Real-IP believed as the client's address, which
	// the logs name and the limit on wrong tokens counts. Default none: the
	// client is the connection's peer, whatever a header says.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// CommandsConfig names the comment commands the server acts on itself.
type CommandsConfig struct {
	// Retry: a new comment `/<retry>` on a pull request re-runs its failed
	// runs for a user each workflow's authorize admits; default "retry",
	// "-" turns it off (ingress.CommandsConfig).
	Retry string `yaml:"retry"`
	// MaxPerComment: at most this many distinct command lines of one
	// comment start runs; the others are listed as skipped in the webhook
	// answer. Default 10 (ingress.DefaultMaxCommandsPerComment); at least 1.
	MaxPerComment int `yaml:"max_per_comment"`
}

// RunsConfig bounds the run records (docs/operations.md, "Retention").
type RunsConfig struct {
	// Retention is how long a finished run is kept (its record, step
	// output, stored webhook body, undelivered report); then the sweep of
	// every process that serves ingress removes it. Unfinished runs are
	// never removed. Default 720h (30 days); at least 1h.
	Retention time.Duration `yaml:"retention"`
	// SweepInterval is how often that sweep runs; default 1h.
	SweepInterval time.Duration `yaml:"sweep_interval"`
	// RequestKey authenticates run requests: ingress signs each with it
	// (HMAC-SHA256) and runners run only what it signed. At least 32
	// characters; write it as ${HOOKRUN_REQUEST_KEY}. Required by
	// `hookrun ingress` and `hookrun runner` (the same key everywhere);
	// `serve` without it generates one in data_dir/request.key.
	RequestKey string `yaml:"request_key"`
	// RequestKeyFile is a file holding the request key instead (mode 0600
	// or stricter; surrounding white space ignored).
	RequestKeyFile string `yaml:"request_key_file"`
}

// LogConfig sets up log/slog.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug | info | warn | error; default info
	Format string `yaml:"format"` // text | json; default: text on a terminal, json otherwise
}

// SetDefaults fills every unset value with its default: the one place for
// each default of the configuration file. Loaders call it before Validate;
// Start applies it to its own copy.
func (c *Config) SetDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.DataDir == "" {
		c.DataDir = "./.hookrun"
	}
	if c.Workflows == "" {
		c.Workflows = "./workflows"
	}
	if c.NATS.Replicas == 0 {
		c.NATS.Replicas = 1
	}
	if c.Runner.Concurrency == 0 {
		c.Runner.Concurrency = queue.DefaultConcurrency
	}
	if c.Runner.MaxAckPending == 0 {
		c.Runner.MaxAckPending = 256
	}
	if c.Runner.MaxDeliver == 0 {
		c.Runner.MaxDeliver = queue.DefaultMaxDeliver
	}
	if c.Runner.AckWait == 0 {
		c.Runner.AckWait = 30 * time.Second
	}
	if c.Runner.Heartbeat == 0 {
		c.Runner.Heartbeat = 5 * time.Second
	}
	if c.Runner.OrphanAge == 0 {
		c.Runner.OrphanAge = 24 * time.Hour
	}
	if c.Runner.DefaultTimeout == 0 {
		c.Runner.DefaultTimeout = time.Hour
	}
	if c.Runner.SbxBinary == "" {
		c.Runner.SbxBinary = "sbx"
	}
	if c.Runner.HostSteps == "" {
		c.Runner.HostSteps = HostStepsIsolated
	}
	if c.Runner.StepUser == "" {
		c.Runner.StepUser = "65534:65534"
	}
	if c.Runs.Retention == 0 {
		c.Runs.Retention = 30 * 24 * time.Hour
	}
	if c.Runs.SweepInterval == 0 {
		c.Runs.SweepInterval = time.Hour
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Shutdown == 0 {
		c.Shutdown = 30 * time.Second
	}
	if c.Slack.Command == "" {
		c.Slack.Command = ingress.DefaultSlackCommand
	}
	if c.Slack.ResponseType == "" {
		c.Slack.ResponseType = slack.InChannel
	}
	if c.Slack.ResponseURLPrefix == "" {
		c.Slack.ResponseURLPrefix = workflows.DefaultResponseURLPrefix
	}
}

// Validate checks every value and names the key of the first bad one.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Runner.MetricsListen != "" && !strings.Contains(c.Runner.MetricsListen, ":") {
		bad("runner.metrics_listen", "want host:port, got %q", c.Runner.MetricsListen)
	}
	if !strings.Contains(c.Listen, ":") {
		bad("listen", "want host:port, got %q", c.Listen)
	}
	if c.NATS.Replicas < 1 || c.NATS.Replicas > 5 {
		bad("nats.replicas", "must be between 1 and 5, got %d", c.NATS.Replicas)
	}
	if c.NATS.URL != "" && c.NATS.Sync != "" {
		bad("nats.sync", "is the embedded server's setting; an external cluster sets sync_interval in each nats-server's jetstream block (docs/operations.md)")
	} else if c.NATS.Sync != "" {
		if _, _, err := queue.ParseSync(c.NATS.Sync); err != nil {
			bad("nats.sync", "%v", err)
		}
	}
	if c.NATS.InsecureNoAuth && (c.NATS.URL != "" || c.NATS.Listen == "") {
		bad("nats.insecure_no_auth", "applies only to the embedded server's nats.listen (without nats.url)")
	} else if c.NATS.InsecureNoAuth && (c.NATS.User != "" || c.NATS.Password != "" || c.NATS.PasswordFile != "") {
		bad("nats.insecure_no_auth", "cannot be combined with nats.user, nats.password or nats.password_file")
	}
	if c.NATS.Password != "" && c.NATS.PasswordFile != "" {
		bad("nats.password", "set password or password_file, not both")
	}
	if c.NATS.CredsFile != "" && (c.NATS.Password != "" || c.NATS.PasswordFile != "") {
		bad("nats.creds_file", "cannot be combined with nats.password or nats.password_file")
	}
	if c.NATS.URL == "" && c.NATS.Replicas > 1 {
		bad("nats.replicas", "the embedded server is a single node: replicas must be 1 without nats.url")
	}
	if c.Runner.Concurrency < 1 || c.Runner.Concurrency > 1024 {
		bad("runner.concurrency", "must be between 1 and 1024, got %d", c.Runner.Concurrency)
	}
	if c.Runner.MaxAckPending < c.Runner.Concurrency {
		bad("runner.max_ack_pending", "must be at least runner.concurrency (%d), got %d", c.Runner.Concurrency, c.Runner.MaxAckPending)
	}
	if c.Runner.MaxDeliver < 1 {
		bad("runner.max_deliver", "must be at least 1, got %d", c.Runner.MaxDeliver)
	}
	if c.Commands.MaxPerComment < 0 {
		bad("commands.max_per_comment", "must be at least 1 (0 or absent: the default, 10), got %d", c.Commands.MaxPerComment)
	}
	if c.Runner.WorkflowRetry < 0 {
		bad("runner.workflow_retry", "must not be negative, got %v", c.Runner.WorkflowRetry)
	}
	if c.Runner.AckWait < time.Second {
		bad("runner.ack_wait", "must be at least 1s, got %v", c.Runner.AckWait)
	}
	if c.Runner.OrphanAge < 0 {
		bad("runner.orphan_age", "must not be negative, got %v", c.Runner.OrphanAge)
	}
	if c.Runner.DefaultTimeout < 0 {
		bad("runner.default_timeout", "must not be negative, got %v", c.Runner.DefaultTimeout)
	}
	for _, o := range []struct {
		key string
		d   time.Duration
	}{{"poll", c.Runner.ReportOutbox.Poll}, {"backoff", c.Runner.ReportOutbox.Backoff}, {"max_age", c.Runner.ReportOutbox.MaxAge}} {
		if o.d < 0 {
			bad("runner.report_outbox."+o.key, "must not be negative, got %v", o.d)
		}
	}
	if c.Runner.Heartbeat <= 0 || c.Runner.Heartbeat >= c.Runner.AckWait {
		bad("runner.heartbeat", "must be positive and shorter than runner.ack_wait, got %v", c.Runner.Heartbeat)
	}
	switch c.Runner.HostSteps {
	case HostStepsIsolated, HostStepsSameUser:
	default:
		bad("runner.host_steps", "must be isolated or same_user, got %q", c.Runner.HostSteps)
	}
	if _, err := parseStepUser(c.Runner.StepUser); err != nil {
		bad("runner.step_user", "%v", err)
	}
	if c.Runs.Retention < time.Hour {
		bad("runs.retention", "must be at least 1h, got %v", c.Runs.Retention)
	}
	if c.Runs.SweepInterval < time.Second {
		bad("runs.sweep_interval", "must be at least 1s, got %v", c.Runs.SweepInterval)
	}
	if c.Runs.RequestKey != "" && c.Runs.RequestKeyFile != "" {
		bad("runs.request_key", "set either runs.request_key or runs.request_key_file, not both")
	} else if c.Runs.RequestKey != "" && len(c.Runs.RequestKey) < queue.MinRequestKey {
		bad("runs.request_key", "must be at least %d characters, got %d", queue.MinRequestKey, len(c.Runs.RequestKey))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		bad("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if c.GitHub.AppID != 0 && c.GitHub.PrivateKeyFile == "" {
		bad("github.private_key_file", "required with github.app_id")
	}
	if c.GitHub.AppID == 0 && c.GitHub.PrivateKeyFile != "" {
		bad("github.app_id", "required with github.private_key_file")
	}
	if c.Shutdown < 0 {
		bad("shutdown_grace", "must not be negative")
	}
	if c.GiteaEnabled() && c.Gitea.BaseURL == "" {
		bad("gitea.base_url", "required when gitea is enabled (its events' git origin, and /hooks/gitea is served by the forge it configures)")
	}
	if c.Gitea.Token != "" || c.Gitea.BaseURL != "" {
		if _, err := gitea.APIURL(c.Gitea.BaseURL); err != nil {
			bad("gitea.base_url", "%v", err)
		}
	}
	if c.SlackEnabled() && len(c.SlackSecrets()) == 0 {
		bad("slack.signing_secret", "required with a slack section: slash commands are never accepted unverified (is its ${VAR} set?)")
	}
	if !strings.HasPrefix(c.Slack.Command, "/") || strings.ContainsAny(c.Slack.Command, " \t") || len(c.Slack.Command) < 2 {
		bad("slack.command", "want a slash command such as /hookrun, got %q", c.Slack.Command)
	}
	if err := (slack.Config{ResponseType: c.Slack.ResponseType, ResponseURLPrefix: c.Slack.ResponseURLPrefix}).Validate(); err != nil {
		bad("slack", "%v", err)
	}
	if r := c.GitHub.Recover; r.Interval < 0 {
		bad("github.recover.interval", "must not be negative, got %v", r.Interval)
	} else if r.Interval > 0 {
		if err := c.RecoverConfig(false).Validate(); err != nil {
			bad("github.recover", "%v", err)
		}
	}
	for i, h := range c.GitHub.Recover.Hooks {
		if !strings.Contains(h.Repo, "/") || h.ID <= 0 {
			bad(fmt.Sprintf("github.recover.hooks[%d]", i), "want repo: owner/name and id: the webhook's id, got %q and %d", h.Repo, h.ID)
		}
	}
	for i, p := range c.AllowRepos {
		if err := workflows.CheckRepoPattern(p); err != nil {
			bad(fmt.Sprintf("allow_repos[%d]", i), "%v", err)
		}
	}
	for i, p := range c.API.TrustedProxies {
		if _, err := ingress.ParseTrustedProxies([]string{p}); err != nil {
			bad(fmt.Sprintf("api.trusted_proxies[%d]", i), "want a CIDR such as 10.0.0.0/8 or an IP address, got %q", p)
		}
	}
	return errors.Join(errs...)
}

// ErrAllowReposRequired refuses to serve webhooks for whoever installs the
// App or knows a secret: the operator names the repositories.
var ErrAllowReposRequired = errors.New(`allow_repos: required: list the repositories this server acts for, e.g. allow_repos: ["myorg/*"]`)

// GitHubSecrets are every accepted GitHub webhook secret.
func (c *Config) GitHubSecrets() []string {
	return nonEmpty(append([]string{c.GitHub.WebhookSecret}, c.GitHub.WebhookSecrets...))
}

// GiteaSecrets are every accepted Gitea webhook secret.
func (c *Config) GiteaSecrets() []string {
	return nonEmpty(append([]string{c.Gitea.WebhookSecret}, c.Gitea.WebhookSecrets...))
}

// GitLabTokens are every accepted GitLab webhook token.
func (c *Config) GitLabTokens() []string {
	return nonEmpty(append([]string{c.GitLab.WebhookToken}, c.GitLab.WebhookTokens...))
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SlackSecrets are every accepted Slack signing secret.
func (c *Config) SlackSecrets() []string {
	return nonEmpty(append([]string{c.Slack.SigningSecret}, c.Slack.SigningSecrets...))
}

// SlackEnabled reports whether /hooks/slack is served.
func (c *Config) SlackEnabled() bool { return c.Slack.Enabled != nil && *c.Slack.Enabled }

// GitHubEnabled reports whether /hooks/github is served.
func (c *Config) GitHubEnabled() bool { return c.GitHub.Enabled != nil && *c.GitHub.Enabled }

// GiteaEnabled reports whether /hooks/gitea is served.
func (c *Config) GiteaEnabled() bool { return c.Gitea.Enabled != nil && *c.Gitea.Enabled }

// GitLabEnabled reports whether /hooks/gitlab is served.
func (c *Config) GitLabEnabled() bool { return c.GitLab.Enabled != nil && *c.GitLab.Enabled }
