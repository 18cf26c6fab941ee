package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
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
	// User is the NATS user name that goes with Password or PasswordFile:
	// presented to an external cluster, and required by the embedded
	// server on its TCP ports. Default DefaultUser when a password is used.
	User string
	// Password is the NATS password itself (usually a ${VAR} of the
	// configuration): presented to an external cluster; for the embedded
	// server, the password its TCP ports require (no file is written).
	// Never logged nor put into an error.
	Password string
	// PasswordFile is a file holding the password (surrounding whitespace
	// is ignored). With an external URL it is read at Open and presented.
	// For the embedded server listening on TCP (Listen or ClusterListen)
	// it holds the password clients and routes must present: Open creates
	// it with a random password (mode 0600) when it does not exist and
	// reuses it afterwards. Default for the embedded server
	// DataDir/DefaultPasswordFileName. Exclusive with Password.
	PasswordFile string
	// InsecureNoAuth lets the embedded server listen on TCP without any
	// authentication (and logs a warning at every start): whoever reaches
	// Listen can then read every stored webhook body and queue runs. Only
	// with Listen or ClusterListen; default false.
	InsecureNoAuth bool

	// DataDir is the embedded server's store directory; JetStream keeps its
	// files under DataDir/jetstream. Required when URL is empty.
	DataDir string
	// Listen is the embedded server's client address: "" opens no TCP port
	// (the process talks to it in-process); "127.0.0.1:4222" exposes it,
	// port 0 picks a free port (see Queue.ClientURL). Clients must
	// present User and the password of PasswordFile (Queue.ClientAuth)
	// unless InsecureNoAuth; the traffic is not encrypted, so keep it on
	// loopback or a private network.
	Listen string
	// ServerName names the embedded server; required for a cluster node.
	ServerName string
	// ClusterName is the embedded server's cluster; empty runs it standalone.
	ClusterName string
	// ClusterListen is the embedded server's route address, e.g.
	// 127.0.0.1:6222. Routes authenticate with User and the same password
	// as clients (unless InsecureNoAuth), so every node of an embedded
	// cluster needs the same Password or PasswordFile.
	ClusterListen string
	// Routes are the other cluster nodes, e.g. nats-route://127.0.0.1:6223;
	// a route without user information presents User and the password.
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
	// DeliveryTTL is how long hookrun_deliveries remembers a delivery.
	// Default DefaultDeliveryTTL.
	DeliveryTTL time.Duration
	// InlineBodyMax is the largest webhook body that travels inside its run
	// requests; a larger one is stored once in the hookrun_bodies object
	// store, shared by the runs of its delivery, and referenced
	// (RunRequest.Body). Default 256 KiB; Open lowers it to half the
	// server's max_payload (1 MiB on a plain nats-server) when that is less.
	InlineBodyMax int
	// BodyTTL is how long hookrun_bodies keeps a body: a run whose body
	// expired before a runner took it fails saying so. Default
	// DeliveryTTL; keep it at least the stores' ReceivedTTL (a stored
	// delivery references its large body there).
	BodyTTL time.Duration
	// RequestKey authenticates run requests (request.go): Publish signs
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

// DefaultDeliveryTTL is Config.DeliveryTTL's default, and the stores'
// ReceivedTTL's.
const DefaultDeliveryTTL = 72 * time.Hour

// DefaultUser is Config.User's default when a password is used.
const DefaultUser = "hookrun"

// DefaultPasswordFileName is the embedded server's password file under
// Config.DataDir, created at the first start that listens on TCP.
const DefaultPasswordFileName = "client.password"

// SyncAlways is Config.Sync's value for a write-through store.
const SyncAlways = "always"

// DefaultSync is Config.Sync's default. Writing through (SyncAlways) would
// survive a power loss but cut ingest to a fifth on the machines measured
// (hookrun bench, durability phase; docs/operations.md), so the store syncs
// every second: an OS crash or power loss loses at most the last second of
// acknowledged deliveries, instead of nats-server's two minutes.
const DefaultSync = "1s"

// DefaultReplicas is Config.Replicas' default: a single node; MaxReplicas
// is the most a stream or bucket takes.
const (
	DefaultReplicas = 1
	MaxReplicas     = 5
)

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
	if c.User == "" && (c.Password != "" || c.PasswordFile != "" || c.embeddedAuth()) {
		c.User = DefaultUser
	}
	if c.PasswordFile == "" && c.Password == "" && c.embeddedAuth() && c.DataDir != "" {
		c.PasswordFile = filepath.Join(c.DataDir, DefaultPasswordFileName)
	}
	if c.Sync == "" {
		c.Sync = DefaultSync
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = 32 << 20
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.DeliveryTTL == 0 {
		c.DeliveryTTL = DefaultDeliveryTTL
	}
	if c.InlineBodyMax == 0 {
		c.InlineBodyMax = 256 << 10
	}
	if c.BodyTTL == 0 {
		c.BodyTTL = c.DeliveryTTL
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

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c Config) WithDefaults() Config { c.setDefaults(); return c }

// embeddedAuth reports whether the embedded server requires
// authentication: it listens on TCP (clients or routes) and the operator
// did not opt out with InsecureNoAuth.
func (c *Config) embeddedAuth() bool {
	return c.URL == "" && (c.Listen != "" || c.ClusterListen != "") && !c.InsecureNoAuth
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
	for _, r := range AuthRules {
		if r.Broken(*c) {
			errs = append(errs, fmt.Errorf("nats.%s: %s", r.Field, r.Why))
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("cert file and key file go together"))
	}
	if c.Replicas < 1 || c.Replicas > MaxReplicas {
		errs = append(errs, fmt.Errorf("replicas must be 1..%d, got %d", MaxReplicas, c.Replicas))
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
	if c.BodyTTL < time.Second {
		errs = append(errs, fmt.Errorf("body ttl must be at least 1s, got %s", c.BodyTTL))
	}
	if c.PublishTimeout <= 0 || c.SetupTimeout <= 0 {
		errs = append(errs, errors.New("timeouts must be positive"))
	}
	if len(c.RequestKey) > 0 && len(c.RequestKey) < MinRequestKey {
		errs = append(errs, fmt.Errorf("request key must be at least %d bytes, got %d", MinRequestKey, len(c.RequestKey)))
	}
	return errors.Join(errs...)
}

// AuthRule is one rule of the authentication settings: Broken says whether
// a configuration breaks it, Field is the setting a broken rule is reported
// on (as the config file names it under nats:), Why what the rule is.
// Config.Validate and internal/app's config check both read AuthRules.
type AuthRule struct {
	Field  string
	Why    string
	Broken func(Config) bool
}

// AuthRules are the rules of the authentication settings.
var AuthRules = []AuthRule{
	{"insecure_no_auth", "applies only to the embedded server's nats.listen (without nats.url)", func(c Config) bool {
		return c.InsecureNoAuth && (c.URL != "" || c.Listen == "" && c.ClusterListen == "")
	}},
	{"insecure_no_auth", "cannot be combined with nats.user, nats.password or nats.password_file", func(c Config) bool {
		return c.InsecureNoAuth && (c.User != "" || c.Password != "" || c.PasswordFile != "")
	}},
	{"password", "set password or password_file, not both", func(c Config) bool {
		return c.Password != "" && c.PasswordFile != ""
	}},
	{"creds_file", "cannot be combined with nats.password or nats.password_file", func(c Config) bool {
		return c.CredsFile != "" && (c.Password != "" || c.PasswordFile != "")
	}},
}
