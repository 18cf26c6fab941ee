package runner_test

import (
	"strings"
	"testing"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/workflows"
)

// A schedule's run request passes the runner's re-check when its tick is
// of one of the workflow's schedules on that schedule's repository, and
// only then: a request naming another repository is refused.
func TestCheckRequestSchedule(t *testing.T) {
	wf, err := workflows.Parse("nightly.yaml", []byte("on: [{schedule: '0 3 * * *', repo: o/app, forge: github}]\nsteps: [{id: a, run: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tick := workflows.ScheduleTick{Spec: "0 3 * * *"}
	ok := &queue.RunRequest{Workflow: "nightly", Event: *workflows.ScheduleEvent(workflows.Forge("github"), "o/app", tick, "schedule-nightly-0-1")}
	if err := runner.CheckRequest(wf, ok); err != nil {
		t.Errorf("CheckRequest = %v, want nil", err)
	}
	other := &queue.RunRequest{Workflow: "nightly", Event: *workflows.ScheduleEvent(workflows.Forge("github"), "o/secrets", tick, "schedule-nightly-0-1")}
	if err := runner.CheckRequest(wf, other); err == nil || !strings.Contains(err.Error(), "not the trigger's github o/app") {
		t.Errorf("CheckRequest of another repository = %v, want a refusal", err)
	}
}
