package forge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// recActor is an Actor that records calls and keeps comments; addErr is
// what AddLabels answers (the forge down, rate limited).
type recActor struct {
	labels   []string
	calls    []string
	comments map[int][]string
	addErr   error
}

func (a *recActor) ListRepoLabels(context.Context, forge.Issue) ([]string, error) {
	return slices.Clone(a.labels), nil
}
func (a *recActor) CreateLabel(_ context.Context, _ forge.Issue, n string) error {
	a.calls = append(a.calls, "create "+n)
	a.labels = append(a.labels, n)
	return nil
}
func (a *recActor) AddLabels(_ context.Context, i forge.Issue, n []string) error {
	a.calls = append(a.calls, fmt.Sprintf("#%d +labels %v", i.Number, n))
	return a.addErr
}
func (a *recActor) RemoveLabels(_ context.Context, i forge.Issue, n []string) error {
	a.calls = append(a.calls, fmt.Sprintf("#%d -labels %v", i.Number, n))
	return nil
}
func (a *recActor) AddAssignees(_ context.Context, i forge.Issue, n []string) error {
	a.calls = append(a.calls, fmt.Sprintf("#%d +assignees %v", i.Number, n))
	return nil
}
func (a *recActor) RemoveAssignees(_ context.Context, i forge.Issue, n []string) error {
	a.calls = append(a.calls, fmt.Sprintf("#%d -assignees %v", i.Number, n))
	return nil
}
func (a *recActor) SetState(_ context.Context, i forge.Issue, s, r string) error {
	a.calls = append(a.calls, fmt.Sprintf("#%d state %s %s", i.Number, s, r))
	return nil
}
func (a *recActor) Comment(_ context.Context, i forge.Issue, marker, body string) (bool, error) {
	for _, c := range a.comments[i.Number] {
		if strings.Contains(c, marker) {
			return false, nil
		}
	}
	if a.comments == nil {
		a.comments = map[int][]string{}
	}
	a.comments[i.Number] = append(a.comments[i.Number], body)
	a.calls = append(a.calls, fmt.Sprintf("#%d comment", i.Number))
	return true, nil
}

func issueReport(p *workflows.Permissions, a *contract.Actions) *contract.RunReport {
	return &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1",
		Workflow: &workflows.Workflow{Name: "triage", Permissions: p},
		Event:    &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindIssue, Repo: "o/r", Issue: &workflows.Issue{Number: 7}},
		Results:  &contract.Results{Actions: a}}
}

func notes(ns []contract.ActionNote) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "%s [%s]\n", n.What, n.Reason)
	}
	return b.String()
}

// TestApplyActionsPermissions: what the permissions allow is applied in
// order, each other thing refused with its reason; a missing label is
// refused without create_labels.
func TestApplyActionsPermissions(t *testing.T) {
	p := &workflows.Permissions{Labels: []string{"bug", "area/*"}, Assignees: []string{"alice"},
		State: []string{workflows.PermitClose}, Comment: true}
	a := &contract.Actions{
		ActionSet: contract.ActionSet{
			Labels:    &contract.AddRemove{Add: []string{"bug", "area/queue", "wontfix", "area/new"}, Remove: []string{"triage"}},
			Assignees: &contract.AddRemove{Add: []string{"alice", "mallory"}},
			State:     "closed", Reason: "duplicate", Comment: "Duplicate of #3."},
		Targets: []contract.TargetActions{{Number: 3, ActionSet: contract.ActionSet{State: "open"}}},
	}
	act := &recActor{labels: []string{"bug", "area/queue", "triage"}}
	out, err := forge.ApplyActions(context.Background(), act, issueReport(p, a))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []string{"#7 +labels [bug area/queue]", "#7 +assignees [alice]", "#7 state closed duplicate", "#7 comment"}
	if !slices.Equal(act.calls, wantCalls) {
		t.Errorf("calls\n%q\nwant\n%q", act.calls, wantCalls)
	}
	wantRefused := `add label "wontfix" to #7 [label "wontfix" is not in permissions.labels]
remove label "triage" from #7 [label "triage" is not in permissions.labels]
assign mallory to #7 [mallory is not allowed by permissions.assignees]
reopen #3 [targets need permissions.targets: true]
add label "area/new" to #7 [label "area/new" does not exist on o/r and permissions.create_labels is not true]
`
	if got := notes(out.Refused); got != wantRefused {
		t.Errorf("refused\n%s\nwant\n%s", got, wantRefused)
	}
	if len(out.Applied) != 5 || len(out.Failed) != 0 {
		t.Errorf("applied %q, failed %q", notes(out.Applied), notes(out.Failed))
	}
	if c := act.comments[7]; len(c) != 1 || !strings.HasPrefix(c[0], "Duplicate of #3.\n\n<!-- hookrun:action:") {
		t.Errorf("comments %q", c)
	}
}

// TestApplyActionsNothingWithoutPermissions: a workflow without
// permissions gets nothing done, each thing refused.
func TestApplyActionsNothingWithoutPermissions(t *testing.T) {
	a := &contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}, Comment: "hi"}}
	act := &recActor{labels: []string{"bug"}}
	out, err := forge.ApplyActions(context.Background(), act, issueReport(nil, a))
	if err != nil {
		t.Fatal(err)
	}
	if len(act.calls) != 0 || len(out.Applied) != 0 || len(out.Refused) != 2 ||
		out.Refused[0].Reason != "the workflow declares no permissions" {
		t.Errorf("calls %q, outcome %+v", act.calls, out)
	}
}

