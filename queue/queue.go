package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/internal/recent"
)

// Names of the JetStream assets the queue owns (the stores package owns
// the others).
const (
	StreamRuns     = "HOOKRUN_RUNS"       // work-queue stream of RunRequests
	BucketDelivery = "hookrun_deliveries" // delivery key → run id
	BucketBodies   = "hookrun_bodies"     // object store: webhook bodies too large for a run request

	runsSubjectPrefix = "hookrun.runs."
)

// maxBatchesInFlight is how many atomic batches one Queue publishes at
// once; nats-server abandons a stream's batches beyond 50 in flight.
const maxBatchesInFlight = 16

// Queue is a connection to JetStream (and, in embedded mode, the server
// itself) with the run request stream, its delivery keys and its bodies
// in place.
type Queue struct {
	connOpts []nats.Option // credentials (and TLS of an external NATS) of every connection
	cfg      Config
	log      *slog.Logger
	srv      *server.Server // nil with an external URL
	nc       *nats.Conn
	js       jetstream.JetStream
	runsS    jetstream.Stream
	delKV    jetstream.KeyValue
	bodies   jetstream.ObjectStore
	// inlineMax is the largest body that travels inside a run request:
	// Config.InlineBodyMax, at most half the server's max_payload.
	inlineMax int
	// authUser and authPassword are what the embedded server's TCP
	// ports require (ClientAuth); "" when nothing.
	authUser, authPassword string
	// macs signs and verifies run requests with cfg.RequestKey; nil
	// without a key (Publish and Consume then refuse).
	macs *macer

	// sentKeys is, for each run this process published whose message
	// it has not consumed yet, the run id its delivery key holds:
	// reconcile's answer without reading the key.
	sentKeys recent.Map[string, string]

	mu        sync.Mutex
	records   Records // UseRecords
	consumers map[*Consumer]struct{}

	// batchSlots bounds this process's atomic batches in flight
	// (maxBatchesInFlight), below the stream's own limit of 50.
	batchSlots chan struct{}
	closed     bool

	// failAt, set by tests only, returns a failure to inject at a point
	// of PublishDelivery (the fail* constants), or nil.
	failAt func(point string) error
}

// Open starts the embedded server when cfg.URL is empty (else connects to
// the URL list) and creates or updates the run request stream, the
// delivery keys and the bodies.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating queue config: %w", err)
	}
	q := &Queue{cfg: cfg, log: cfg.Logger, consumers: map[*Consumer]struct{}{}, batchSlots: make(chan struct{}, maxBatchesInFlight),
		macs: newMacer(cfg.RequestKey)}
	ctx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	defer cancel()
	url, opts, err := q.connectOptions(ctx)
	if err != nil {
		return nil, err
	}
	nc, err := connect(ctx, url, opts)
	if err != nil {
		q.shutdownServer()
		return nil, fmt.Errorf("connecting to nats: %w", err)
	}
	q.nc = nc
	q.js, err = jetstream.New(nc, jetstream.WithPublishAsyncTimeout(cfg.PublishTimeout))
	if err != nil {
		q.closeConn()
		return nil, fmt.Errorf("creating jetstream context: %w", err)
	}
	if err := q.setup(ctx); err != nil {
		q.closeConn()
		return nil, err
	}
	q.inlineMax = min(cfg.InlineBodyMax, int(nc.MaxPayload()/2))
	return q, nil
}

// connectOptions starts the embedded server (when cfg.URL is empty) and
// returns the URL to connect to with the options of this process's
// connection.
func (q *Queue) connectOptions(ctx context.Context) (string, []nats.Option, error) {
	opts := []nats.Option{
		nats.Name("hookrun"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				q.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { q.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted()) }),
	}
	if q.cfg.URL != "" {
		if err := q.externalAuth(); err != nil {
			return "", nil, err
		}
		return q.cfg.URL, append(opts, q.connOpts...), nil
	}
	cfg := q.cfg
	if cfg.embeddedAuth() {
		pw, err := serverPassword(cfg, q.log)
		if err != nil {
			return "", nil, err
		}
		q.authUser, q.authPassword = cfg.User, pw
		// The in-process connections present them too: the server
		// requires them of every client.
		q.connOpts = append(q.connOpts, nats.UserInfo(cfg.User, pw))
	}
	srv, err := startEmbedded(ctx, cfg, q.authUser, q.authPassword)
	if err != nil {
		return "", nil, err
	}
	q.srv = srv
	q.logListen()
	// This process talks to its own server in-process even when the
	// server also listens on TCP for other processes: no sockets,
	// no syscalls on the publish path.
	opts = append(opts, nats.InProcessServer(srv))
	return srv.ClientURL(), append(opts, q.connOpts...), nil
}

