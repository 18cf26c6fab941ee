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
)

// Names of the JetStream assets hookrun owns.
const (
	StreamRuns     = "HOOKRUN_RUNS"       // work-queue stream of RunRequests
	StreamLogs     = "HOOKRUN_LOGS"       // step output
	BucketRuns     = "hookrun_runs"       // run records
	BucketDelivery = "hookrun_deliveries" // delivery key → run id
	BucketHeads    = "hookrun_heads"      // pull request → head at its latest pull_request event
	BucketOutbox   = "hookrun_outbox"     // reports not yet delivered (OutboxStore)
	BucketBodies   = "hookrun_bodies"     // object store: webhook bodies too large for a run request
	BucketReceived = "hookrun_received"   // accepted deliveries (event name and body), for replays and re-runs

	runsSubjectPrefix = "hookrun.runs."
	logsSubjectPrefix = "hookrun.logs."
)

// maxBatchesInFlight is how many atomic batches one Queue publishes at
// once; nats-server abandons a stream's batches beyond 50 in flight.
const maxBatchesInFlight = 16

// Queue is a connection to JetStream (and, in embedded mode, the server
// itself) with hookrun's streams and buckets in place.
type Queue struct {
	connOpts []nats.Option // credentials and TLS of an external NATS
	cfg      Config
	log      *slog.Logger
	srv      *server.Server // nil with an external URL
	nc       *nats.Conn
	js       jetstream.JetStream
	runsS    jetstream.Stream
	logsS    jetstream.Stream
	runsKV   jetstream.KeyValue
	delKV    jetstream.KeyValue
	headsKV  jetstream.KeyValue
	outboxKV jetstream.KeyValue
	groupsKV jetstream.KeyValue
	recvKV   jetstream.KeyValue
	bodies   jetstream.ObjectStore
	// inlineMax is the largest body that travels inside a run request:
	// Config.InlineBodyMax, at most half the server's max_payload.
	inlineMax int
	// macs signs and verifies run requests with cfg.RequestKey; nil
	// without a key (Publish and Consume then refuse).
	macs *macer

	runs     *RunStore
	heads    *HeadStore
	groups   *GroupStore
	logs     *LogStore
	outbox   *OutboxStore
	received *ReceivedStore

	mu        sync.Mutex
	consumers map[*Consumer]struct{}

	// indexCtx bounds the run index's watch; stopIndex ends it (Close).
	indexCtx  context.Context
	stopIndex context.CancelFunc

	// batchSlots bounds this process's atomic batches in flight
	// (maxBatchesInFlight), below the stream's own limit of 50.
	batchSlots chan struct{}
	closed     bool

	// failAt, set by tests only, returns a failure to inject at a point
	// of PublishDelivery (the fail* constants), or nil.
	failAt func(point string) error
}

// Open starts the embedded server when cfg.URL is empty (else connects to
// the URL list) and creates or updates the streams and KV buckets.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating queue config: %w", err)
	}
	q := &Queue{cfg: cfg, log: cfg.Logger, consumers: map[*Consumer]struct{}{}, batchSlots: make(chan struct{}, maxBatchesInFlight),
		macs: newMacer(cfg.RequestKey)}
	ctx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	defer cancel()

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
	url := cfg.URL
	if cfg.URL == "" {
		srv, err := startEmbedded(ctx, cfg)
		if err != nil {
			return nil, err
		}
		q.srv = srv
		url = srv.ClientURL()
		// This process talks to its own server in-process even when the
		// server also listens on TCP for other processes: no sockets,
		// no syscalls on the publish path.
		opts = append(opts, nats.InProcessServer(srv))
	} else {
		if cfg.CredsFile != "" {
			q.connOpts = append(q.connOpts, nats.UserCredentials(cfg.CredsFile))
		}
		if cfg.CAFile != "" {
			q.connOpts = append(q.connOpts, nats.RootCAs(cfg.CAFile))
		}
		if cfg.CertFile != "" {
			q.connOpts = append(q.connOpts, nats.ClientCert(cfg.CertFile, cfg.KeyFile))
		}
		opts = append(opts, q.connOpts...)
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
	q.indexCtx, q.stopIndex = context.WithCancel(context.Background())
	q.runs = &RunStore{kv: q.runsKV, nc: q.nc, clock: cfg.Now, index: newRunIndex(q.runsKV, q.log), indexCtx: q.indexCtx}
	q.heads = &HeadStore{kv: q.headsKV}
	q.outbox = &OutboxStore{kv: q.outboxKV}
	q.groups = &GroupStore{kv: q.groupsKV, WaiterTTL: DefaultGroupWaiterTTL}
	q.received = &ReceivedStore{kv: q.recvKV, bodies: q.bodies, ttl: cfg.ReceivedTTL}
	if q.logs, err = newLogStore(q); err != nil {
		q.closeConn()
		return nil, err
	}
	return q, nil
}

