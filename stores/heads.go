package stores

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
	"github.com/nats-io/nats.go/jetstream"
)

// HeadStore remembers, in the hookrun_heads bucket, where each pull or
// merge request's head was at the latest pull_request event ingress
// accepted for it, keyed by forge, repository and number. Every ingress
// replica sees the same entries, so a comment accepted by any of them is
// pinned to the head its pull request had. Entries expire after
// Options.HeadTTL without a newer event.
type HeadStore struct {
	kv jetstream.KeyValue
}

// BucketHeads is the KV bucket of pull request heads.
const BucketHeads = "hookrun_heads"

// OpenHeads creates or updates the hookrun_heads bucket, whose entries
// expire after o.HeadTTL without a newer event, and returns its store.
func OpenHeads(ctx context.Context, o Options) (*HeadStore, error) {
	return openBucket(ctx, o, BucketHeads, "hookrun pull request heads seen by ingress", o.HeadTTL,
		func(kv jetstream.KeyValue) *HeadStore { return &HeadStore{kv: kv} })
}

// headEntry is the stored value: the head and when ingress saw it.
type headEntry struct {
	workflows.Head
	SeenAt time.Time `json:"seen_at"`
}

// Put records h as the head of pull request number of repo on forge (last
// writer wins), seen at now.
func (s *HeadStore) Put(ctx context.Context, forge workflows.Forge, repo string, number int, h workflows.Head, now time.Time) error {
	if h.SHA == "" || number <= 0 {
		return fmt.Errorf("recording head of %s %s#%d: no head or number", forge, repo, number)
	}
	data, err := json.Marshal(headEntry{Head: h, SeenAt: now.UTC()})
	if err != nil {
		return fmt.Errorf("recording head of %s %s#%d: %w", forge, repo, number, err)
	}
	if _, err := s.kv.Put(ctx, headKey(forge, repo, number), data); err != nil {
		return fmt.Errorf("recording head of %s %s#%d: %w", forge, repo, number, err)
	}
	return nil
}

// Get returns the head last recorded for pull request number of repo on
// forge and when it was seen; ok is false when there is none (never seen,
// or expired).
func (s *HeadStore) Get(ctx context.Context, forge workflows.Forge, repo string, number int) (h workflows.Head, seenAt time.Time, ok bool, _ error) {
	e, err := s.kv.Get(ctx, headKey(forge, repo, number))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return workflows.Head{}, time.Time{}, false, nil
	}
	if err != nil {
		return workflows.Head{}, time.Time{}, false, fmt.Errorf("reading head of %s %s#%d: %w", forge, repo, number, err)
	}
	var v headEntry
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return workflows.Head{}, time.Time{}, false, fmt.Errorf("decoding head of %s %s#%d: %w", forge, repo, number, err)
	}
	if v.SHA == "" {
		return workflows.Head{}, time.Time{}, false, nil
	}
	return v.Head, v.SeenAt, true, nil
}

var headRepoSafe = regexp.MustCompile(`^[-_a-z0-9/.]+$`)

// headKey is the hookrun_heads key of a pull request:
// <forge>.<repo, lower-cased>.<number> when the repository name is KV-safe,
// else <forge>.h-<sha256 of the name>.<number>. Forge repository names are
// case-insensitive.
func headKey(forge workflows.Forge, repo string, number int) string {
	r := strings.ToLower(repo)
	if !headRepoSafe.MatchString(r) || strings.HasPrefix(r, ".") || strings.HasSuffix(r, ".") ||
		strings.Contains(r, "..") || len(r) > 200 {
		sum := sha256.Sum256([]byte(r))
		r = "h-" + hex.EncodeToString(sum[:])
	}
	f := string(forge)
	if !queue.KVSafe(f) {
		f = "forge"
	}
	return f + "." + r + "." + strconv.Itoa(number)
}

// BucketLabels is the KV bucket of the labels ingress saw last on each
// issue and pull request (LabelStore).
const BucketLabels = "hookrun_labels"

// LabelStore remembers, in the hookrun_labels bucket, the labels of each
// issue or pull request as of the latest delivery ingress received for it
// (on its first receipt: never a stored delivery shown or replayed), keyed
// by forge, repository and number (as hookrun_heads). Every ingress
// replica sees the same entries; they expire after Options.LabelTTL
// without a newer delivery. A forge whose label deliveries do not say
// which label changed compares with them.
type LabelStore struct {
	kv jetstream.KeyValue
}

