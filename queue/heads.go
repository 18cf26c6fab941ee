package queue

import (
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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// HeadStore remembers, in the hookrun_heads bucket, where each pull or
// merge request's head was at the latest pull_request event ingress
// accepted for it, keyed by forge, repository and number. Every ingress
// replica sees the same entries, so a comment accepted by any of them is
// pinned to the head its pull request had. Entries expire after
// Config.HeadTTL without a newer event.
type HeadStore struct {
	kv jetstream.KeyValue
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
	if !kvSafe.MatchString(f) {
		f = "forge"
	}
	return f + "." + r + "." + strconv.Itoa(number)
}
