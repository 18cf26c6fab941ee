package github

import (
	"context"
	"strings"
	"testing"

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
