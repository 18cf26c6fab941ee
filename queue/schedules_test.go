package queue

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// TestScheduleTicksOncePerTick: two processes (two queue clients of one
// embedded server, as two serve processes) sync the same @every 2s
// schedule and both consume ticks; over 10 s the server fires about 5
// ticks, each handed to exactly one of them. Re-syncing the same
// definition does not restart it; removing it stops the ticks.
func TestScheduleTicksOncePerTick(t *testing.T) {
	dir := t.TempDir()
	q1 := openTest(t, Config{DataDir: dir, Listen: "127.0.0.1:0"})
	q2 := openTest(t, Config{URL: q1.ClientURL(), PasswordFile: filepath.Join(dir, DefaultPasswordFileName)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	def := []Schedule{{ID: ScheduleID("sweep", 0), Workflow: "sweep", Spec: "@every 2s", Repo: "o/r"}}

	var mu sync.Mutex
	seen := map[string][]string{} // tick key → the processes that got it
	var wg sync.WaitGroup
	for name, q := range map[string]*Queue{"one": q1, "two": q2} {
		s, err := q.Schedules(testCtx(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(testCtx(t, 10*time.Second), def); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Consume(ctx, func(_ context.Context, tk Tick) error {
				if tk.Schedule.Workflow != "sweep" || tk.Schedule.Repo != "o/r" {
					t.Errorf("tick of %+v", tk.Schedule)
				}
				// Nats-Schedule-Next: the interval on from when the tick was due.
				if d := tk.Next.Sub(tk.At); d < 1500*time.Millisecond || d > 2500*time.Millisecond {
					t.Errorf("tick fired at %s says the next is at %s", tk.At, tk.Next)
				}
				mu.Lock()
				seen[tk.Key()] = append(seen[tk.Key()], name)
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(10 * time.Second)
	mu.Lock()
	n := len(seen)
	for k, who := range seen {
		if len(who) != 1 {
			t.Errorf("tick %s handled by %v", k, who)
		}
	}
	mu.Unlock()
	if n < 4 || n > 6 {
		t.Errorf("%d ticks in 10 s of @every 2s, want about 5: %v", n, seen)
	}

	// The workflow goes: its schedule is removed, no tick follows.
	s, err := q1.Schedules(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(testCtx(t, 10*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a tick in flight lands
	mu.Lock()
	before := len(seen)
	mu.Unlock()
	time.Sleep(4500 * time.Millisecond)
	mu.Lock()
	after := len(seen)
	mu.Unlock()
	if after != before {
		t.Errorf("%d ticks after the schedule was removed", after-before)
	}
	cancel()
	wg.Wait()
}

func TestNatsSchedule(t *testing.T) {
	for in, want := range map[string]string{"0 3 * * *": "0 0 3 * * *", "@every 30m": "@every 30m0s", "@hourly": "@hourly", "@daily": "@daily"} {
		if got, err := NatsSchedule(in); err != nil || got != want {
			t.Errorf("NatsSchedule(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "@every 500ms", "* * *", "0 0 3 * * *", "@sometimes"} {
		if got, err := NatsSchedule(bad); err == nil {
			t.Errorf("NatsSchedule(%q) = %q, want an error", bad, got)
		}
	}
}

// One schedule per workflow and schedule trigger, named by the trigger's
// index, with what the trigger says; other triggers have none.
func TestSchedulesOf(t *testing.T) {
	w, err := workflows.Parse("sweep.yaml", []byte("schedule: '@daily'\nrepo: o/r\nforge: github\non:\n  - event: issue\n  - {schedule: '0 3 * * *', repo: o/a, forge: gitlab, timezone: Europe/Berlin}\nsteps: [{id: a, run: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := SchedulesOf([]*workflows.Workflow{w})
	want := []Schedule{
		{ID: "sweep-1", Workflow: "sweep", Trigger: 1, Spec: "0 3 * * *", Timezone: "Europe/Berlin", Repo: "o/a", Forge: workflows.Forge("gitlab")},
		{ID: "sweep-2", Workflow: "sweep", Trigger: 2, Spec: "@daily", Repo: "o/r", Forge: workflows.Forge("github")},
	}
	if !slices.Equal(got, want) {
		t.Errorf("SchedulesOf = %+v\nwant %+v", got, want)
	}
}
