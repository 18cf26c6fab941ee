package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Records is what the transport does with run records, which the stores
// package keeps: publishing writes a run's queued record create-only in
// the same round trip as its delivery key, the consumer reconciles a
// delivered request with its record, and a run the consumer gives up on
// is failed. stores.RunStore implements it; UseRecords hands it over.
type Records interface {
	// KV is the bucket of run records, keyed by run id.
	KV() jetstream.KeyValue
	// Queued is the encoded queued record of req, with the trace of its
	// delivery ("" without one).
	Queued(req *RunRequest, traceID string) ([]byte, error)
	// Created notes the queued record of run id this process created in
	// the bucket at rev, encoded as data when this process consumes runs
	// (it may then start the run's claim from it), else nil.
	Created(id string, data []byte, rev uint64)
	// Dropped notes that this process deleted (or tried to) the record of
	// run id in the bucket.
	Dropped(id string)
	// Enqueue creates the queued record of req unless one exists.
	Enqueue(ctx context.Context, req *RunRequest, traceID string) error
	// DropQueued deletes the record of run id unless it left queued.
	DropQueued(ctx context.Context, id string) error
	// Fail ends the run of req failed with reason unless it ended already
	// (a missing record is created); ended says whether this call ended it.
	Fail(ctx context.Context, req *RunRequest, reason string) (ended bool, err error)
}

// UseRecords gives the queue the run records that Publish and Consume
// keep in step with the stream (stores.Open calls it). Until then they
// refuse to work.
func (q *Queue) UseRecords(r Records) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.records = r
}

// recordsOf is the run records, or an error saying they are missing.
func (q *Queue) recordsOf(what string) (Records, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.records == nil {
		return nil, fmt.Errorf("%s: no run records are attached (stores.Open)", what)
	}
	return q.records, nil
}

// Shared is what the queue's stores share with the stores package: the
// replica count, logger, clock and bound of one operation.
type Shared struct {
	JetStream jetstream.JetStream
	Replicas  int
	Logger    *slog.Logger
	Now       func() time.Time
	Timeout   time.Duration // Config.PublishTimeout
}

// Shared is the queue's shared options.
func (q *Queue) Shared() Shared {
	return Shared{JetStream: q.js, Replicas: q.cfg.Replicas, Logger: q.log, Now: q.cfg.Now, Timeout: q.cfg.PublishTimeout}
}

// CreateBucket creates or updates a KV bucket as hookrun keeps every one
// (one value per key, on file storage, at replicas), retrying while
// JetStream is not ready yet (UntilReady).
func CreateBucket(ctx context.Context, sh Shared, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	cfg.History, cfg.Storage, cfg.Replicas = 1, jetstream.FileStorage, sh.Replicas
	var kv jetstream.KeyValue
	err := UntilReady(ctx, sh.Logger, "creating bucket "+cfg.Bucket, func(ctx context.Context) (err error) {
		kv, err = sh.JetStream.CreateOrUpdateKeyValue(ctx, cfg)
		return err
	})
	return kv, err
}

// CreateStream creates or updates a stream under UntilReady.
func CreateStream(ctx context.Context, sh Shared, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	cfg.Storage, cfg.Replicas = jetstream.FileStorage, sh.Replicas
	var st jetstream.Stream
	err := UntilReady(ctx, sh.Logger, "creating stream "+cfg.Name, func(ctx context.Context) (err error) {
		st, err = sh.JetStream.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	return st, err
}

// UntilReady calls do with short attempts until it succeeds or ctx ends:
// JetStream may not be available yet (a cluster still electing its
// leader), and at R3 a request may get no answer.
func UntilReady(ctx context.Context, log *slog.Logger, what string, do func(context.Context) error) error {
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
		log.Debug("jetstream not ready, retrying", "step", what, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// CheckRunID refuses what cannot be a run id (a KV-safe token).
func CheckRunID(id string) error {
	if id == "" || !KVSafe(id) {
		return fmt.Errorf("invalid run id %q", id)
	}
	return nil
}

// KVSafe reports whether s can be a KV key or one token of one as is.
func KVSafe(s string) bool { return kvSafe.MatchString(s) }

// IsWrongLastSeq: a create-only or compare-and-set write found another
// revision (10071; 10164 on replicated streams).
func IsWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
