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

	fs := append(findings(120), contract.Finding{Message: "about no file"}) // no annotation
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
	// The outbox retries the final report: the same check run is completed,
	// and its annotations (GitHub appends those of every PATCH) are not
	// sent again.
	if _, err := rep.Report(ctx, r); err != nil {
		t.Fatalf("final again: %v", err)
	}
	f.mu.Lock()
	if len(f.rv.checks) != 1 {
		t.Errorf("a retried final report created check run %d", len(f.rv.checks))
	}
	patches = slices.Clone(f.rv.patches[3:])
	f.mu.Unlock()
	if want := []string{"completed/neutral/0"}; !slices.Equal(patches, want) {
		t.Errorf("PATCHes of the retry %v, want %v", patches, want)
	}
	checkAnnotated(t, f, 0, 120)
}

// findings are n findings with a file and a line, pkg/f<i>.go:<i+1>.
func findings(n int) []contract.Finding {
	var fs []contract.Finding
	for i := range n {
		fs = append(fs, contract.Finding{Path: fmt.Sprintf("pkg/f%d.go", i), StartLine: i + 1, Level: contract.LevelError, Rule: "r", Message: "m"})
	}
	return fs
}

// checkAnnotated checks that check run i holds the annotations of
// findings(n), each once and in order.
func checkAnnotated(t *testing.T, f *fakeGitHub, i, n int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for _, a := range f.rv.checks[i].Annotations {
		got = append(got, fmt.Sprintf("%s:%d", a["path"], a["start_line"]))
	}
	var want []string
	for _, fd := range findings(n) {
		want = append(want, fmt.Sprintf("%s:%d", fd.Path, fd.StartLine))
	}
	if !slices.Equal(got, want) {
		t.Errorf("check run %d holds %d annotations, want the %d findings once each, in order (first: %q)", i, len(got), n, got[:min(len(got), 3)])
	}
}

// finalReport is the final report of a run of a workflow without
// report.review that failed with fs.
func finalReport(runID string, fs []contract.Finding) *contract.RunReport {
	ev := prEvent(1)
	ev.InstallationID = 777
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone, Status: true}}
	return &contract.RunReport{Phase: contract.PhaseFinal, RunID: runID, Attempt: 1, Workflow: wf, Event: ev,
		HeadSHA: sha, Status: workflows.StatusFailed, Results: &contract.Results{Findings: fs}}
}

// TestCheckRunAnnotatesWithoutReview: the findings of a workflow without
// report.review (no inline comments) are still its check run's
// annotations.
func TestCheckRunAnnotatesWithoutReview(t *testing.T) {
	f, rep := appFake(t)
	if _, err := rep.Report(context.Background(), finalReport("01JDQ4V6RZ3M8W1K9T2XGQY7PC", findings(70))); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	patches := slices.Clone(f.rv.patches)
	text := f.rv.checks[0].Text
	f.mu.Unlock()
	if want := []string{"completed/failure/50", "//20"}; !slices.Equal(patches, want) || text != "" {
		t.Errorf("PATCHes %v (want %v), text %q (want none: every finding is annotated)", patches, want, text)
	}
	checkAnnotated(t, f, 0, 70)
	if n := f.count("POST", `.*/pulls/\d+/reviews`); n != 0 {
		t.Errorf("%d reviews posted without report.review", n)
	}
}

