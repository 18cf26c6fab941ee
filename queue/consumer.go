package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrShuttingDown is the cause (context.Cause) a handler's context carries
// when its consumer closes before the handler finished. The message is
// nak'ed so that another runner takes the run over.
var ErrShuttingDown = errors.New("runner shutting down")

// Defaults of ConsumerConfig, shared by the runner and cmd's configuration
// (declared once here).
const (
	// DefaultConcurrency is how many runs one process executes at once.
	DefaultConcurrency = 4
	// DefaultMaxDeliver is how many times a run is delivered before it is
	// marked failed.
	DefaultMaxDeliver = 5
	// DefaultDurable is the runners' consumer's name.
	DefaultDurable = "hookrun-runner"
	// DefaultAckWait is how long the server waits for an ack or a
	// heartbeat before it redelivers.
	DefaultAckWait = 30 * time.Second
)

// CheckHeartbeat is the rule between a heartbeat and the ack wait it keeps
// from running out: positive and shorter.
func CheckHeartbeat(heartbeat, ackWait time.Duration) error {
	if heartbeat <= 0 || heartbeat >= ackWait {
		return fmt.Errorf("must be positive and shorter than the ack wait (%s), got %s", ackWait, heartbeat)
	}
	return nil
}

// ConsumerConfig tunes a durable pull consumer of HOOKRUN_RUNS.
type ConsumerConfig struct {
	// Durable is the consumer name shared by every runner. Default
	// DefaultDurable.
	Durable string
	// Concurrency is how many handlers run at once in this process.
	// Default DefaultConcurrency.
	Concurrency int
	// MaxAckPending is the server-side cap of unacknowledged runs, shared by
	// every runner on Durable; runs a handler made Wait count towards it
	// while they wait (leave room for them: internal/app's default is 256).
	// Default Concurrency.
	MaxAckPending int
	// AckWait is how long the server waits for an ack or a heartbeat before
	// redelivering. Default 30s.
	AckWait time.Duration
	// MaxDeliver is how many times a run is delivered before it is marked
	// failed. Default DefaultMaxDeliver.
	MaxDeliver int
	// Backoff are nak delays by delivery: Backoff[n-1] after the n-th
	// failed delivery, the last one repeating. Default 1s, 5s, 30s.
	Backoff []time.Duration
	// Heartbeat is the InProgress interval while a handler works. Default AckWait/3.
	Heartbeat time.Duration
	// DrainTimeout bounds how long Close waits for handlers to return once
	// it has cancelled them. Default 10s.
	DrainTimeout time.Duration
	// FetchWait is how long one pull request waits for messages (while a
	// delivery waits, see Wait, no longer than its wait); Close waits at
	// most this long for the fetch loop. Default 1s.
	FetchWait time.Duration
	// Observer, when set, is told of every delivery and of every run the
	// consumer gives up on (metrics); nil: nobody is.
	Observer ConsumerObserver
}

// ConsumerObserver hears what a Consumer does with messages, for metrics.
// Its methods must be quick and safe for concurrent use.
type ConsumerObserver interface {
	// Delivered is called once per message handed to the handler (n is
	// its delivery count: above 1 it is a redelivery).
	Delivered(workflow string, n uint64)
	// GaveUp is called when the consumer marks a run failed itself
	// (MaxDeliver reached, a Term, an unreadable body).
	GaveUp(workflow string)
	// Unauthenticated is called for every message refused because its
	// authenticator is missing or wrong (request.go). It has no label:
	// nothing in such a message is trusted.
	Unauthenticated()
}

func (c *ConsumerConfig) setDefaults() {
	if c.Durable == "" {
		c.Durable = DefaultDurable
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = c.Concurrency
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.Backoff == nil {
		c.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = c.AckWait / 3
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 10 * time.Second
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Second
	}
}

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c ConsumerConfig) WithDefaults() ConsumerConfig { c.setDefaults(); return c }

