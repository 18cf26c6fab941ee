package ingress

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

const nightlyWorkflow = `name: nightly
on:
  - schedule: "0 3 * * *"
    repo: myorg/app
steps:
  - id: sweep
    run: echo "$HOOKRUN_SCHEDULE"
`

// Dagu's top-level form, on a repository outside allow_repos.
const outsideWorkflow = `name: outside
schedule: "@hourly"
repo: other/app
forge: gitlab
steps:
  - id: sweep
    run: "true"
`

// A tick becomes one run on the delivery path: kind schedule, the
// trigger's repository and clone URL, the tick's key as delivery id; the
// same tick handed out again is the same run. A schedule on a repository
// outside allow_repos is refused at the tick, with the reason, and runs
// nothing; a tick the loaded workflow no longer has is handed back.
func TestTickStartsOneRun(t *testing.T) {
	reg := forge.NewRegistry(hooks(github.Name, true, testGitHubSecret).(forge.Forge), hooks(gitlab.Name, true, testGitLabToken).(forge.Forge))
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	env := newEnv(t, Config{AllowRepos: []string{"myorg/*"}, Forges: reg},
		map[string]string{"nightly.yaml": nightlyWorkflow, "outside.yaml": outsideWorkflow},
		func(d *Deps) { d.Now = func() time.Time { return at.Add(time.Second) } })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defs := queue.SchedulesOf(env.srv.src.Workflows())
	if len(defs) != 2 || defs[0].Workflow != "nightly" || defs[1].Workflow != "outside" {
		t.Fatalf("schedules %+v", defs)
	}
	tick := queue.Tick{Schedule: defs[0], Seq: 7, At: at}

	out, err := env.srv.Tick(ctx, tick)
	if err != nil || out.RunID == "" || out.Duplicate || out.Skipped != "" {
		t.Fatalf("Tick = %+v, %v", out, err)
	}
	again, err := env.srv.Tick(ctx, tick)
	if err != nil || again.RunID != out.RunID || !again.Duplicate {
		t.Fatalf("the same tick again = %+v, %v; want run %s as a duplicate", again, err, out.RunID)
	}
	reqs := streamRequests(t, env.q)
	if len(reqs) != 1 {
		t.Fatalf("%d run requests, want 1", len(reqs))
	}
	ev := reqs[0].Event
	if reqs[0].ID != out.RunID || reqs[0].Workflow != "nightly" || ev.Kind != workflows.KindSchedule || ev.Action != workflows.ActionTick ||
		ev.Forge != github.Name || ev.Repo != "myorg/app" || ev.CloneURL != "https://github.com/myorg/app.git" ||
		ev.DeliveryID != tick.Key() || ev.Schedule == nil || ev.Schedule.Spec != "0 3 * * *" || ev.Schedule.At != "2026-12-06T03:00:00Z" {
		t.Errorf("run request %+v, event %+v", reqs[0], ev)
	}

	out, err = env.srv.Tick(ctx, queue.Tick{Schedule: defs[1], Seq: 8, At: at})
	if err != nil || out.RunID != "" || out.Skipped != "repository other/app is not in the server's allow_repos" {
		t.Errorf("a tick outside allow_repos = %+v, %v; want skipped", out, err)
	}
	mustContain(t, env.logs.String(), "schedule tick starts no run")

	stale := defs[0]
	stale.Spec = "@daily" // the workflow changed since this definition was synced
	if out, err := env.srv.Tick(ctx, queue.Tick{Schedule: stale, Seq: 9}); err == nil || !strings.Contains(err.Error(), "has no such schedule now") {
		t.Errorf("a stale tick = %+v, %v; want an error (handed out again)", out, err)
	}
	gone := defs[0]
	gone.Workflow = "gone"
	if out, err := env.srv.Tick(ctx, queue.Tick{Schedule: gone, Seq: 10}); err == nil || !strings.Contains(err.Error(), "workflow gone is not loaded") {
		t.Errorf("a tick of an unloaded workflow = %+v, %v; want an error", out, err)
	}
	if n := len(streamRequests(t, env.q)); n != 1 {
		t.Errorf("%d run requests after the refused ticks, want 1", n)
	}
}

const everyTenSeconds = `name: often
on:
  - schedule: "@every 10s"
    repo: myorg/app
steps:
  - id: sweep
    run: "true"
`

