package queue

import (
	"errors"
	"testing"
	"time"
)

// The lock of a group goes to one run at a time, to the oldest waiting run
// first; a holder whose runner stops renewing it loses it when it expires
// and keeps its place; a waiter that stops asking is forgotten.
func TestGroupLock(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{})
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
	q := openTest(t, Config{})
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
