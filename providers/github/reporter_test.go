package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"os"
	"slices"
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

const sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e"

func newReporter(t *testing.T, f *fakeGitHub, mutate func(*Config)) *Reporter {
	t.Helper()
	cfg := Config{APIURL: f.url(), Token: f.token, RunURL: "https://hookrun.example/api/v1/runs/{run}", Client: forge.Client{MaxWait: 5 * time.Second}}
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
	return &workflows.Workflow{Name: name, Report: workflows.Report{Comment: comment, Status: status, Body: "### Review\n${REVIEW}"}}
}

func prEvent(number int) *workflows.Event {
	return &workflows.Event{Forge: Name, Kind: workflows.KindPullRequest, Action: "opened", Repo: "Codertocat/Hello-World",
		PullRequest: &workflows.PullRequest{Number: number, Title: "Update the README", HeadSHA: sha, HeadRef: "changes", BaseRef: "main"}}
}

// commentEvent normalizes the real issue_comment payload in testdata the way
// ingress does (only the fields a reporter reads).
func commentEvent(t *testing.T) *workflows.Event {
	t.Helper()
	raw, err := os.ReadFile("testdata/issue_comment.created.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Comment struct {
			ID   int64  `json:"id"`
			Body string `json:"body"`
		} `json:"comment"`
		Issue struct {
			Number int    `json:"number"`
			Title  string `json:"title"`
		} `json:"issue"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return &workflows.Event{Forge: Name, Kind: workflows.KindComment, Action: "created", Repo: p.Repository.FullName,
		Issue: &workflows.Issue{Number: p.Issue.Number, Title: p.Issue.Title}, Comment: &workflows.Comment{ID: p.Comment.ID, Body: p.Comment.Body}}
}

// run drives the phases of one run the way the engine does.
type run = stickytest.Run

func newRun(t *testing.T, rep *Reporter, id string, wf *workflows.Workflow, ev *workflows.Event) *run {
	return stickytest.NewRun(t, rep, id, wf, ev, 3200*time.Millisecond)
}

func golden(t *testing.T, name, got string) { t.Helper(); stickytest.Golden(t, name, got, *update) }

// TestStickyLifecycle: one create, edits in place, the final body, the status
// transitions and the eyes reaction, all with the token in the Authorization
// header.
func TestStickyLifecycle(t *testing.T) {
	f := newFakeGitHub(t)
	rep := newReporter(t, f, nil)
	ev := commentEvent(t)
	ev.PullRequest = &workflows.PullRequest{Number: ev.Issue.Number, HeadSHA: sha}
	ev.Issue = nil
	x := newRun(t, rep, "01JDQ4V6RZ3M8W1K9T2XGQY7PA", workflow("pr-review", "sticky", true), ev)

	id := x.Must(contract.PhaseStart).CommentID
	if id == 0 {
		t.Fatal("start returned no comment id")
	}
	x.Step(0, workflows.StatusRunning)
	if got := x.Must(contract.PhaseProgress).CommentID; got != id {
		t.Fatalf("progress ref %d, want %d", got, id)
	}
	x.Step(0, workflows.StatusSucceeded)
	x.Step(1, workflows.StatusRunning)
	x.Must(contract.PhaseProgress)
	x.Step(1, workflows.StatusSucceeded)
	x.Finish(workflows.StatusSucceeded, "### Review\n\nLooks good. Two nits:\n\n- README typo\n- missing newline\n")
	if got := x.Must(contract.PhaseFinal).CommentID; got != id {
		t.Fatalf("final ref %d, want %d", got, id)
	}

	if n := f.count("POST", `/repos/Codertocat/Hello-World/issues/1/comments`); n != 1 {
		t.Errorf("%d comments created, want 1", n)
	}
	if n := f.count("PATCH", `/repos/Codertocat/Hello-World/issues/comments/\d+`); n != 3 {
		t.Errorf("%d comment edits, want 3", n)
	}
	c := f.comment(id)
	if c == nil || c.Login != f.bot || c.Edits != 3 {
		t.Fatalf("comment %+v", c)
	}
	golden(t, "sticky_final.md", c.Body)

	wantStatuses := []fakeStatus{
		{SHA: sha, State: "pending", Context: "hookrun/pr-review", Description: "Running (run 01JDQ4V6RZ3M8W1K9T2XGQY7PA)", TargetURL: "https://hookrun.example/api/v1/runs/01JDQ4V6RZ3M8W1K9T2XGQY7PA"},
		{SHA: sha, State: "success", Context: "hookrun/pr-review", Description: "Succeeded (run 01JDQ4V6RZ3M8W1K9T2XGQY7PA)", TargetURL: "https://hookrun.example/api/v1/runs/01JDQ4V6RZ3M8W1K9T2XGQY7PA"},
	}
	if got := f.allStatuses(); !slices.Equal(got, wantStatuses) {
		t.Errorf("statuses\n got %+v\nwant %+v", got, wantStatuses)
	}
	if got := f.allReactions(); len(got) != 1 || got[0] != (fakeReaction{Comment: 492700400, Content: "eyes"}) {
		t.Errorf("reactions %+v, want eyes on 492700400", got)
	}
	for _, r := range f.allRequests() {
		if r.Auth != "Bearer "+f.token {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
}

// TestStatusTransitions: failure and cancellation map to GitHub's states; no
// status without a SHA or with status: false.
func TestStatusTransitions(t *testing.T) {
	cases := []struct {
		name   string
		status bool
		sha    string
		final  workflows.Status
		want   []string
	}{
		{"failed", true, sha, workflows.StatusFailed, []string{"pending", "failure"}},
		{"cancelled", true, sha, workflows.StatusCancelled, []string{"pending", "error"}},
		{"status off", false, sha, workflows.StatusSucceeded, nil},
		{"no sha", true, "", workflows.StatusSucceeded, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			ev := prEvent(3)
			ev.PullRequest.HeadSHA = tc.sha
			x := newRun(t, newReporter(t, f, nil), "run-"+strings.ReplaceAll(tc.name, " ", "-"), workflow("ci", "none", tc.status), ev)
			x.Must(contract.PhaseStart)
			x.Must(contract.PhaseProgress)
			x.Finish(tc.final, "")
			x.Must(contract.PhaseFinal)
			var got []string
			for _, s := range f.allStatuses() {
				got = append(got, s.State)
				if s.Context != "hookrun/ci" {
					t.Errorf("context %q", s.Context)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("states %v, want %v", got, tc.want)
			}
			if n := f.count("POST", `.*/comments`) + f.count("PATCH", `.*`); n != 0 {
				t.Errorf("comment: none still wrote %d comments", n)
			}
		})
	}
}

// TestRestartEditsSameComment: a new Reporter (a restarted runner) given the
// Ref from the run record edits the comment of the first attempt.
func TestRestartEditsSameComment(t *testing.T) {
	f := newFakeGitHub(t)
	x := newRun(t, newReporter(t, f, nil), "run-restart", workflow("pr-review", "sticky", true), prEvent(5))
	id := x.Must(contract.PhaseStart).CommentID
	stored := x.R.Ref // what the runner keeps in the run record

	listed := f.count("GET", `.*/comments`)
	// The runner died; another one claims the run.
	y := newRun(t, newReporter(t, f, nil), "run-restart", workflow("pr-review", "sticky", true), prEvent(5))
	y.R.Attempt = 2
	y.R.Ref = stored
	if got := y.Must(contract.PhaseStart).CommentID; got != id {
		t.Fatalf("restarted run wrote comment %d, want %d", got, id)
	}
	y.Finish(workflows.StatusSucceeded, "done")
	y.Must(contract.PhaseFinal)
	if n := f.count("POST", `/repos/Codertocat/Hello-World/issues/5/comments`); n != 1 {
		t.Errorf("%d comments created, want 1", n)
	}
	if c := f.comment(id); !strings.Contains(c.Body, "attempt 2") || !strings.Contains(c.Body, "done") {
		t.Errorf("comment not updated by the restarted run:\n%s", c.Body)
	}
	// No search was needed with a Ref.
	if n := f.count("GET", `.*/comments`) - listed; n != 0 {
		t.Errorf("%d comment listings with a known id", n)
	}
}

// TestMarkerFallback: with no Ref, the workflow's comment is found by its
// marker among the bot's own comments (on a later page), not among look-alikes
// by other users; a Ref to a deleted comment falls back the same way.
func TestMarkerFallback(t *testing.T) {
	f := newFakeGitHub(t)
	f.seed(8, "octocat", "LGTM")
	human := f.seed(8, "octocat", render.Marker("pr-review")+"\nquoting the bot")
	f.seed(8, "other-bot", render.Marker("pr-review")+"\nanother bot with the same marker")
	f.seed(8, f.bot, render.Marker("lint")+"\nanother workflow")
	f.seed(8, "octocat", "ping")
	ours := f.seed(8, f.bot, render.Marker("pr-review")+"\nold run")

	x := newRun(t, newReporter(t, f, nil), "run-fallback", workflow("pr-review", "sticky", true), prEvent(8))
	if got := x.Must(contract.PhaseStart).CommentID; got != ours {
		t.Fatalf("edited comment %d, want the bot's %d", got, ours)
	}
	if n := f.count("GET", `/repos/Codertocat/Hello-World/issues/8/comments`); n != 2 {
		t.Errorf("%d list pages fetched, want 2 (6 comments, 3 per page)", n)
	}
	if n := f.count("GET", `/user`); n != 1 {
		t.Errorf("bot login looked up %d times", n)
	}
	if c := f.comment(human); c.Edits != 0 {
		t.Errorf("a human's comment was edited")
	}
	if n := f.count("POST", `.*/comments`); n != 0 {
		t.Errorf("created %d comments instead of editing", n)
	}

	// The comment was deleted by someone; the next report (a new process with
	// the stored Ref) looks again and, finding nothing, creates one.
	f.mu.Lock()
	f.comments = f.comments[:len(f.comments)-1]
	f.mu.Unlock()
	y := newRun(t, newReporter(t, f, nil), "run-fallback", workflow("pr-review", "sticky", true), prEvent(8))
	y.R.Ref = contract.ReportRef{CommentID: ours}
	y.Finish(workflows.StatusSucceeded, "final")
	ref := y.Must(contract.PhaseFinal)
	if ref.CommentID == ours || ref.CommentID == 0 || f.comment(ref.CommentID) == nil {
		t.Fatalf("ref after deletion %d", ref.CommentID)
	}
	if c := f.comment(ref.CommentID); !strings.Contains(c.Body, "final") {
		t.Errorf("new comment lacks the final body")
	}
}

// TestTwoWorkflows: two workflows on one PR, reporting interleaved and
// concurrently, keep two separate comments.
func TestTwoWorkflows(t *testing.T) {
	f := newFakeGitHub(t)
	rep := newReporter(t, f, nil)
	a := newRun(t, rep, "run-a", workflow("pr-review", "sticky", true), prEvent(9))
	b := newRun(t, rep, "run-b", workflow("lint", "sticky", true), prEvent(9))
	var wg sync.WaitGroup
	for _, x := range []*run{a, b} {
		wg.Go(func() {
			if _, err := x.Report(contract.PhaseStart); err != nil {
				t.Error(err)
			}
			x.Step(0, workflows.StatusRunning)
			if _, err := x.Report(contract.PhaseProgress); err != nil {
				t.Error(err)
			}
			x.Finish(workflows.StatusSucceeded, "body of "+x.R.Workflow.Name)
			if _, err := x.Report(contract.PhaseFinal); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if a.R.Ref.CommentID == b.R.Ref.CommentID {
		t.Fatalf("both workflows wrote comment %d", a.R.Ref.CommentID)
	}
	mine := f.commentsBy(f.bot)
	if len(mine) != 2 {
		t.Fatalf("%d bot comments, want 2", len(mine))
	}
	for _, x := range []*run{a, b} {
		c := f.comment(x.R.Ref.CommentID)
		if !render.HasMarker(c.Body, x.R.Workflow.Name) || !strings.Contains(c.Body, "body of "+x.R.Workflow.Name) {
			t.Errorf("comment of %s:\n%s", x.R.Workflow.Name, c.Body)
		}
	}
	// A second run of one of them reuses its comment, not the other's.
	c := newRun(t, rep, "run-c", workflow("lint", "sticky", true), prEvent(9))
	if got := c.Must(contract.PhaseStart).CommentID; got != b.R.Ref.CommentID {
		t.Errorf("next lint run wrote %d, want %d", got, b.R.Ref.CommentID)
	}
}

// TestModeNew: `new` posts one comment per run, edits it during the run, and
// a restarted attempt without a Ref finds it by its run marker.
func TestModeNew(t *testing.T) {
	f := newFakeGitHub(t)
	rep := newReporter(t, f, nil)
	var ids []int64
	for _, id := range []string{"run-1", "run-2"} {
		x := newRun(t, rep, id, workflow("triage", "new", false), prEvent(11))
		first := x.Must(contract.PhaseStart).CommentID
		x.Must(contract.PhaseProgress)
		x.Finish(workflows.StatusSucceeded, "done")
		if got := x.Must(contract.PhaseFinal).CommentID; got != first {
			t.Fatalf("run %s edited %d, created %d", id, got, first)
		}
		ids = append(ids, first)
	}
	if ids[0] == ids[1] || len(f.commentsBy(f.bot)) != 2 {
		t.Fatalf("new mode: ids %v, %d comments", ids, len(f.commentsBy(f.bot)))
	}
	y := newRun(t, newReporter(t, f, nil), "run-2", workflow("triage", "new", false), prEvent(11))
	y.R.Attempt = 2
	if got := y.Must(contract.PhaseStart).CommentID; got != ids[1] {
		t.Errorf("restarted new-mode run wrote %d, want %d", got, ids[1])
	}
}

// TestIssueAndPush: issue events get the comment on the issue; push events
// only the status on the pushed SHA.
func TestIssueAndPush(t *testing.T) {
	f := newFakeGitHub(t)
	rep := newReporter(t, f, nil)
	issue := &workflows.Event{Forge: Name, Kind: workflows.KindIssue, Action: "opened", Repo: "Codertocat/Hello-World",
		Issue: &workflows.Issue{Number: 12, Title: "Spelling error in the README file"}}
	x := newRun(t, rep, "run-issue", workflow("triage", "sticky", true), issue)
	x.Must(contract.PhaseStart)
	if n := f.count("POST", `/repos/Codertocat/Hello-World/issues/12/comments`); n != 1 {
		t.Errorf("issue comment created %d times", n)
	}
	push := &workflows.Event{Forge: Name, Kind: workflows.KindPush, Repo: "Codertocat/Hello-World",
		Push: &workflows.Push{Ref: "refs/heads/main", Branch: "main", After: sha}}
	y := newRun(t, rep, "run-push", workflow("build", "sticky", true), push)
	y.Must(contract.PhaseStart)
	y.Finish(workflows.StatusSucceeded, "")
	y.Must(contract.PhaseFinal)
	if got := f.allStatuses(); len(got) != 2 || got[1].Context != "hookrun/build" || got[1].State != "success" {
		t.Errorf("push statuses %+v", got)
	}
	if n := f.count("POST", `.*/comments`); n != 1 {
		t.Errorf("push run wrote a comment")
	}
}

// TestSecondaryLimitFinal: GitHub answers the final edit with a secondary
// rate limit (403, Retry-After: 1); the final update still lands, after the
// wait, even though ordinary reports may not wait at all here.
func TestSecondaryLimitFinal(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	rep := newReporter(t, f, func(c *Config) { c.MaxWait = -1 })
	x := newRun(t, rep, "run-limited", workflow("pr-review", "sticky", true), prEvent(13))
	id := x.Must(contract.PhaseStart).CommentID
	editPath := "/repos/Codertocat/Hello-World/issues/comments/" + itoa(id)

	// A progress report under the limit gives up (MaxWait < 0): it returns an
	// error and keeps the Ref; the run goes on.
	f.limit("PATCH "+editPath, 1)
	ref, err := x.Report(contract.PhaseProgress)
	if err == nil || ref.CommentID != id {
		t.Fatalf("limited progress: ref %v err %v", ref, err)
	}
	t.Logf("progress error (kept in the run record): %v", err)

	f.limit("PATCH "+editPath, 2)
	f.limit("POST /repos/Codertocat/Hello-World/statuses/"+sha, 1)
	x.Finish(workflows.StatusSucceeded, "the final word")
	start := time.Now()
	x.Must(contract.PhaseFinal)
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("final delivered after %s, before two Retry-After: 1 waits", d)
	}
	if c := f.comment(id); !strings.Contains(c.Body, "the final word") {
		t.Errorf("final body lost:\n%s", c.Body)
	}
	if st := f.allStatuses(); len(st) != 2 || st[1].State != "success" {
		t.Errorf("statuses %+v", st)
	}
	// Each retry came at least a second after the 403 before it.
	var last time.Time
	for _, r := range f.allRequests() {
		if r.Method == "PATCH" && r.Path == editPath {
			if !last.IsZero() && r.At.Sub(last) < time.Second && r.At.Sub(last) > 0 {
				t.Errorf("retry %s after the previous attempt", r.At.Sub(last))
			}
			last = r.At
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestAppAuth: as a GitHub App the reporter signs an RS256 JWT with the app
// key, exchanges it for an installation token, uses that token, refreshes
// it before it expires, and matches comments by "<slug>[bot]".
func TestAppAuth(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := newFakeGitHub(t)
	f.token = ""
	f.appID, f.appKey, f.appSlug = 4242, &key.PublicKey, "hookrun-test"
	f.bot = "hookrun-test[bot]"
	// The first token expires within ghinstallation's refresh margin (1 min),
	// so the next call must fetch a new one; the second lasts an hour.
	f.tokenTTL = []time.Duration{50 * time.Second, time.Hour}
	newReviewFake(f) // an App's runs are check runs
	f.seed(14, "someone", render.Marker("pr-review")+"\nnot ours")
	ours := f.seed(14, f.bot, render.Marker("pr-review")+"\nours")

	rep := newReporter(t, f, func(c *Config) { c.Token = ""; c.AppID = 4242; c.PrivateKey = pemKey })
	ev := prEvent(14)
	ev.InstallationID = 777
	x := newRun(t, rep, "run-app", workflow("pr-review", "sticky", true), ev)
	if got := x.Must(contract.PhaseStart).CommentID; got != ours {
		t.Fatalf("edited %d, want the app's comment %d", got, ours)
	}
	x.Must(contract.PhaseProgress)
	x.Finish(workflows.StatusSucceeded, "ok")
	x.Must(contract.PhaseFinal)

	if n := f.count("POST", `/app/installations/777/access_tokens`); n != 2 {
		t.Errorf("%d installation tokens fetched, want 2 (initial, refresh before expiry)", n)
	}
	f.mu.Lock()
	issued := append([]string(nil), f.issued...)
	f.mu.Unlock()
	var used []string
	for _, r := range f.allRequests() {
		switch {
		case strings.HasPrefix(r.Path, "/app"):
			if !strings.HasPrefix(r.Auth, "Bearer ey") {
				t.Errorf("%s %s without a JWT: %q", r.Method, r.Path, r.Auth)
			}
		case strings.HasPrefix(r.Path, "/repos/"):
			tok := strings.TrimPrefix(r.Auth, "token ")
			if len(used) == 0 || used[len(used)-1] != tok {
				used = append(used, tok)
			}
		}
	}
	if !slices.Equal(used, issued) {
		t.Errorf("repo calls used tokens %v, want the issued %v in order", used, issued)
	}

	// Without an installation id an App cannot report.
	ev2 := prEvent(15)
	y := newRun(t, rep, "run-noinst", workflow("pr-review", "sticky", true), ev2)
	if _, err := y.Report(contract.PhaseStart); err == nil || !strings.Contains(err.Error(), "installation") {
		t.Errorf("no installation id: %v", err)
	}
}

// TestTruncation: a body longer than GitHub's 65,536 characters is cut with
// a note; the fake (like GitHub) would reject a longer one.
func TestTruncation(t *testing.T) {
	f := newFakeGitHub(t)
	x := newRun(t, newReporter(t, f, nil), "run-long", workflow("pr-review", "sticky", false), prEvent(16))
	x.Must(contract.PhaseStart)
	x.Finish(workflows.StatusSucceeded, strings.Repeat("review line with ünïcödé ✅\n", 5000))
	id := x.Must(contract.PhaseFinal).CommentID
	c := f.comment(id)
	if n := utf8.RuneCountInString(c.Body); n > 65536 || n < 60000 {
		t.Errorf("final comment has %d characters", n)
	}
	if !strings.Contains(c.Body, "Truncated by hookrun") || !render.HasMarker(c.Body, "pr-review") || !strings.Contains(c.Body, "`lint`") {
		t.Errorf("truncated comment lacks note, marker or checklist")
	}
}

// TestSecretNeverReachesGitHub feeds reports whose Body, step errors and run
// error were redacted by the engine from text containing a secret, and checks
// that no request the fake received carries the secret anywhere.
func TestSecretNeverReachesGitHub(t *testing.T) {
	const secret = "sk-ant-api03-Zx9Q7rT2wV5yB8nM1kL4jH6gF3dS0aP"
	output := "calling the API with key " + secret + "\nreview: fine\n"

	f := newFakeGitHub(t)
	ev := commentEvent(t)
	x := newRun(t, newReporter(t, f, nil), "run-secret", workflow("pr-review", "sticky", true), ev)
	x.R.HeadSHA = sha
	x.FailRedacted(secret, output, "### Review\n")
	stickytest.NoSecret(t, "github", f.allRequests(), secret, f.token)
	if c := f.comment(x.R.Ref.CommentID); !strings.Contains(c.Body, "***") || !strings.Contains(c.Body, "review: fine") {
		t.Errorf("redacted output not shown:\n%s", c.Body)
	}
}

// TestErrors: a forge outage or a bad answer is returned (the engine keeps
// it in the run record) and never carries the token.
func TestErrors(t *testing.T) {
	f := newFakeGitHub(t)
	rep := newReporter(t, f, func(c *Config) { c.Token = "ghp_wrongtoken999" })
	x := newRun(t, rep, "run-err", workflow("pr-review", "sticky", true), prEvent(17))
	_, err := x.Report(contract.PhaseStart)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("bad token: %v", err)
	}
	if strings.Contains(err.Error(), "ghp_wrongtoken999") {
		t.Errorf("error echoes the token: %v", err)
	}

	other := prEvent(1)
	other.Forge = workflows.Forge("gitlab")
	if _, err := newReporter(t, f, nil).Report(context.Background(), &contract.RunReport{RunID: "r", Workflow: workflow("x", "", true), Event: other}); err == nil {
		t.Error("gitlab event accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newReporter(t, f, nil).Report(ctx, &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r", Workflow: workflow("x", "", true), Event: prEvent(1)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 1024)
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	cases := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"token", Config{Token: "t"}, ""},
		{"ghes", Config{Token: "t", APIURL: "https://ghe.example/api/v3"}, ""},
		{"app pkcs1", Config{AppID: 1, PrivateKey: pkcs1}, ""},
		{"app pkcs8", Config{AppID: 1, PrivateKey: pkcs8}, ""},
		{"nothing", Config{}, "set a token"},
		{"both", Config{Token: "t", AppID: 1, PrivateKey: pkcs1}, "not both"},
		{"key without id", Config{PrivateKey: pkcs1}, "without an app id"},
		{"bad key", Config{AppID: 1, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0\n-----END RSA PRIVATE KEY-----\n")}, "private key"},
		{"bad url", Config{Token: "t", APIURL: "ftp://x"}, "api_url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "c2VjcmV0"):
				t.Errorf("error echoes key material")
			}
		})
	}
}

// TestPartialSuccessStatus: a run whose only failures were tolerated by
// continue_on sets a success status that says it partially succeeded, and
// its comment says so.
func TestPartialSuccessStatus(t *testing.T) {
	f := newFakeGitHub(t)
	rep := newReporter(t, f, nil)
	push := &workflows.Event{Forge: Name, Kind: workflows.KindPush, Repo: "Codertocat/Hello-World",
		Push: &workflows.Push{Ref: "refs/heads/main", Branch: "main", After: sha}}
	x := newRun(t, rep, "run-partial", workflow("build", "none", true), push)
	x.Must(contract.PhaseStart)
	x.Finish(workflows.StatusPartiallySucceeded, "")
	x.Must(contract.PhaseFinal)
	got := f.allStatuses()
	if len(got) != 2 || got[1].State != "success" || !strings.HasPrefix(got[1].Description, "Partially succeeded") {
		t.Errorf("statuses %+v, want the last a success that says Partially succeeded", got)
	}
}

// TestFinalLimitLongerThanDeadline: when GitHub asks the final report to
// wait longer than its context allows, the report returns at once (not at
// the deadline) with a contract.RetryAfterError saying how long, for the
// runner's outbox.
func TestFinalLimitLongerThanDeadline(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	rep := newReporter(t, f, nil)
	x := newRun(t, rep, "run-deadline", workflow("pr-review", "sticky", true), prEvent(14))
	id := x.Must(contract.PhaseStart).CommentID
	f.limit("PATCH /repos/Codertocat/Hello-World/issues/comments/"+itoa(id), 5) // Retry-After: 1
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := rep.Report(ctx, &contract.RunReport{Phase: contract.PhaseFinal, RunID: "run-deadline", Attempt: 1,
		Workflow: workflow("pr-review", "sticky", true), Event: prEvent(14), Status: workflows.StatusSucceeded,
		Ref: contract.ReportRef{CommentID: id}})
	took := time.Since(start)
	wait, ok := contract.RetryAfter(err)
	if err == nil || !ok || wait < 900*time.Millisecond {
		t.Fatalf("final under a 1s limit with a 0.7s deadline: err %v, retry after %s (%v); want a RetryAfterError of about 1s", err, wait, ok)
	}
	if took > 500*time.Millisecond {
		t.Errorf("the report returned after %s; it should give up at once", took)
	}
}
