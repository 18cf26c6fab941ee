package runner_test

import (
	"context"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// outOfOrder is why an older run's actions are refused once a newer run
// of triage acted on pull request 7.
const outOfOrder = "a newer run of workflow triage has acted on #7 already: this older run's actions, applied after its, could undo them"

// addBug and removeBug are actions.json asking to add (with a comment)
// and remove label bug on the event's pull request.
var (
	addBug    = &contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}, Comment: "Thanks!"}}
	removeBug = &contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Remove: []string{"bug"}}}}
)

// The final report of a run whose sticky comment a newer run reported in
// is not sent, but its actions are applied (the label, a comment of its
// own); the newer run's actions then apply after them; an older run's
// actions coming after the newer run's are refused with the reason, not
// applied: they would undo the newer run's.
func TestNewestOnlyAppliesASupersededRunsActions(t *testing.T) {
	t.Parallel()
	gh, rep := newestOnlyGitHub(t)
	wf := enginetest.Parse(t, "name: triage\npermissions: {labels: [bug], comment: true}\nreport: {comment: sticky, status: false}\nsteps: [{id: a, run: 'true'}]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(run string, phase contract.Phase, ref contract.ReportRef, acts *contract.Actions) *contract.RunReport {
		t.Helper()
		r := &contract.RunReport{Phase: phase, RunID: run, Attempt: 1, Workflow: wf, Event: samplePR(), Status: workflows.StatusRunning, Ref: ref}
		if phase == contract.PhaseFinal {
			r.Status, r.Results = workflows.StatusSucceeded, &contract.Results{Actions: acts}
		}
		if _, err := rep.Report(ctx, r); err != nil {
			t.Fatalf("%s %s: %v", run, phase, err)
		}
		return r
	}
	const older, newer = "01J00OLDER0000000000000000", "01J01NEWER0000000000000000"
	send(newer, contract.PhaseStart, contract.ReportRef{}, nil)
	if got := gh.changes(); !slices.Equal(got, []string{"POST /repos/octo/demo/issues/7/comments"}) {
		t.Fatalf("the newer run's start: %q, want its sticky comment", got)
	}

	old := send(older, contract.PhaseFinal, contract.ReportRef{CommentID: 100}, addBug)
	want := &contract.ActionsOutcome{Applied: []contract.ActionNote{{What: `add label "bug" to #7`}, {What: "comment on #7"}}}
	if !reflect.DeepEqual(old.Acted, want) {
		t.Errorf("the superseded run's actions: %+v, want %+v", old.Acted, want)
	}
	_, labels, comments := gh.snapshot()
	if !slices.Equal(labels, []string{"bug"}) {
		t.Errorf("labels on #7 %q, want the superseded run's bug", labels)
	}
	marker := forge.ActionMarker("triage", 7, "Thanks!")
	if len(comments) != 2 || comments[1] != "Thanks!\n\n"+marker {
		t.Errorf("comments %q, want the superseded run's own comment after the sticky one", comments)
	}
	if got := gh.changes()[1:]; !slices.Equal(got, []string{"POST /repos/octo/demo/issues/7/labels", "POST /repos/octo/demo/issues/7/comments"}) {
		t.Errorf("the superseded run's final report: %q, want its label and comment, not the sticky comment's edit", got)
	}

	fresh := send(newer, contract.PhaseFinal, contract.ReportRef{CommentID: 100}, removeBug)
	if fresh.Acted == nil || len(fresh.Acted.Applied) != 1 || len(fresh.Acted.Refused)+len(fresh.Acted.Failed) != 0 {
		t.Errorf("the newer run's actions: %+v, want the label removed", fresh.Acted)
	}
	late := send(older, contract.PhaseFinal, contract.ReportRef{CommentID: 100}, addBug) // delivered again, after the newer acted
	want = &contract.ActionsOutcome{Refused: []contract.ActionNote{{What: `add label "bug" to #7`, Reason: outOfOrder}, {What: "comment on #7", Reason: outOfOrder}}}
	if !reflect.DeepEqual(late.Acted, want) {
		t.Errorf("an older run's actions after the newer's: %+v, want %+v", late.Acted, want)
	}
	if _, labels, _ := gh.snapshot(); len(labels) != 0 {
		t.Errorf("labels on #7 %q: the older run's undid the newer run's removal", labels)
	}
	if got := gh.changes()[3:]; !slices.Equal(got, []string{"DELETE /repos/octo/demo/issues/7/labels/bug", "PATCH /repos/octo/demo/issues/comments/100"}) {
		t.Errorf("after the superseded run: %q, want the newer run's removal and its sticky comment, nothing of the older run", got)
	}
}