// OpenLabels creates (or updates) the hookrun_labels bucket, entries
// expiring after o.LabelTTL, and returns its store. It is made on demand,
// by an ingress that normalizes such a forge's deliveries.
func OpenLabels(ctx context.Context, o Options) (*LabelStore, error) {
	return openBucket(ctx, o, BucketLabels, "hookrun labels last seen on each issue and pull request", o.LabelTTL,
		func(kv jetstream.KeyValue) *LabelStore { return &LabelStore{kv: kv} })
}

// SwapLabels records labels as those of issue or pull request number of
// repo on forge, as of at (when the forge last changed it, as its
// delivery says; zero when it does not), and returns the ones recorded
// before; known is false when there were none (never seen, or expired).
// A delivery older than the one recorded (at before its time: the forge
// redelivering an old one) is stale: nothing is recorded, and previous
// is what stays. The time recorded is the later of the two, so a
// delivery without one (zero at) is never stale and does not move it.
// Concurrent swaps of one key are ordered by compare-and-set (the run
// records' retry policy, casAttempts): each returns what the previous
// one stored.
func (s *LabelStore) SwapLabels(ctx context.Context, forge workflows.Forge, repo string, number int, labels []string, at time.Time) (previous []string, known, stale bool, err error) {
	if number <= 0 {
		return nil, false, false, fmt.Errorf("recording labels of %s %s#%d: no number", forge, repo, number)
	}
	if labels == nil {
		labels = []string{}
	}
	key := headKey(forge, repo, number)
	for n := range casAttempts {
		if n > 1 {
			select {
			case <-ctx.Done():
				return nil, false, false, fmt.Errorf("recording labels of %s %s#%d: %w", forge, repo, number, ctx.Err())
			case <-time.After(time.Duration(n-1) * casBackoff):
			}
		}
		prev, known, rev, err := s.get(ctx, key)
		if err != nil {
			return nil, false, false, fmt.Errorf("reading labels of %s %s#%d: %w", forge, repo, number, err)
		}
		if known && !at.IsZero() && at.Before(prev.At) {
			return prev.Labels, true, true, nil
		}
		data, err := json.Marshal(seenLabels{Labels: labels, At: latest(prev.At, at)})
		if err != nil {
			return nil, false, false, fmt.Errorf("recording labels of %s %s#%d: %w", forge, repo, number, err)
		}
		if known {
			_, err = s.kv.Update(ctx, key, data, rev)
		} else {
			_, err = s.kv.Create(ctx, key, data)
		}
		switch {
		case err == nil:
			return prev.Labels, known, false, nil
		case !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			return nil, false, false, fmt.Errorf("recording labels of %s %s#%d: %w", forge, repo, number, err)
		}
	}
	return nil, false, false, fmt.Errorf("recording labels of %s %s#%d: %w", forge, repo, number, ErrConflict)
}

// seenLabels is an entry of hookrun_labels: the labels and the time the
// forge said it changed them (zero when it did not). An entry written
// before the time was kept is the bare list of labels.
type seenLabels struct {
	Labels []string  `json:"labels"`
	At     time.Time `json:"at,omitzero"`
}

// UnmarshalJSON reads an entry, or the bare list of an older one.
func (e *seenLabels) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		*e = seenLabels{}
		return json.Unmarshal(data, &e.Labels)
	}
	type plain seenLabels
	return json.Unmarshal(data, (*plain)(e))
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// get reads key: its entry and revision, known false when absent.
func (s *LabelStore) get(ctx context.Context, key string) (seenLabels, bool, uint64, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return seenLabels{}, false, 0, nil
	}
	if err != nil {
		return seenLabels{}, false, 0, err
	}
	var seen seenLabels
	if err := json.Unmarshal(e.Value(), &seen); err != nil {
		return seenLabels{}, false, 0, fmt.Errorf("decoding: %w", err)
	}
	if seen.Labels == nil {
		seen.Labels = []string{}
	}
	return seen, true, e.Revision(), nil
}