// TestCheckRunRetryAfterPartialSend: when the second PATCH of annotations
// fails, the final report fails; retried (as the outbox does), it sends
// the annotations the check run does not hold yet, so each is there once.
func TestCheckRunRetryAfterPartialSend(t *testing.T) {
	f, rep := appFake(t)
	f.rv.failPatch = map[int]int{2: 500}
	r := finalReport("01JDQ4V6RZ3M8W1K9T2XGQY7PD", findings(120))
	if _, err := rep.Report(context.Background(), r); err == nil {
		t.Fatal("final report succeeded although its second PATCH failed")
	}
	checkAnnotated(t, f, 0, 50)
	if _, err := rep.Report(context.Background(), r); err != nil {
		t.Fatalf("retried final report: %v", err)
	}
	f.mu.Lock()
	patches := slices.Clone(f.rv.patches)
	c := *f.rv.checks[0]
	f.mu.Unlock()
	if want := []string{"completed/failure/50", "completed/failure/50", "//20"}; !slices.Equal(patches, want) ||
		c.Status != "completed" || c.Conclusion != "failure" {
		t.Errorf("PATCHes %v (want %v), check run %s/%s", patches, want, c.Status, c.Conclusion)
	}
	checkAnnotated(t, f, 0, 120)
}

// TestCheckRunAnnotationLimit: of 1,050 findings and one without a
// file, the first 1,000 are annotations (20 PATCHes of 50), and the
// check run's text says what is not annotated.
func TestCheckRunAnnotationLimit(t *testing.T) {
	f, rep := appFake(t)
	fs := append(findings(1050), contract.Finding{Message: "about no file"})
	if _, err := rep.Report(context.Background(), finalReport("01JDQ4V6RZ3M8W1K9T2XGQY7PE", fs)); err != nil {
		t.Fatal(err)
	}
	checkAnnotated(t, f, 0, 1000)
	f.mu.Lock()
	n, text := len(f.rv.patches), f.rv.checks[0].Text
	f.mu.Unlock()
	want := "1,000 of 1,051 findings are annotations. 50 findings over the limit of 1,000 annotations per check run are not annotated. " +
		"1 finding without a file and line is not annotated."
	if n != 20 || text != want {
		t.Errorf("%d PATCHes (want 20), text %q, want %q", n, text, want)
	}
}

// TestCheckRunRateLimitedForTheOutbox: a final report whose check run
// PATCH GitHub rate-limits for longer than the report may wait fails with
// a contract.RetryAfterError (the engine keeps it in the outbox); the
// outbox's retry completes the check run with its conclusion and every
// annotation once.
func TestCheckRunRateLimitedForTheOutbox(t *testing.T) {
	f, rep := appFake(t)
	f.rv.failPatch, f.rv.retryAfter = map[int]int{1: 403}, "3"
	r := finalReport("01JDQ4V6RZ3M8W1K9T2XGQY7PF", findings(120))
	start := *r
	start.Phase, start.Status, start.Results = contract.PhaseStart, workflows.StatusRunning, nil
	if _, err := rep.Report(context.Background(), &start); err != nil {
		t.Fatalf("start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // the engine's report timeout, shorter than Retry-After
	_, err := rep.Report(ctx, r)
	cancel()
	if wait, ok := contract.RetryAfter(err); !ok || wait < 3*time.Second {
		t.Fatalf("rate-limited final report: %v (retry after %s), want a RetryAfterError of GitHub's 3s", err, wait)
	}
	f.mu.Lock()
	c := *f.rv.checks[0]
	f.mu.Unlock()
	if c.Status != "in_progress" || len(c.Annotations) != 0 {
		t.Errorf("check run %s with %d annotations after a refused PATCH", c.Status, len(c.Annotations))
	}
	// The outbox delivers it later (this reporter's client waits out the
	// rest of the 3s GitHub asked for first).
	if _, err := rep.Report(context.Background(), r); err != nil {
		t.Fatalf("final report from the outbox: %v", err)
	}
	f.mu.Lock()
	c, n := *f.rv.checks[0], len(f.rv.checks)
	patches := slices.Clone(f.rv.patches)
	f.mu.Unlock()
	if want := []string{"completed/failure/50", "//50", "//20"}; n != 1 || c.Status != "completed" || c.Conclusion != "failure" || !slices.Equal(patches, want) {
		t.Errorf("%d check runs, %s/%s, PATCHes %v (want %v)", n, c.Status, c.Conclusion, patches, want)
	}
	checkAnnotated(t, f, 0, 120)
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