// supersedeInOutbox runs triage while the forge's labels are rate
// limited, so that its final report waits in the outbox (its comment
// landed, its label did not), then records a newer run of triage on the
// same pull request as started: the kept report is superseded. It
// returns the older run's id and the forge's changes so far.
func supersedeInOutbox(t *testing.T, f *fixture, gh *actionsGitHub) (string, int) {
	t.Helper()
	id := f.publish("triage", nil)
	rec := f.waitRecord(id, 30*time.Second, "the run finished", terminal)
	if rec.Actions == nil || len(rec.Actions.Failed) != 1 {
		t.Fatalf("record after the run: actions %+v, want the label failed", rec.Actions)
	}
	if list := outboxLen(t, f.q); len(list) != 1 || list[0].RunID != id {
		t.Fatalf("outbox after the run: %+v, want the final report of %s", list, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := samplePR()
	ev.Raw = nil
	if _, err := f.q.Runs().Create(ctx, &stores.RunRecord{ID: "r2", Workflow: "triage", Repo: ev.Repo,
		Status: workflows.StatusRunning, Event: *ev}); err != nil {
		t.Fatal(err)
	}
	return id, len(gh.changes())
}

// An undelivered final report that a newer run superseded is not sent
// (the sticky comment is the newer run's), but its actions are applied,
// and its run record says so.
func TestOutboxAppliesTheActionsOfASupersededReport(t *testing.T) {
	t.Parallel()
	gh, _, f, ob := limitedTriage(t)
	id, before := supersedeInOutbox(t, f, gh)

	gh.limited.Store(false)
	ob.Start()
	rec := f.waitRecord(id, 15*time.Second, "the record's actions applied by the outbox", func(r *stores.RunRecord) bool {
		return r.Actions != nil && len(r.Actions.Failed) == 0
	})
	if want := (&workflows.ActionsOutcome{Applied: []workflows.ActionNote{{What: `add label "bug" to #7`}}}); !reflect.DeepEqual(rec.Actions, want) {
		t.Errorf("record's actions %+v, want %+v", rec.Actions, want)
	}
	eventually(t, 10*time.Second, "the outbox empty", func() bool { return len(outboxLen(t, f.q)) == 0 })
	if _, labels, _ := gh.snapshot(); !slices.Equal(labels, []string{"bug"}) {
		t.Errorf("labels on #7 %q, want bug", labels)
	}
	if got := gh.changes()[before:]; !slices.Equal(got, []string{"POST /repos/octo/demo/issues/7/labels"}) {
		t.Errorf("the outbox sent %q, want the label alone (the sticky comment is the newer run's)", got)
	}
	if n := counter(t, ob, "hookrun_report_outbox_delivered_total"); n != 0 {
		t.Errorf("%v final reports counted delivered, want 0 (only its actions were)", n)
	}
}

// An undelivered final report that a newer run superseded, after the
// newer run acted, has its actions refused with the reason: applied
// after the newer run's they would undo them.
func TestOutboxRefusesSupersededActionsAfterANewerRunActed(t *testing.T) {
	t.Parallel()
	gh, url, f, ob := limitedTriage(t)
	id, _ := supersedeInOutbox(t, f, gh)

	gh.limited.Store(false)
	rep := runner.NewestOnly(forgeReports{githubForge(t, url, "ghs_test")}, f.q.Groups(), quietLogger())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	newer := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r2", Attempt: 1, Workflow: enginetest.Parse(t, triageWorkflow),
		Event: samplePR(), Status: workflows.StatusSucceeded, Ref: contract.ReportRef{CommentID: 100}, Results: &contract.Results{Actions: removeBug}}
	if _, err := rep.Report(ctx, newer); err != nil || newer.Acted == nil || len(newer.Acted.Applied) != 1 {
		t.Fatalf("the newer run's final report: %v, acted %+v", err, newer.Acted)
	}
	before := len(gh.changes())

	ob.Start()
	rec := f.waitRecord(id, 15*time.Second, "the record's actions refused by the outbox", func(r *stores.RunRecord) bool {
		return r.Actions != nil && len(r.Actions.Failed) == 0
	})
	if want := (&workflows.ActionsOutcome{Refused: []workflows.ActionNote{{What: `add label "bug" to #7`, Reason: outOfOrder}}}); !reflect.DeepEqual(rec.Actions, want) {
		t.Errorf("record's actions %+v, want %+v", rec.Actions, want)
	}
	eventually(t, 10*time.Second, "the outbox empty", func() bool { return len(outboxLen(t, f.q)) == 0 })
	if got := gh.changes()[before:]; len(got) != 0 {
		t.Errorf("the outbox sent %q for a report superseded after the newer run acted", got)
	}
	if _, labels, _ := gh.snapshot(); len(labels) != 0 {
		t.Errorf("labels on #7 %q, want none (the newer run removed bug)", labels)
	}
}

// The order holds for reports that supersede nothing too: an older run
// of a workflow commenting anew each run, reporting after a newer run
// acted, posts its report, with its actions refused and listed, and
// applies none.
func TestNewestOnlyRefusesAnOlderRunsActionsAfterANewerRunActed(t *testing.T) {
	t.Parallel()
	gh, rep := newestOnlyGitHub(t)
	wf := enginetest.Parse(t, "name: triage\npermissions: {labels: [bug]}\nreport: {comment: new, status: false}\nsteps: [{id: a, run: 'true'}]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	final := func(run string, acts *contract.Actions) *contract.RunReport {
		t.Helper()
		r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: run, Attempt: 1, Workflow: wf, Event: samplePR(),
			Status: workflows.StatusSucceeded, Results: &contract.Results{Actions: acts}}
		if _, err := rep.Report(ctx, r); err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		return r
	}
	onlyLabels := &contract.Actions{ActionSet: contract.ActionSet{Labels: addBug.Labels}}
	final("01J01NEWER0000000000000000", removeBug)
	old := final("01J00OLDER0000000000000000", onlyLabels)
	want := &contract.ActionsOutcome{Refused: []contract.ActionNote{{What: `add label "bug" to #7`, Reason: outOfOrder}}}
	if !reflect.DeepEqual(old.Acted, want) {
		t.Errorf("the older run's actions: %+v, want %+v", old.Acted, want)
	}
	_, labels, comments := gh.snapshot()
	if len(labels) != 0 {
		t.Errorf("labels on #7 %q: the older run's undid the newer run's removal", labels)
	}
	if len(comments) != 2 || !strings.Contains(comments[1], "🚫 `add label \"bug\" to #7` refused: `"+outOfOrder+"`") {
		t.Errorf("comments %q, want the older run's report listing its refused action", comments)
	}
	want2 := []string{"DELETE /repos/octo/demo/issues/7/labels/bug", "POST /repos/octo/demo/issues/7/comments", "POST /repos/octo/demo/issues/7/comments"}
	if got := gh.changes(); !slices.Equal(got, want2) {
		t.Errorf("requests %q, want %q", got, want2)
	}
}

// newestOnlyGitHub is a fake GitHub for actions and the NewestOnly
// reporter in front of it, keeping its order in a real queue's groups.
func newestOnlyGitHub(t *testing.T) (*actionsGitHub, contract.Reporter) {
	t.Helper()
	gh := &actionsGitHub{t: t}
	srv := httptest.NewServer(gh)
	t.Cleanup(srv.Close)
	q := openQueue(t, t.TempDir())
	t.Cleanup(func() { _ = q.Close() })
	return gh, runner.NewestOnly(forgeReports{githubForge(t, srv.URL, "ghs_test")}, q.Groups(), quietLogger())
}