// Validate reports the first problem of a defaulted config.
func (c *ConsumerConfig) Validate() error {
	var errs []error
	if !ValidToken(c.Durable) {
		errs = append(errs, fmt.Errorf("invalid durable name %q", c.Durable))
	}
	if c.Concurrency < 1 || c.MaxAckPending < 1 {
		errs = append(errs, errors.New("concurrency and max ack pending must be at least 1"))
	}
	if c.AckWait < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("ack wait must be at least 100ms, got %s", c.AckWait))
	}
	if c.MaxDeliver < 1 {
		errs = append(errs, fmt.Errorf("max deliver must be at least 1, got %d", c.MaxDeliver))
	}
	if err := CheckHeartbeat(c.Heartbeat, c.AckWait); err != nil {
		errs = append(errs, fmt.Errorf("heartbeat: %w", err))
	}
	if c.FetchWait < minFetchWait {
		errs = append(errs, fmt.Errorf("fetch wait must be at least %s, got %s", minFetchWait, c.FetchWait))
	}
	return errors.Join(errs...)
}

// Delivery is one delivery of a run request to a handler.
type Delivery struct {
	Request      *RunRequest // the decoded request
	NumDelivered uint64      // 1 on the first delivery
	StreamSeq    uint64      // the message's sequence in HOOKRUN_RUNS
	Subject      string      // hookrun.runs.<workflow>
}

// Handler executes one delivered run. nil acks; Term(err) terms the message
// and marks the run failed; any other error naks (with Retry's delay, or
// the configured backoff) until MaxDeliver, then the run is marked failed.
type Handler func(ctx context.Context, d *Delivery) error

// handlerError is a handler's error with what the consumer is to do with
// its message: K (termKind, retryKind or waitKind) tells which, so that
// errors.As finds each kind anywhere in an error's chain.
type handlerError[K any] struct {
	err   error
	after time.Duration
	// handBack (a retry only) says the run did not fail: the handler
	// hands it back by choice (HandBack).
	handBack bool
}

func (e *handlerError[K]) Error() string { return e.err.Error() }
func (e *handlerError[K]) Unwrap() error { return e.err }

type (
	termKind  struct{}
	retryKind struct{}
	waitKind  struct{}

	termError  = handlerError[termKind]
	retryError = handlerError[retryKind]
	waitError  = handlerError[waitKind]
)

// Term wraps a handler error that retrying cannot fix: the message is
// termed and the run record marked failed with err.
func Term(err error) error {
	if err == nil {
		err = errors.New("terminated")
	}
	return &termError{err: err}
}

// IsTerm reports whether err is a Term.
func IsTerm(err error) bool {
	var t *termError
	return errors.As(err, &t)
}

// Retry wraps a handler error so the message is redelivered after the
// given delay instead of the configured backoff.
func Retry(err error, after time.Duration) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &retryError{err: err, after: after}
}

// HandBack is Retry for a run that did not fail: the handler hands its
// message back by choice (another runner holds the run, or took it over)
// and says why in err. The message is delivered again after the delay,
// as with Retry, and the consumer logs the hand-back as such, not as a
// failure.
func HandBack(err error, after time.Duration) error {
	if err == nil {
		err = errors.New("handed back")
	}
	return &retryError{err: err, after: after, handBack: true}
}

// Wait wraps a handler error that says the run cannot start yet (its
// concurrency group is busy): the consumer keeps the message (in progress,
// so it is not redelivered and no delivery is spent) without holding a
// handler slot, and calls the handler with it again after the delay.
func Wait(err error, after time.Duration) error {
	if err == nil {
		err = errors.New("wait requested")
	}
	return &waitError{err: err, after: after}
}

