package ingress

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Defaults for Config.
const (
	DefaultListen         = "127.0.0.1:8080"
	DefaultMaxBodyBytes   = 25 << 20 // 25 MiB, the largest forge's own payload cap
	DefaultPublishTimeout = 5 * time.Second
)

// Config configures the ingress server.
type Config struct {
	// Listen is the TCP address Start binds, host:port; default 127.0.0.1:8080.
	Listen string
	// Slack configures POST /hooks/slack, Slack slash commands (slack.go).
	Slack SlackConfig
	// InsecureNoVerify lets a forge's webhooks be enabled without a secret.
	// Requests to such a forge are then accepted unverified and each one
	// logs a warning. A forge that has secrets is always verified.
	InsecureNoVerify bool
	// MaxBodyBytes caps a webhook body; larger bodies get 413. Default 25 MiB.
	MaxBodyBytes int64
	// PublishTimeout bounds publishing all run requests of one delivery;
	// past it the delivery gets 503. Default 5 s (forges give up after about 10 s).
	PublishTimeout time.Duration
	// AllowRepos are the repositories deliveries are acted on for, globs
	// over Event.Repo (workflows.MatchRepo: `myorg/*`, `group/**`). A
	// delivery for any other repository is answered 202 "ignored" and
	// creates nothing. Empty: every repository (internal/app refuses to run
	// ingress without allow_repos; empty is for tests and benchmarks).
	AllowRepos []string
	// Forges are the forges ingress serves: one webhook route each,
	// POST /hooks/<name>, answering 404 while the forge's webhooks are
	// disabled; its deliveries verified and normalized by the forge
	// (providers/forge.Webhooks); and what payloads leave out looked up
	// through it: a pull request's head, its changed files, an author's
	// role (providers/forge.Lookups). nil: no webhook route at all.
	Forges *forge.Registry
	// DefaultForge is the forge of an API run or a replay that names none
	// (internal/app sets it).
	DefaultForge workflows.Forge
	// Trust holds what pins comment-triggered runs to a head and caches
	// authors' roles (trust.go).
	Trust TrustConfig
	// Files looks up the files a change touches for triggers with paths
	// (files.go).
	Files FilesConfig
	// Commands are the names of the server's own comment commands.
	Commands CommandsConfig
	// Collectors are more metrics GET /metrics serves beside ingress's own
	// (the runner's report outbox in `hookrun serve`).
	Collectors []prometheus.Collector
	// TrustedProxies are the addresses (CIDRs or single IPs) of the
	// reverse proxies in front of the server: only a request whose peer is
	// one of them has its client address taken from X-Forwarded-For (read
	// from the right, skipping trusted hops) or X-Real-IP. Empty (the
	// default): no header is believed, the client is the connection's
	// peer. The address is what the logs name and what AuthLimit counts.
	TrustedProxies []string
	// AuthLimit bounds wrong token guesses per client address (guard.go).
	AuthLimit AuthLimitConfig
	// Tracer, when set, gives each delivery a trace: a "receive" span
	// with "verify" and "publish" children, whose context the run
	// messages carry to the runners. nil: no spans at all (tracing off).
	Tracer trace.TracerProvider
}

// CommandsConfig names the comment commands the server itself acts on.
type CommandsConfig struct {
	// Retry is the name of the command that re-runs a pull request's
	// failed runs (a new comment whose first line is /NAME, by a user
	// each run's workflow `authorize` policy admits). Default "retry";
	// "-" turns the command off.
	Retry string
	// MaxPerComment is how many distinct command lines of one comment
	// start runs, across the workflows that take them (decide); the
	// lines past it are listed as skipped in the answer. Default
	// DefaultMaxCommandsPerComment (10).
	MaxPerComment int
}

// DefaultRetryCommand is CommandsConfig.Retry's default.
const DefaultRetryCommand = "retry"

// retryCommand is the comment line that asks for a re-run, "" when off.
func (c CommandsConfig) retryCommand() string {
	if c.Retry == "-" {
		return ""
	}
	return "/" + c.Retry
}

// SlackConfig configures the Slack slash command receiver.
type SlackConfig struct {
	// Enabled serves POST /hooks/slack; when false the route answers 404.
	// It is never served unverified: Secrets must not be empty.
	Enabled bool
	// Secrets are the app's signing secrets (Basic Information → Signing
	// Secret); a request signed with any of them is accepted (several
	// allow rotation). Never logged.
	Secrets []string
	// Command is the slash command hookrun answers, as Slack sends it;
	// default /hookrun.
	Command string
	// Origins is, for each forge a chat trigger may name, the
	// scheme://host its repositories are cloned from (the forge's
	// GitOrigin): a chat run's CloneURL is the origin, its trigger's repo
	// and ".git". No default: internal/app sets them from its forges; a
	// forge without one runs no chat command.
	Origins map[workflows.Forge]string
	// ResponseURLPrefix is the only place a command's response_url may
	// point to (workflows.ResponseURLAllowed); default
	// https://hooks.slack.com/. A command whose response_url is elsewhere
	// runs nothing.
	ResponseURLPrefix string
	// MaxBodyBytes caps a command's body (a few hundred bytes in
	// practice); default 64 KiB.
	MaxBodyBytes int64
	// AckTimeout bounds publishing a command's runs: Slack shows an error
	// when it has no answer within 3 s; default 2.5 s.
	AckTimeout time.Duration
}

