package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// appFake is a fakeGitHub in App mode serving the review and checks
// endpoints, and a reporter authenticated as that App.
func appFake(t *testing.T) (*fakeGitHub, *Reporter) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := newFakeGitHub(t)
	f.token = ""
	f.appID, f.appKey, f.appSlug, f.bot = 4242, &key.PublicKey, "hookrun-test", "hookrun-test[bot]"
	f.tokenTTL = []time.Duration{time.Hour}
	newReviewFake(f)
	return f, newReporter(t, f, func(c *Config) { c.Token = ""; c.AppID = 4242; c.PrivateKey = pemKey })
}

// TestCheckRunLifecycle: with an App, a run is the check run
// hookrun/<workflow> on the head SHA, in_progress at start, completed at
// the end with its conclusion, the rendered report as summary, the run's
// page as details_url, and its 120 findings as annotations in 3 PATCHes
// of at most 50; no commit status. A retried final report completes the
// same check run.
func TestCheckRunLifecycle(t *testing.T) {
	f, rep := appFake(t)
	ctx := context.Background()
	ev := prEvent(1)
	ev.InstallationID = 777
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone, Status: true,
		Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	r := &contract.RunReport{Phase: contract.PhaseStart, RunID: "01JDQ4V6RZ3M8W1K9T2XGQY7PA", Attempt: 1, Workflow: wf, Event: ev,
		HeadSHA: sha, Status: workflows.StatusRunning}
	if _, err := rep.Report(ctx, r); err != nil {
		t.Fatalf("start: %v", err)
	}
	f.mu.Lock()
	if len(f.rv.checks) != 1 || f.rv.checks[0].Status != "in_progress" || f.rv.checks[0].Name != "hookrun/lint" ||
		f.rv.checks[0].HeadSHA != sha || f.rv.checks[0].ExternalID != r.RunID || f.rv.checks[0].DetailsURL != "https://hookrun.example/api/v1/runs/01JDQ4V6RZ3M8W1K9T2XGQY7PA" {
		t.Errorf("check runs after start: %+v", f.rv.checks)
	}
	f.mu.Unlock()

	var fs []contract.Finding
	for i := range 120 {
		fs = append(fs, contract.Finding{Path: fmt.Sprintf("pkg/f%d.go", i), StartLine: i + 1, Level: contract.LevelError, Rule: "r", Message: "m"})
	}
	fs = append(fs, contract.Finding{Message: "about no file"}) // no annotation
	r.Phase, r.Status, r.Results = contract.PhaseFinal, workflows.StatusPartiallySucceeded, &contract.Results{Findings: fs}
	if _, err := rep.Report(ctx, r); err != nil {
		t.Fatalf("final: %v", err)
	}
	f.mu.Lock()
	c := *f.rv.checks[0]
	patches := slices.Clone(f.rv.patches)
	n := len(f.rv.checks)
	f.mu.Unlock()
	if n != 1 || c.Status != "completed" || c.Conclusion != "neutral" || len(c.Annotations) != 120 ||
		!strings.Contains(c.Summary, "hookrun · lint") || !strings.Contains(c.Summary, "121 findings") {
		t.Errorf("check run after final: %d runs, %s/%s, %d annotations, summary %.200q", n, c.Status, c.Conclusion, len(c.Annotations), c.Summary)
	}
	if want := []string{"completed/neutral/50", "//50", "//20"}; !slices.Equal(patches, want) {
		t.Errorf("PATCHes %v, want %v", patches, want)
	}
	if st := f.allStatuses(); len(st) != 0 {
		t.Errorf("an App set commit statuses %v, want check runs only", st)
	}
	// The outbox retries the final report: the same check run is completed.
	if _, err := rep.Report(ctx, r); err != nil {
		t.Fatalf("final again: %v", err)
	}
	f.mu.Lock()
	if len(f.rv.checks) != 1 {
		t.Errorf("a retried final report created check run %d", len(f.rv.checks))
	}
	f.mu.Unlock()
}

// TestCheckConclusion: each final status's conclusion; a run that failed
// at its timeout is timed_out.
func TestCheckConclusion(t *testing.T) {
	for s, want := range map[workflows.Status]string{workflows.StatusSucceeded: "success", workflows.StatusFailed: "failure",
		workflows.StatusPartiallySucceeded: "neutral", workflows.StatusCancelled: "cancelled", workflows.StatusSkipped: "skipped"} {
		if got := conclusion(s, false); got != want {
			t.Errorf("%s: %s, want %s", s, got, want)
		}
	}
	if got := conclusion(workflows.StatusFailed, true); got != "timed_out" {
		t.Errorf("failed at the timeout: %s, want timed_out", got)
	}
}

// TestCheckRunTimedOut: the final report of a run that failed at its
// timeout completes its check run with the conclusion timed_out (the
// fake checks the PATCH's method, path, installation token and body).
func TestCheckRunTimedOut(t *testing.T) {
	f, rep := appFake(t)
	ev := prEvent(1)
	ev.InstallationID = 777
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone, Status: true}}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "01JDQ4V6RZ3M8W1K9T2XGQY7PB", Attempt: 1, Workflow: wf, Event: ev,
		HeadSHA: sha, Status: workflows.StatusFailed, TimedOut: true, Error: "run timed out after 10m0s"}
	if _, err := rep.Report(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{"completed/timed_out/0"}; len(f.rv.checks) != 1 || f.rv.checks[0].Conclusion != "timed_out" || !slices.Equal(f.rv.patches, want) {
		t.Errorf("check runs %d, PATCHes %v, want one completed timed_out", len(f.rv.checks), f.rv.patches)
	}
}

// TestTokenKeepsStatuses: with a token (no App) a run is a commit status
// as before, never a check run.
func TestTokenKeepsStatuses(t *testing.T) {
	f := newFakeGitHub(t)
	newReviewFake(f)
	rep := newReporter(t, f, nil)
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone, Status: true}}
	r := &contract.RunReport{Phase: contract.PhaseStart, RunID: "r1", Attempt: 1, Workflow: wf, Event: prEvent(1), HeadSHA: sha, Status: workflows.StatusRunning}
	if _, err := rep.Report(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(f.allStatuses()) != 1 || f.count("POST", `.*/check-runs`) != 0 {
		t.Errorf("statuses %v, check runs posted %d", f.allStatuses(), f.count("POST", `.*/check-runs`))
	}
}
