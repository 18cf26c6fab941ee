package stores

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// BucketGroups holds one key per concurrency group (its lock and its
// waiting runs) and one per sticky comment (the newest run that reported
// in it).
const BucketGroups = "hookrun_groups"

// GroupStore serializes the runs of a concurrency group across every
// runner: one key per group in the hookrun_groups bucket holds the run
// that may execute (the holder, with an expiry its runner renews with
// every heartbeat) and the runs waiting for it (each with when it last
// asked). The lock goes to the oldest waiting run (run ids are ULIDs, so
// the order they were accepted in); a holder whose runner died stops
// holding once its expiry passes, and a waiter that stopped asking (its
// runner died) is forgotten after WaiterTTL.
type GroupStore struct {
	kv jetstream.KeyValue
	js jetstream.JetStream // updates with a TTL (updateTTL)
	// WaiterTTL is how long a waiting run keeps its place without asking
	// again.
	WaiterTTL time.Duration
	// CommentTTL is how long a sticky comment's key lives after its last
	// change (0: forever).
	CommentTTL time.Duration
}

// OpenGroups creates or updates the hookrun_groups bucket and returns its
// store, whose waiters keep their place for o.GroupWaiterTTL and whose
// sticky comment keys live o.CommentTTL. The bucket allows per-key TTLs
// (LimitMarkerTTL; nats-server 2.11 or later, as hookrun_runs needs).
func OpenGroups(ctx context.Context, o Options) (*GroupStore, error) {
	kv, err := queue.CreateBucket(ctx, o.Shared, jetstream.KeyValueConfig{Bucket: BucketGroups,
		Description: "hookrun concurrency group locks and sticky comment owners", LimitMarkerTTL: groupMarkerTTL})
	if err != nil {
		return nil, err
	}
	return &GroupStore{kv: kv, js: o.JetStream, WaiterTTL: o.GroupWaiterTTL, CommentTTL: o.CommentTTL}, nil
}

// groupMarkerTTL is how long the marker of an expired key stays in
// hookrun_groups (nothing watches the bucket: the minimum that is safe
// for replicas to agree on).
const groupMarkerTTL = time.Minute

// DefaultGroupWaiterTTL is GroupStore.WaiterTTL: longer than a consumer's
// AckWait, so that a run whose runner died keeps its place until its
// message is delivered again.
const DefaultGroupWaiterTTL = 2 * time.Minute

// groupState is the stored value of a group key.
type groupState struct {
	Holder   string               `json:"holder,omitempty"`   // run id that may execute
	Claimant string               `json:"claimant,omitempty"` // runner executing it
	Expires  time.Time            `json:"expires,omitzero"`   // the holder stops holding then, unless renewed
	Waiters  map[string]time.Time `json:"waiters,omitempty"`  // run id → when it last asked
}

// GroupLock is who may execute in a group and on what terms.
type GroupLock struct {
	Group    string        // the resolved concurrency group
	RunID    string        // the run asking
	Claimant string        // the runner that would execute it
	Now      time.Time     // the runner's clock
	TTL      time.Duration // how long the lock holds without a renewal
}

// ErrGroupLockLost: the run no longer holds its group's lock (it expired
// and another run took it).
var ErrGroupLockLost = errors.New("concurrency group lock lost")

func groupKey(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + "." + hex.EncodeToString(sum[:16])
}

