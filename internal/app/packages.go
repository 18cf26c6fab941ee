package app

import (
	"path/filepath"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/providers/slack"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/stores"
)

// The configurations of the packages the file's values go to: what Start
// builds them from and what Validate checks with their Validate. Each
// holds only values of the file (no clients, loggers or callbacks: Start
// adds those), so that TestDefaultsAreTheOwnersDefaults can compare them.

// queueConfig is the queue's configuration (Start adds the request key
// and the logger).
func (c *Config) queueConfig() queue.Config {
	n := &c.NATS
	return queue.Config{
		URL: n.URL, CredsFile: n.CredsFile, CAFile: n.CAFile, CertFile: n.CertFile, KeyFile: n.KeyFile,
		DataDir: filepath.Join(c.DataDir, "nats"), Listen: n.Listen, Sync: n.Sync, Replicas: n.Replicas,
		User: n.User, Password: n.Password, PasswordFile: n.PasswordFile, InsecureNoAuth: n.InsecureNoAuth,
		BodyTTL: c.storesOptions().ReceivedTTL,
	}
}

// sbxConfig is the sbx provider's configuration.
func (c *Config) sbxConfig() sbx.Config { return sbx.Config{Binary: c.Runner.SbxBinary} }

// runnerConfig is the runner's configuration, its consumer's included.
func (c *Config) runnerConfig() runner.Config {
	return runner.Config{
		Concurrency:       c.Runner.Concurrency,
		HeartbeatInterval: c.Runner.Heartbeat,
		WorkflowRetry:     c.Runner.WorkflowRetry,
		Consumer:          queue.ConsumerConfig{AckWait: c.Runner.AckWait, MaxAckPending: c.Runner.MaxAckPending, MaxDeliver: c.Runner.MaxDeliver},
	}
}

// outboxConfig is the report outbox's configuration.
func (c *Config) outboxConfig() runner.OutboxConfig {
	o := c.Runner.ReportOutbox
	return runner.OutboxConfig{Poll: o.Poll, Backoff: o.Backoff, MaxAge: o.MaxAge}
}

// ingressConfig is the ingress server's configuration (Start adds the
// forges, metrics and tracer).
func (c *Config) ingressConfig() ingress.Config {
	return ingress.Config{
		Listen: c.Listen,
		Slack: ingress.SlackConfig{Enabled: c.SlackEnabled(), Secrets: c.SlackSecrets(), Command: c.Slack.Command,
			ResponseURLPrefix: c.Slack.ResponseURLPrefix},
		InsecureNoVerify: c.InsecureNoVerify,
		AllowRepos:       c.AllowRepos,
		DefaultForge:     github.Name,
		Commands:         decide.CommandsConfig{Retry: c.Commands.Retry, MaxPerComment: c.Commands.MaxPerComment},
		TrustedProxies:   c.API.TrustedProxies,
	}
}

// retentionConfig is the retention sweep's configuration.
func (c *Config) retentionConfig() stores.RetentionConfig {
	return stores.RetentionConfig{Retention: c.Runs.Retention, Interval: c.Runs.SweepInterval}
}

// storesOptions are the stores' options, which follow runs.retention:
// sticky comments' keys expire with the runs they order; a stored
// delivery is kept as long as a run (the deliveries view), and no shorter
// than the dedupe window, through which re-runs and replays read it (the
// large bodies it references are kept as long: queueConfig's BodyTTL).
// IndexDir is the directory of data_dir holding the list indexes' files
// (stores.Options.IndexDir): the runs' and the deliveries' lists, kept
// across restarts.
const IndexDir = "index"

func (c *Config) storesOptions() stores.Options {
	return stores.Options{CommentTTL: c.Runs.Retention, ReceivedTTL: max(c.Runs.Retention, queue.DefaultDeliveryTTL),
		IndexDir: filepath.Join(c.DataDir, IndexDir)}
}

// slackReporterConfig is the Slack reporter's configuration (Start adds
// the logger).
func (c *Config) slackReporterConfig() slack.Config {
	return slack.Config{ResponseURLPrefix: c.Slack.ResponseURLPrefix, ResponseType: c.Slack.ResponseType, RunURL: c.RunURL}
}
