package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Config says where JetStream lives and how the streams and buckets are sized.
type Config struct {
	// URL is empty for an embedded nats-server (the default), else a
	// comma-separated list of server URLs of an external NATS cluster.
	URL string
	// CredsFile is a NATS credentials file (JWT + nkey) for an external cluster.
	CredsFile string
	// CAFile is a PEM file of CAs that sign the external servers' certificates.
	CAFile string
	// CertFile is the client certificate for mutual TLS with an external cluster.
	CertFile string
	// KeyFile is the private key of CertFile.
	KeyFile string

	// DataDir is the embedded server's store directory; JetStream keeps its
	// files under DataDir/jetstream. Required when URL is empty.
	DataDir string
	// Listen is the embedded server's client address: "" opens no TCP port
	// (the process talks to it in-process); "127.0.0.1:4222" exposes it,
	// port 0 picks a free port (see Queue.ClientURL). The embedded server
	// has no client authentication: whoever reaches this address can queue
	// runs, so keep it on loopback or a private network.
	Listen string
	// ServerName names the embedded server; required for a cluster node.
	ServerName string
	// ClusterName is the embedded server's cluster; empty runs it standalone.
	ClusterName string
	// ClusterListen is the embedded server's route address, e.g. 127.0.0.1:6222.
	ClusterListen string
	// Routes are the other cluster nodes, e.g. nats-route://127.0.0.1:6223.
	Routes []string
	// Sync is when the embedded server's JetStream store reaches the disk:
	// SyncAlways writes every message through to the disk before it is
	// acknowledged, so an acknowledged delivery survives an OS crash or a
	// power loss; a duration (DefaultSync, 1s; nats-server's own default is
	// 2m) syncs that often and loses up to that much acknowledged work to
	// an OS crash or power loss (a kill -9 of hookrun loses nothing either
	// way: the kernel has the data). See docs/operations.md.
	Sync string
	// MaxPayload is the embedded server's largest message in bytes (webhook
	// payloads travel inside run requests). Default 32 MiB.
	MaxPayload int32

	// Replicas is the replica count of the streams and KV buckets. Default 1.
	Replicas int
	// DuplicateWindow is HOOKRUN_RUNS' Nats-Msg-Id dedupe window. Default 2m,
	// at least 100ms (JetStream's minimum).
	DuplicateWindow time.Duration
	// DeliveryTTL is how long hookrun_deliveries remembers a delivery. Default 72h.
	DeliveryTTL time.Duration
	// InlineBodyMax is the largest webhook body that travels inside its run
	// requests; a larger one is stored once in the hookrun_bodies object
	// store, shared by the runs of its delivery, and referenced
	// (RunRequest.Body). Default 256 KiB; Open lowers it to half the
	// server's max_payload (1 MiB on a plain nats-server) when that is less.
	InlineBodyMax int
	// BodyTTL is how long hookrun_bodies keeps a body: a run whose body
	// expired before a runner took it fails saying so. Default the longer
	// of DeliveryTTL and ReceivedTTL (a stored delivery references its
	// large body there).
	BodyTTL time.Duration
	// ReceivedTTL is how long hookrun_received keeps each accepted
	// delivery (event name and body) for replays and re-runs. Default
	// DeliveryTTL (72h), until run records get a retention of their own.
	ReceivedTTL time.Duration
	// LogMaxAge is how long HOOKRUN_LOGS keeps step output. Default 7 days.
	LogMaxAge time.Duration
	// HeadTTL is how long hookrun_heads remembers a pull request's head
	// after its latest pull_request event. Default 30 days.
	HeadTTL time.Duration
	// RequestKey authenticates run requests (reqauth.go): Publish signs
	// each with it (HeaderMAC) and a Consumer runs only requests whose
	// authenticator it verifies. Only ingress and runners hold it; at
	// least MinRequestKey bytes. Publish and Consume refuse to work
	// without it (a queue opened only to read, `hookrun recover`, needs
	// none). No default.
	RequestKey []byte
	// PublishTimeout bounds one Publish (all its writes). Default 5s.
	PublishTimeout time.Duration
	// SetupTimeout bounds how long Open waits for the embedded server and
	// for JetStream to accept the streams (a fresh cluster elects a leader
	// first). Default 30s.
	SetupTimeout time.Duration

	// Logger receives the queue's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the records the queue writes itself (a run
	// queued, cancelled while queued, failed by the queue). Default time.Now.
	Now func() time.Time
}