// Defaults for SlackConfig.
const (
	DefaultSlackCommand      = "/hookrun"
	DefaultSlackMaxBodyBytes = 64 << 10
	DefaultSlackAckTimeout   = 2500 * time.Millisecond
	// SlackReplayWindow is how far a request's X-Slack-Request-Timestamp
	// may be from now, either way (Slack's own recommendation).
	SlackReplayWindow = 5 * time.Minute
)

func (c *SlackConfig) setDefaults() {
	if c.Command == "" {
		c.Command = DefaultSlackCommand
	}
	if c.ResponseURLPrefix == "" {
		c.ResponseURLPrefix = workflows.DefaultResponseURLPrefix
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultSlackMaxBodyBytes
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = DefaultSlackAckTimeout
	}
	if c.Origins == nil {
		c.Origins = map[workflows.Forge]string{}
	}
}

// Validate reports every problem of c, defaults applied.
func (c SlackConfig) Validate() error {
	c.setDefaults()
	var errs []error
	for i, s := range c.Secrets {
		if s == "" {
			errs = append(errs, fmt.Errorf("checking slack signing secrets: entry %d is empty", i))
		}
	}
	if c.Enabled && len(c.Secrets) == 0 {
		errs = append(errs, errors.New("checking slack: enabled without a signing secret (slash commands are never accepted unverified)"))
	}
	if !strings.HasPrefix(c.Command, "/") || strings.ContainsAny(c.Command, " \t") || len(c.Command) < 2 {
		errs = append(errs, fmt.Errorf("checking slack command %q: want a slash command such as %s", c.Command, DefaultSlackCommand))
	}
	if err := workflows.ResponseURLAllowed(c.ResponseURLPrefix, c.ResponseURLPrefix+"x"); err != nil {
		errs = append(errs, fmt.Errorf("checking slack response URL prefix %q: want an http(s) URL ending in /", c.ResponseURLPrefix))
	}
	if c.MaxBodyBytes < 0 || c.AckTimeout < 0 {
		errs = append(errs, errors.New("checking slack: max body bytes and ack timeout must not be negative"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Commands.Retry == "" {
		c.Commands.Retry = DefaultRetryCommand
	}
	if c.Commands.MaxPerComment == 0 {
		c.Commands.MaxPerComment = DefaultMaxCommandsPerComment
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	c.Trust.setDefaults()
	c.Files.setDefaults()
	c.Slack.setDefaults()
	c.AuthLimit.setDefaults()
}

// Validate reports every problem of c, defaults applied. It refuses a
// forge whose webhooks are enabled without a secret unless
// InsecureNoVerify is set (a secret's empty entry is refused when the
// forge is built).
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("checking listen address %q: %w", c.Listen, err))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("checking max body bytes: must not be negative"))
	}
	if c.PublishTimeout < 0 {
		errs = append(errs, errors.New("checking publish timeout: must not be negative"))
	}
	for i, p := range c.AllowRepos {
		if err := workflows.CheckRepoPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("checking allowed repositories: entry %d: %w", i, err))
		}
	}
	if r := c.Commands.Retry; r != "-" && !retryName.MatchString(r) {
		errs = append(errs, fmt.Errorf("checking commands: retry %q must be a name of letters, digits, - and _ (without the slash), or - to turn it off", r))
	}
	if c.Commands.MaxPerComment < 0 {
		errs = append(errs, fmt.Errorf("checking commands: max per comment must not be negative, got %d", c.Commands.MaxPerComment))
	}
	for _, name := range c.Forges.Names() {
		f := c.Forges.Get(name)
		if err := f.Verify(nil, nil); f.HookEnabled() && errors.Is(err, forge.ErrNoSecret) && !c.InsecureNoVerify {
			errs = append(errs, fmt.Errorf("checking %s: %w (set one, or pass --insecure-no-verify to accept unverified deliveries)", name, err))
		}
	}
	errs = append(errs, c.Trust.Validate(), c.Files.Validate(), c.Slack.Validate(), c.AuthLimit.Validate())
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("checking trusted proxies: %w", err))
	}
	return errors.Join(errs...)
}

var retryName = regexp.MustCompile(`^[A-Za-z0-9][-_A-Za-z0-9]*$`)
