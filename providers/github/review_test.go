package github

import (
	"context"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// TestReviewInStickyComment: the final report posts the review first and
// the run's comment shows what it did: the Findings section, with the
// finding the filter dropped listed (escaped).
func TestReviewInStickyComment(t *testing.T) {
	f := newFakeGitHub(t)
	newReviewFake(f)
	rep := newReporter(t, f, nil)
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentSticky,
		Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1", Attempt: 1, Workflow: wf, Event: prEvent(1), HeadSHA: sha,
		Status: workflows.StatusSucceeded, Results: &contract.Results{Findings: []contract.Finding{
			{Path: "main.go", StartLine: 14, Level: "warning", Rule: "ret", Message: "naked return"},
			{Path: "main.go", StartLine: 25, Level: "warning", Rule: "old", Message: "<script> @org/team"},
		}}}
	ref, err := rep.Report(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	c := f.comment(ref.CommentID)
	if c == nil {
		t.Fatal("no comment")
	}
	for _, want := range []string{"**Findings** · 2 findings", "1 inline comment posted", "1 new, 0 still present, 0 gone",
		"1 finding left out by the filter `added`:", "- `main.go:25` `old` &lt;script&gt; @\u200dorg/team"} {
		if !strings.Contains(c.Body, want) {
			t.Errorf("comment lacks %q:\n%s", want, c.Body)
		}
	}
	if n := f.count("POST", `.*/pulls/1/reviews`); n != 1 {
		t.Errorf("%d reviews posted, want 1", n)
	}
}

// TestReviewRefused: a review GitHub refuses (422: a line no longer in the
// diff after a new push) is said in the summary, and the report does not
// fail (the outbox would retry it in vain).
func TestReviewRefused(t *testing.T) {
	f := newFakeGitHub(t)
	rv := newReviewFake(f)
	rv.valid["main.go"] = []int{10, 11, 12} // GitHub's diff moved on
	rep := newReporter(t, f, nil)
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone,
		Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1", Attempt: 1, Workflow: wf, Event: prEvent(1), HeadSHA: sha,
		Status: workflows.StatusSucceeded, Results: &contract.Results{Findings: []contract.Finding{{Path: "main.go", StartLine: 13, Message: "m"}}}}
	s, err := rep.Review(context.Background(), r)
	if err != nil || s == nil || !strings.Contains(s.Error, "422") || s.Posted != 0 {
		t.Errorf("summary %+v, %v; want the refusal in Error and no error", s, err)
	}
	if _, err := rep.Report(context.Background(), r); err != nil {
		t.Errorf("report: %v", err)
	}
}

// TestReviewRange: a finding over lines 13-14 with a suggestion for both
// is one comment with start_line 13, line 14, both on the RIGHT side,
// and a ```suggestion of the two replacement lines.
func TestReviewRange(t *testing.T) {
	f := newFakeGitHub(t)
	rv := newReviewFake(f)
	rep := newReporter(t, f, nil)
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone,
		Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1", Attempt: 1, Workflow: wf, Event: prEvent(1), HeadSHA: sha,
		Status: workflows.StatusSucceeded, Results: &contract.Results{Findings: []contract.Finding{{Path: "main.go", StartLine: 13, EndLine: 14,
			Rule: "fatal", Message: "m", Suggestions: []contract.Suggestion{{StartLine: 13, EndLine: 14, Text: "\t\treturn err\n\t\t// done\n"}}}}}}
	if _, err := rep.Report(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(rv.comments) != 1 || rv.comments[0].StartLine != 13 || rv.comments[0].Line != 14 ||
		!strings.Contains(rv.comments[0].Body, "\n```suggestion\n\t\treturn err\n\t\t// done\n```\n") {
		t.Errorf("comments %+v", rv.comments)
	}
}

// TestReviewLeavesOldMarkers: a finding comment from before markers named
// the workflow (<!-- hookrun:finding:<fingerprint> -->) is no run's: it is
// not edited "Fixed in", not counted, and its finding, found again, gets a
// comment of the workflow's.
func TestReviewLeavesOldMarkers(t *testing.T) {
	f := newFakeGitHub(t)
	rv := newReviewFake(f)
	rep := newReporter(t, f, nil)
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone,
		Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	found := contract.Finding{Path: "main.go", StartLine: 13, Rule: "fatal", Message: "exits"}
	fixed := contract.Finding{Path: "main.go", StartLine: 14, Rule: "ret", Message: "returns"}
	for i, fd := range []contract.Finding{found, fixed} {
		old := "<!-- hookrun:finding:" + fd.Fingerprint(map[int]string{13: "\t\tlog.Fatal(\"no config\")", 14: "\t\treturn"}[fd.StartLine]) +
			" -->\n**warning** · `" + fd.Rule + "`\n\n" + fd.Message + "\n"
		rv.comments = append(rv.comments, &fakeReviewComment{ID: int64(900 + i), Path: "main.go", Line: fd.StartLine, Login: f.bot, Body: old, CommitID: sha})
	}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1", Attempt: 1, Workflow: wf, Event: prEvent(1), HeadSHA: sha,
		Status: workflows.StatusSucceeded, Results: &contract.Results{Findings: []contract.Finding{found}}}
	s, err := rep.Review(context.Background(), r)
	if err != nil || s == nil || s.Posted != 1 || s.New != 1 || s.Still != 0 || s.Gone != 0 {
		t.Fatalf("summary %+v, %v; want the finding posted, the old comments not counted", s, err)
	}
	if len(rv.marked) != 0 || len(rv.comments) != 3 || review.KeyOf(rv.comments[2].Body) == "" {
		t.Errorf("marked %q, comments %d; want none marked and one new comment with a key", rv.marked, len(rv.comments))
	}
}