// Consumer runs handlers for deliveries of HOOKRUN_RUNS.
type Consumer struct {
	q    *Queue
	recs Records
	cfg  ConsumerConfig
	h    Handler
	cons jetstream.Consumer
	log  *slog.Logger
	adv  *nats.Subscription

	stopFetch  context.CancelFunc
	fetchDone  chan struct{}
	closing    chan struct{} // closed by Close once the fetch loop has ended: waiting deliveries are handed back then
	handlerCtx context.Context
	cancelH    context.CancelCauseFunc
	sem        chan struct{}
	// parked counts the deliveries waiting (Wait) without a slot, and
	// parkWait is the wait the latest of them asked for: while any is
	// parked, one pull waits at most that long (fetchWait).
	parked    atomic.Int32
	parkWait  atomic.Int64
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Consume creates or updates the durable consumer and starts fetching.
// The fetch loop stops when ctx ends or on Close; in-flight handlers keep
// running until Close (so a shutdown can give them a grace period).
func (q *Queue) Consume(ctx context.Context, cfg ConsumerConfig, h Handler) (*Consumer, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating consumer config: %w", err)
	}
	if q.macs == nil {
		return nil, errors.New("creating consumer: no request key is configured (queue.Config.RequestKey): run requests could not be authenticated")
	}
	recs, err := q.recordsOf("creating consumer")
	if err != nil {
		return nil, err
	}
	cons, err := q.runsS.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		Description:   "hookrun runners",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending,
		FilterSubject: runsSubjectPrefix + ">",
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("creating consumer %s: %w", cfg.Durable, err)
	}
	c := &Consumer{
		q: q, recs: recs, cfg: cfg, h: h, cons: cons,
		log:       q.log.With("consumer", cfg.Durable),
		fetchDone: make(chan struct{}),
		closing:   make(chan struct{}),
		sem:       make(chan struct{}, cfg.Concurrency),
	}
	// One subscriber per queue group handles each advisory once.
	subj := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", StreamRuns, cfg.Durable)
	c.adv, err = q.nc.QueueSubscribe(subj, "hookrun-maxdeliver-"+cfg.Durable, c.onMaxDeliveries)
	if err != nil {
		return nil, fmt.Errorf("subscribing to max-deliveries advisories: %w", err)
	}
	c.handlerCtx, c.cancelH = context.WithCancelCause(context.WithoutCancel(ctx))
	var fetchCtx context.Context
	fetchCtx, c.stopFetch = context.WithCancel(ctx)

	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		_ = c.adv.Unsubscribe()
		c.stopFetch()
		return nil, errors.New("creating consumer: queue is closed")
	}
	q.consumers[c] = struct{}{}
	q.mu.Unlock()

	go c.fetchLoop(fetchCtx)
	return c, nil
}

// consuming reports whether this process consumes runs (a Consumer is
// open): what its publishes remember is then of use.
func (q *Queue) consuming() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.consumers) > 0
}

