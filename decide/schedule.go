package decide

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Tick decides the run of one schedule tick (queue/schedules.go): the
// loaded workflow must still have that schedule (Match), its repository
// must be in allow_repos, and the forge's origin gives the clone URL. The
// decision is one run, or one Skip saying why the server's configuration
// refuses the tick for good (allow_repos, a forge with no origin). An
// error means the tick should be handed out again: the workflow is not
// loaded here as the tick's definition has it (a reload or a rolling
// update in progress). The run's delivery id is the tick's key, so that a
// tick handed out twice is one run (the queue's delivery dedupe).
func (d *Decider) Tick(t queue.Tick) (Decision, error) {
	def := t.Schedule
	tick := workflows.ScheduleTick{Spec: def.Spec, Timezone: def.Timezone}
	if !t.At.IsZero() {
		tick.At = t.At.UTC().Format(time.RFC3339)
	}
	ev := workflows.ScheduleEvent(def.Forge, def.Repo, tick, t.Key())
	w := d.Workflow(def.Workflow)
	if w == nil {
		return Decision{}, fmt.Errorf("starting the run of tick %s: workflow %s is not loaded", ev.DeliveryID, def.Workflow)
	}
	if m := w.Match(ev); !m.Matched {
		return Decision{}, fmt.Errorf("starting the run of tick %s: workflow %s has no such schedule now: %s", ev.DeliveryID, def.Workflow, m.Reason)
	}
	skip := func(reason string) (Decision, error) {
		return Decision{Skipped: []Skip{{w.Name, reason}}}, nil
	}
	if !d.Allowed(def.Repo) {
		return skip(fmt.Sprintf("repository %s is not in the server's allow_repos", def.Repo))
	}
	origin, err := d.deps.Forges.Get(def.Forge).GitOrigin()
	if err != nil {
		return skip(err.Error())
	}
	if ok, reason := authorize(w, ev, ""); !ok {
		return skip(reason)
	}
	ev.CloneURL = cloneURL(origin, def.Repo)
	return Decision{Runs: []*queue.RunRequest{d.newRunRequest(w, ev, "")}}, nil
}

// cloneURL is the HTTPS clone URL of repo on the forge whose git origin
// is origin.
func cloneURL(origin, repo string) string {
	return strings.TrimSuffix(origin, "/") + "/" + repo + ".git"
}
