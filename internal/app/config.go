package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/providers/slack"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// Config is the server configuration file (DESIGN.md §6), from which Start
// builds the stack. Values may reference the environment as ${NAME}
// (expanded by the loader, cmd/hookrun); flags override the file.
type Config struct {
	Listen    string         `yaml:"listen"`    // HTTP address of ingress and the API; default 127.0.0.1:8080
	DataDir   string         `yaml:"data_dir"`  // NATS store, git mirrors, workspaces, list indexes; default ./.hookrun
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
	// "-" turns it off (decide.CommandsConfig).
	Retry string `yaml:"retry"`
	// MaxPerComment: at most this many distinct command lines of one
	// comment start runs; the others are listed as skipped in the webhook
	// answer. Default 10 (decide.DefaultMaxCommandsPerComment); at least 1.
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

// Defaults the configuration file owns itself; every other default is
// its package's (SetDefaults takes it from there).
const (
	defaultDataDir       = "./.hookrun"
	defaultWorkflows     = "./workflows"
	defaultMaxAckPending = 256 // room for runs waiting on their group (queue.ConsumerConfig.MaxAckPending)
	defaultOrphanAge     = 24 * time.Hour
	defaultRunTimeout    = time.Hour // runner.default_timeout; the engine's own default is none
	defaultStepUser      = "65534:65534"
	defaultRetention     = 30 * 24 * time.Hour
	defaultSweepInterval = time.Hour
	defaultLogLevel      = "info"
	defaultShutdownGrace = 30 * time.Second
	maxConcurrency       = 1024
	minRetention         = time.Hour
	minAckWait           = time.Second
	minSweepInterval     = time.Second
)

// SetDefaults fills every unset value with its default: the constants
// above, or the owning package's (queue, runner, ingress, providers/sbx,
// providers/slack, workflows; TestDefaultsAreTheOwnersDefaults compares
// them). Loaders call it before Validate; Start applies it to its own copy.
func (c *Config) SetDefaults() {
	setDefault(&c.Listen, ingress.DefaultListen)
	setDefault(&c.DataDir, defaultDataDir)
	setDefault(&c.Workflows, defaultWorkflows)
	setDefault(&c.NATS.Replicas, queue.DefaultReplicas)
	setDefault(&c.Runner.Concurrency, queue.DefaultConcurrency)
	setDefault(&c.Runner.MaxAckPending, defaultMaxAckPending)
	setDefault(&c.Runner.MaxDeliver, queue.DefaultMaxDeliver)
	setDefault(&c.Runner.AckWait, queue.DefaultAckWait)
	setDefault(&c.Runner.Heartbeat, runner.DefaultHeartbeat)
	setDefault(&c.Runner.OrphanAge, defaultOrphanAge)
	setDefault(&c.Runner.DefaultTimeout, defaultRunTimeout)
	setDefault(&c.Runner.SbxBinary, sbx.DefaultBinary)
	setDefault(&c.Runner.HostSteps, HostStepsIsolated)
	setDefault(&c.Runner.StepUser, defaultStepUser)
	setDefault(&c.Runs.Retention, defaultRetention)
	setDefault(&c.Runs.SweepInterval, defaultSweepInterval)
	setDefault(&c.Log.Level, defaultLogLevel)
	setDefault(&c.Shutdown, defaultShutdownGrace)
	setDefault(&c.Slack.Command, ingress.DefaultSlackCommand)
	setDefault(&c.Slack.ResponseType, slack.InChannel)
	setDefault(&c.Slack.ResponseURLPrefix, workflows.DefaultResponseURLPrefix)
}

// setDefault sets *v to def when it is the zero value.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// problems collects what Validate finds, each error naming its key.
type problems []error

func (p *problems) bad(key, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

// Validate checks every value and names the key of the first bad one.
// What passes its own rules is then checked by the packages the values go
// to (validatePackages), so that a configuration it accepts is one Start
// can build.
func (c *Config) Validate() error {
	var p problems
	if !strings.Contains(c.Listen, ":") {
		p.bad("listen", "want host:port, got %q", c.Listen)
	}
	if c.Shutdown < 0 {
		p.bad("shutdown_grace", "must not be negative")
	}
	c.validateNATS(&p)
	c.validateRunner(&p)
	c.validateRuns(&p)
	c.validateLog(&p)
	c.validateForges(&p)
	c.validateSlack(&p)
	c.validateLists(&p)
	if len(p) == 0 {
		return c.validatePackages()
	}
	return errors.Join(p...)
}

func (c *Config) validateNATS(p *problems) {
	n := &c.NATS
	if n.Replicas < 1 || n.Replicas > queue.MaxReplicas {
		p.bad("nats.replicas", "must be between 1 and %d, got %d", queue.MaxReplicas, n.Replicas)
	}
	if n.URL != "" && n.Sync != "" {
		p.bad("nats.sync", "is the embedded server's setting; an external cluster sets sync_interval in each nats-server's jetstream block (docs/operations.md)")
	} else if n.Sync != "" {
		if _, _, err := queue.ParseSync(n.Sync); err != nil {
			p.bad("nats.sync", "%v", err)
		}
	}
	qc := c.queueConfig()
	for _, r := range queue.AuthRules {
		if r.Broken(qc) {
			p.bad("nats."+r.Field, "%s", r.Why)
		}
	}
	if n.URL == "" && n.Replicas > queue.DefaultReplicas {
		p.bad("nats.replicas", "the embedded server is a single node: replicas must be %d without nats.url", queue.DefaultReplicas)
	}
}

func (c *Config) validateRunner(p *problems) {
	r := &c.Runner
	if r.MetricsListen != "" && !strings.Contains(r.MetricsListen, ":") {
		p.bad("runner.metrics_listen", "want host:port, got %q", r.MetricsListen)
	}
	if r.Concurrency < 1 || r.Concurrency > maxConcurrency {
		p.bad("runner.concurrency", "must be between 1 and %d, got %d", maxConcurrency, r.Concurrency)
	}
	if r.MaxAckPending < r.Concurrency {
		p.bad("runner.max_ack_pending", "must be at least runner.concurrency (%d), got %d", r.Concurrency, r.MaxAckPending)
	}
	if r.MaxDeliver < 1 {
		p.bad("runner.max_deliver", "must be at least 1, got %d", r.MaxDeliver)
	}
	if r.AckWait < minAckWait {
		p.bad("runner.ack_wait", "must be at least %v, got %v", minAckWait, r.AckWait)
	}
	if err := queue.CheckHeartbeat(r.Heartbeat, r.AckWait); err != nil {
		p.bad("runner.heartbeat", "%v", err)
	}
	for _, o := range []struct {
		key string
		d   time.Duration
	}{{"workflow_retry", r.WorkflowRetry}, {"orphan_age", r.OrphanAge}, {"default_timeout", r.DefaultTimeout},
		{"report_outbox.poll", r.ReportOutbox.Poll}, {"report_outbox.backoff", r.ReportOutbox.Backoff}, {"report_outbox.max_age", r.ReportOutbox.MaxAge}} {
		if o.d < 0 {
			p.bad("runner."+o.key, "must not be negative, got %v", o.d)
		}
	}
	switch r.HostSteps {
	case HostStepsIsolated, HostStepsSameUser:
	default:
		p.bad("runner.host_steps", "must be isolated or same_user, got %q", r.HostSteps)
	}
	if _, err := parseStepUser(r.StepUser); err != nil {
		p.bad("runner.step_user", "%v", err)
	}
}

func (c *Config) validateRuns(p *problems) {
	if c.Commands.MaxPerComment < 0 {
		p.bad("commands.max_per_comment", "must be at least 1 (0 or absent: the default, %d), got %d", decide.DefaultMaxCommandsPerComment, c.Commands.MaxPerComment)
	}
	if c.Runs.Retention < minRetention {
		p.bad("runs.retention", "must be at least %v, got %v", shortDuration(minRetention), c.Runs.Retention)
	}
	if c.Runs.SweepInterval < minSweepInterval {
		p.bad("runs.sweep_interval", "must be at least %v, got %v", minSweepInterval, c.Runs.SweepInterval)
	}
	if c.Runs.RequestKey != "" && c.Runs.RequestKeyFile != "" {
		p.bad("runs.request_key", "set either runs.request_key or runs.request_key_file, not both")
	} else if c.Runs.RequestKey != "" && len(c.Runs.RequestKey) < queue.MinRequestKey {
		p.bad("runs.request_key", "must be at least %d characters, got %d", queue.MinRequestKey, len(c.Runs.RequestKey))
	}
}

// shortDuration writes a whole number of hours as "1h" (not "1h0m0s").
func shortDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

func (c *Config) validateLog(p *problems) {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		p.bad("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		p.bad("log.format", "must be text or json, got %q", c.Log.Format)
	}
}

func (c *Config) validateForges(p *problems) {
	if c.GitHub.AppID != 0 && c.GitHub.PrivateKeyFile == "" {
		p.bad("github.private_key_file", "required with github.app_id")
	}
	if c.GitHub.AppID == 0 && c.GitHub.PrivateKeyFile != "" {
		p.bad("github.app_id", "required with github.private_key_file")
	}
	if c.GiteaEnabled() && c.Gitea.BaseURL == "" {
		p.bad("gitea.base_url", "required when gitea is enabled (its events' git origin, and /hooks/gitea is served by the forge it configures)")
	}
	if c.Gitea.Token != "" || c.Gitea.BaseURL != "" {
		if _, err := gitea.APIURL(c.Gitea.BaseURL); err != nil {
			p.bad("gitea.base_url", "%v", err)
		}
	}
	if r := c.GitHub.Recover; r.Interval < 0 {
		p.bad("github.recover.interval", "must not be negative, got %v", r.Interval)
	} else if r.Interval > 0 {
		if err := c.RecoverConfig(false).Validate(); err != nil {
			p.bad("github.recover", "%v", err)
		}
	}
	for i, h := range c.GitHub.Recover.Hooks {
		if !strings.Contains(h.Repo, "/") || h.ID <= 0 {
			p.bad(fmt.Sprintf("github.recover.hooks[%d]", i), "want repo: owner/name and id: the webhook's id, got %q and %d", h.Repo, h.ID)
		}
	}
}

func (c *Config) validateSlack(p *problems) {
	if c.SlackEnabled() && len(c.SlackSecrets()) == 0 {
		p.bad("slack.signing_secret", "required with a slack section: slash commands are never accepted unverified (is its ${VAR} set?)")
	}
	if err := ingress.CheckSlackCommand(c.Slack.Command); err != nil {
		p.bad("slack.command", "%v", err)
	}
	if err := c.slackReporterConfig().Validate(); err != nil {
		p.bad("slack", "%v", err)
	}
}

func (c *Config) validateLists(p *problems) {
	for i, pat := range c.AllowRepos {
		if err := workflows.CheckRepoPattern(pat); err != nil {
			p.bad(fmt.Sprintf("allow_repos[%d]", i), "%v", err)
		}
	}
	for i, tp := range c.API.TrustedProxies {
		if _, err := ingress.ParseTrustedProxies([]string{tp}); err != nil {
			p.bad(fmt.Sprintf("api.trusted_proxies[%d]", i), "want a CIDR such as 10.0.0.0/8 or an IP address, got %q", tp)
		}
	}
}

// validatePackages checks the values with the Validate of the packages
// they configure: the rules those own (the retry command's name, the
// runner's heartbeat against its consumer's ack wait, ...) refuse a file
// at load, not when Start builds the package.
func (c *Config) validatePackages() error {
	queueCfg := c.queueConfig().WithDefaults()
	consumer := c.runnerConfig().Consumer.WithDefaults()
	outbox := c.outboxConfig().WithDefaults()
	retention := c.retentionConfig()
	var errs []error
	for _, v := range []struct {
		section  string
		validate func() error
	}{
		{"nats", queueCfg.Validate},
		{"runner", c.runnerConfig().Validate},
		{"runner", consumer.Validate},
		{"runner.report_outbox", outbox.Validate},
		{"", c.ingressConfig().Validate}, // its errors name what they check
		{"runs", retention.Validate},
	} {
		if err := v.validate(); err != nil && v.section == "" {
			errs = append(errs, err)
		} else if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.section, err))
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
