package stores

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// OutboxStore keeps, in the hookrun_outbox bucket, the reports a runner
// could not deliver in time (a run's final comment and status), until a
// runner delivers them or gives up. One entry per key (run id and report
// kind): a newer report of the same kind supersedes an older one. The
// report itself is opaque here (the runner encodes it).
type OutboxStore struct {
	kv jetstream.KeyValue
}

// BucketOutbox is the KV bucket of reports not yet delivered.
const BucketOutbox = "hookrun_outbox"

// OpenOutbox creates or updates the hookrun_outbox bucket and returns its
// store.
func OpenOutbox(ctx context.Context, o Options) (*OutboxStore, error) {
	return openBucket(ctx, o, BucketOutbox, "hookrun reports waiting to be delivered", 0,
		func(kv jetstream.KeyValue) *OutboxStore { return &OutboxStore{kv: kv} })
}

// Count is the number of entries (the queue's outbox gauge).
func (s *OutboxStore) Count(ctx context.Context) (int, error) {
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return 0, fmt.Errorf("counting outbox entries: %w", err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	// The lister stops itself once its channel is drained.
	return n, nil
}

var _ queue.Counter = (*OutboxStore)(nil)

// OutboxEntry is one report waiting to be delivered.
type OutboxEntry struct {
	Key       string          `json:"key"`    // <run id>.<kind>
	RunID     string          `json:"run_id"` // the run it reports
	Report    json.RawMessage `json:"report"` // encoded by the runner
	CreatedAt time.Time       `json:"created_at"`
	// NextAt is when the entry is due: set by the runner that tries it to
	// after its attempt (so that others leave it alone meanwhile), and after
	// a failure to the forge's Retry-After or the backoff.
	NextAt    time.Time `json:"next_at"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	// Revision is the entry's KV revision as read; Update and Delete
	// compare it.
	Revision uint64 `json:"-"`
}

// OutboxKey is the key of run id's report of kind (e.g. "final").
func OutboxKey(runID, kind string) string { return runID + "." + kind }

// Put stores e under e.Key, superseding whatever was there.
func (s *OutboxStore) Put(ctx context.Context, e *OutboxEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding outbox entry %s: %w", e.Key, err)
	}
	rev, err := s.kv.Put(ctx, e.Key, data)
	if err != nil {
		return fmt.Errorf("storing outbox entry %s: %w", e.Key, err)
	}
	e.Revision = rev
	return nil
}

// Update writes e back if it is still at e.Revision (ErrConflict when
// another runner or a newer report changed it), and sets e.Revision.
func (s *OutboxStore) Update(ctx context.Context, e *OutboxEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding outbox entry %s: %w", e.Key, err)
	}
	rev, err := s.kv.Update(ctx, e.Key, data, e.Revision)
	if staleRevision(err) {
		return fmt.Errorf("updating outbox entry %s: %w", e.Key, ErrConflict)
	} else if err != nil {
		return fmt.Errorf("updating outbox entry %s: %w", e.Key, err)
	}
	e.Revision = rev
	return nil
}

// Delete removes the entry key if it is still at revision rev (a newer
// report stored meanwhile stays: ErrConflict).
func (s *OutboxStore) Delete(ctx context.Context, key string, rev uint64) error {
	err := s.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if staleRevision(err) {
		return fmt.Errorf("deleting outbox entry %s: %w", key, ErrConflict)
	} else if err != nil {
		return fmt.Errorf("deleting outbox entry %s: %w", key, err)
	}
	return nil
}

// List returns every entry.
func (s *OutboxStore) List(ctx context.Context) ([]*OutboxEntry, error) {
	lister, err := s.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing outbox: %w", err)
	}
	defer lister.Stop()
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	var out []*OutboxEntry
	for _, k := range keys {
		kve, err := s.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // delivered meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading outbox entry %s: %w", k, err)
		}
		var e OutboxEntry
		if err := json.Unmarshal(kve.Value(), &e); err != nil {
			return nil, fmt.Errorf("decoding outbox entry %s: %w", k, err)
		}
		e.Key, e.Revision = k, kve.Revision()
		out = append(out, &e)
	}
	return out, nil
}

// staleRevision: a compare-and-set write or delete found another revision.
func staleRevision(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || queue.IsWrongLastSeq(err)
}

// deleteRun removes the entries of run id (the retention sweep): a listing
// of that run's keys alone.
func (s *OutboxStore) deleteRun(ctx context.Context, id string) error {
	keys, err := s.kv.ListKeysFiltered(ctx, OutboxKey(id, "*"))
	if err != nil {
		return fmt.Errorf("listing the outbox entries of run %s: %w", id, err)
	}
	defer func() { _ = keys.Stop() }()
	for k := range keys.Keys() {
		if err := s.kv.Purge(ctx, k); err != nil {
			return fmt.Errorf("removing outbox entry %s: %w", k, err)
		}
	}
	return nil
}