// SyncAlways is Config.Sync's value for a write-through store.
const SyncAlways = "always"

// DefaultSync is Config.Sync's default. Writing through (SyncAlways) would
// survive a power loss but cut ingest to a fifth on the machines measured
// (hookrun bench, durability phase; docs/operations.md), so the store syncs
// every second: an OS crash or power loss loses at most the last second of
// acknowledged deliveries, instead of nats-server's two minutes.
const DefaultSync = "1s"

// ParseSync reads a Config.Sync value: SyncAlways, or a positive duration.
func ParseSync(s string) (always bool, every time.Duration, err error) {
	if s == SyncAlways {
		return true, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return false, 0, fmt.Errorf("want %q or a positive duration such as 2m, got %q", SyncAlways, s)
	}
	return false, d, nil
}

func (c *Config) setDefaults() {
	if c.Sync == "" {
		c.Sync = DefaultSync
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = 32 << 20
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.DeliveryTTL == 0 {
		c.DeliveryTTL = 72 * time.Hour
	}
	if c.InlineBodyMax == 0 {
		c.InlineBodyMax = 256 << 10
	}
	if c.ReceivedTTL == 0 {
		c.ReceivedTTL = c.DeliveryTTL
	}
	if c.BodyTTL == 0 {
		c.BodyTTL = max(c.DeliveryTTL, c.ReceivedTTL)
	}
	if c.LogMaxAge == 0 {
		c.LogMaxAge = 7 * 24 * time.Hour
	}
	if c.HeadTTL == 0 {
		c.HeadTTL = 30 * 24 * time.Hour
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.SetupTimeout == 0 {
		c.SetupTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports the first problem of a defaulted config.
func (c *Config) Validate() error {
	var errs []error
	if c.URL == "" {
		if c.DataDir == "" {
			errs = append(errs, errors.New("data dir is required for the embedded server"))
		}
		for name, addr := range map[string]string{"listen": c.Listen, "cluster listen": c.ClusterListen} {
			if addr == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				errs = append(errs, fmt.Errorf("parsing %s address %q: %w", name, addr, err))
			}
		}
		if _, _, err := ParseSync(c.Sync); err != nil {
			errs = append(errs, fmt.Errorf("parsing sync: %w", err))
		}
		if c.ClusterName != "" && (c.ServerName == "" || c.ClusterListen == "") {
			errs = append(errs, errors.New("a cluster node needs a server name and a cluster listen address"))
		}
	} else if c.Listen != "" || c.ClusterName != "" {
		errs = append(errs, errors.New("listen and cluster options are for the embedded server; they cannot be combined with an external url"))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("cert file and key file go together"))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas must be 1..5, got %d", c.Replicas))
	}
	if c.DuplicateWindow < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("duplicate window must be at least 100ms, got %s", c.DuplicateWindow))
	}
	if c.DeliveryTTL < c.DuplicateWindow {
		errs = append(errs, fmt.Errorf("delivery ttl %s is shorter than the duplicate window %s", c.DeliveryTTL, c.DuplicateWindow))
	}
	if c.InlineBodyMax < 1024 {
		errs = append(errs, fmt.Errorf("inline body max must be at least 1 KiB, got %d", c.InlineBodyMax))
	}
	if c.ReceivedTTL < time.Second {
		errs = append(errs, fmt.Errorf("received ttl must be at least 1s, got %s", c.ReceivedTTL))
	}
	if c.BodyTTL < time.Second {
		errs = append(errs, fmt.Errorf("body ttl must be at least 1s, got %s", c.BodyTTL))
	}
	if c.LogMaxAge < time.Second {
		errs = append(errs, fmt.Errorf("log max age must be at least 1s, got %s", c.LogMaxAge))
	}
	if c.HeadTTL < time.Second {
		errs = append(errs, fmt.Errorf("head ttl must be at least 1s, got %s", c.HeadTTL))
	}
	if c.PublishTimeout <= 0 || c.SetupTimeout <= 0 {
		errs = append(errs, errors.New("timeouts must be positive"))
	}
	if len(c.RequestKey) > 0 && len(c.RequestKey) < MinRequestKey {
		errs = append(errs, fmt.Errorf("request key must be at least %d bytes, got %d", MinRequestKey, len(c.RequestKey)))
	}
	return errors.Join(errs...)
}