// Acquire gives l.RunID the lock of l.Group if nobody holds it (or the
// holder's expiry passed), no older run waits for it and l.RunID asked
// before (it waited one round); else it records the run as waiting and
// returns the holder ("" when none: the run goes first at its next ask, or
// an older waiter goes first). A run holding the lock under l.Claimant
// renews it.
func (s *GroupStore) Acquire(ctx context.Context, l GroupLock) (held bool, holder string, err error) {
	err = s.change(ctx, groupKey("group", l.Group), 0, func(g *groupState) bool {
		s.forgetStale(g, l.Now)
		held, holder = false, ""
		live := g.Holder != "" && l.Now.Before(g.Expires)
		switch {
		case live && g.Holder == l.RunID && g.Claimant == l.Claimant:
			held = true
		case live:
			holder = g.Holder
		default:
			_, known := g.Waiters[l.RunID]
			if g.Holder != "" && g.Holder != l.RunID {
				// An expired holder keeps its place: its message comes back.
				g.Waiters[g.Holder] = l.Now
			}
			known = known || g.Holder == l.RunID
			g.Holder = ""
			// A run asking for the first time waits one round even for a
			// free lock, so that older runs delivered at the same time
			// (to this runner or another) are known and go first.
			held = known && !olderWaiter(g, l.RunID)
		}
		if held {
			g.Holder, g.Claimant, g.Expires = l.RunID, l.Claimant, l.Now.Add(l.TTL)
			delete(g.Waiters, l.RunID)
		} else {
			g.Waiters[l.RunID] = l.Now
		}
		return true
	})
	if err != nil {
		return false, "", fmt.Errorf("acquiring concurrency group %s for run %s: %w", l.Group, l.RunID, err)
	}
	return held, holder, nil
}

// Renew extends a held lock by l.TTL. A lock that expired is taken back
// while nobody else took it and no older run waits; else ErrGroupLockLost.
func (s *GroupStore) Renew(ctx context.Context, l GroupLock) error {
	var lost bool
	err := s.change(ctx, groupKey("group", l.Group), 0, func(g *groupState) bool {
		mine := g.Holder == l.RunID && g.Claimant == l.Claimant
		if !mine && (g.Holder != "" && l.Now.Before(g.Expires) || olderWaiter(g, l.RunID)) {
			lost = true
			return false
		}
		g.Holder, g.Claimant, g.Expires = l.RunID, l.Claimant, l.Now.Add(l.TTL)
		delete(g.Waiters, l.RunID)
		return true
	})
	if err == nil && lost {
		err = ErrGroupLockLost
	}
	if err != nil {
		return fmt.Errorf("renewing concurrency group %s for run %s: %w", l.Group, l.RunID, err)
	}
	return nil
}

// olderWaiter reports whether a run older than runID waits in g.
func olderWaiter(g *groupState, runID string) bool {
	for id := range g.Waiters {
		if id < runID {
			return true
		}
	}
	return false
}

