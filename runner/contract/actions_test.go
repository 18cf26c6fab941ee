package contract_test

import (
	"slices"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// A scheduled run has no issue or pull request: what actions.json asks
// for the event's own is refused with the reason, and its targets are
// acted on within permissions (the stale sweep's shape).
func TestPlanActionsOfAScheduleNeedTargets(t *testing.T) {
	ev := workflows.ScheduleEvent(workflows.Forge("github"), "o/r", workflows.ScheduleTick{Spec: "@daily"}, "schedule-sweep-0-1")
	perms := &workflows.Permissions{State: []string{workflows.PermitClose}, Comment: true, Targets: true}
	a := &contract.Actions{
		ActionSet: contract.ActionSet{Comment: "swept"},
		Targets:   []contract.TargetActions{{Number: 5, ActionSet: contract.ActionSet{State: "closed", Reason: "not_planned", Comment: "stale"}}},
	}
	plan, out := contract.PlanActions(a, perms, ev.Number())
	want := []contract.PlannedAction{{Number: 5, Op: contract.OpState, Value: "closed", Reason: "not_planned"}, {Number: 5, Op: contract.OpComment, Value: "stale"}}
	if !slices.Equal(plan, want) {
		t.Errorf("plan %+v, want %+v", plan, want)
	}
	if len(out.Refused) != 1 || out.Refused[0].Reason != "the event has no issue or pull request: name targets" {
		t.Errorf("refused %+v", out.Refused)
	}
}
