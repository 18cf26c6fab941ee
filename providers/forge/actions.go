package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Issue is the issue or pull (merge) request an action applies to.
type Issue struct {
	Repo   string // Event.Repo: owner/name, or group/.../project
	Number int    // the issue's or pull request's number within the repository
	// PullRequest: Number is the event's own pull or merge request's,
	// rather than an issue's; a forge that numbers both alike and acts on
	// both through its issues API ignores it.
	PullRequest bool
	// InstallationID and ProjectID are the event's (workflows.Event), for
	// a forge whose API needs them; 0 otherwise.
	InstallationID int64
	ProjectID      int64
}

// String is owner/name#N.
func (i Issue) String() string { return i.Repo + "#" + strconv.Itoa(i.Number) }

// Actor changes issues and pull requests on a forge with hookrun's own
// credentials: what a run's actions.json asked for and the workflow's
// permissions allow (ApplyActions decides; an Actor does what it is told).
// Each method is idempotent: adding a label an issue has, or removing
// one it has not, succeeds.
type Actor interface {
	// ListRepoLabels are the names of the labels the repository has.
	ListRepoLabels(ctx context.Context, i Issue) ([]string, error)
	// CreateLabel creates the label name on the repository.
	CreateLabel(ctx context.Context, i Issue, name string) error
	// AddLabels and RemoveLabels add labels to i and remove them; the
	// labels exist on the repository.
	AddLabels(ctx context.Context, i Issue, names []string) error
	RemoveLabels(ctx context.Context, i Issue, names []string) error
	// AddAssignees and RemoveAssignees assign and unassign logins.
	AddAssignees(ctx context.Context, i Issue, logins []string) error
	RemoveAssignees(ctx context.Context, i Issue, logins []string) error
	// SetState closes (state "closed") or reopens ("open") i; reason is
	// "completed", "not_planned", "duplicate" or "", passed on where the
	// forge records one.
	SetState(ctx context.Context, i Issue, state, reason string) error
	// Comment posts body on i unless a comment of hookrun's own on i
	// already contains marker (an earlier attempt posted it): posted says
	// which. A marker in another user's comment does not count.
	Comment(ctx context.Context, i Issue, marker, body string) (posted bool, err error)
}

// ActionMarker is the hidden marker of the comment a run's actions.json
// asked for: a digest of the workflow, the issue and the text, so that a
// redelivered, retried or re-run run posting the same text there again
// finds it and does not post it twice.
func ActionMarker(workflow string, number int, body string) string {
	h := sha256.New()
	for _, s := range []string{workflow, strconv.Itoa(number), body} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "<!-- hookrun:action:" + hex.EncodeToString(h.Sum(nil))[:24] + " -->"
}

// EventIssue is the issue or pull request an event is about (Number 0:
// none, as for a push).
func EventIssue(e *workflows.Event) Issue {
	i := Issue{Repo: e.Repo, InstallationID: e.InstallationID, ProjectID: e.ProjectID}
	switch {
	case e.PullRequest != nil:
		i.Number, i.PullRequest = e.PullRequest.Number, true
	case e.Issue != nil:
		i.Number = e.Issue.Number
	}
	return i
}

// ApplyActions applies the final report r's actions (r.Results.Actions)
// within its workflow's permissions through a, and returns what became of
// them; the error joins the forge's errors (the whole is then worth
// trying again: every step is idempotent). Labels missing on the
// repository are created with permissions.create_labels, else refused.
// Targets share the event's repository.
func ApplyActions(ctx context.Context, a Actor, r *contract.RunReport) (*contract.ActionsOutcome, error) {
	if r.Results == nil || r.Results.Actions == nil || r.Event == nil || r.Workflow == nil {
		return nil, nil
	}
	ev := EventIssue(r.Event)
	plan, out := contract.PlanActions(r.Results.Actions, r.Workflow.Permissions, ev.Number)
	ap := &applier{a: a, wf: r.Workflow, out: out}
	// Group by issue, keeping the plan's order of issues and of operations.
	var numbers []int
	for _, p := range plan {
		if !slices.Contains(numbers, p.Number) {
			numbers = append(numbers, p.Number)
		}
	}
	for _, n := range numbers {
		i := ev
		if n != ev.Number {
			i.Number, i.PullRequest = n, false // targets are issues, or pull requests through the issues API
		}
		batch := map[string][]contract.PlannedAction{}
		for _, p := range plan {
			if p.Number == n {
				batch[p.Op] = append(batch[p.Op], p)
			}
		}
		ap.issue(ctx, i, batch)
	}
	return out, errors.Join(ap.errs...)
}

// applier applies one report's planned actions, issue by issue, and
// keeps what became of them.
type applier struct {
	a   Actor
	wf  *workflows.Workflow
	out *contract.ActionsOutcome
	// errs are the forge's distinct errors.
	errs []error
	// repoLabels are the repository's labels once listed (labelsKnown).
	repoLabels  []string
	labelsKnown bool
}

// fail records what as failed with err.
func (ap *applier) fail(what string, err error) {
	ap.out.Failed = append(ap.out.Failed, contract.ActionNote{What: what, Reason: err.Error()})
	if !slices.Contains(ap.errs, err) {
		ap.errs = append(ap.errs, err)
	}
}

