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

// BucketSessions is the KV bucket of the web UI's login sessions
// (SessionStore).
const BucketSessions = "hookrun_sessions"

// SessionStore keeps the web UI's login sessions server-side, in the
// hookrun_sessions bucket: one entry per session id, written at login,
// deleted at log-out, and expiring with the bucket's TTL (the session
// lifetime). A session whose entry is gone is over, on every ingress
// replica at once, whatever cookie a browser still holds.
type SessionStore struct {
	kv     jetstream.KeyValue
	stream jetstream.JetStream
}

// session is a stored session's value.
type session struct {
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// OpenSessions creates (or updates) the hookrun_sessions bucket with
// entries that expire after ttl, and returns its store. It is made on
// demand, by whoever serves the web UI.
func OpenSessions(ctx context.Context, o Options, ttl time.Duration) (*SessionStore, error) {
	if ttl < time.Second {
		return nil, fmt.Errorf("creating bucket %s: ttl %v is shorter than a second", BucketSessions, ttl)
	}
	// Under the same retry as the other buckets: at R3, with other
	// replicas creating it at the same moment, one request may get no
	// answer.
	return openBucket(ctx, o, BucketSessions, "hookrun web UI login sessions", ttl,
		func(kv jetstream.KeyValue) *SessionStore { return &SessionStore{kv: kv, stream: o.JetStream} })
}

// checkSessionID refuses an id that is not a KV-safe token.
func checkSessionID(id string) error {
	if !queue.KVSafe(id) || len(id) > 128 {
		return errors.New("session id is not a KV-safe token")
	}
	return nil
}

// Create stores a new session id, valid until expires (and at most the
// bucket's TTL); an id that exists already is an error.
func (s *SessionStore) Create(ctx context.Context, id string, now, expires time.Time) error {
	if err := checkSessionID(id); err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	data, err := json.Marshal(session{CreatedAt: now.UTC(), ExpiresAt: expires.UTC()})
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	if _, err := s.kv.Create(ctx, id, data); err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	return nil
}

// Valid reports whether session id exists and has not expired at now.
func (s *SessionStore) Valid(ctx context.Context, id string, now time.Time) (bool, error) {
	if checkSessionID(id) != nil {
		return false, nil
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading session: %w", err)
	}
	var v session
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return false, fmt.Errorf("decoding session: %w", err)
	}
	return now.Before(v.ExpiresAt), nil
}

// Delete ends session id (log-out); an unknown id is not an error.
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	if checkSessionID(id) != nil {
		return nil
	}
	if err := s.kv.Purge(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("deleting session: %w", err)
	}
	return nil
}

// DeleteAll ends every session (purges the bucket's stream) and returns
// how many there were.
func (s *SessionStore) DeleteAll(ctx context.Context) (int, error) {
	n := 0
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing sessions: %w", err)
	}
	for range keys.Keys() {
		n++
	}
	_ = keys.Stop()
	st, err := s.stream.Stream(ctx, "KV_"+BucketSessions)
	if err != nil {
		return 0, fmt.Errorf("revoking sessions: %w", err)
	}
	if err := st.Purge(ctx); err != nil {
		return 0, fmt.Errorf("revoking sessions: %w", err)
	}
	return n, nil
}
