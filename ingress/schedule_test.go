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
	env := newEnv(t, Config{AllowRepos: []string{"myorg/*"}, Forges: reg},
		map[string]string{"nightly.yaml": nightlyWorkflow, "outside.yaml": outsideWorkflow})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defs := queue.SchedulesOf(env.srv.src.Workflows())
	if len(defs) != 2 || defs[0].Workflow != "nightly" || defs[1].Workflow != "outside" {
		t.Fatalf("schedules %+v", defs)
	}
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
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
