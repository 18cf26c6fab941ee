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
	if prev, known, err := s.SwapLabels(ctx, "gitea", "o/r", 2, nil); err != nil || known || prev != nil {
		t.Fatalf("first swap: %v %v %v, want unknown", prev, known, err)
	}
	if prev, known, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{"bug"}); err != nil || !known || len(prev) != 0 {
		t.Fatalf("second swap: %v %v %v, want known and empty", prev, known, err)
	}
	if _, known, _ := s.SwapLabels(ctx, "gitea", "o/r", 3, []string{"x"}); known {
		t.Error("another number shares the entry")
	}
	if _, known, _ := s.SwapLabels(ctx, "github", "o/r", 2, []string{"x"}); known {
		t.Error("another forge shares the entry")
	}

	// Concurrent swaps: every stored value is returned once, by the next swap.
	const n = 8
	var wg sync.WaitGroup
	got := make([][]string, n)
	for i := range n {
		wg.Go(func() {
			prev, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{string(rune('a' + i))})
			if err != nil {
				t.Errorf("swap %d: %v", i, err)
			}
			got[i] = prev
		})
	}
	wg.Wait()
	last, _, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{"end"})
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
	if prev, known, err := s.SwapLabels(ctx, "gitea", "o/r", 2, []string{"bug"}); err != nil || known {
		t.Errorf("after the TTL: %v %v %v, want unknown", prev, known, err)
	}
}