// A tick handled more than decide.LateTickBound (a minute, or half the
// time to the next tick) after it was due starts no run, logged and
// counted: a cron tick the server fired on coming back after its time,
// one that waited in the consumer, an @every tick whose
// Nats-Schedule-Next says it was due earlier, or whose tick before said
// so (Tick.Expected). A tick that started its run
// on time and is handed out again late is that run, a duplicate.
func TestLateTickStartsNoRun(t *testing.T) {
	var now time.Time
	env := newEnv(t, Config{AllowRepos: []string{"myorg/*"}},
		map[string]string{"nightly.yaml": nightlyWorkflow, "often.yaml": everyTenSeconds},
		func(d *Deps) { d.Now = func() time.Time { return now } })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defs := queue.SchedulesOf(env.srv.src.Workflows())
	if len(defs) != 2 || defs[0].Workflow != "nightly" || defs[1].Workflow != "often" {
		t.Fatalf("schedules %+v", defs)
	}
	nightly, often := defs[0], defs[1]
	due := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	tomorrow := due.AddDate(0, 0, 1)
	for _, c := range []struct {
		name string
		tick queue.Tick
		now  time.Time
		late string // "" = a new run
	}{
		{"on time", queue.Tick{Schedule: nightly, Seq: 1, At: due.Add(300 * time.Millisecond), Next: tomorrow}, due.Add(59 * time.Second), ""},
		{"fired after an outage", queue.Tick{Schedule: nightly, Seq: 2, At: due.Add(7 * time.Minute), Next: tomorrow}, due.Add(7 * time.Minute),
			"the tick fired at 2026-12-06T03:07:00Z and its schedule names no time in the 1m0s before: it was due earlier (a tick more than 1m0s late starts no run)"},
		{"waited in the consumer", queue.Tick{Schedule: nightly, Seq: 3, At: due.Add(time.Second), Next: tomorrow}, due.Add(2 * time.Hour),
			"the tick was due at 2026-12-06T03:00:00Z and is handled at 2026-12-06T05:00:00Z, 2h0m0s late (a tick more than 1m0s late starts no run)"},
		{"@every on time", queue.Tick{Schedule: often, Seq: 4, At: due.Add(200 * time.Millisecond), Next: due.Add(10 * time.Second)}, due.Add(5 * time.Second), ""},
		{"@every after an outage", queue.Tick{Schedule: often, Seq: 5, At: due.Add(6 * time.Second), Next: due.Add(10 * time.Second)}, due.Add(6 * time.Second),
			"the tick was due at 2026-12-06T03:00:00Z and is handled at 2026-12-06T03:00:06Z, 6s late (a tick more than 5s late starts no run)"},
		// After an outage longer than the interval, the server counts it
		// from the tick it fires on coming back: its own Next says it is on
		// time; the tick before it said it was due 15 s earlier.
		{"@every after an outage longer than its interval", queue.Tick{Schedule: often, Seq: 6, At: due.Add(25300 * time.Millisecond), Next: due.Add(35 * time.Second), Expected: due.Add(10 * time.Second)}, due.Add(25400 * time.Millisecond),
			"the tick was due at 2026-12-06T03:00:10Z (the tick before it said so) and fired at 2026-12-06T03:00:25Z, 15s late (a tick more than 5s late starts no run)"},
		{"@every, the tick after it", queue.Tick{Schedule: often, Seq: 7, At: due.Add(35200 * time.Millisecond), Next: due.Add(45 * time.Second), Expected: due.Add(35 * time.Second)}, due.Add(35300 * time.Millisecond), ""},
		// A server killed before it saved its timers fires again, when it
		// is back, a tick it fired: the tick before it (on time, run) had
		// said the next was due later.
		{"fired again after the server was killed", queue.Tick{Schedule: nightly, Seq: 11, At: due.Add(40 * time.Second), Next: tomorrow, Expected: tomorrow}, due.Add(41 * time.Second),
			"the tick fired at 2026-12-06T03:00:40Z, 23h59m20s before it was due at 2026-12-07T03:00:00Z (the tick before it said so): a tick the server fired again after it restarted, whose time has run"},
		{"@every fired again after the server was killed", queue.Tick{Schedule: often, Seq: 12, At: due.Add(38 * time.Second), Next: due.Add(48 * time.Second), Expected: due.Add(45 * time.Second)}, due.Add(38100 * time.Millisecond),
			"the tick fired at 2026-12-06T03:00:38Z, 7s before it was due at 2026-12-06T03:00:45Z (the tick before it said so): a tick the server fired again after it restarted, whose time has run"},
	} {
		now = c.now
		out, err := env.srv.Tick(ctx, c.tick)
		if err != nil || out.Late != c.late || (out.RunID == "") != (c.late != "") || out.Duplicate {
			t.Errorf("%s: Tick = %+v, %v; want late %q", c.name, out, err, c.late)
		}
	}
	reqs := streamRequests(t, env.q)
	if len(reqs) != 3 || reqs[0].Event.DeliveryID != "schedule-nightly-0-1" || reqs[1].Event.DeliveryID != "schedule-often-0-4" || reqs[2].Event.DeliveryID != "schedule-often-0-7" {
		t.Fatalf("run requests %+v, want the on-time ticks' three", reqs)
	}
	mustContain(t, env.logs.String(), "schedule tick is not on time (late, or fired again); starting no run")
	_, body := env.get(t, "/metrics")
	mustContain(t, body, `hookrun_ingress_schedule_ticks_late_total{workflow="nightly"} 3`)
	mustContain(t, body, `hookrun_ingress_schedule_ticks_late_total{workflow="often"} 3`)

	// The on-time tick handed out again hours later (its process died
	// before it confirmed): the run it started, not a late tick.
	now = due.Add(3 * time.Hour)
	out, err := env.srv.Tick(ctx, queue.Tick{Schedule: nightly, Seq: 1, At: due.Add(300 * time.Millisecond), Next: tomorrow})
	if err != nil || !out.Duplicate || out.RunID != reqs[0].ID || out.Late != "" {
		t.Errorf("the on-time tick again, late = %+v, %v; want run %s as a duplicate", out, err, reqs[0].ID)
	}
}