// fetchLoop pulls as many messages as there are free handler slots, so no
// message waits in a client buffer while its AckWait runs.
func (c *Consumer) fetchLoop(ctx context.Context) {
	defer close(c.fetchDone)
	for ctx.Err() == nil {
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		free := 1
	more:
		for free < c.cfg.Concurrency {
			select {
			case c.sem <- struct{}{}:
				free++
			default:
				break more
			}
		}
		got := 0
		var late []jetstream.Msg
		batch, err := c.cons.Fetch(free, jetstream.FetchMaxWait(c.fetchWait()))
		if err == nil {
			for msg := range batch.Messages() {
				got++
				if ctx.Err() != nil {
					late = append(late, msg)
					continue
				}
				c.wg.Add(1)
				go c.handle(msg)
			}
			err = batch.Error()
		}
		// Stopping: hand back what came meanwhile, once the pull has
		// ended (a nak while it waits redelivers to it, a delivery spent
		// each time).
		for _, msg := range late {
			_ = msg.Nak()
		}
		for range free - got + len(late) {
			<-c.sem
		}
		if err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			c.log.Debug("fetching run requests", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// minFetchWait is the shortest wait of one pull.
const minFetchWait = 100 * time.Millisecond

// fetchWait is how long the next pull waits for messages: FetchWait, but
// while deliveries are parked no longer than the wait they asked for, so
// that the free slots a pull holds come back to them in time (a parked
// run of a concurrency group otherwise waited a whole FetchWait for the
// only slot of a runner).
func (c *Consumer) fetchWait() time.Duration {
	if c.parked.Load() == 0 {
		return c.cfg.FetchWait
	}
	return min(c.cfg.FetchWait, max(time.Duration(c.parkWait.Load()), minFetchWait))
}

// inflight is one message on its way through the consumer's steps.
type inflight struct {
	msg     jetstream.Msg
	md      *jetstream.MsgMetadata
	req     *RunRequest
	ctx     context.Context // the handlers' context with the delivery's trace
	log     *slog.Logger
	quiet   func() // stops the heartbeat (beat); idempotent
	holding bool   // the handler slot fetchLoop took for msg is held
	herr    error  // the handler's answer
}

// A step does one thing with a message; settled says it acked, nak'ed or
// terminated the message, and the steps after it are skipped.
type step func(m *inflight) (settled bool)

// handle takes a message through the consumer's steps, in order (the
// shape of watermill's router: a handler wrapped in middleware).
func (c *Consumer) handle(msg jetstream.Msg) {
	defer c.wg.Done()
	m := &inflight{msg: msg, holding: true, quiet: func() {}}
	defer func() {
		if m.holding {
			<-c.sem
		}
	}()
	defer func() { m.quiet() }()
	for _, s := range []step{c.authenticate, c.decode, c.beat, c.reconcile, c.loadBody, c.execute, c.settle} {
		if s(m) {
			return
		}
	}
}

// authenticate reads the message's metadata and verifies its
// authenticator before anything else (refuseUnauthenticated).
func (c *Consumer) authenticate(m *inflight) bool {
	md, err := m.msg.Metadata()
	if err != nil {
		c.log.Error("reading message metadata; terminating it", "subject", m.msg.Subject(), "err", err)
		_ = m.msg.Term()
		return true
	}
	m.md = md
	if err := c.q.macs.verify(m.msg.Subject(), m.msg.Data(), m.msg.Headers().Get(HeaderMAC)); err != nil {
		c.refuseUnauthenticated(m.msg, md, err)
		return true
	}
	return false
}

// decode reads the run request; the delivery's trace (ingress's span) is
// the parent of what the handler does with it.
func (c *Consumer) decode(m *inflight) bool {
	req, err := decodeRunRequest(m.msg.Data())
	if err != nil {
		c.log.Error("undecodable run request; terminating it", "seq", m.md.Sequence.Stream, "err", err)
		_ = m.msg.TermWithReason("undecodable run request")
		return true
	}
	m.req = req
	m.ctx = extractTrace(c.handlerCtx, m.msg.Headers())
	m.log = c.log.With("run", req.ID, "workflow", req.Workflow, "delivery", m.md.NumDelivered)
	if tid := TraceID(m.ctx); tid != "" {
		m.log = m.log.With("trace_id", tid)
	}
	return false
}

// reconcile makes the request agree with its delivery key and record
// (Queue.reconcile); a failure hands the message back for later.
func (c *Consumer) reconcile(m *inflight) bool {
	err := c.q.reconcile(m.ctx, c.recs, m.req, m.log)
	switch {
	case err == nil:
		return false
	case errors.Is(context.Cause(c.handlerCtx), ErrShuttingDown):
		_ = m.msg.Nak()
	default:
		m.log.Warn("reconciling run request with its delivery; will retry", "err", err)
		_ = m.msg.NakWithDelay(c.backoff(m.md.NumDelivered))
	}
	return true
}

// loadBody reads a body stored apart (RunRequest.Body) into the request.
// A failure is retried like the handler's own: a body not found may be a
// lagging replica's answer, or expired for good, which the last delivery
// then says.
func (c *Consumer) loadBody(m *inflight) bool {
	if m.req.Body == "" {
		return false
	}
	err := c.q.loadBody(m.ctx, m.req)
	if err == nil {
		return false
	}
	if errors.Is(err, ErrBodyMismatch) || m.md.NumDelivered >= uint64(c.cfg.MaxDeliver) {
		actx, acancel := context.WithTimeout(context.Background(), c.q.cfg.PublishTimeout)
		defer acancel()
		c.giveUp(actx, m, fmt.Sprintf("giving up after %d deliveries: %v", m.md.NumDelivered, err))
		return true
	}
	m.log.Warn("reading the run's webhook body; will retry", "err", err)
	_ = m.msg.NakWithDelay(c.backoff(m.md.NumDelivered))
	return true
}

// execute calls the handler, parking the message (its slot given back)
// while the handler says Wait.
func (c *Consumer) execute(m *inflight) bool {
	ctx, cancel := context.WithCancelCause(m.ctx)
	defer cancel(nil)
	if c.cfg.Observer != nil {
		c.cfg.Observer.Delivered(m.req.Workflow, m.md.NumDelivered)
	}
	d := &Delivery{Request: m.req, NumDelivered: m.md.NumDelivered, StreamSeq: m.md.Sequence.Stream, Subject: m.msg.Subject()}
	m.herr = c.call(ctx, d)
	var wait *waitError
	for errors.As(m.herr, &wait) && c.park(ctx, wait.after, &m.holding) {
		m.herr = c.call(ctx, d)
	}
	if errors.As(m.herr, &wait) {
		// Closing while the run waits: it has not started, hand it back.
		m.log.Info("handing waiting run back: shutting down", "err", m.herr)
		_ = m.msg.Nak()
		return true
	}
	return false
}

// beat starts telling the server every Heartbeat that the message is in
// progress, from before the run's record and body are read (a body read
// may wait for a replica to answer) until the message is settled.
func (c *Consumer) beat(m *inflight) bool {
	msg, done, exited := m.msg, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(c.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					m.log.Warn("sending in-progress heartbeat", "err", err)
				}
			}
		}
	}()
	var once sync.Once
	m.quiet = func() { once.Do(func() { close(done); <-exited }) }
	m.msg = beatingMsg{Msg: msg, quiet: m.quiet}
	return false
}

