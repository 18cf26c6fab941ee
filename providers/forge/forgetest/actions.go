package forgetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// actionsForge is the forge under test built for an Actions case, as an
// Actor, with its fake as an IssueFake.
func actionsForge(t *testing.T, h Harness) (forge.Forge, forge.Actor, IssueFake) {
	t.Helper()
	f, fake := h.New(t, true)
	act, ok := f.(forge.Actor)
	if !ok {
		t.Fatalf("%s's forge is no forge.Actor", h.Name)
	}
	issues, ok := fake.(IssueFake)
	if !ok || h.Issue == 0 {
		t.Fatalf("%s's harness has no issue fake (Harness.Issue, IssueFake)", h.Name)
	}
	return f, act, issues
}

// actionsWorkflow is a workflow whose permissions allow every action.
func actionsWorkflow() *workflows.Workflow {
	return &workflows.Workflow{Name: "forgetest", Permissions: &workflows.Permissions{Labels: []string{"bug", "area/*"},
		AnyAssignee: true, State: []string{workflows.PermitClose, workflows.PermitReopen}, Comment: true, Targets: true}}
}

// actionsReport is the final report of a run of wf on ev whose steps asked
// for a.
func actionsReport(wf *workflows.Workflow, ev *workflows.Event, a *contract.Actions) *contract.RunReport {
	return &contract.RunReport{Phase: contract.PhaseFinal, RunID: "01JDQ4V6RZ3M8W1K9T2XGQY7PA", Workflow: wf, Event: ev,
		Status: workflows.StatusSucceeded, Results: &contract.Results{Actions: a}}
}

// actionCases are the Actions cases.
func actionCases(t *testing.T, h Harness) {
	t.Run("Targets", func(t *testing.T) { actions(t, h) })
	t.Run("StateReasons", func(t *testing.T) { stateReasons(t, h) })
	t.Run("EventsIssue", func(t *testing.T) { ownActions(t, h, false) })
	t.Run("EventsPullRequest", func(t *testing.T) { ownActions(t, h, true) })
}

// actions: the forge's Actor labels, assigns, closes and comments on an
// issue (a target) as forge.ApplyActions tells it; a label missing on the
// repository is refused; a second apply comments no second time; then it
// unlabels, unassigns and reopens.
func actions(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, act, issues := actionsForge(t, h)
	wf := actionsWorkflow()
	ev := *h.Event
	report := func(s contract.ActionSet) *contract.RunReport {
		return actionsReport(wf, &ev, &contract.Actions{Targets: []contract.TargetActions{{Number: h.Issue, ActionSet: s}}})
	}
	first := report(contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug", "area/queue", "area/new"}},
		Assignees: &contract.AddRemove{Add: []string{h.Assignee}}, State: "closed", Reason: "completed", Comment: "forgetest triage"})
	for attempt := 1; attempt <= 2; attempt++ {
		out, err := forge.ApplyActions(ctx, act, first)
		if err != nil {
			t.Fatalf("apply %d: %v", attempt, err)
		}
		if len(out.Refused) != 1 || !strings.Contains(out.Refused[0].Reason, `"area/new" does not exist`) || len(out.Failed) != 0 {
			t.Errorf("apply %d: refused %+v, failed %+v; want area/new refused as missing", attempt, out.Refused, out.Failed)
		}
		got := issues.Issue(h.Issue, false)
		slices.Sort(got.Labels)
		if !slices.Equal(got.Labels, []string{"area/queue", "bug"}) || !slices.Equal(got.Assignees, []string{h.Assignee}) || got.State != "closed" {
			t.Errorf("apply %d: issue has %+v", attempt, got)
		}
		if len(got.Comments) != 1 || !strings.HasPrefix(got.Comments[0], "forgetest triage") || !strings.Contains(got.Comments[0], "<!-- hookrun:action:") {
			t.Errorf("apply %d: comments %q, want the one marked comment", attempt, got.Comments)
		}
	}
	out, err := forge.ApplyActions(ctx, act, report(contract.ActionSet{Labels: &contract.AddRemove{Remove: []string{"bug"}},
		Assignees: &contract.AddRemove{Remove: []string{h.Assignee}}, State: "open"}))
	if err != nil || len(out.Applied) != 3 {
		t.Fatalf("undo: %+v, %v", out, err)
	}
	if got := issues.Issue(h.Issue, false); !slices.Equal(got.Labels, []string{"area/queue"}) || len(got.Assignees) != 0 || got.State != "open" {
		t.Errorf("after undo: %+v", got)
	}

	// forge.Report applies the final report's actions, then lists them in
	// the run's comment: the refused one with its reason.
	wf.Report = workflows.Report{Comment: workflows.CommentSticky}
	rep := report(contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug", "wontfix"}}})
	if _, err := forge.Report(ctx, f, rep); err != nil {
		t.Fatalf("forge.Report: %v", err)
	}
	if rep.Acted == nil || len(rep.Acted.Applied) != 1 || len(rep.Acted.Refused) != 1 {
		t.Errorf("forge.Report: acted %+v", rep.Acted)
	}
	found := false
	for _, c := range issues.Comments() {
		found = found || strings.Contains(c, "**Actions**") && strings.Contains(c, "label \"wontfix\" is not in permissions.labels")
	}
	if !found {
		t.Errorf("no run comment lists the refused label: %v", issues.Comments())
	}
	if got := issues.Issue(h.Issue, false); !slices.Contains(got.Labels, "bug") {
		t.Errorf("forge.Report: issue labels %q, want bug added", got.Labels)
	}
}

