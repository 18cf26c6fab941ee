package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// TestOutboxKeepsFindings: the stored final report carries its findings
// (a retried report still posts its review); 5,000 findings with long
// messages are cut to fit the KV's 1 MiB message, and the cut is counted.
func TestOutboxKeepsFindings(t *testing.T) {
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Review: &workflows.ReviewOptions{Filter: "added", MaxComments: 30}}}
	ev := &workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r", PullRequest: &workflows.PullRequest{Number: 1}}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1", Workflow: wf, Event: ev, Status: workflows.StatusSucceeded,
		Results: &contract.Results{Findings: []contract.Finding{{Path: "a.go", StartLine: 3, Level: "error", Rule: "x", Message: "m",
			Suggestions: []contract.Suggestion{{StartLine: 3, Text: "fixed"}}}}}}
	data, err := encodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Results == nil || len(got.Results.Findings) != 1 || got.Results.Findings[0].Suggestions[0].Text != "fixed" ||
		got.Workflow.Report.Review == nil || got.Workflow.Report.Review.MaxComments != 30 {
		t.Fatalf("decoded %+v, review %+v", got.Results, got.Workflow.Report.Review)
	}

	var many []contract.Finding
	for i := range contract.MaxResultsFindings {
		many = append(many, contract.Finding{Path: fmt.Sprintf("pkg/f%d.go", i), StartLine: i + 1, Level: "warning", Message: strings.Repeat("x", 500)})
	}
	r.Results = &contract.Results{Findings: many, Dropped: map[string]int{"outside the checkout": 2}}
	data, err = encodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxStoredReport {
		t.Fatalf("stored report of %d bytes, limit %d", len(data), maxStoredReport)
	}
	got, err = decodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(got.Results.Findings)
	if kept == 0 || kept == len(many) || got.Results.Dropped["over the outbox's size limit"] != len(many)-kept ||
		got.Results.Dropped["outside the checkout"] != 2 || len(r.Results.Findings) != len(many) {
		t.Errorf("kept %d of %d, dropped %v", kept, len(many), got.Results.Dropped)
	}
}

// TestOutboxKeepsTimedOut: a retried final report of a run that failed at
// its timeout still says so (its check run's conclusion is timed_out).
func TestOutboxKeepsTimedOut(t *testing.T) {
	wf := &workflows.Workflow{Name: "lint"}
	ev := &workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r", PullRequest: &workflows.PullRequest{Number: 1}}
	data, err := encodeReport(&contract.RunReport{Phase: contract.PhaseFinal, RunID: "r1", Workflow: wf, Event: ev,
		Status: workflows.StatusFailed, TimedOut: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.TimedOut || got.Status != workflows.StatusFailed {
		t.Errorf("decoded timed_out %v, status %s", got.TimedOut, got.Status)
	}
}