// issue applies the actions batch (by operation) planned for i.
func (ap *applier) issue(ctx context.Context, i Issue, batch map[string][]contract.PlannedAction) {
	a, out, fail := ap.a, ap.out, ap.fail
	if adds := batch[contract.OpAddLabel]; len(adds) > 0 {
		ap.addLabels(ctx, i, adds)
	}
	if rm := batch[contract.OpRemoveLabel]; len(rm) > 0 {
		apply(out, fail, rm, a.RemoveLabels(ctx, i, values(rm)), "removing labels from "+i.String())
	}
	if add := batch[contract.OpAddAssignee]; len(add) > 0 {
		apply(out, fail, add, a.AddAssignees(ctx, i, values(add)), "assigning "+i.String())
	}
	if rm := batch[contract.OpRemoveAssignee]; len(rm) > 0 {
		apply(out, fail, rm, a.RemoveAssignees(ctx, i, values(rm)), "unassigning "+i.String())
	}
	for _, p := range batch[contract.OpState] {
		apply(out, fail, []contract.PlannedAction{p}, a.SetState(ctx, i, p.Value, p.Reason), "setting the state of "+i.String())
	}
	for _, p := range batch[contract.OpComment] {
		marker := ActionMarker(ap.wf.Name, i.Number, p.Value)
		posted, err := a.Comment(ctx, i, marker, p.Value+"\n\n"+marker)
		if err != nil {
			fail(p.String(), fmt.Errorf("commenting on %s: %w", i, err))
			continue
		}
		note := contract.ActionNote{What: p.String()}
		if !posted {
			note.Reason = "posted by an earlier attempt"
		}
		out.Applied = append(out.Applied, note)
	}
}

// addLabels adds the labels adds name to i, creating those the
// repository lacks with permissions.create_labels and refusing them
// otherwise.
func (ap *applier) addLabels(ctx context.Context, i Issue, adds []contract.PlannedAction) {
	if !ap.labelsKnown {
		ls, err := ap.a.ListRepoLabels(ctx, i)
		if err != nil {
			err = fmt.Errorf("listing the labels of %s: %w", i.Repo, err)
			for _, p := range adds {
				ap.fail(p.String(), err)
			}
			return
		}
		ap.repoLabels, ap.labelsKnown = ls, true
	}
	var names []string
	var done []contract.PlannedAction
	for _, p := range adds {
		if !slices.Contains(ap.repoLabels, p.Value) {
			if !ap.wf.Permissions.CreateLabels {
				ap.out.Refuse(p.String(), fmt.Sprintf("label %q does not exist on %s and permissions.create_labels is not true", p.Value, i.Repo))
				continue
			}
			if err := ap.a.CreateLabel(ctx, i, p.Value); err != nil {
				ap.fail(p.String(), fmt.Errorf("creating label %q on %s: %w", p.Value, i.Repo, err))
				continue
			}
			ap.repoLabels = append(ap.repoLabels, p.Value)
		}
		names = append(names, p.Value)
		done = append(done, p)
	}
	if len(names) > 0 {
		apply(ap.out, ap.fail, done, ap.a.AddLabels(ctx, i, names), "adding labels to "+i.String())
	}
}

// apply records the actions of one call as applied, or as failed with
// err.
func apply(out *contract.ActionsOutcome, fail func(string, error), acts []contract.PlannedAction, err error, doing string) {
	if err != nil {
		err = fmt.Errorf("%s: %w", doing, err)
	}
	for _, p := range acts {
		if err != nil {
			fail(p.String(), err)
			continue
		}
		out.Applied = append(out.Applied, contract.ActionNote{What: p.String()})
	}
}

func values(acts []contract.PlannedAction) []string {
	out := make([]string, len(acts))
	for i, p := range acts {
		out[i] = p.Value
	}
	return out
}

// Report sends r to f. A final report whose steps asked for actions
// (r.Results.Actions) first has them applied (Act); r.Acted then says
// what became of them, for the comment to list. An action that failed on
// the forge makes the error non-nil, joined with the report's, so that
// whoever keeps the final report (the outbox) tries the whole again: each
// step is idempotent, and the comment is posted once.
func Report(ctx context.Context, f Forge, r *contract.RunReport) (contract.ReportRef, error) {
	var applyErr error
	if r.AsksActions() {
		applyErr = Act(ctx, f, r)
	}
	ref, err := f.Report(ctx, r)
	return ref, errors.Join(err, applyErr)
}

// Act applies the final report r's actions within its workflow's
// permissions through f, when f is an Actor with credentials, and sets
// r.Acted to what became of them; it sends no report (the comment and
// status of a superseded run are the newer run's). When f cannot act (it
// has no credentials, or is no Actor), every action is refused with the
// reason, in r.Acted, rather than dropped unsaid. The error says what
// failed on the forge.
func Act(ctx context.Context, f Forge, r *contract.RunReport) error {
	if !r.AsksActions() {
		return nil
	}
	a, ok := f.(Actor)
	why := f.Credentials() // says which forge and what to configure
	if why == nil && !ok {
		why = fmt.Errorf("forge %s cannot act on issues and pull requests", f.Name())
	}
	if why != nil {
		r.Acted = contract.RefuseActions(r, why.Error())
		return nil
	}
	out, err := ApplyActions(ctx, a, r)
	r.Acted = out
	if err != nil {
		return fmt.Errorf("applying the run's actions: %w", err)
	}
	return nil
}

var _ Actor = Guarded{}

// Toggle is list with v added (add, when it is not in it) or removed (its
// first occurrence, when it is): an assignee list edited in place.
func Toggle[T comparable](list []T, v T, add bool) []T {
	k := slices.Index(list, v)
	switch {
	case add && k < 0:
		return append(list, v)
	case !add && k >= 0:
		return slices.Delete(list, k, k+1)
	}
	return list
}