// stateReasons: closing with each reason actions.json names sends the
// forge's own (Harness.Reasons; GitHub has no duplicate), and reopening
// sends the reopen reason; a forge without reasons is sent none.
func stateReasons(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, act, issues := actionsForge(t, h)
	wf := actionsWorkflow()
	ev := *h.Event
	set := func(state, reason string) {
		t.Helper()
		rep := actionsReport(wf, &ev, &contract.Actions{Targets: []contract.TargetActions{{Number: h.Issue,
			ActionSet: contract.ActionSet{State: state, Reason: reason}}}})
		if out, err := forge.ApplyActions(ctx, act, rep); err != nil || len(out.Applied) != 1 {
			t.Fatalf("setting %s (%s): %+v, %v", state, reason, out, err)
		}
		key := reason
		if state == "open" {
			key = "reopen"
		}
		want := h.Reasons[key] // "" for a forge without reasons
		if got := issues.Issue(h.Issue, false); got.State != state || got.Reason != want {
			t.Errorf("after %s (%s): state %q, reason %q; want %q, %q", state, reason, got.State, got.Reason, state, want)
		}
	}
	for _, reason := range []string{"completed", "not_planned", "duplicate"} {
		set("closed", reason)
		set("open", "")
	}
}

// ownActions: without targets, a run's actions apply to the event's own
// issue, or (pr) to the event's own pull (merge) request: labels,
// assignees, state and one comment, then undone.
func ownActions(t *testing.T, h Harness, pr bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, act, issues := actionsForge(t, h)
	wf := actionsWorkflow()
	ev := *h.Event
	n := ev.PullRequest.Number
	if !pr {
		ev.Kind, ev.Action, ev.PullRequest, ev.Comment = workflows.KindIssue, "opened", nil, nil
		ev.Issue, n = &workflows.Issue{Number: h.Issue, Title: "triage me"}, h.Issue
	}
	apply := func(s contract.ActionSet) {
		t.Helper()
		out, err := forge.ApplyActions(ctx, act, actionsReport(wf, &ev, &contract.Actions{ActionSet: s}))
		if err != nil || len(out.Refused) != 0 || len(out.Failed) != 0 {
			t.Fatalf("apply: %+v, %v", out, err)
		}
	}
	for attempt := 1; attempt <= 2; attempt++ {
		apply(contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}, Assignees: &contract.AddRemove{Add: []string{h.Assignee}},
			State: "closed", Reason: "not_planned", Comment: "forgetest own"})
		got := issues.Issue(n, pr)
		if !slices.Equal(got.Labels, []string{"bug"}) || !slices.Equal(got.Assignees, []string{h.Assignee}) || got.State != "closed" ||
			got.Reason != h.Reasons["not_planned"] {
			t.Errorf("apply %d: %s %d has %+v", attempt, ev.Kind, n, got)
		}
		if len(got.Comments) != 1 || !strings.HasPrefix(got.Comments[0], "forgetest own") || !strings.Contains(got.Comments[0], "<!-- hookrun:action:") {
			t.Errorf("apply %d: comments %q, want the one marked comment", attempt, got.Comments)
		}
	}
	apply(contract.ActionSet{Labels: &contract.AddRemove{Remove: []string{"bug"}}, Assignees: &contract.AddRemove{Remove: []string{h.Assignee}}, State: "open"})
	if got := issues.Issue(n, pr); len(got.Labels) != 0 || len(got.Assignees) != 0 || got.State != "open" {
		t.Errorf("after undo: %s %d has %+v", ev.Kind, n, got)
	}
}

// noCredentialsActions: forge.Report of a forge without credentials
// refuses a final report's actions, each with the reason (the forge's
// Credentials: which forge, what to configure), rather than drop them
// unsaid.
func noCredentialsActions(ctx context.Context, t *testing.T, h Harness, f forge.Forge) {
	t.Helper()
	ev := *h.Event
	rep := actionsReport(actionsWorkflow(), &ev, &contract.Actions{ActionSet: contract.ActionSet{
		Labels: &contract.AddRemove{Add: []string{"bug"}}, Comment: "forgetest"}})
	if _, err := forge.Report(ctx, f, rep); err != nil {
		t.Errorf("forge.Report with actions: %v", err)
	}
	why := f.Credentials().Error()
	if rep.Acted == nil || len(rep.Acted.Refused) != 2 || len(rep.Acted.Applied)+len(rep.Acted.Failed) != 0 {
		t.Fatalf("forge.Report with actions: acted %+v, want both refused", rep.Acted)
	}
	for _, n := range rep.Acted.Refused {
		if n.Reason != why || !strings.Contains(n.Reason, string(h.Name)) {
			t.Errorf("refused %q for %q, want %q (naming %s)", n.What, n.Reason, why, h.Name)
		}
	}
}