// Release frees the lock l.RunID holds under l.Claimant (nothing when it
// does not); with keepPlace the run waits again at its place (it was
// handed back and will run later).
func (s *GroupStore) Release(ctx context.Context, l GroupLock, keepPlace bool) error {
	err := s.change(ctx, groupKey("group", l.Group), 0, func(g *groupState) bool {
		if g.Holder != l.RunID || g.Claimant != l.Claimant {
			return false
		}
		g.Holder, g.Claimant, g.Expires = "", "", time.Time{}
		if keepPlace {
			g.Waiters[l.RunID] = l.Now
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("releasing concurrency group %s for run %s: %w", l.Group, l.RunID, err)
	}
	return nil
}

// Leave forgets a waiting run of group that will not run (it ended while
// queued, cancelled).
func (s *GroupStore) Leave(ctx context.Context, group, runID string) error {
	return s.leave(ctx, "group", group, runID)
}

// leave removes runID from the waiters (for a cancel_in_progress group:
// the members) of the group's key under prefix.
func (s *GroupStore) leave(ctx context.Context, prefix, group, runID string) error {
	err := s.change(ctx, groupKey(prefix, group), 0, func(g *groupState) bool {
		if _, ok := g.Waiters[runID]; !ok {
			return false
		}
		delete(g.Waiters, runID)
		return true
	})
	if err != nil {
		return fmt.Errorf("leaving concurrency group %s for run %s: %w", group, runID, err)
	}
	return nil
}

// A cancel_in_progress group (a newer run cancels the older ones) keeps
// one key of its own, "cancel.<hash>": Holder is the newest run that
// started in the group, Waiters the runs that started and have not
// finished (members), each with when it started. Starting a run reads and
// writes that key alone, whatever the number of run records.

// StartNewest records runID as started in the cancel_in_progress group: a
// member, and the newest run that started there. It returns the older
// members, which the caller cancels (they stay members until they Leave,
// so a cancel that failed is tried again by the next run). When a newer
// run of the group started already, runID is superseded: newer names that
// run, and nothing is written (the caller ends runID without running it).
func (s *GroupStore) StartNewest(ctx context.Context, group, runID string, now time.Time) (older []string, newer string, err error) {
	err = s.change(ctx, groupKey("cancel", group), 0, func(g *groupState) bool {
		older, newer = nil, ""
		if g.Holder > runID {
			newer = g.Holder
			return false
		}
		for id := range g.Waiters {
			if id < runID {
				older = append(older, id)
			}
		}
		g.Holder = runID
		g.Waiters[runID] = now
		return true
	})
	if err != nil {
		return nil, "", fmt.Errorf("starting run %s in concurrency group %s: %w", runID, group, err)
	}
	slices.Sort(older)
	return older, newer, nil
}

// LeaveNewest removes runID from the members of the cancel_in_progress
// group (it finished, was handed back, or was found finished by a newer
// run); the group keeps its newest run, so that an older run claimed late
// is still superseded.
func (s *GroupStore) LeaveNewest(ctx context.Context, group, runID string) error {
	return s.leave(ctx, "cancel", group, runID)
}

// forgetRun drops what the groups bucket keeps about a run that the
// retention sweep removes: the cancel_in_progress group's key when runID
// is its newest run and no run of the group is unfinished (an older run
// claimed after that is older than the retention, and runs).
func (s *GroupStore) forgetRun(ctx context.Context, group, runID string) error {
	if group == "" {
		return nil
	}
	err := s.change(ctx, groupKey("cancel", group), 0, func(g *groupState) bool {
		_, member := g.Waiters[runID] // a run that never left (its runner died)
		delete(g.Waiters, runID)
		if g.Holder == runID && len(g.Waiters) == 0 {
			g.Holder = "" // an idle group: change removes its key
			return true
		}
		return member
	})
	if err != nil {
		return fmt.Errorf("forgetting run %s in concurrency group %s: %w", runID, group, err)
	}
	return nil
}

// Advance records runID as the newest run reporting under key (a sticky
// comment: workflow and pull request) unless a newer one did already;
// newest is false then, and the caller must not write over the newer
// run's report.
func (s *GroupStore) Advance(ctx context.Context, key, runID string) (newest bool, err error) {
	err = s.change(ctx, groupKey("comment", key), s.CommentTTL, func(g *groupState) bool {
		newest = g.Holder <= runID
		if !newest || g.Holder == runID {
			return false
		}
		g.Holder = runID
		return true
	})
	if err != nil {
		return false, fmt.Errorf("recording run %s as the newest of %s: %w", runID, key, err)
	}
	return newest, nil
}

// isWrongLastSequence reports the server's answer to a delete at a stale
// revision.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// forgetStale drops the waiters that stopped asking.
func (s *GroupStore) forgetStale(g *groupState, now time.Time) {
	ttl := s.WaiterTTL
	if ttl <= 0 {
		ttl = DefaultGroupWaiterTTL
	}
	for id, seen := range g.Waiters {
		if now.Sub(seen) > ttl {
			delete(g.Waiters, id)
		}
	}
}

// change is the compare-and-set loop of group keys (the retry policy of
// the run records' transitions): apply changes the state read (an empty
// one for a missing key) and returns whether to write it; a written key
// expires ttl later (0: never).
func (s *GroupStore) change(ctx context.Context, key string, ttl time.Duration, apply func(*groupState) bool) error {
	for n := range casAttempts {
		if n > 1 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(n-1) * casBackoff):
			}
		}
		var (
			g   groupState
			rev uint64
		)
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		case err != nil:
			return err
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &g); err != nil {
				return fmt.Errorf("decoding %s: %w", key, err)
			}
		}
		if g.Waiters == nil {
			g.Waiters = map[string]time.Time{}
		}
		if !apply(&g) {
			return nil
		}
		if g.Holder == "" && len(g.Waiters) == 0 {
			// An idle group leaves no key behind (one per pull request adds up).
			if rev == 0 {
				return nil
			}
			err = s.kv.Delete(ctx, key, jetstream.LastRevision(rev))
			if err == nil {
				return nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongLastSequence(err) {
				return err
			}
			continue
		}
		data, err := json.Marshal(g)
		if err != nil {
			return err
		}
		switch {
		case rev == 0 && ttl > 0:
			_, err = s.kv.Create(ctx, key, data, jetstream.KeyTTL(ttl))
		case rev == 0:
			_, err = s.kv.Create(ctx, key, data)
		case ttl > 0:
			err = s.updateTTL(ctx, key, data, rev, ttl)
		default:
			_, err = s.kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongLastSequence(err) {
			return err
		}
	}
	return fmt.Errorf("%w after %d attempts", ErrConflict, casAttempts)
}