// TestApplyActionsCreateLabelsTargetsIdempotent: create_labels creates a
// missing label; targets apply with permissions.targets; a second apply of
// the same report (a retried or re-run run) comments no second time.
func TestApplyActionsCreateLabelsTargetsIdempotent(t *testing.T) {
	p := &workflows.Permissions{Labels: []string{"stale"}, State: []string{workflows.PermitClose}, Comment: true,
		Targets: true, CreateLabels: true}
	a := &contract.Actions{Targets: []contract.TargetActions{
		{Number: 11, ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"stale"}}, State: "closed", Reason: "not_planned", Comment: "Closed as stale."}},
		{Number: 12, ActionSet: contract.ActionSet{Comment: "Closed as stale."}},
	}}
	act := &recActor{}
	r := issueReport(p, a)
	r.Event = &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPush, Repo: "o/r"} // no issue of its own
	if _, err := forge.ApplyActions(context.Background(), act, r); err != nil {
		t.Fatal(err)
	}
	want := []string{"create stale", "#11 +labels [stale]", "#11 state closed not_planned", "#11 comment", "#12 comment"}
	if !slices.Equal(act.calls, want) {
		t.Errorf("calls %q, want %q", act.calls, want)
	}
	act.calls = nil
	out, err := forge.ApplyActions(context.Background(), act, r)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"#11 +labels [stale]", "#11 state closed not_planned"}
	if !slices.Equal(act.calls, want) {
		t.Errorf("second apply: calls %q, want %q (no comment twice, no label created twice)", act.calls, want)
	}
	if n := len(act.comments[11]) + len(act.comments[12]); n != 2 {
		t.Errorf("%d comments, want 2", n)
	}
	if got := notes(out.Applied); !strings.Contains(got, "comment on #12 [posted by an earlier attempt]") {
		t.Errorf("applied %s", got)
	}
}

// actingForge is a Forge that is an Actor (recActor), with creds as its
// Credentials, and keeps the reports it is sent; the rest of the Forge is
// not called.
type actingForge struct {
	forge.Forge
	*recActor
	creds    error
	reported []*contract.RunReport
}

func (f *actingForge) Name() workflows.Forge { return "acting" }
func (f *actingForge) Credentials() error    { return f.creds }
func (f *actingForge) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	f.reported = append(f.reported, r)
	return r.Ref, nil
}

// TestReportKeepsTheApplyError: an action that fails on the forge makes
// forge.Report fail, after the report itself was sent listing it, so that
// whoever keeps the final report (the outbox) tries the whole again.
func TestReportKeepsTheApplyError(t *testing.T) {
	down := errors.New("403 secondary rate limit")
	f := &actingForge{recActor: &recActor{labels: []string{"bug"}, addErr: down}}
	r := issueReport(&workflows.Permissions{Labels: []string{"bug"}, Comment: true},
		&contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}, Comment: "triaged"}})
	_, err := forge.Report(context.Background(), f, r)
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "applying the run's actions: adding labels to o/r#7") {
		t.Errorf("forge.Report: %v, want the apply error", err)
	}
	if len(f.reported) != 1 || f.reported[0].Acted != r.Acted {
		t.Fatalf("reports sent %d, want the final report, with its outcome", len(f.reported))
	}
	wantFailed := "add label \"bug\" to #7 [adding labels to o/r#7: 403 secondary rate limit]\n"
	if got := notes(r.Acted.Failed); got != wantFailed || len(r.Acted.Applied) != 1 {
		t.Errorf("failed\n%s\nwant\n%s(applied %q)", got, wantFailed, notes(r.Acted.Applied))
	}
}

// TestReportWithoutCredentialsRefusesActions: a forge that cannot act (no
// credentials, or no forge configured under the event's name) refuses
// each action the permissions allow with the reason, in the report's
// outcome, and calls nothing; those not allowed keep their own reason.
func TestReportWithoutCredentialsRefusesActions(t *testing.T) {
	p := &workflows.Permissions{Labels: []string{"bug"}, State: []string{workflows.PermitClose}}
	a := &contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}, State: "closed", Comment: "hi"}}
	noCreds := fmt.Errorf("no acting API token is configured: set acting.token: %w", forge.ErrNoCredentials)
	for _, tc := range []struct {
		f    forge.Forge
		why  string
		rec  *recActor
		name string
	}{
		{name: "no credentials", rec: &recActor{labels: []string{"bug"}}, why: noCreds.Error()},
		{name: "not configured", f: forge.NewRegistry().Get("nowhere"), why: `forge "nowhere" is not configured: ` + forge.ErrNotConfigured.Error()},
	} {
		f := tc.f
		if f == nil {
			f = &actingForge{recActor: tc.rec, creds: noCreds}
		}
		r := issueReport(p, a)
		if _, err := forge.Report(context.Background(), f, r); err != nil {
			t.Errorf("%s: forge.Report: %v", tc.name, err)
		}
		if tc.rec != nil && len(tc.rec.calls) != 0 {
			t.Errorf("%s: the forge was asked %q", tc.name, tc.rec.calls)
		}
		if r.Acted == nil {
			t.Fatalf("%s: no outcome: the actions were dropped unsaid", tc.name)
		}
		want := fmt.Sprintf("comment on #7 (2 characters) [permissions.comment is not true]\nadd label \"bug\" to #7 [%[1]s]\nclose #7 [%[1]s]\n", tc.why)
		if got := notes(r.Acted.Refused); got != want || len(r.Acted.Applied)+len(r.Acted.Failed) != 0 {
			t.Errorf("%s: refused\n%s\nwant\n%s", tc.name, got, want)
		}
	}
}