// beatingMsg is a message under a heartbeat: settling it stops the
// heartbeat first, since an in-progress after a delayed nak would put
// the redelivery off to a whole AckWait.
type beatingMsg struct {
	jetstream.Msg
	quiet func()
}

func (b beatingMsg) Ack() error                          { b.quiet(); return b.Msg.Ack() }
func (b beatingMsg) DoubleAck(ctx context.Context) error { b.quiet(); return b.Msg.DoubleAck(ctx) }
func (b beatingMsg) Nak() error                          { b.quiet(); return b.Msg.Nak() }
func (b beatingMsg) NakWithDelay(d time.Duration) error {
	b.quiet()
	return b.Msg.NakWithDelay(d)
}
func (b beatingMsg) Term() error { b.quiet(); return b.Msg.Term() }
func (b beatingMsg) TermWithReason(reason string) error {
	b.quiet()
	return b.Msg.TermWithReason(reason)
}

// settle answers the server after the handler: ack on success, hand back
// on shutdown, give up on a Term or the last delivery, else nak with the
// handler's Retry delay or the backoff.
func (c *Consumer) settle(m *inflight) bool {
	actx, acancel := context.WithTimeout(context.Background(), c.q.cfg.PublishTimeout)
	defer acancel()
	var term *termError
	var retry *retryError
	switch herr := m.herr; {
	case herr == nil:
		if err := m.msg.DoubleAck(actx); err != nil {
			// Redelivered after AckWait; the handler sees a finished record.
			m.log.Warn("acking run request", "err", err)
		}
	case errors.Is(context.Cause(m.ctx), ErrShuttingDown):
		m.log.Info("handing run back: shutting down", "err", herr)
		_ = m.msg.Nak()
	case errors.As(herr, &term):
		c.giveUp(actx, m, term.err.Error())
	case m.md.NumDelivered >= uint64(c.cfg.MaxDeliver):
		c.giveUp(actx, m, fmt.Sprintf("giving up after %d deliveries: %v", m.md.NumDelivered, herr))
	default:
		delay := c.backoff(m.md.NumDelivered)
		if errors.As(herr, &retry) {
			delay = retry.after
		}
		if retry != nil && retry.handBack {
			m.log.Info("run handed back; it is delivered again later", "why", herr, "after", delay)
		} else {
			m.log.Warn("run failed, will retry", "err", herr, "after", delay)
		}
		_ = m.msg.NakWithDelay(delay)
	}
	return true
}

