package contract

import (
	"fmt"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// Operations of a PlannedAction.
const (
	OpAddLabel       = "add_label"
	OpRemoveLabel    = "remove_label"
	OpAddAssignee    = "add_assignee"
	OpRemoveAssignee = "remove_assignee"
	OpState          = "state"
	OpComment        = "comment"
)

// PlannedAction is one thing actions.json asked for that the workflow's
// permissions allow, on the issue or pull request Number.
type PlannedAction struct {
	Number int    // the issue or pull request
	Op     string // OpAddLabel, ...
	Value  string // the label, the login, the state ("open", "closed"), the comment text
	Reason string // OpState: state_reason ("completed", "not_planned", "duplicate") or ""
}

// String is how reports name the action: `label "bug" added to #12`.
func (a PlannedAction) String() string {
	switch a.Op {
	case OpAddLabel:
		return fmt.Sprintf("add label %q to #%d", a.Value, a.Number)
	case OpRemoveLabel:
		return fmt.Sprintf("remove label %q from #%d", a.Value, a.Number)
	case OpAddAssignee:
		return fmt.Sprintf("assign %s to #%d", a.Value, a.Number)
	case OpRemoveAssignee:
		return fmt.Sprintf("unassign %s from #%d", a.Value, a.Number)
	case OpState:
		verb := "close"
		if a.Value == "open" {
			verb = "reopen"
		}
		if a.Reason != "" {
			return fmt.Sprintf("%s #%d as %s", verb, a.Number, a.Reason)
		}
		return fmt.Sprintf("%s #%d", verb, a.Number)
	case OpComment:
		return fmt.Sprintf("comment on #%d", a.Number)
	}
	return fmt.Sprintf("%s %q on #%d", a.Op, a.Value, a.Number)
}

// ActionNote and ActionsOutcome are workflows' (the run record keeps
// the outcome).
type (
	ActionNote     = workflows.ActionNote
	ActionsOutcome = workflows.ActionsOutcome
)

// PlanActions splits a run's actions into those p allows, in the order
// they are applied (per issue: labels, assignees, state, comment), and
// refusals with the reason. The event's issue or pull request is
// eventNumber (0: the event has none, as a push or a schedule: only
// targets can be acted on). Nothing is allowed without permissions.
func PlanActions(a *Actions, p *workflows.Permissions, eventNumber int) ([]PlannedAction, *ActionsOutcome) {
	pl := &actionPlanner{perms: p, out: &ActionsOutcome{}}
	if a == nil {
		return nil, pl.out
	}
	none := ""
	if p == nil {
		none = "the workflow declares no permissions"
	}
	top := none
	if top == "" && eventNumber == 0 {
		top = "the event has no issue or pull request: name targets"
	}
	pl.set(eventNumber, &a.ActionSet, top)
	for i := range a.Targets {
		t := &a.Targets[i]
		why := none
		if why == "" && !p.Targets {
			why = "targets need permissions.targets: true"
		}
		pl.set(t.Number, &t.ActionSet, why)
	}
	return pl.plan, pl.out
}

// actionPlanner collects PlanActions' answer.
type actionPlanner struct {
	perms *workflows.Permissions
	plan  []PlannedAction
	out   *ActionsOutcome
}

// set asks for every action of s on issue or pull request n, in the order
// they are applied; refuseAll, when set, refuses each with that reason.
func (pl *actionPlanner) set(n int, s *ActionSet, refuseAll string) {
	if s.Labels != nil {
		for _, l := range s.Labels.Add {
			pl.ask(n, OpAddLabel, l, "", refuseAll)
		}
		for _, l := range s.Labels.Remove {
			pl.ask(n, OpRemoveLabel, l, "", refuseAll)
		}
	}
	if s.Assignees != nil {
		for _, l := range s.Assignees.Add {
			pl.ask(n, OpAddAssignee, l, "", refuseAll)
		}
		for _, l := range s.Assignees.Remove {
			pl.ask(n, OpRemoveAssignee, l, "", refuseAll)
		}
	}
	if s.State != "" {
		pl.ask(n, OpState, s.State, s.Reason, refuseAll)
	}
	if s.Comment != "" {
		pl.ask(n, OpComment, s.Comment, "", refuseAll)
	}
}

// ask plans one action, or refuses it with refuseAll or the permission it
// lacks.
func (pl *actionPlanner) ask(n int, op, value, reason, refuseAll string) {
	act := PlannedAction{Number: n, Op: op, Value: value, Reason: reason}
	what := act.String()
	if n == 0 {
		what = strings.Replace(what, "#0", "the event's issue", 1)
	}
	if op == OpComment {
		what += fmt.Sprintf(" (%d characters)", len(value))
	}
	why := refuseAll
	if why == "" {
		why = permissionRefusal(pl.perms, op, value)
	}
	if why != "" {
		pl.out.Refuse(what, why)
		return
	}
	pl.plan = append(pl.plan, act)
}

// permissionRefusal is why p does not allow op with value; "" when it does.
func permissionRefusal(p *workflows.Permissions, op, value string) string {
	switch op {
	case OpAddLabel, OpRemoveLabel:
		if !p.AllowsLabel(value) {
			return fmt.Sprintf("label %q is not in permissions.labels", value)
		}
	case OpAddAssignee, OpRemoveAssignee:
		if !p.AllowsAssignee(value) {
			return fmt.Sprintf("%s is not allowed by permissions.assignees", value)
		}
	case OpState:
		if !p.AllowsState(value) {
			word := workflows.PermitClose
			if value == "open" {
				word = workflows.PermitReopen
			}
			return fmt.Sprintf("permissions.state does not include %s", word)
		}
	case OpComment:
		if !p.Comment {
			return "permissions.comment is not true"
		}
	}
	return ""
}

// AsksActions reports whether r is a final report whose steps asked for
// actions (actions.json): the report that applies them.
func (r *RunReport) AsksActions() bool {
	return r.Phase == PhaseFinal && r.Results != nil && r.Results.Actions != nil && r.Event != nil && r.Workflow != nil
}

// RefuseActions is what becomes of r's actions when none is applied: those
// the workflow's permissions allow are refused for why, the others for
// their own reason; nil when r asks for none.
func RefuseActions(r *RunReport, why string) *ActionsOutcome {
	if !r.AsksActions() {
		return nil
	}
	plan, out := PlanActions(r.Results.Actions, r.Workflow.Permissions, r.Event.Number())
	for _, p := range plan {
		out.Refuse(p.String(), why)
	}
	return out
}
