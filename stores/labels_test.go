package stores

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// TestLabelStore: SwapLabels returns what the previous swap stored (known
// false the first time), per forge, repository and number; concurrent
// swaps of one key each see another's labels exactly once; an entry
// expires after Options.LabelTTL.
func TestLabelStore(t *testing.T) {
	q := openTestOpts(t, queue.Config{}, Options{LabelTTL: 2 * time.Second})
	ctx := testCtx(t, 30*time.Second)
	s, err := q.Labels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if prev, known, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, nil, time.Time{}); err != nil || known || prev != nil {
		t.Fatalf("first swap: %v %v %v, want unknown", prev, known, err)
	}
	if prev, known, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{"bug"}, time.Time{}); err != nil || !known || len(prev) != 0 {
		t.Fatalf("second swap: %v %v %v, want known and empty", prev, known, err)
	}
	if _, known, _, _ := s.SwapLabels(ctx, "gitea", "o/r", 3, []string{"x"}, time.Time{}); known {
		t.Error("another number shares the entry")
	}
	if _, known, _, _ := s.SwapLabels(ctx, "github", "o/r", 2, []string{"x"}, time.Time{}); known {
		t.Error("another forge shares the entry")
	}

	// Concurrent swaps: every stored value is returned once, by the next swap.
	const n = 8
	var wg sync.WaitGroup
	got := make([][]string, n)
	for i := range n {
		wg.Go(func() {
			prev, _, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{string(rune('a' + i))}, time.Time{})
			if err != nil {
				t.Errorf("swap %d: %v", i, err)
			}
			got[i] = prev
		})
	}
	wg.Wait()
	last, _, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{"end"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, p := range append(got, last) {
		for _, l := range p {
			seen[l]++
		}
	}
	if seen["bug"] != 1 || len(seen) != n+1 || slices.ContainsFunc(slices.Collect(maps.Values(seen)), func(c int) bool { return c != 1 }) {
		t.Errorf("concurrent swaps returned %v, want bug and each of the %d labels once", seen, n)
	}

	time.Sleep(3 * time.Second)
	if prev, known, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{"bug"}, time.Time{}); err != nil || known {
		t.Errorf("after the TTL: %v %v %v, want unknown", prev, known, err)
	}
}

// TestLabelStoreIgnoresOlderDeliveries: with labels [a b] recorded as of
// T, a swap as of before T (the forge redelivering an old delivery) is
// stale and returns [a b] without recording; the entry stays [a b] at T,
// so a swap at T itself still sees [a b] and records, and one without a
// time records without moving T. An entry of the bare list (written
// before times were kept) reads as known, of no time.
func TestLabelStoreIgnoresOlderDeliveries(t *testing.T) {
	q := openTestOpts(t, queue.Config{}, Options{LabelTTL: time.Minute})
	ctx := testCtx(t, 30*time.Second)
	s, err := q.Labels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 9, 3, 5, 0, time.UTC)
	swap := func(step string, labels []string, when time.Time, want []string, wantStale bool) {
		t.Helper()
		prev, known, stale, err := s.SwapLabels(ctx, "gitea", "o/r", 7, labels, when)
		if err != nil || !known || stale != wantStale || !slices.Equal(prev, want) {
			t.Errorf("%s: %v known %v stale %v %v, want %v known stale %v", step, prev, known, stale, err, want, wantStale)
		}
	}
	if _, _, _, err := s.SwapLabels(ctx, "gitea", "o/r", 7, []string{"a", "b"}, at); err != nil {
		t.Fatal(err)
	}
	swap("older", []string{"a"}, at.Add(-time.Second), []string{"a", "b"}, true)
	swap("older again", []string{"x"}, at.Add(-time.Hour), []string{"a", "b"}, true)
	swap("same second", []string{"a", "b", "c"}, at, []string{"a", "b"}, false)
	swap("no time", []string{"c"}, time.Time{}, []string{"a", "b", "c"}, false)
	swap("older than T still", []string{"a"}, at.Add(-time.Second), []string{"c"}, true)
	swap("newer", []string{"d"}, at.Add(time.Second), []string{"c"}, false)

	if _, err := s.kv.Put(ctx, headKey("gitea", "o/r", 8), []byte(`["old"]`)); err != nil {
		t.Fatal(err)
	}
	if prev, known, stale, err := s.SwapLabels(ctx, "gitea", "o/r", 8, nil, at); err != nil || !known || stale || !slices.Equal(prev, []string{"old"}) {
		t.Errorf("bare list entry: %v known %v stale %v %v, want [old] known", prev, known, stale, err)
	}
}
