package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tickInterval is the schedule of TestScheduleTickFiredAgainAfterKillRunsOnce.
const tickInterval = 6 * time.Second

// tickMark is one line a scheduled run's step appended: its run id, its
// delivery id (the tick's key) and its HOOKRUN_SCHEDULE.
type tickMark struct{ run, tick, spec string }

func readTickMarks(t *testing.T, path string) []tickMark {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var marks []tickMark
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.SplitN(l, " ", 3); len(f) == 3 {
			marks = append(marks, tickMark{f[0], f[1], f[2]})
		}
	}
	return marks
}

// killServe is `hookrun serve` (embedded NATS) on a fixed data_dir with a
// workflow whose host step appends a tickMark to marks at each tick.
type killServe struct {
	t             *testing.T
	cfg, url, api string
	marks         string
}

func newKillServe(t *testing.T) *killServe {
	t.Helper()
	dir := t.TempDir()
	s := &killServe{t: t, api: "kill-api-token", marks: filepath.Join(stepWritableDir(t), "ticks")}
	writeFile(t, filepath.Join(dir, "workflows", "tick.yaml"), `name: tick
on:
  - schedule: "@every `+tickInterval.String()+`"
    repo: Codertocat/Hello-World
report: {comment: none, status: false}
steps:
  - id: mark
    run: printf '%s %s %s\n' "$HOOKRUN_RUN_ID" "$HOOKRUN_DELIVERY" "$HOOKRUN_SCHEDULE" >>`+s.marks+`
`)
	addr := freeAddr(t)
	s.url = "http://" + addr
	s.cfg = writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/*"]
github: { webhook_secret: "kill-secret" }
api: { token: "`+s.api+`" }
shutdown_grace: 5s
`)
	return s
}

func (s *killServe) start(name string) *proc {
	s.t.Helper()
	p := startHookrun(s.t, name, nil, "serve", "--config", s.cfg, "--log-format", "json")
	waitReady(s.t, p, s.url, 30*time.Second)
	return p
}

// nextRun waits until more than n marks are written and the newest one's
// run has finished, and returns the marks.
func (s *killServe) nextRun(p *proc, n int, within time.Duration) []tickMark {
	s.t.Helper()
	var marks []tickMark
	deadline := time.Now().Add(within)
	for {
		if marks = readTickMarks(s.t, s.marks); len(marks) > n {
			var rec struct{ Status string }
			code := apiGet(s.t, s.url, s.api, "/api/v1/runs/"+marks[len(marks)-1].run, &rec)
			if code == http.StatusOK && (rec.Status == "succeeded" || rec.Status == "failed") {
				return marks
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no run of tick %d within %s; marks %v:\n%s", n+1, within, marks, tail(p.out.String(), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scheduledRun is what the run API says of a scheduled run.
type scheduledRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Event  struct {
		DeliveryID string `json:"delivery_id"`
		Schedule   struct {
			At string `json:"at"`
		} `json:"schedule"`
	} `json:"event"`
}

func (s *killServe) runs() []scheduledRun {
	s.t.Helper()
	var list struct {
		Runs []scheduledRun `json:"runs"`
	}
	if code := apiGet(s.t, s.url, s.api, "/api/v1/runs?workflow=tick&limit=100", &list); code != http.StatusOK {
		s.t.Fatalf("listing runs: %d", code)
	}
	return list.Runs
}

// TestScheduleTickFiredAgainAfterKillRunsOnce: nats-server saves its
// schedule timers only at a clean stop and about every two minutes, so a
// `hookrun serve` killed (SIGKILL, its embedded server with it) right
// after a tick ran comes back with the timer of that tick and fires it
// again, under a new stream sequence (a new tick key, which the run
// dedupe does not know). serve starts and stops cleanly once (the timers
// are saved), starts again, is killed as soon as the next tick's run has
// finished, and starts again on the same data_dir at once: the tick fired
// again is dropped (logged as fired again after it restarted), and over
// the next two ticks no time slot runs twice.
func TestScheduleTickFiredAgainAfterKillRunsOnce(t *testing.T) {
	s := newKillServe(t)
	// A store whose timers were never saved is recovered from its
	// messages, and a killed server fires no tick again (observed):
	// saved once, they are what it comes back with.
	p := s.start("serve-1")
	s.nextRun(p, 0, 20*time.Second)
	p.stop(syscall.SIGTERM, 20*time.Second)

	p = s.start("serve-2")
	marks := s.nextRun(p, 1, 20*time.Second)
	killed := marks[len(marks)-1]
	p.kill()
	t.Logf("killed serve right after the run of tick %s", killed.tick)

	p = s.start("serve-3")
	// Two ticks after the restart: the one fired again would be the first.
	marks = s.nextRun(p, len(marks)+1, 3*tickInterval)
	checkOneRunPerSlot(t, marks, s.runs())
	dropped := ""
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(l, "fired again after it restarted") {
			dropped = l
		}
	}
	if dropped == "" {
		t.Errorf("the restarted serve did not log a tick fired again after it restarted:\n%s", tail(p.out.String(), 4000))
	}
	t.Logf("dropped: %s", dropped)
}

// checkOneRunPerSlot checks that each marked run is listed with the tick
// it marked, that no tick ran twice and that the ticks of the finished
// runs are an interval apart: no time slot ran twice under two keys.
func checkOneRunPerSlot(t *testing.T, marks []tickMark, runs []scheduledRun) {
	t.Helper()
	marked := map[string]string{} // tick key -> run
	for _, m := range marks {
		if m.spec != "@every "+tickInterval.String() {
			t.Errorf("run %s: HOOKRUN_SCHEDULE %q", m.run, m.spec)
		}
		if r, ok := marked[m.tick]; ok {
			t.Errorf("tick %s ran twice: runs %s and %s", m.tick, r, m.run)
		}
		marked[m.tick] = m.run
	}
	var slots []time.Time
	for _, r := range runs {
		if marked[r.Event.DeliveryID] != r.ID {
			if r.Status == "succeeded" || r.Status == "failed" {
				t.Errorf("run %s of tick %s finished without marking it (marks %v)", r.ID, r.Event.DeliveryID, marks)
			}
			continue // a later tick's run, not started yet
		}
		at, err := time.Parse(time.RFC3339, r.Event.Schedule.At)
		if err != nil {
			t.Errorf("run %s: schedule.at %q: %v", r.ID, r.Event.Schedule.At, err)
			continue
		}
		slots = append(slots, at)
	}
	if len(slots) != len(marks) {
		t.Errorf("%d marked runs listed, %d marked: %v", len(slots), len(marks), marks)
	}
	slices.SortFunc(slots, time.Time.Compare)
	// schedule.at is to the second.
	for i := 1; i < len(slots); i++ {
		if gap := slots[i].Sub(slots[i-1]); gap < tickInterval-1500*time.Millisecond {
			t.Errorf("runs of ticks at %s and %s, %s apart: one slot of @every %s ran twice (runs %+v)",
				slots[i-1].Format(time.RFC3339), slots[i].Format(time.RFC3339), gap, tickInterval, runs)
		}
	}
}
