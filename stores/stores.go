package stores

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// Options size the stores. The embedded queue.Shared (JetStream, replica
// count, logger, clock, timeout) defaults to the queue's.
type Options struct {
	queue.Shared
	// ReceivedTTL is how long hookrun_received keeps each accepted
	// delivery (event name and body) for replays and re-runs. Default
	// queue.DefaultDeliveryTTL; keep it within the queue's BodyTTL, which
	// keeps the large bodies.
	ReceivedTTL time.Duration
	// HeadTTL is how long hookrun_heads remembers a pull request's head
	// after its latest pull_request event. Default 30 days.
	HeadTTL time.Duration
	// LabelTTL is how long hookrun_labels (OpenLabels) remembers an issue's
	// or pull request's labels after the latest delivery that carried
	// them. Default 30 days.
	LabelTTL time.Duration
	// LogMaxAge is how long HOOKRUN_LOGS keeps step output. Default 7 days.
	LogMaxAge time.Duration
	// GroupWaiterTTL is how long a waiting run keeps its place in a
	// concurrency group without asking again. Default DefaultGroupWaiterTTL.
	GroupWaiterTTL time.Duration
	// IndexDir is the directory of the list indexes' files (the run
	// index, runs.db; the deliveries index, deliveries.db): internal/app
	// sets <data_dir>/index. "": a temporary directory each, removed when
	// the stores close (the index is read from the bucket at each start).
	IndexDir string
	// CommentTTL is how long a sticky comment's key in hookrun_groups
	// (the newest run that reported in it) lives after its last change:
	// internal/app sets runs.retention, after which the runs it orders are
	// gone too. 0: the keys never expire.
	CommentTTL time.Duration
}

func (o *Options) setDefaults(sh queue.Shared) {
	if o.JetStream == nil {
		o.JetStream = sh.JetStream
	}
	if o.Replicas == 0 {
		o.Replicas = sh.Replicas
	}
	if o.Logger == nil {
		o.Logger = sh.Logger
	}
	if o.Now == nil {
		o.Now = sh.Now
	}
	if o.Timeout == 0 {
		o.Timeout = sh.Timeout
	}
	if o.ReceivedTTL == 0 {
		o.ReceivedTTL = queue.DefaultDeliveryTTL
	}
	if o.HeadTTL == 0 {
		o.HeadTTL = 30 * 24 * time.Hour
	}
	if o.LabelTTL == 0 {
		o.LabelTTL = 30 * 24 * time.Hour
	}
	if o.LogMaxAge == 0 {
		o.LogMaxAge = 7 * 24 * time.Hour
	}
	if o.GroupWaiterTTL == 0 {
		o.GroupWaiterTTL = DefaultGroupWaiterTTL
	}
}

// Validate reports the first problem of defaulted options.
func (o *Options) Validate() error {
	var errs []error
	if o.JetStream == nil || o.Logger == nil || o.Now == nil {
		errs = append(errs, errors.New("a jetstream connection, logger and clock are required"))
	}
	if o.Replicas < 1 || o.Replicas > queue.MaxReplicas {
		errs = append(errs, fmt.Errorf("replicas must be 1..%d, got %d", queue.MaxReplicas, o.Replicas))
	}
	if o.ReceivedTTL < time.Second {
		errs = append(errs, fmt.Errorf("received ttl must be at least 1s, got %s", o.ReceivedTTL))
	}
	if o.LogMaxAge < time.Second {
		errs = append(errs, fmt.Errorf("log max age must be at least 1s, got %s", o.LogMaxAge))
	}
	if o.CommentTTL != 0 && o.CommentTTL < time.Second {
		errs = append(errs, fmt.Errorf("comment ttl must be 0 (never) or at least 1s, got %s", o.CommentTTL))
	}
	for _, ttl := range []struct {
		name string
		d    time.Duration
	}{{"head", o.HeadTTL}, {"label", o.LabelTTL}} {
		if ttl.d < time.Second {
			errs = append(errs, fmt.Errorf("%s ttl must be at least 1s, got %s", ttl.name, ttl.d))
		}
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("timeout must be positive"))
	}
	return errors.Join(errs...)
}

