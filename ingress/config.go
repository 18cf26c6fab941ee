package ingress

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/decide"
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
	// Trust bounds what pins comment-triggered runs to a head and caches
	// authors' roles (package decide).
	Trust decide.TrustConfig
	// Files bounds the lookup of the files a change touches, for triggers
	// with paths (package decide).
	Files decide.FilesConfig
	// Commands are the names of the server's own comment commands
	// (package decide).
	Commands decide.CommandsConfig
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
	// and ".git". A forge without an entry: its own GitOrigin from
	// Config.Forges; a forge without either runs no chat command.
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

// CheckSlackCommand is the rule of SlackConfig.Command: a slash and a
// word, no white space.
func CheckSlackCommand(cmd string) error {
	if !strings.HasPrefix(cmd, "/") || strings.ContainsAny(cmd, " \t") || len(cmd) < 2 {
		return fmt.Errorf("want a slash command such as %s, got %q", DefaultSlackCommand, cmd)
	}
	return nil
}

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
	if err := CheckSlackCommand(c.Command); err != nil {
		errs = append(errs, fmt.Errorf("checking slack command: %w", err))
	}
	if err := workflows.CheckResponseURLPrefix(c.ResponseURLPrefix); err != nil {
		errs = append(errs, err)
	}
	if c.MaxBodyBytes < 0 || c.AckTimeout < 0 {
		errs = append(errs, errors.New("checking slack: max body bytes and ack timeout must not be negative"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	d := c.decision().WithDefaults() // the decider owns these
	c.Commands, c.Trust, c.Files = d.Commands, d.Trust, d.Files
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	c.Slack.setDefaults()
	c.AuthLimit.setDefaults()
}

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c Config) WithDefaults() Config { c.setDefaults(); return c }

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
	for _, name := range c.Forges.Names() {
		f := c.Forges.Get(name)
		if err := f.Verify(nil, nil); f.HookEnabled() && errors.Is(err, forge.ErrNoSecret) && !c.InsecureNoVerify {
			errs = append(errs, fmt.Errorf("checking %s: %w (set one, or pass --insecure-no-verify to accept unverified deliveries)", name, err))
		}
	}
	errs = append(errs, c.decision().Validate(), c.Slack.Validate(), c.AuthLimit.Validate())
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("checking trusted proxies: %w", err))
	}
	return errors.Join(errs...)
}

// decision is the decider's part of c: its rules, and the clone origins
// of chat runs.
func (c Config) decision() decide.Config {
	return decide.Config{AllowRepos: c.AllowRepos, Commands: c.Commands, Trust: c.Trust, Files: c.Files,
		ChatOrigins: c.Slack.Origins, HeadWriteTimeout: max(c.PublishTimeout, 0)} // a negative one is PublishTimeout's error
}