// updateTTL is KeyValue.Update with a TTL for the new value (the client's
// Update takes none): a publish to the key's subject expecting rev as its
// last revision.
func (s *GroupStore) updateTTL(ctx context.Context, key string, data []byte, rev uint64, ttl time.Duration) error {
	_, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + BucketGroups + "." + key, Data: data},
		jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	return err
}

// ExpireOldComments gives the sticky comment keys that have no TTL (written
// before their keys expired, or by such a process in a rolling update)
// CommentTTL from now, so that they expire with the run retention too; it
// returns how many it gave one. A key changed meanwhile is left to its
// writer (which gave it a TTL). It reads the keys' headers, not their
// values, in one pass. The retention sweep calls it.
func (s *GroupStore) ExpireOldComments(ctx context.Context) (int, error) {
	if s.CommentTTL <= 0 {
		return 0, nil
	}
	prefix := "$KV." + BucketGroups + "."
	cons, err := s.js.OrderedConsumer(ctx, "KV_"+BucketGroups, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + "comment.>"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, HeadersOnly: true})
	if err != nil {
		return 0, fmt.Errorf("listing sticky comment keys: %w", err)
	}
	var old map[string]uint64 // key → revision
	if info := cons.CachedInfo(); info != nil && info.NumPending > 0 {
		if old, err = keysWithoutTTL(ctx, cons, prefix); err != nil {
			return 0, fmt.Errorf("listing sticky comment keys: %w", err)
		}
	}
	given := 0
	for key, rev := range old {
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			continue
		case err != nil:
			return given, fmt.Errorf("giving sticky comment key %s a TTL: %w", key, err)
		case e.Revision() != rev:
			continue
		}
		err = s.updateTTL(ctx, key, e.Value(), rev, s.CommentTTL)
		switch {
		case err == nil:
			given++
		case !isWrongLastSequence(err):
			return given, fmt.Errorf("giving sticky comment key %s a TTL: %w", key, err)
		}
	}
	return given, nil
}

// keysWithoutTTL reads the (headers only) last messages cons delivers
// until none is pending, and returns the keys of those that are values
// without a Nats-TTL, with their revisions.
func keysWithoutTTL(ctx context.Context, cons jetstream.Consumer, prefix string) (map[string]uint64, error) {
	it, err := cons.Messages()
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	old := map[string]uint64{}
	for {
		m, err := it.Next()
		if err != nil {
			return nil, errors.Join(ctx.Err(), err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		h := m.Headers()
		if op := h.Get("KV-Operation"); op == "" && h.Get(jetstream.MsgTTLHeader) == "" {
			old[strings.TrimPrefix(m.Subject(), prefix)] = meta.Sequence.Stream
		}
		if meta.NumPending == 0 {
			return old, nil
		}
	}
}
