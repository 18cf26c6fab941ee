package decide

import (
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// TestLateTickFiredAgain: a tick the server fires again after it was
// killed before saving its timers names no later next time than the tick
// before it did (Tick.Expected), however close to that time it fires: its
// time has run, and it starts no run. The tick after it is on time.
func TestLateTickFiredAgain(t *testing.T) {
	due := time.Date(2026, 12, 6, 3, 1, 0, 0, time.UTC)
	now := due
	d := newDecider(t, Config{}, Deps{Workflows: parse(t, reviewWorkflow), Now: func() time.Time { return now }})
	minutely := queue.Schedule{ID: "m-0", Workflow: "m", Spec: "* * * * *", Repo: "o/r"}
	// The 03:00 tick ran and said the next is due at 03:01; the server,
	// killed and back at 03:00:45, fires the 03:00 tick again.
	again := queue.Tick{Schedule: minutely, Seq: 9, At: due.Add(-15 * time.Second), Next: due, Expected: due}
	now = again.At.Add(100 * time.Millisecond)
	if late := d.LateTick(again); !strings.Contains(late, "names 2026-12-06T03:01:00Z as the next time, as the tick before it did") {
		t.Errorf("a tick fired again 15 s before the next: late %q", late)
	}
	next := queue.Tick{Schedule: minutely, Seq: 10, At: due.Add(200 * time.Millisecond), Next: due.Add(time.Minute), Expected: due}
	now = next.At.Add(100 * time.Millisecond)
	if late := d.LateTick(next); late != "" {
		t.Errorf("the 03:01 tick after it: late %q, want on time", late)
	}
}
