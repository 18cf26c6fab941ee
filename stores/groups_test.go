package stores

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// The lock of a group goes to one run at a time, to the oldest waiting run
// first; a holder whose runner stops renewing it loses it when it expires
// and keeps its place; a waiter that stops asking is forgotten.
func TestGroupLock(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	g := q.Groups()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lock := func(run, claimant string, at time.Duration) GroupLock {
		return GroupLock{Group: "group:deploy", RunID: run, Claimant: claimant, Now: t0.Add(at), TTL: 15 * time.Second}
	}
	acquire := func(l GroupLock, want bool, wantHolder string) {
		t.Helper()
		held, holder, err := g.Acquire(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		if held != want || holder != wantHolder {
			t.Fatalf("Acquire(%s by %s at +%s) = %v, %q; want %v, %q", l.RunID, l.Claimant, l.Now.Sub(t0), held, holder, want, wantHolder)
		}
	}
	acquire(lock("01B", "r1", 0), false, "") // the first ask waits a round
	acquire(lock("01B", "r1", 0), true, "")
	acquire(lock("01C", "r2", time.Second), false, "01B")
	acquire(lock("01A", "r2", time.Second), false, "01B")
	acquire(lock("01B", "r1", 2*time.Second), true, "")     // the holder again: renewed
	acquire(lock("01B", "r2", 3*time.Second), false, "01B") // a duplicate delivery elsewhere
	if err := g.Renew(ctx, lock("01B", "r1", 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Released: the oldest waiter goes first, whoever asks first.
	if err := g.Release(ctx, lock("01B", "r1", 11*time.Second), false); err != nil {
		t.Fatal(err)
	}
	acquire(lock("01C", "r2", 11*time.Second), false, "")
	acquire(lock("01A", "r2", 11*time.Second), true, "")
	// 01A's runner dies: its lock expires and it keeps its place, ahead of 01C.
	acquire(lock("01C", "r2", 27*time.Second), false, "")
	if err := g.Renew(ctx, lock("01A", "r2", 27*time.Second)); err != nil {
		t.Fatal(err) // not taken yet: still renewable
	}
	acquire(lock("01C", "r2", 43*time.Second), false, "")
	acquire(lock("01A", "r3", 44*time.Second), true, "") // its message, delivered again
	if err := g.Renew(ctx, lock("01A", "r2", 45*time.Second)); !errors.Is(err, ErrGroupLockLost) {
		t.Fatalf("Renew by the old claimant = %v, want ErrGroupLockLost", err)
	}
	// Handed back: it keeps its place.
	if err := g.Release(ctx, lock("01A", "r3", 46*time.Second), true); err != nil {
		t.Fatal(err)
	}
	acquire(lock("01C", "r2", 46*time.Second), false, "")
	// A waiter that stops asking (its runner died, its run ended) is
	// forgotten after WaiterTTL.
	acquire(lock("01C", "r2", 46*time.Second+DefaultGroupWaiterTTL-10*time.Second), false, "")
	acquire(lock("01C", "r2", 46*time.Second+DefaultGroupWaiterTTL+time.Second), true, "")
}

// Advance keeps the newest run of a sticky comment.
func TestGroupAdvance(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	for _, tt := range []struct {
		run  string
		want bool
	}{{"01B", true}, {"01B", true}, {"01A", false}, {"01C", true}, {"01B", false}} {
		got, err := q.Groups().Advance(ctx, "comment:pr:octo/demo#7", tt.run)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("Advance(%s) = %v, want %v", tt.run, got, tt.want)
		}
	}
}

// A sticky comment's key expires CommentTTL after its last change, created
// or advanced, and a group's key does not; once expired, any run is the
// newest again.
func TestGroupCommentKeysExpire(t *testing.T) {
	t.Parallel()
	q := openTestOpts(t, queue.Config{}, Options{CommentTTL: time.Second})
	ctx := testCtx(t, 20*time.Second)
	g := q.Groups()
	advance := func(key, run string, want bool) {
		t.Helper()
		if got, err := g.Advance(ctx, key, run); err != nil || got != want {
			t.Fatalf("Advance(%s, %s) = %v, %v; want %v", key, run, got, err, want)
		}
	}
	advance("created", "01B", true)
	advance("advanced", "01A", true)
	advance("advanced", "01B", true) // an update: the TTL starts again
	held, _, err := g.Acquire(ctx, GroupLock{Group: "deploy", RunID: "01A", Claimant: "r1", Now: time.Now(), TTL: time.Hour})
	if err != nil || held {
		t.Fatalf("Acquire = %v, %v; want a waiter", held, err)
	}
	for _, key := range []string{"created", "advanced"} {
		if _, err := g.kv.Get(ctx, groupKey("comment", key)); err != nil {
			t.Fatalf("comment key %s before its TTL: %v", key, err)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	for _, key := range []string{"created", "advanced"} {
		if _, err := g.kv.Get(ctx, groupKey("comment", key)); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("comment key %s past its TTL: %v, want it gone", key, err)
		}
	}
	if _, err := g.kv.Get(ctx, groupKey("group", "deploy")); err != nil {
		t.Fatalf("group key past the comment TTL: %v, want it kept", err)
	}
	advance("advanced", "01A", true) // the older run: nothing remembers 01B
}

// Sticky comment keys written without a TTL (before their keys expired
// with the run retention) get CommentTTL from the retention sweep; keys
// with one, deleted keys and group keys are left alone, and a second pass
// finds nothing to do.
func TestOldCommentKeysGetATTL(t *testing.T) {
	t.Parallel()
	q := openTestOpts(t, queue.Config{}, Options{CommentTTL: 2 * time.Hour})
	ctx := testCtx(t, 20*time.Second)
	g := q.Groups()
	st, err := q.Shared().JetStream.Stream(ctx, "KV_"+BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(key string) *jetstream.RawStreamMsg {
		t.Helper()
		m, err := st.GetLastMsgForSubject(ctx, "$KV."+BucketGroups+"."+key)
		if err != nil {
			t.Fatalf("reading %s: %v", key, err)
		}
		return m
	}
	old := func(name string) string {
		t.Helper()
		key := groupKey("comment", name)
		if _, err := g.kv.Put(ctx, key, []byte(`{"holder":"01A"}`)); err != nil {
			t.Fatal(err)
		}
		return key
	}
	oldKey := old("old")
	gone := old("gone")
	if err := g.kv.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Advance(ctx, "new", "01B"); err != nil {
		t.Fatal(err)
	}
	newRev := stored(groupKey("comment", "new")).Sequence
	if _, _, err := g.Acquire(ctx, GroupLock{Group: "deploy", RunID: "01A", Claimant: "r1", Now: time.Now(), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	groupRev := stored(groupKey("group", "deploy")).Sequence

	if n, err := g.ExpireOldComments(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireOldComments = %d, %v; want 1", n, err)
	}
	if m := stored(oldKey); m.Header.Get(jetstream.MsgTTLHeader) != "2h0m0s" || string(m.Data) != `{"holder":"01A"}` {
		t.Errorf("the old comment key after the pass: TTL %q, value %s", m.Header.Get(jetstream.MsgTTLHeader), m.Data)
	}
	if m := stored(groupKey("comment", "new")); m.Sequence != newRev {
		t.Errorf("the comment key with a TTL was written again")
	}
	if m := stored(groupKey("group", "deploy")); m.Sequence != groupRev || m.Header.Get(jetstream.MsgTTLHeader) != "" {
		t.Errorf("the group key was given a TTL")
	}
	if m := stored(gone); m.Header.Get("KV-Operation") != "DEL" {
		t.Errorf("the deleted comment key was written again: %v", m.Header)
	}
	if n, err := g.ExpireOldComments(ctx); err != nil || n != 0 {
		t.Fatalf("ExpireOldComments again = %d, %v; want 0", n, err)
	}

	// The retention sweep runs it.
	later := old("later")
	stop, err := q.StartRetention(RetentionConfig{Retention: time.Hour, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for stored(later).Header.Get(jetstream.MsgTTLHeader) != "2h0m0s" {
		if time.Now().After(deadline) {
			t.Fatal("the retention sweep gave the old comment key no TTL")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A delivery whose handler says Wait is called again with the same
// delivery (no delivery spent, even past MaxDeliver, and no slot held while
// it waits: another run is handled meanwhile); Close hands a waiting run
// back at once.
func TestWaitSpendsNoDelivery(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	waiting, err := q.Publish(ctx, testRequest("waits"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := q.Publish(ctx, testRequest("other"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		delivered []uint64
		otherDone = make(chan struct{})
	)
	cfg := queue.ConsumerConfig{Durable: "waits", Concurrency: 1, MaxAckPending: 4, AckWait: time.Second, MaxDeliver: 3, FetchWait: 200 * time.Millisecond}
	c, err := q.Consume(ctx, cfg, func(ctx context.Context, d *queue.Delivery) error {
		if d.Request.ID == other.RunID {
			close(otherDone)
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		delivered = append(delivered, d.NumDelivered)
		return queue.Wait(errors.New("group busy"), 50*time.Millisecond)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-otherDone: // the one slot was free while the first run waited
	case <-ctx.Done():
		t.Fatal("a waiting run held the only handler slot")
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(delivered)
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %s with a waiting run", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) < 5 {
		t.Fatalf("handler called %d times, want at least 5", len(delivered))
	}
	for _, n := range delivered {
		if n != 1 {
			t.Fatalf("deliveries seen %v, want all 1", delivered)
		}
	}
	rec, _, err := q.Runs().Get(ctx, waiting.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusQueued {
		t.Errorf("waiting run is %s (%s), want queued", rec.Status, rec.Error)
	}
	// Handed back: another consumer gets it.
	got := make(chan uint64, 1)
	c2, err := q.Consume(ctx, cfg, func(ctx context.Context, d *queue.Delivery) error {
		select {
		case got <- d.NumDelivered:
		default:
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c2.Close(ctx) }()
	select {
	case n := <-got:
		if n != 2 {
			t.Errorf("redelivery number %d, want 2 (one delivery spent by handing it back)", n)
		}
	case <-ctx.Done():
		t.Fatal("the waiting run was not handed back")
	}
}

// An idle group leaves no key; a delete that raced a newer write retries.
func TestIdleGroupLeavesNoKey(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	l := GroupLock{Group: "group:idle", RunID: "01A", Claimant: "r1", Now: time.Now(), TTL: time.Minute}
	for range 2 {
		if _, _, err := q.Groups().Acquire(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Groups().Release(ctx, l, false); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Groups().kv.Get(ctx, groupKey("group", l.Group)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("key of an idle group: %v, want not found", err)
	}
	// And the group works again.
	if held, _, err := q.Groups().Acquire(ctx, l); err != nil || held {
		t.Fatalf("Acquire after the key went = %v, %v; want a first round", held, err)
	}
	if held, _, err := q.Groups().Acquire(ctx, l); err != nil || !held {
		t.Fatalf("Acquire = %v, %v; want held", held, err)
	}
}

// A waiting delivery gets a handler slot back within about its wait, also
// on a consumer of one slot whose pull took that slot (it held it for a
// whole FetchWait: a run of a concurrency group started a second after
// the group was free, at runner.concurrency 1).
func TestWaitGetsItsSlotBackInTime(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	if _, err := q.Publish(ctx, testRequest("waits")); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		calls []time.Time
		done  = make(chan struct{})
	)
	const after, fetchWait = 100 * time.Millisecond, 5 * time.Second
	cfg := queue.ConsumerConfig{Durable: "slot", Concurrency: 1, FetchWait: fetchWait}
	c, err := q.Consume(ctx, cfg, func(ctx context.Context, d *queue.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, time.Now())
		if len(calls) == 1 {
			return queue.Wait(errors.New("group busy"), after)
		}
		close(done)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the waiting delivery was not handled again")
	}
	mu.Lock()
	defer mu.Unlock()
	gap := calls[1].Sub(calls[0])
	t.Logf("handled again %s after it waited %s", gap.Round(time.Millisecond), after)
	// About after; a second leaves room for a loaded machine and is
	// far from the pull's 5s.
	if gap >= time.Second {
		t.Errorf("handled again %s after a wait of %s: the pull held the slot (FetchWait %s)", gap.Round(time.Millisecond), after, fetchWait)
	}
}