// Stores are the run stores of one queue.
type Stores struct {
	q        *queue.Queue
	opts     Options
	runs     *RunStore
	heads    *HeadStore
	groups   *GroupStore
	logs     *LogStore
	outbox   *OutboxStore
	received *ReceivedStore

	// ctx bounds the retention sweeps; cancel ends them (Close).
	ctx    context.Context
	cancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// Open creates or updates every store's bucket (concurrently: at R3 each
// waits for its own raft group) and hands the run records to q
// (queue.UseRecords). Close them before q.
func Open(ctx context.Context, q *queue.Queue, opts Options) (*Stores, error) {
	opts.setDefaults(q.Shared())
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("validating stores options: %w", err)
	}
	s := &Stores{q: q, opts: opts}
	steps := []func(context.Context) error{
		func(ctx context.Context) (err error) { s.runs, err = OpenRuns(ctx, opts); return err },
		func(ctx context.Context) (err error) { s.heads, err = OpenHeads(ctx, opts); return err },
		func(ctx context.Context) (err error) { s.groups, err = OpenGroups(ctx, opts); return err },
		func(ctx context.Context) (err error) { s.logs, err = OpenLogs(ctx, opts); return err },
		func(ctx context.Context) (err error) { s.outbox, err = OpenOutbox(ctx, opts); return err },
		func(ctx context.Context) (err error) { s.received, err = OpenReceived(ctx, opts, q); return err },
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() { errs[i] = step(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if s.runs != nil {
			s.runs.Close()
		}
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	q.UseRecords(s.runs)
	return s, nil
}

// Runs is the run record store.
func (s *Stores) Runs() *RunStore { return s.runs }

// StartIndexes starts the list indexes (the runs' and the deliveries'):
// processes that serve the API start them with it.
func (s *Stores) StartIndexes() {
	s.runs.StartIndex()
	s.received.StartIndex()
}

// WaitIndexes waits until the list indexes caught up with their buckets
// (or ctx ends).
func (s *Stores) WaitIndexes(ctx context.Context) error {
	return errors.Join(s.runs.index.Wait(ctx), s.received.index.Wait(ctx))
}

// IndexHealth is the list indexes' health (/readyz): nil when each one
// started follows its bucket.
func (s *Stores) IndexHealth() error {
	return errors.Join(s.runs.IndexHealth(), s.received.IndexHealth())
}

// Heads is the store of pull request heads ingress has seen.
func (s *Stores) Heads() *HeadStore { return s.heads }

// Groups is the concurrency group locks.
func (s *Stores) Groups() *GroupStore { return s.groups }

// Logs is the step output store.
func (s *Stores) Logs() *LogStore { return s.logs }

// Outbox is the store of reports waiting to be delivered.
func (s *Stores) Outbox() *OutboxStore { return s.outbox }

// Received is the store of accepted deliveries.
func (s *Stores) Received() *ReceivedStore { return s.received }

// Sessions creates (or updates) the hookrun_sessions bucket with entries
// that expire after ttl, and returns its store (OpenSessions).
func (s *Stores) Sessions(ctx context.Context, ttl time.Duration) (*SessionStore, error) {
	return OpenSessions(ctx, s.opts, ttl)
}

// Close ends the retention sweeps and the run index's watch and flushes

// Labels creates (or updates) the hookrun_labels bucket and returns its
// store (OpenLabels).
func (s *Stores) Labels(ctx context.Context) (*LabelStore, error) {
	return OpenLabels(ctx, s.opts)
}

// pending log lines; a second Close does nothing.
func (s *Stores) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.runs.Close()
		s.received.Close()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
		defer cancel()
		s.closeErr = s.logs.Flush(ctx)
	})
	return s.closeErr
}

// openBucket creates or updates a store's bucket, named and described,
// whose entries expire after ttl (0: never), as hookrun keeps every one
// (queue.CreateBucket: one value per key, file storage, the shared
// replicas), and makes the store on it.
func openBucket[S any](ctx context.Context, o Options, name, about string, ttl time.Duration, mk func(jetstream.KeyValue) *S) (*S, error) {
	kv, err := queue.CreateBucket(ctx, o.Shared, jetstream.KeyValueConfig{Bucket: name, Description: about, TTL: ttl})
	if err != nil {
		return nil, err
	}
	return mk(kv), nil
}