// refuseUnauthenticated ends a message whose authenticator is missing or
// wrong: terminated (which removes it from the work queue), logged with
// what it claims to be, counted. No run record is read or written: its run
// id may be a real run's, which it does not own.
func (c *Consumer) refuseUnauthenticated(msg jetstream.Msg, md *jetstream.MsgMetadata, err error) {
	claims := []any{"subject", msg.Subject(), "seq", md.Sequence.Stream, "err", err}
	var r struct {
		ID       string `json:"id"`
		Workflow string `json:"workflow"`
	}
	if json.Unmarshal(msg.Data(), &r) == nil {
		claims = append(claims, "claimed_run", truncate(r.ID, 64), "claimed_workflow", truncate(r.Workflow, 64))
	}
	c.log.Warn("refusing a run request that ingress did not authenticate; nothing of it runs", claims...)
	if c.cfg.Observer != nil {
		c.cfg.Observer.Unauthenticated()
	}
	if err := msg.TermWithReason("unauthenticated run request"); err != nil {
		c.log.Warn("terminating an unauthenticated run request", "seq", md.Sequence.Stream, "err", err)
	}
}

// park gives the handler slot of a waiting delivery back for after, then
// takes one again; false when the consumer closes meanwhile (*holding then
// says whether a slot is still held).
func (c *Consumer) park(ctx context.Context, after time.Duration, holding *bool) bool {
	c.parkWait.Store(int64(after))
	c.parked.Add(1) // before the slot is given back: the pull that takes it sees it
	defer c.parked.Add(-1)
	<-c.sem
	*holding = false
	t := time.NewTimer(after)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false
	case <-c.closing:
		return false
	}
	select {
	case c.sem <- struct{}{}:
		*holding = true
		return true
	case <-ctx.Done():
		return false
	case <-c.closing:
		return false
	}
}

// reconcile makes req agree with what ingress told the forge. A Publish
// that failed (answered 503) may still have landed its message; its retry
// then wrote the delivery key with a new run id and its own message was
// dropped as a duplicate of the first. The delivery key is the truth: the
// request takes its run id, and the orphan record of the failed attempt is
// removed if it never started. Finally the run's record is created if no
// write of it landed.
func (q *Queue) reconcile(ctx context.Context, recs Records, req *RunRequest, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, q.cfg.PublishTimeout)
	defer cancel()
	delivery := req.Event.DeliveryID
	if delivery == "" {
		delivery = req.ID
	}
	id, err := q.deliveryKeyRun(ctx, deliveryKVKey(req.Event.Forge, delivery, req.dedupeName()))
	switch {
	case err == nil:
		if id != req.ID && CheckRunID(id) == nil {
			log.Info("run request superseded by a retried publish", "now", id)
			if err := recs.DropQueued(ctx, req.ID); err != nil {
				log.Warn("removing superseded run record", "orphan", req.ID, "err", err)
			}
			req.ID = id
		}
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		// Expired (older than DeliveryTTL) or a failed publish nobody
		// retried: the event is real, run it under its own id.
	default:
		return fmt.Errorf("reading delivery of run %s: %w", req.ID, err)
	}
	return recs.Enqueue(ctx, req, TraceID(ctx))
}

// deliveryKeyRun is the run id delivery key key holds: as this process's
// publish left it (sentKeys, taken: the key's one message is being
// consumed), else read.
func (q *Queue) deliveryKeyRun(ctx context.Context, key string) (string, error) {
	if id, ok := q.sentKeys.Take(key); ok {
		return id, nil
	}
	e, err := q.delKV.Get(ctx, key)
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}

// call runs the handler, turning a panic into an error.
func (c *Consumer) call(ctx context.Context, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return c.h(ctx, d)
}