// startEmbedded runs a nats-server with JetStream in this process.
func startEmbedded(ctx context.Context, cfg Config) (*server.Server, error) {
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
			cfg.Logger.Warn("embedded nats server listens beyond loopback without client authentication", "listen", cfg.Listen)
		}
	}
	if cfg.ClusterName != "" {
		host, port, err := splitHostPort(cfg.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("parsing cluster listen address: %w", err)
		}
		opts.Cluster = server.ClusterOpts{Name: cfg.ClusterName, Host: host, Port: port}
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("parsing route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	always, every, err := ParseSync(cfg.Sync)
	if err != nil {
		return nil, fmt.Errorf("configuring embedded nats server: %w", err)
	}
	opts.SyncAlways, opts.SyncInterval = always, every
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

// setup creates or updates the streams and buckets, retrying while
// JetStream is not yet available (a cluster still electing its leader).
func (q *Queue) setup(ctx context.Context) error {
	dupLogs := 2 * time.Minute
	if q.cfg.LogMaxAge < dupLogs {
		dupLogs = q.cfg.LogMaxAge
	}
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"creating stream " + StreamRuns, func(ctx context.Context) (err error) {
			q.runsS, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name:        StreamRuns,
				Description: "hookrun run requests",
				Subjects:    []string{runsSubjectPrefix + ">"},
				Retention:   jetstream.WorkQueuePolicy,
				Storage:     jetstream.FileStorage,
				Replicas:    q.cfg.Replicas,
				Duplicates:  q.cfg.DuplicateWindow,
				// The runs of one delivery are one atomic batch.
				AllowAtomicPublish: true,
			})
			return err
		}},
		{"creating stream " + StreamLogs, func(ctx context.Context) (err error) {
			q.logsS, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name:        StreamLogs,
				Description: "hookrun step output",
				Subjects:    []string{logsSubjectPrefix + ">"},
				Retention:   jetstream.LimitsPolicy,
				Storage:     jetstream.FileStorage,
				Replicas:    q.cfg.Replicas,
				MaxAge:      q.cfg.LogMaxAge,
				Duplicates:  dupLogs,
			})
			return err
		}},
		{"creating bucket " + BucketRuns, func(ctx context.Context) (err error) {
			q.runsKV, err = q.bucket(ctx, jetstream.KeyValueConfig{
				Bucket:      BucketRuns,
				Description: "hookrun run records",
				// Markers of removed records expire (PurgeTTL).
				LimitMarkerTTL: RunMarkerTTL,
			})
			return err
		}},
		{"creating bucket " + BucketDelivery, func(ctx context.Context) (err error) {
			q.delKV, err = q.bucket(ctx, jetstream.KeyValueConfig{
				Bucket:      BucketDelivery,
				Description: "hookrun webhook delivery dedupe",
				TTL:         q.cfg.DeliveryTTL,
			})
			return err
		}},
		{"creating bucket " + BucketGroups, func(ctx context.Context) (err error) {
			q.groupsKV, err = q.bucket(ctx, jetstream.KeyValueConfig{
				Bucket:      BucketGroups,
				Description: "hookrun concurrency group locks and sticky comment owners",
			})
			return err
		}},
		{"creating bucket " + BucketHeads, func(ctx context.Context) (err error) {
			q.headsKV, err = q.bucket(ctx, jetstream.KeyValueConfig{
				Bucket:      BucketHeads,
				Description: "hookrun pull request heads seen by ingress",
				TTL:         q.cfg.HeadTTL,
			})
			return err
		}},
		{"creating bucket " + BucketOutbox, func(ctx context.Context) (err error) {
			q.outboxKV, err = q.bucket(ctx, jetstream.KeyValueConfig{
				Bucket:      BucketOutbox,
				Description: "hookrun reports waiting to be delivered",
			})
			return err
		}},
		{"creating bucket " + BucketReceived, func(ctx context.Context) (err error) {
			q.recvKV, err = q.bucket(ctx, jetstream.KeyValueConfig{
				Bucket:      BucketReceived,
				Description: "hookrun accepted deliveries, for replays and re-runs",
				TTL:         q.cfg.ReceivedTTL,
			})
			return err
		}},
		{"creating object store " + BucketBodies, func(ctx context.Context) (err error) {
			q.bodies, err = q.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
				Bucket:      BucketBodies,
				Description: "hookrun webhook bodies too large for a run request",
				TTL:         q.cfg.BodyTTL,
				Storage:     jetstream.FileStorage,
				Replicas:    q.cfg.Replicas,
			})
			return err
		}},
	}
	// Concurrently: at R3 each asset waits for its own raft group.
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = q.retry(ctx, s.what, s.do)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// retry calls do with short attempts until it succeeds or ctx ends.
func (q *Queue) retry(ctx context.Context, what string, do func(context.Context) error) error {
	backoff := 50 * time.Millisecond
	for {
		// Short attempts: without a meta leader a request gets no answer.
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := do(attemptCtx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		q.log.Debug("jetstream not ready, retrying", "step", what, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
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

// Runs is the run record store.
func (q *Queue) Runs() *RunStore { return q.runs }

// Heads is the store of pull request heads ingress has seen.
func (q *Queue) Heads() *HeadStore { return q.heads }

// Groups is the concurrency group locks.
func (q *Queue) Groups() *GroupStore { return q.groups }

// Logs is the step output store.
func (q *Queue) Logs() *LogStore { return q.logs }

// Outbox is the store of reports waiting to be delivered.
func (q *Queue) Outbox() *OutboxStore { return q.outbox }

// ClientURL is the embedded server's client URL when it listens on TCP
// (Config.Listen), else "".
func (q *Queue) ClientURL() string {
	if q.srv == nil || q.cfg.Listen == "" {
		return ""
	}
	return q.srv.ClientURL()
}

// Close stops any consumers still open (cancelling their handlers),
// flushes pending log lines, drains the connection and shuts the embedded
// server down.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	if q.stopIndex != nil {
		q.stopIndex()
	}
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
	if q.logs != nil {
		fctx, fcancel := context.WithTimeout(context.Background(), q.cfg.PublishTimeout)
		if err := q.logs.Flush(fctx); err != nil {
			errs = append(errs, err)
		}
		fcancel()
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

// bucket creates or updates a KV bucket as hookrun keeps every one: one
// value per key (History 1), on file storage, at nats.replicas.
func (q *Queue) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	cfg.History, cfg.Storage, cfg.Replicas = 1, jetstream.FileStorage, q.cfg.Replicas
	return q.js.CreateOrUpdateKeyValue(ctx, cfg)
}

// validToken reports whether s can be one token of a NATS subject.
func validToken(s string) bool {
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
