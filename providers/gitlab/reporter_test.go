package gitlab

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const sha = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"

func newReporter(t *testing.T, f *fakeGitLab, mutate func(*Config)) *Reporter {
	t.Helper()
	cfg := Config{BaseURL: f.srv.URL, Token: f.token, RunURL: "https://hookrun.example/api/v1/runs/{run}", Client: forge.Client{MaxWait: 5 * time.Second}}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func workflow(name, comment string, status bool) *workflows.Workflow {
	return &workflows.Workflow{Name: name, Report: workflows.Report{Comment: comment, Status: status}}
}

// fixtureEvent normalizes a real GitLab note hook payload from testdata the
// way ingress does (only the fields a reporter reads).
func fixtureEvent(t *testing.T, file string) *workflows.Event {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Project struct {
			Path string `json:"path_with_namespace"`
		} `json:"project"`
		Attrs struct {
			ID   int64  `json:"id"`
			Note string `json:"note"`
		} `json:"object_attributes"`
		MR *struct {
			IID        int    `json:"iid"`
			Title      string `json:"title"`
			LastCommit struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"merge_request"`
		Issue *struct {
			IID   int    `json:"iid"`
			Title string `json:"title"`
		} `json:"issue"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	ev := &workflows.Event{Forge: Name, Kind: workflows.KindComment, Action: "created", Repo: p.Project.Path,
		Comment: &workflows.Comment{ID: p.Attrs.ID, Body: p.Attrs.Note}}
	if p.MR != nil {
		ev.PullRequest = &workflows.PullRequest{Number: p.MR.IID, Title: p.MR.Title, HeadSHA: p.MR.LastCommit.ID}
	}
	if p.Issue != nil {
		ev.Issue = &workflows.Issue{Number: p.Issue.IID, Title: p.Issue.Title}
	}
	return ev
}

func mrEvent(iid int) *workflows.Event {
	return &workflows.Event{Forge: Name, Kind: workflows.KindPullRequest, Action: "opened", Repo: "gitlab-org/gitlab-test",
		PullRequest: &workflows.PullRequest{Number: iid, HeadSHA: sha}}
}

// run drives the phases of one run the way the engine does.
type run = stickytest.Run

func newRun(t *testing.T, rep *Reporter, id string, wf *workflows.Workflow, ev *workflows.Event) *run {
	return stickytest.NewRun(t, rep, id, wf, ev, 1500*time.Millisecond)
}

func golden(t *testing.T, name, got string) { t.Helper(); stickytest.Golden(t, name, got, *update) }

// TestMergeRequestNoteLifecycle: one note created on the merge request,
// edited in place, the final body, the status transitions, PRIVATE-TOKEN on
// every request and the project path URL-encoded.
func TestMergeRequestNoteLifecycle(t *testing.T) {
	f := newFakeGitLab(t)
	ev := fixtureEvent(t, "note_merge_request.json")
	ev.PullRequest.HeadSHA = sha
	x := newRun(t, newReporter(t, f, nil), "01JDQ5A0B1C2D3E4F5G6H7J8K9", workflow("mr-review", "sticky", true), ev)

	id := x.Must(contract.PhaseStart).CommentID
	x.Step(0, workflows.StatusRunning)
	x.Must(contract.PhaseProgress)
	x.Step(0, workflows.StatusSucceeded)
	x.Step(1, workflows.StatusRunning)
	x.Must(contract.PhaseProgress)
	x.Step(1, workflows.StatusSucceeded)
	x.Finish(workflows.StatusSucceeded, "### Review\n\nShip it.\n")
	if got := x.Must(contract.PhaseFinal).CommentID; got != id || id == 0 {
		t.Fatalf("final ref %d, start ref %d", got, id)
	}

	if n := f.count("POST", `/projects/gitlab-org%2Fgitlab-test/merge_requests/1/notes`); n != 1 {
		t.Errorf("%d notes created, want 1", n)
	}
	if n := f.count("PUT", `/projects/gitlab-org%2Fgitlab-test/merge_requests/1/notes/`+strconv.FormatInt(id, 10)); n != 3 {
		t.Errorf("%d note edits, want 3", n)
	}
	nt := f.note(id)
	golden(t, "mr_final.md", nt.Body)
	want := []fakeStatus{
		{SHA: sha, State: "pending", Name: "hookrun/mr-review", Description: "Running (run 01JDQ5A0B1C2D3E4F5G6H7J8K9)", TargetURL: "https://hookrun.example/api/v1/runs/01JDQ5A0B1C2D3E4F5G6H7J8K9"},
		{SHA: sha, State: "success", Name: "hookrun/mr-review", Description: "Succeeded (run 01JDQ5A0B1C2D3E4F5G6H7J8K9)", TargetURL: "https://hookrun.example/api/v1/runs/01JDQ5A0B1C2D3E4F5G6H7J8K9"},
	}
	if got := f.allStatuses(); !slices.Equal(got, want) {
		t.Errorf("statuses\n got %+v\nwant %+v", got, want)
	}
	for _, r := range f.allRequests() {
		if r.Auth != f.token {
			t.Errorf("%s %s sent PRIVATE-TOKEN %q", r.Method, r.Path, r.Auth)
		}
	}
}

// TestIssueNotes: a comment on an issue gets its note on the issue.
func TestIssueNotes(t *testing.T) {
	f := newFakeGitLab(t)
	ev := fixtureEvent(t, "note_issue.json")
	x := newRun(t, newReporter(t, f, nil), "run-issue", workflow("triage", "sticky", true), ev)
	id := x.Must(contract.PhaseStart).CommentID
	x.Finish(workflows.StatusSucceeded, "triaged")
	x.Must(contract.PhaseFinal)
	if n := f.count("POST", `/projects/gitlab-org%2Fgitlab-test/issues/17/notes`); n != 1 {
		t.Errorf("%d issue notes created", n)
	}
	if n := f.count("PUT", `/projects/gitlab-org%2Fgitlab-test/issues/17/notes/\d+`); n != 1 {
		t.Errorf("%d issue note edits", n)
	}
	if nt := f.note(id); nt == nil || nt.MR || !strings.Contains(nt.Body, "triaged") {
		t.Errorf("issue note %+v", nt)
	}
	if n := len(f.allStatuses()); n != 0 {
		t.Errorf("issue without a SHA got %d statuses", n)
	}

	// An issue event (not a comment) reports on the issue the same way.
	opened := &workflows.Event{Forge: Name, Kind: workflows.KindIssue, Action: "opened", Repo: "gitlab-org/gitlab-test",
		Issue: &workflows.Issue{Number: 23, Title: "New API: create/update/delete file"}}
	y := newRun(t, newReporter(t, f, nil), "run-issue-opened", workflow("triage", "sticky", true), opened)
	y.Must(contract.PhaseStart)
	if n := f.count("POST", `/projects/gitlab-org%2Fgitlab-test/issues/23/notes`); n != 1 {
		t.Errorf("issue event: %d notes created", n)
	}
}

// TestRestartAndMarkerFallback: a new Reporter with the stored Ref edits the
// same note; without a Ref the bot's note is found by its marker (on a later
// page, skipping other users' and system notes).
func TestRestartAndMarkerFallback(t *testing.T) {
	f := newFakeGitLab(t)
	f.seed(true, 4, 1, "root", "LGTM", false)
	f.seed(true, 4, 1, "root", render.Marker("mr-review")+"\nquoted by a human", false)
	f.seed(true, 4, f.botID, f.bot, render.Marker("mr-review")+"\nsystem note", true)
	f.seed(true, 4, f.botID, f.bot, render.Marker("lint")+"\nother workflow", false)
	ours := f.seed(true, 4, f.botID, f.bot, render.Marker("mr-review")+"\nprevious run", false)

	x := newRun(t, newReporter(t, f, nil), "run-fallback", workflow("mr-review", "sticky", true), mrEvent(4))
	if got := x.Must(contract.PhaseStart).CommentID; got != ours {
		t.Fatalf("wrote note %d, want %d", got, ours)
	}
	if n := f.count("GET", `/projects/gitlab-org%2Fgitlab-test/merge_requests/4/notes`); n != 2 {
		t.Errorf("%d pages listed, want 2", n)
	}
	listed := f.count("GET", `.*`)

	y := newRun(t, newReporter(t, f, nil), "run-fallback", workflow("mr-review", "sticky", true), mrEvent(4))
	y.R.Attempt, y.R.Ref = 2, x.R.Ref
	y.Finish(workflows.StatusSucceeded, "second attempt done")
	if got := y.Must(contract.PhaseFinal).CommentID; got != ours {
		t.Fatalf("restarted run wrote %d, want %d", got, ours)
	}
	if n := f.count("GET", `.*`) - listed; n != 0 {
		t.Errorf("%d lookups with a known id", n)
	}
	if nt := f.note(ours); !strings.Contains(nt.Body, "second attempt done") || nt.Edits != 2 {
		t.Errorf("note %+v", nt)
	}
	if n := f.count("POST", `.*/notes`); n != 0 {
		t.Errorf("%d notes created", n)
	}
}

// TestTwoWorkflows: two workflows on one merge request keep two notes.
func TestTwoWorkflows(t *testing.T) {
	f := newFakeGitLab(t)
	rep := newReporter(t, f, nil)
	a := newRun(t, rep, "run-a", workflow("mr-review", "sticky", true), mrEvent(6))
	b := newRun(t, rep, "run-b", workflow("lint", "sticky", true), mrEvent(6))
	var wg sync.WaitGroup
	for _, x := range []*run{a, b} {
		wg.Go(func() {
			for _, p := range []contract.Phase{contract.PhaseStart, contract.PhaseProgress, contract.PhaseFinal} {
				if p == contract.PhaseFinal {
					x.Finish(workflows.StatusSucceeded, "body of "+x.R.Workflow.Name)
				}
				if _, err := x.Report(p); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if a.R.Ref.CommentID == b.R.Ref.CommentID || len(f.notesBy(f.botID)) != 2 {
		t.Fatalf("refs %d %d, %d bot notes", a.R.Ref.CommentID, b.R.Ref.CommentID, len(f.notesBy(f.botID)))
	}
	for _, x := range []*run{a, b} {
		if nt := f.note(x.R.Ref.CommentID); !render.HasMarker(nt.Body, x.R.Workflow.Name) || !strings.Contains(nt.Body, "body of "+x.R.Workflow.Name) {
			t.Errorf("note of %s:\n%s", x.R.Workflow.Name, nt.Body)
		}
	}
}

// TestRateLimitFinal: GitLab answers 429 (Retry-After: 1) to the final edit
// and status; they still land after the wait, while a progress edit under
// the limit gives up at once (MaxWait < 0) and keeps its Ref.
func TestRateLimitFinal(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	x := newRun(t, newReporter(t, f, func(c *Config) { c.MaxWait = -1 }), "run-limited", workflow("mr-review", "sticky", true), mrEvent(7))
	id := x.Must(contract.PhaseStart).CommentID
	edit := "/projects/gitlab-org%2Fgitlab-test/merge_requests/7/notes/" + strconv.FormatInt(id, 10)
	f.limit("PUT "+edit, 1)
	if ref, err := x.Report(contract.PhaseProgress); err == nil || ref.CommentID != id {
		t.Fatalf("limited progress: %v %v", ref, err)
	}
	f.limit("PUT "+edit, 1)
	f.limit("POST /projects/gitlab-org%2Fgitlab-test/statuses/"+sha, 1)
	x.Finish(workflows.StatusFailed, "the final word")
	start := time.Now()
	x.Must(contract.PhaseFinal)
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("final landed after %s, before the two waits", d)
	}
	if nt := f.note(id); !strings.Contains(nt.Body, "the final word") {
		t.Errorf("final body lost")
	}
	if st := f.allStatuses(); len(st) != 2 || st[1].State != "failed" {
		t.Errorf("statuses %+v", st)
	}
}

// TestStatusStates: failure and cancellation map to GitLab's states; a
// redelivered start (same state again, which GitLab refuses) is not an error.
func TestStatusStates(t *testing.T) {
	for _, tc := range []struct {
		final workflows.Status
		want  string
	}{{workflows.StatusFailed, "failed"}, {workflows.StatusCancelled, "canceled"}, {workflows.StatusSucceeded, "success"},
		{workflows.StatusPartiallySucceeded, "success"}, {workflows.StatusSkipped, "success"}} {
		f := newFakeGitLab(t)
		rep := newReporter(t, f, nil)
		x := newRun(t, rep, "run-"+string(tc.final), workflow("ci", "none", true), mrEvent(8))
		x.Must(contract.PhaseStart)
		x.R.Attempt = 2
		x.Must(contract.PhaseStart) // redelivery: pending again
		x.Finish(tc.final, "")
		x.Must(contract.PhaseFinal)
		st := f.allStatuses()
		if len(st) != 2 || st[0].State != "pending" || st[1].State != tc.want {
			t.Errorf("%s: statuses %+v", tc.final, st)
		}
		if n := f.count("POST", `.*/notes`); n != 0 {
			t.Errorf("comment: none posted %d notes", n)
		}
	}
}

// TestTruncation: a body over GitLab's 1,000,000-character note limit is cut
// with a note; the fake (like GitLab) rejects longer notes.
func TestTruncation(t *testing.T) {
	f := newFakeGitLab(t)
	x := newRun(t, newReporter(t, f, nil), "run-long", workflow("mr-review", "sticky", false), mrEvent(9))
	x.Finish(workflows.StatusSucceeded, strings.Repeat("ä line of review output\n", 45000))
	id := x.Must(contract.PhaseFinal).CommentID
	nt := f.note(id)
	if n := utf8.RuneCountInString(nt.Body); n > 1000000 || n < 990000 || !strings.Contains(nt.Body, "Truncated by hookrun") {
		t.Errorf("note of %d characters, note present: %v", n, strings.Contains(nt.Body, "Truncated by hookrun"))
	}
}

// TestSecretNeverReachesGitLab: Body, step errors and run error redacted by
// the engine from text holding a secret; no request carries the secret.
func TestSecretNeverReachesGitLab(t *testing.T) {
	const secret = "glpat-SECRETdeployKEY-8c7b6a5d4e3f"
	output := "deploying with " + secret + "\nresult: ok\n"
	f := newFakeGitLab(t)
	x := newRun(t, newReporter(t, f, nil), "run-secret", workflow("deploy", "sticky", true), fixtureEvent(t, "note_merge_request.json"))
	x.R.HeadSHA = sha
	x.FailRedacted(secret, output, "### Deploy\n")
	stickytest.NoSecret(t, "gitlab", f.allRequests(), secret, f.token)
	if nt := f.note(x.R.Ref.CommentID); !strings.Contains(nt.Body, "***") || !strings.Contains(nt.Body, "result: ok") {
		t.Errorf("redacted output not shown:\n%s", nt.Body)
	}
}

// TestSelfManagedAndErrors: an API root given with /api/v4 works the same; a
// wrong token gives an error without the token in it.
func TestSelfManagedAndErrors(t *testing.T) {
	f := newFakeGitLab(t)
	x := newRun(t, newReporter(t, f, func(c *Config) { c.BaseURL = f.srv.URL + "/api/v4/" }), "run-sm", workflow("mr-review", "new", false), mrEvent(10))
	x.Must(contract.PhaseStart)
	if n := f.count("POST", `/projects/gitlab-org%2Fgitlab-test/merge_requests/10/notes`); n != 1 {
		t.Errorf("self-managed URL: %d notes", n)
	}
	y := newRun(t, newReporter(t, f, func(c *Config) { c.Token = "glpat-wrong-456" }), "run-bad", workflow("mr-review", "sticky", true), mrEvent(10))
	_, err := y.Report(contract.PhaseStart)
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "glpat-wrong-456") {
		t.Errorf("bad token: %v", err)
	}
	gh := mrEvent(1)
	gh.Forge = workflows.Forge("github")
	if _, err := newReporter(t, f, nil).Report(context.Background(), &contract.RunReport{RunID: "r", Workflow: workflow("x", "", true), Event: gh}); err == nil {
		t.Error("github event accepted")
	}
	for _, cfg := range []Config{{}, {Token: "t", BaseURL: "gitlab.example"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg.BaseURL)
		}
	}
}

// TestFinalLimitLongerThanDeadline: a final report under a limit longer
// than its context allows returns a contract.RetryAfterError with GitLab's
// Retry-After, for the runner's outbox.
func TestFinalLimitLongerThanDeadline(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	rep := newReporter(t, f, nil)
	x := newRun(t, rep, "run-deadline", workflow("mr-review", "sticky", true), mrEvent(8))
	id := x.Must(contract.PhaseStart).CommentID
	f.limit("PUT /projects/gitlab-org%2Fgitlab-test/merge_requests/8/notes/"+strconv.FormatInt(id, 10), 5) // Retry-After: 1
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err := rep.Report(ctx, &contract.RunReport{Phase: contract.PhaseFinal, RunID: "run-deadline", Attempt: 1,
		Workflow: workflow("mr-review", "sticky", true), Event: mrEvent(8), Status: workflows.StatusSucceeded,
		Ref: contract.ReportRef{CommentID: id}})
	if wait, ok := contract.RetryAfter(err); err == nil || !ok || wait < 900*time.Millisecond {
		t.Fatalf("final under a 1s limit with a 0.7s deadline: err %v, retry after %s (%v); want a RetryAfterError of about 1s", err, wait, ok)
	}
}
