package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/stores"
)

const everyTwoSeconds = `name: tick
on:
  - schedule: "@every 2s"
    repo: o/app
report: {comment: none, status: false}
steps:
  - id: hi
    run: printf '%s\n' "$HOOKRUN_SCHEDULE"
`

// Two serve processes on one three-node NATS cluster, both syncing the
// same @every 2s schedule and consuming its ticks: over 10 s the cluster
// fires about 5 ticks, and each is one run (no tick key twice), whichever
// process took it.
func TestScheduleTwoServersOneRunPerTick(t *testing.T) {
	nodes, joined := queuetest.StartCluster(t) // retried on fresh ports if one was taken
	urls, pw := strings.Split(joined, ","), nodes[0].PasswordFile()
	wf := filepath.Join(t.TempDir(), "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wf, "tick.yaml"), []byte(everyTwoSeconds), 0o644); err != nil {
		t.Fatal(err)
	}
	on := true
	var apps []*App
	for i := range 2 {
		cfg := &Config{
			Listen: "127.0.0.1:0", DataDir: t.TempDir(), Workflows: wf, AllowRepos: []string{"o/*"},
			NATS:   NATSConfig{URL: urls[i], PasswordFile: pw, Replicas: 3},
			Runs:   RunsConfig{RequestKey: "schedule-test-request-key-0123456789abcdef"},
			GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"},
			Runner: RunnerConfig{HostSteps: HostStepsSameUser},
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		a, err := Start(ctx, ModeServe, cfg, nil)
		cancel()
		if err != nil {
			t.Fatalf("serve %d: %v", i+1, err)
		}
		apps = append(apps, a)
	}
	defer func() {
		for _, a := range apps {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := a.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			cancel()
		}
	}()
	runs := func() []*stores.RunRecord {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		recs, _, err := apps[0].Stores().Runs().List(ctx, stores.ListFilter{Workflow: "tick"})
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	before := len(runs())
	time.Sleep(10 * time.Second)
	time.Sleep(300 * time.Millisecond) // the last tick's run is published
	recs := runs()
	n := len(recs) - before
	if n < 3 || n > 7 {
		t.Errorf("%d runs in 10 s of @every 2s, want about 5", n)
	}
	t.Logf("%d runs in 10 s, %d in all", n, len(recs))
	// A tick is its key (the run's delivery id) and the time it fired at.
	seen := map[string]string{}
	for _, r := range recs {
		key := r.Event.DeliveryID
		if !strings.HasPrefix(key, "schedule-tick-0-") || r.Event.Kind != "schedule" || r.Repo != "o/app" || r.Event.Schedule == nil {
			t.Errorf("run %s: event %s %s of %s", r.ID, r.Event.Kind, key, r.Repo)
			continue
		}
		for _, k := range []string{key, "at " + r.Event.Schedule.At} {
			if other, dup := seen[k]; dup {
				t.Errorf("tick %s started runs %s and %s", k, other, r.ID)
			}
			seen[k] = r.ID
		}
	}
}

// A reload syncs the schedules again: a changed schedule replaces its
// definition, a removed workflow's is removed.
func TestScheduleFollowsReloads(t *testing.T) {
	wf := filepath.Join(t.TempDir(), "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(wf, "nightly.yaml")
	write := func(spec string) {
		src := "name: nightly\nschedule: '" + spec + "'\nrepo: o/app\nsteps: [{id: a, run: 'true'}]\n"
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0 3 * * *")
	on := true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Start(ctx, ModeServe, &Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Workflows: wf, AllowRepos: []string{"o/*"},
		GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	st, err := a.Queue().Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	specs := func() []string {
		defs, err := st.Defined(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range defs {
			out = append(out, d.ID+" "+d.Spec)
		}
		return out
	}
	await := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for got := specs(); !slices.Equal(got, want); got = specs() {
			if time.Now().After(deadline) {
				t.Fatalf("schedules %q, want %q", got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	await("nightly-0 0 3 * * *") // synced at start
	time.Sleep(10 * time.Millisecond)
	write("0 4 * * *")
	await("nightly-0 0 4 * * *")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	await()
}

// A schedule stream that does not open for another reason than the
// server's version (here a stream already holding its subjects) is
// logged with that reason, not blamed on the version, and does not stop
// a server without schedules.
func TestScheduleStreamFailureSaysWhy(t *testing.T) {
	nodes, joined := queuetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := nodes[0].Shared().JetStream.CreateStream(ctx, jetstream.StreamConfig{Name: "IN_THE_WAY", Subjects: []string{"hookrun.schedules.>"}}); err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(t.TempDir(), "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wf, "hello.yaml"), []byte("name: hello\nsteps: [{id: a, run: 'true'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// slog's handler serializes its writes; the file is read apart.
	logs, err := os.CreateTemp(t.TempDir(), "serve-log-")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	a, err := Start(ctx, ModeServe, &Config{
		Listen: "127.0.0.1:0", DataDir: t.TempDir(), Workflows: wf, AllowRepos: []string{"o/*"},
		NATS:   NATSConfig{URL: strings.Split(joined, ",")[0], PasswordFile: nodes[0].PasswordFile(), Replicas: 3},
		Runs:   RunsConfig{RequestKey: "schedule-test-request-key-0123456789abcdef"},
		GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"},
		Runner: RunnerConfig{HostSteps: HostStepsSameUser},
	}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("serve without schedules stopped by the schedule stream: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	out, err := os.ReadFile(logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	var warned string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "workflow schedules are off") {
			warned = l
		}
	}
	if !strings.Contains(warned, "overlap") || strings.Contains(warned, "2.14") {
		t.Fatalf("the schedule stream's failure logged as %q; want its reason (subjects overlap), not the server's version", warned)
	}
}

const everyTenSeconds = `name: often
on:
  - schedule: "@every 10s"
    repo: o/app
report: {comment: none, status: false}
steps:
  - id: hi
    run: "true"
`

// A tick due while the NATS server was down is not run late: serve (with
// its embedded server) stops before an @every 10s schedule's first tick
// and starts again, on the same data directory, 6.5 s after it; the
// server fires the missed tick at once, and hookrun drops it (more than
// half the interval late) and runs the next one, on time.
func TestScheduleTickMissedWhileDownIsNotRunLate(t *testing.T) {
	start, stop, logs := restartableServe(t, "often.yaml", everyTenSeconds)

	a := start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := a.Queue().Shared().JetStream.Stream(ctx, queue.StreamSchedules)
	if err != nil {
		t.Fatal(err)
	}
	def, err := st.GetLastMsgForSubject(ctx, "hookrun.schedules.def.often-0")
	if err != nil {
		t.Fatal(err)
	}
	due := def.Time.Round(time.Second).Add(10 * time.Second) // nats-server's first @every tick
	stop(a)
	if left := time.Until(due); left < time.Second {
		t.Fatalf("serve stopped %s before the first tick; the test needs it down across it", left)
	}
	time.Sleep(time.Until(due.Add(6500 * time.Millisecond))) // down across the tick, then more than 5 s past it
	a = start()
	defer stop(a)

	var recs []*stores.RunRecord
	deadline := time.Now().Add(20 * time.Second)
	for len(recs) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no run of the tick after the missed one (due %s); log:\n%s", due.Add(10*time.Second), readLog(t, logs))
		}
		time.Sleep(100 * time.Millisecond)
		if recs, _, err = a.Stores().Runs().List(ctx, stores.ListFilter{Workflow: "often"}); err != nil {
			t.Fatal(err)
		}
	}
	log := readLog(t, logs)
	if !strings.Contains(log, "schedule tick is not on time (late, or fired again); starting no run") {
		t.Errorf("the missed tick was not dropped as late; log:\n%s", log)
	}
	for _, r := range recs {
		at, err := time.Parse(time.RFC3339, r.Event.Schedule.At)
		if err != nil || at.Before(due.Add(9*time.Second)) {
			t.Errorf("run %s of the tick fired at %s; want only the tick due at %s (the one at %s was missed)", r.ID, r.Event.Schedule.At, due.Add(10*time.Second), due)
		}
	}
}

// restartableServe writes the workflow file name with src and returns
// how to start serve on it (always on the same data directory, logging
// to logs) and to stop it.
func restartableServe(t *testing.T, name, src string) (start func() *App, stop func(*App), logs *os.File) {
	t.Helper()
	wf := filepath.Join(t.TempDir(), "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wf, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, err := os.CreateTemp(t.TempDir(), "serve-log-")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	cfg := &Config{
		Listen: "127.0.0.1:0", DataDir: t.TempDir(), Workflows: wf, AllowRepos: []string{"o/*"},
		Runs:   RunsConfig{RequestKey: "schedule-test-request-key-0123456789abcdef"},
		GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"},
		Runner: RunnerConfig{HostSteps: HostStepsSameUser},
	}
	start = func() *App {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a, err := Start(ctx, ModeServe, cfg, slog.New(slog.NewTextHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	stop = func(a *App) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return start, stop, logs
}

func readLog(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const everyFiveSeconds = `name: five
on:
  - schedule: "@every 5s"
    repo: o/app
report: {comment: none, status: false}
steps:
  - id: hi
    run: "true"
`

// A tick missed in an outage longer than an @every interval is not run
// late either: serve (with its embedded server) stops after an @every 5s
// schedule's first tick and starts again, on the same data directory,
// more than 5 s after the next was due. The server fires the missed tick
// at once and counts the interval from it, so its Nats-Schedule-Next says
// it is on time; the tick before it said when it was due (the schedule's
// due record), and hookrun drops it. The tick after it runs, on time.
func TestScheduleTickAfterLongOutageIsNotRunLate(t *testing.T) {
	start, stop, logs := restartableServe(t, "five.yaml", everyFiveSeconds)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// runsAfter polls until a run of a tick with a key not in before exists.
	runsAfter := func(a *App, before map[string]bool) []*stores.RunRecord {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			recs, _, err := a.Stores().Runs().List(ctx, stores.ListFilter{Workflow: "five"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if !before[r.Event.DeliveryID] {
					return recs
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no new run of the schedule; log:\n%s", readLog(t, logs))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	a := start()
	first := runsAfter(a, nil)
	st, err := a.Queue().Shared().JetStream.Stream(ctx, queue.StreamSchedules)
	if err != nil {
		t.Fatal(err)
	}
	tick, err := st.GetLastMsgForSubject(ctx, "hookrun.schedules.tick.five-0")
	if err != nil {
		t.Fatal(err)
	}
	due, err := time.Parse(time.RFC3339Nano, tick.Header.Get("Nats-Schedule-Next"))
	if err != nil {
		t.Fatal(err)
	}
	stop(a)
	if left := time.Until(due); left < 500*time.Millisecond {
		t.Fatalf("serve stopped %s before the next tick; the test needs it down across it", left)
	}
	// Down across the tick due then and more than an interval past it: the
	// server skips ahead and counts the interval from the tick it fires
	// on coming back.
	time.Sleep(time.Until(due.Add(6500 * time.Millisecond)))
	a = start()
	defer stop(a)

	before := map[string]bool{}
	for _, r := range first {
		before[r.Event.DeliveryID] = true
	}
	recs := runsAfter(a, before)
	log := readLog(t, logs)
	var late string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "schedule tick is not on time (late, or fired again); starting no run") {
			late = l
		}
	}
	if !strings.Contains(late, "(the tick before it said so)") {
		t.Fatalf("the tick fired on coming back was not dropped as late by when the tick before said it was due; log:\n%s", log)
	}
	for _, r := range recs {
		if before[r.Event.DeliveryID] {
			continue
		}
		at, err := time.Parse(time.RFC3339, r.Event.Schedule.At)
		if err != nil || strings.Contains(late, "tick="+r.Event.DeliveryID+" ") || at.Before(due.Add(10*time.Second)) {
			t.Errorf("run %s of tick %s fired at %s; want only ticks after the one fired on coming back (%s)", r.ID, r.Event.DeliveryID, r.Event.Schedule.At, late)
		}
	}
}