// externalAuth notes the credentials and TLS options an external cluster
// is connected with.
func (q *Queue) externalAuth() error {
	cfg := q.cfg
	pw, err := clientPassword(cfg)
	if err != nil {
		return err
	}
	if pw != "" {
		q.connOpts = append(q.connOpts, nats.UserInfo(cfg.User, pw))
	}
	if cfg.CredsFile != "" {
		q.connOpts = append(q.connOpts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.CAFile != "" {
		q.connOpts = append(q.connOpts, nats.RootCAs(cfg.CAFile))
	}
	if cfg.CertFile != "" {
		q.connOpts = append(q.connOpts, nats.ClientCert(cfg.CertFile, cfg.KeyFile))
	}
	return nil
}

// startEmbedded runs a nats-server with JetStream in this process. With a
// password, clients (Listen) and routes (ClusterListen) must present user
// and password, and this node's routes present them.
func startEmbedded(ctx context.Context, cfg Config, user, password string) (*server.Server, error) {
	opts := &server.Options{
		ServerName: cfg.ServerName,
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.DataDir, "jetstream"),
		NoSigs:     true,
		MaxPayload: cfg.MaxPayload,
		DontListen: cfg.Listen == "",
	}
	if cfg.Listen != "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("parsing listen address: %w", err)
		}
		opts.Host, opts.Port = host, port
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			cfg.Logger.Warn("embedded nats server listens beyond loopback without TLS: its password and messages cross the network in clear", "listen", cfg.Listen)
		}
	}
	if password != "" {
		opts.Username, opts.Password = user, password
	}
	if cfg.ClusterName != "" {
		host, port, err := splitHostPort(cfg.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("parsing cluster listen address: %w", err)
		}
		opts.Cluster = server.ClusterOpts{Name: cfg.ClusterName, Host: host, Port: port}
		if password != "" {
			opts.Cluster.Username, opts.Cluster.Password = user, password
		}
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("parsing route %q: %w", r, err)
			}
			if password != "" {
				u = withUserInfo(u, user, password)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	always, every, err := ParseSync(cfg.Sync)
	if err != nil {
		return nil, fmt.Errorf("configuring embedded nats server: %w", err)
	}
	opts.SyncAlways, opts.SyncInterval = always, every
	for _, addr := range []string{cfg.Listen, cfg.ClusterListen} {
		if err := probeListen(addr); err != nil {
			return nil, fmt.Errorf("starting embedded nats server: %w", err)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("creating embedded nats server: %w", err)
	}
	srv.Start()
	wait := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return nil, errors.New("starting embedded nats server: not ready in time")
	}
	return srv, nil
}

// probeListen says at once that a fixed address is taken: nats-server
// would only retry its listener until the start timed out, without a
// reason.
func probeListen(addr string) error {
	if addr == "" || strings.HasSuffix(addr, ":0") {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err // "listen tcp 127.0.0.1:4222: bind: address already in use"
	}
	return l.Close()
}