const kathmanduWorkflow = `name: kathmandu
on:
  - schedule: "15 9 * * *"
    timezone: Asia/Kathmandu
    repo: myorg/app
steps:
  - id: sweep
    run: "true"
`

// The late-tick check reads a cron in its timezone: 09:15 in
// Asia/Kathmandu (UTC+05:45) is 03:30 UTC, so a tick fired then is on
// time and starts its run, and one fired at 09:15 UTC (the schedule read
// in UTC) names no time of the schedule before it and starts none.
func TestTimezoneTickOnTime(t *testing.T) {
	var now time.Time
	env := newEnv(t, Config{AllowRepos: []string{"myorg/*"}}, map[string]string{"kathmandu.yaml": kathmanduWorkflow},
		func(d *Deps) { d.Now = func() time.Time { return now } })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defs := queue.SchedulesOf(env.srv.src.Workflows())
	if len(defs) != 1 || defs[0].Timezone != "Asia/Kathmandu" {
		t.Fatalf("schedules %+v", defs)
	}
	due := time.Date(2026, 12, 6, 3, 30, 0, 0, time.UTC)
	onTime := queue.Tick{Schedule: defs[0], Seq: 1, At: due.Add(300 * time.Millisecond), Next: due.AddDate(0, 0, 1)}
	now = due.Add(time.Second)
	out, err := env.srv.Tick(ctx, onTime)
	if err != nil || out.RunID == "" || out.Late != "" {
		t.Fatalf("the tick at 09:15 in Kathmandu = %+v, %v; want a run", out, err)
	}
	run := out.RunID
	inUTC := time.Date(2026, 12, 6, 9, 15, 0, 0, time.UTC)
	now = inUTC.Add(time.Second)
	out, err = env.srv.Tick(ctx, queue.Tick{Schedule: defs[0], Seq: 2, At: inUTC.Add(300 * time.Millisecond), Next: due.AddDate(0, 0, 1)})
	if want := "the tick fired at 2026-12-06T09:15:00Z and its schedule names no time in the 1m0s before: it was due earlier (a tick more than 1m0s late starts no run)"; err != nil || out.RunID != "" || out.Late != want {
		t.Errorf("a tick at 09:15 UTC = %+v, %v; want late %q", out, err, want)
	}
	reqs := streamRequests(t, env.q)
	if len(reqs) != 1 || reqs[0].ID != run || reqs[0].Event.Schedule.Timezone != "Asia/Kathmandu" || reqs[0].Event.Schedule.At != "2026-12-06T03:30:00Z" {
		t.Fatalf("run requests %+v, want the on-time tick's", reqs)
	}
}