func (c *Consumer) backoff(n uint64) time.Duration {
	if len(c.cfg.Backoff) == 0 {
		return 0
	}
	i := int(min(n, uint64(len(c.cfg.Backoff)))) - 1
	return c.cfg.Backoff[max(i, 0)]
}

// giveUp marks the run failed and terms the message; if the record cannot
// be written the message is nak'ed so that the failure is not lost.
func (c *Consumer) giveUp(ctx context.Context, m *inflight, reason string) {
	log, msg, req := m.log, m.msg, m.req
	ended, err := c.recs.Fail(ctx, req, reason)
	if err != nil {
		log.Error("marking run failed; handing it back", "reason", reason, "err", err)
		_ = msg.NakWithDelay(c.backoff(uint64(c.cfg.MaxDeliver)))
		return
	}
	c.gaveUp(req.Workflow, ended)
	log.Warn("run failed for good", "reason", reason)
	if err := msg.TermWithReason(truncate(reason, 200)); err != nil {
		log.Warn("terminating run request", "err", err)
	}
}

// gaveUp tells the observer of a run the consumer ended failed.
func (c *Consumer) gaveUp(workflow string, ended bool) {
	if ended && c.cfg.Observer != nil {
		c.cfg.Observer.GaveUp(workflow)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// maxDeliveriesAdvisory is the part of
// io.nats.jetstream.advisory.v1.max_deliver that is needed here.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// onMaxDeliveries fails the run of a message whose deliveries ran out
// without any handler answering (its runners died each time).
func (c *Consumer) onMaxDeliveries(m *nats.Msg) {
	var adv maxDeliveriesAdvisory
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
		c.log.Error("decoding max-deliveries advisory", "err", err)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.q.cfg.PublishTimeout)
		defer cancel()
		log := c.log.With("seq", adv.StreamSeq)
		raw, err := c.q.runsS.GetMsg(ctx, adv.StreamSeq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return // a handler answered after all
		}
		if err != nil {
			log.Error("loading run request after max deliveries", "err", err)
			return
		}
		if err := c.q.macs.verify(raw.Subject, raw.Data, raw.Header.Get(HeaderMAC)); err != nil {
			log.Warn("unauthenticated run request after max deliveries; deleting it, no record touched", "err", err)
		} else if req, err := decodeRunRequest(raw.Data); err != nil {
			log.Error("undecodable run request after max deliveries; deleting it", "err", err)
		} else {
			reason := fmt.Sprintf("giving up after %d deliveries: no runner finished it (runners died or timed out)", adv.Deliveries)
			ended, err := c.recs.Fail(ctx, req, reason)
			if err != nil {
				log.Error("marking run failed after max deliveries", "run", req.ID, "err", err)
				return
			}
			c.gaveUp(req.Workflow, ended)
			log.Warn("run failed for good", "run", req.ID, "reason", reason)
		}
		if err := c.q.runsS.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			log.Warn("deleting exhausted run request", "err", err)
		}
	}()
}

// Close stops fetching, waits for in-flight handlers until ctx ends, then
// cancels them with cause ErrShuttingDown (their messages are nak'ed so
// another runner takes over) and waits up to DrainTimeout for them.
func (c *Consumer) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		// The pull ends before waiting runs are handed back: a nak while it
		// waits would redeliver to it.
		c.stopFetch()
		<-c.fetchDone
		close(c.closing)
		done := make(chan struct{})
		go func() { c.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			c.cancelH(ErrShuttingDown)
			select {
			case <-done:
			case <-time.After(c.cfg.DrainTimeout):
				c.closeErr = errors.New("closing consumer: handlers did not return after cancellation")
			}
		}
		c.cancelH(ErrShuttingDown)
		if err := c.adv.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			c.closeErr = errors.Join(c.closeErr, fmt.Errorf("closing consumer: %w", err))
		}
		c.q.mu.Lock()
		delete(c.q.consumers, c)
		c.q.mu.Unlock()
	})
	return c.closeErr
}