// splitHostPort maps port 0 to nats-server's "random port".
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, err
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// setup creates or updates the queue's own assets, each from its own
// configuration, concurrently: at R3 each waits for its own raft group.
func (q *Queue) setup(ctx context.Context) error {
	sh := q.Shared()
	steps := []func(context.Context) error{
		func(ctx context.Context) (err error) {
			q.runsS, err = CreateStream(ctx, sh, runsStreamConfig(q.cfg))
			return err
		},
		func(ctx context.Context) (err error) {
			q.delKV, err = CreateBucket(ctx, sh, deliveriesConfig(q.cfg))
			return err
		},
		func(ctx context.Context) (err error) {
			q.bodies, err = openBodies(ctx, sh, q.cfg.BodyTTL)
			return err
		},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() { errs[i] = step(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runsStreamConfig is HOOKRUN_RUNS: the work queue of run requests.
func runsStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamRuns,
		Description: "hookrun run requests",
		Subjects:    []string{runsSubjectPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Duplicates:  cfg.DuplicateWindow,
		// The runs of one delivery are one atomic batch.
		AllowAtomicPublish: true,
	}
}

// Connect opens another connection to the same NATS: in-process to the
// embedded server, else to the configured URLs with the same credentials.
// The caller closes it.
func (q *Queue) Connect(name string) (*nats.Conn, error) {
	opts := append([]nats.Option{nats.Name(name)}, q.connOpts...)
	if q.srv != nil {
		return nats.Connect(q.srv.ClientURL(), append(opts, nats.InProcessServer(q.srv))...)
	}
	return nats.Connect(q.cfg.URL, opts...)
}

// Ready reports whether JetStream answers (for /readyz).
func (q *Queue) Ready(ctx context.Context) error {
	if q.nc == nil || !q.nc.IsConnected() {
		return errors.New("checking jetstream: not connected")
	}
	if _, err := q.js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("checking jetstream: %w", err)
	}
	return nil
}

// ClientAuth is the user and password a client of the embedded server's
// TCP port presents; both "" when it requires none (no TCP port, or
// Config.InsecureNoAuth) and with an external URL. For tests and the
// benchmark; an operator's runner reads Config.PasswordFile.
func (q *Queue) ClientAuth() (user, password string) {
	return q.authUser, q.authPassword
}

// PasswordFile is the file holding the embedded server's password
// (Config.PasswordFile, defaulted), "" when it requires none or the
// password came from Config.Password.
func (q *Queue) PasswordFile() string {
	if q.authPassword == "" {
		return ""
	}
	return q.cfg.PasswordFile
}

// logListen says at start what the embedded server's TCP ports require and
// how a `hookrun runner` or `hookrun ingress` connects: the path of the
// password file, never the password. Without authentication it warns loudly.
func (q *Queue) logListen() {
	if q.cfg.Listen == "" && q.cfg.ClusterListen == "" {
		return
	}
	if q.authPassword == "" {
		q.log.Warn("INSECURE: the embedded nats server listens on tcp WITHOUT AUTHENTICATION (nats.insecure_no_auth): "+
			"whoever reaches it, a host step on this machine included, can read every stored webhook body and queue runs",
			"listen", q.cfg.Listen, "cluster_listen", q.cfg.ClusterListen)
		return
	}
	secret := "password_file: " + q.cfg.PasswordFile
	if q.cfg.PasswordFile == "" {
		secret = "password: <this server's nats.password>"
	}
	attrs := []any{"user", q.authUser, "password_file", q.cfg.PasswordFile}
	if q.cfg.Listen != "" {
		attrs = append(attrs, "runner_config", fmt.Sprintf("nats: {url: %s, user: %s, %s}", q.srv.ClientURL(), q.authUser, secret))
	}
	if q.cfg.ClusterListen != "" {
		attrs = append(attrs, "cluster_listen", q.cfg.ClusterListen)
	}
	q.log.Info("embedded nats server requires a user and password on its tcp ports; a hookrun runner or ingress connects with runner_config", attrs...)
}

// ClientURL is the embedded server's client URL when it listens on TCP
// (Config.Listen), else "".
func (q *Queue) ClientURL() string {
	if q.srv == nil || q.cfg.Listen == "" {
		return ""
	}
	return q.srv.ClientURL()
}

// Close stops any consumers still open (cancelling their handlers),
// drains the connection and shuts the embedded server down. Close the
// stores (stores.Stores.Close) first.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	cs := make([]*Consumer, 0, len(q.consumers))
	for c := range q.consumers {
		cs = append(cs, c)
	}
	q.mu.Unlock()

	var errs []error
	done, cancel := context.WithCancel(context.Background())
	cancel() // no grace left: in-flight handlers are cancelled and nak
	for _, c := range cs {
		if err := c.Close(done); err != nil {
			errs = append(errs, err)
		}
	}
	if err := q.closeConn(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (q *Queue) closeConn() error {
	var err error
	if q.nc != nil {
		closed := make(chan struct{})
		q.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
		if derr := q.nc.Drain(); derr != nil {
			q.nc.Close()
		} else {
			select {
			case <-closed:
			case <-time.After(q.cfg.PublishTimeout + time.Second):
				err = errors.New("draining nats connection: timed out")
				q.nc.Close()
			}
		}
	}
	q.shutdownServer()
	return err
}

func (q *Queue) shutdownServer() {
	if q.srv != nil {
		q.srv.Shutdown()
		q.srv.WaitForShutdown()
	}
}

// ValidToken reports whether s can be one token of a NATS subject as is.
func ValidToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}

// connect dials NATS, retrying while no server answers yet (a cluster and
// hookrun started together, as docker-compose does) until ctx ends.
// Authentication and TLS errors are final.
func connect(ctx context.Context, url string, opts []nats.Option) (*nats.Conn, error) {
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if !errors.Is(err, nats.ErrNoServers) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (still none after waiting %v)", err, context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
