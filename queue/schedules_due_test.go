package queue

import (
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// A schedule's due record: each tick is judged by the Next of the tick
// handled before it (the first by nothing), a tick handed out again by
// the same as the first time, an older tick after a newer one by
// nothing; concurrent handlings of one tick agree; ticks of another
// definition (a changed workflow) start afresh, and Sync forgets the
// record when it publishes a definition.
func TestScheduleDueRecord(t *testing.T) {
	q := openTest(t, Config{})
	ctx := testCtx(t, 30*time.Second)
	s, err := q.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	def := Schedule{ID: ScheduleID("sweep", 0), Workflow: "sweep", Spec: "@every 10s", Repo: "o/r"}
	body, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	next := func(n int) time.Time { return at.Add(time.Duration(n) * 10 * time.Second) }
	judged := func(seq uint64, nextAt time.Time, body []byte) time.Time {
		t.Helper()
		tk := Tick{Schedule: def, Seq: seq, At: nextAt.Add(-10 * time.Second), Next: nextAt}
		if err := s.remember(ctx, &tk, body); err != nil {
			t.Fatal(err)
		}
		return tk.Expected
	}
	for _, c := range []struct {
		name string
		seq  uint64
		next time.Time
		body []byte
		want time.Time
	}{
		{"the first tick", 10, next(1), body, time.Time{}},
		{"the second", 12, next(2), body, next(1)},
		{"the second handed out again", 12, next(2), body, next(1)},
		{"the first handed out after the second", 10, next(1), body, time.Time{}},
		{"the third", 15, next(3), body, next(2)},
		{"a tick of another definition", 16, next(4), []byte(`{"id":"sweep-0","schedule":"@every 20s"}`), time.Time{}},
		{"its next", 17, next(5), []byte(`{"id":"sweep-0","schedule":"@every 20s"}`), next(4)},
	} {
		if got := judged(c.seq, c.next, c.body); !got.Equal(c.want) {
			t.Errorf("%s: expected at %s, want %s", c.name, got, c.want)
		}
	}

	// One tick handled twice at once: both judge it by the same time.
	var wg sync.WaitGroup
	got := make([]time.Time, 4)
	for i := range got {
		wg.Go(func() {
			tk := Tick{Schedule: def, Seq: 20, At: next(5), Next: next(6)}
			if err := s.remember(ctx, &tk, []byte(`{"id":"sweep-0","schedule":"@every 20s"}`)); err != nil {
				t.Error(err)
			}
			got[i] = tk.Expected
		})
	}
	wg.Wait()
	for i, e := range got {
		if !e.Equal(next(5)) {
			t.Errorf("concurrent handling %d: expected at %s, want %s", i, e, next(5))
		}
	}

	// Sync publishes the definition (new to the stream): the record goes,
	// though the digest would match.
	if judged(30, next(7), body); !judged(31, next(8), body).Equal(next(7)) {
		t.Fatal("the record was not kept")
	}
	if err := s.Sync(ctx, []Schedule{def}); err != nil {
		t.Fatal(err)
	}
	if got := judged(32, next(9), body); !got.IsZero() {
		t.Errorf("after Sync published the definition: expected at %s, want nothing", got)
	}
	// Sync removes it: the record goes with it.
	if err := s.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := judged(33, next(10), body); !got.IsZero() {
		t.Errorf("after Sync removed the definition: expected at %s, want nothing", got)
	}
}
