package gitea

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

const headSHA = "4ac6328925c3c9834bab00ce315e67cced788966"

func newReporter(t *testing.T, f *fakeGitea) *Reporter {
	t.Helper()
	r, err := New(Config{BaseURL: f.base(), Token: f.token, API: testAPI})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func commentEvent() *workflows.Event {
	return &workflows.Event{Forge: Name, Kind: workflows.KindComment, Action: "created", Repo: "alice/demo",
		Sender: "alice", PullRequest: &workflows.PullRequest{Number: 1, Title: "Add pr-only.txt", HeadSHA: headSHA, HeadRef: "feature", BaseRef: "main"},
		Comment: &workflows.Comment{ID: 3, Body: "/review"}}
}

var reviewWorkflow = &workflows.Workflow{Name: "pr-review", Report: workflows.Report{Comment: workflows.CommentSticky, Status: true}}

// A run is reported on Gitea through its API with the Gitea token: the
// sticky comment created at start and edited in place after, the pending →
// success status on the head, the eyes reaction on the triggering comment;
// a second run of the workflow finds the comment by its marker (Gitea's
// list, paged by limit) and edits it rather than adding one.
func TestReportOnGitea(t *testing.T) {
	f := newFakeGitea(t)
	for i := 0; i < 35; i++ { // two pages of other people's comments
		f.comments[1] = append(f.comments[1], &fakeComment{ID: int64(i + 1), Login: "alice", Body: "lgtm"})
	}
	rep := newReporter(t, f)
	run := stickytest.NewRun(t, rep, "01RUNGITEA0000000000000001", reviewWorkflow, commentEvent(), 2*time.Second)
	ref := run.Must(contract.PhaseStart)
	if ref.CommentID == 0 {
		t.Fatal("start report returned no comment id")
	}
	run.Step(0, workflows.StatusSucceeded)
	run.Must(contract.PhaseProgress)
	run.Step(1, workflows.StatusSucceeded)
	run.Finish(workflows.StatusSucceeded, "### Review\nfine")
	if got := run.Must(contract.PhaseFinal); got.CommentID != ref.CommentID {
		t.Fatalf("final report wrote comment %d, start %d", got.CommentID, ref.CommentID)
	}

	f.mu.Lock()
	ours := 0
	for _, c := range f.comments[1] {
		if c.Login == f.login {
			ours++
			if !render.HasMarker(c.Body, "pr-review") || !strings.Contains(c.Body, "fine") {
				t.Errorf("comment body:\n%s", c.Body)
			}
		}
	}
	states := []string{}
	for _, s := range f.statuses {
		if s.SHA != headSHA || s.Context != "hookrun/pr-review" || s.TargetURL != "https://hookrun.example/runs/01RUNGITEA0000000000000001" {
			t.Errorf("status %+v", s)
		}
		states = append(states, s.State)
	}
	reactions := f.reactions
	f.mu.Unlock()
	if ours != 1 {
		t.Errorf("%d comments of the bot, want 1", ours)
	}
	if strings.Join(states, ",") != "pending,success" {
		t.Errorf("statuses %v, want pending,success", states)
	}
	if len(reactions) != 1 || reactions[0] != (fakeReaction{3, "eyes"}) {
		t.Errorf("reactions %+v, want eyes on comment 3", reactions)
	}
	if n := f.reqs.Count("POST", `/api/v1/repos/alice/demo/issues/1/comments`); n != 1 {
		t.Errorf("%d comments created, want 1", n)
	}
	if n := f.reqs.Count("PATCH", `/api/v1/repos/alice/demo/issues/comments/\d+`); n < 2 {
		t.Errorf("%d edits, want the progress and final edits", n)
	}

	// A second run with a reporter that knows nothing finds the comment.
	rep2 := newReporter(t, f)
	run2 := stickytest.NewRun(t, rep2, "01RUNGITEA0000000000000002", reviewWorkflow, commentEvent(), time.Second)
	if got := run2.Must(contract.PhaseStart); got.CommentID != ref.CommentID {
		t.Errorf("second run wrote comment %d, want the sticky %d", got.CommentID, ref.CommentID)
	}
	if n := f.reqs.Count("POST", `/api/v1/repos/alice/demo/issues/1/comments`); n != 1 {
		t.Errorf("second run created a comment (%d creations)", n)
	}
	for _, r := range f.reqs.All() {
		if r.Auth != "token "+f.token {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
}

// A GitHub event is not reported on Gitea, and nothing is sent.
func TestReportRefusesOtherForges(t *testing.T) {
	f := newFakeGitea(t)
	ev := commentEvent()
	ev.Forge = workflows.Forge("github")
	_, err := newReporter(t, f).Report(context.Background(), &contract.RunReport{RunID: "r", Workflow: reviewWorkflow, Event: ev, Phase: contract.PhaseStart})
	if err == nil || !strings.Contains(err.Error(), "event comes from github") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.reqs.All()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// Permissions map onto associations; read is COLLABORATOR only for a
// collaborator (every user reads a public repository); a failed lookup is
// an error, never an association.
func TestCollaboratorAssociation(t *testing.T) {
	f := newFakeGitea(t)
	f.permissions = map[string]string{"alice": "owner", "bob": "admin", "carol": "write", "dave": "read", "eve": "read", "mallory": "none"}
	f.members = map[string]bool{"dave": true}
	rep := newReporter(t, f)
	for login, want := range map[string]string{"alice": "OWNER", "bob": "MEMBER", "carol": "MEMBER", "dave": "COLLABORATOR", "eve": "NONE", "mallory": "NONE"} {
		got, err := rep.CollaboratorAssociation(context.Background(), "alice/demo", login)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", login, got, err, want)
		}
	}
	if n := f.reqs.Count("GET", `/api/v1/repos/alice/demo/collaborators/[a-z]+`); n != 2 {
		t.Errorf("%d collaborator checks, want 2 (the read users only)", n)
	}
	if _, err := rep.CollaboratorAssociation(context.Background(), "alice/demo", "ghost"); err == nil {
		t.Error("unknown user: no error")
	}
	if _, err := rep.CollaboratorAssociation(context.Background(), "alice/demo", "../../admin"); err == nil {
		t.Error("a login that is a path: no error")
	}
}

// The head of a pull request comes from GET /pulls/{n}; a head in another
// repository is a fork.
func TestPullRequestHead(t *testing.T) {
	f := newFakeGitea(t)
	pull := func(headRepo string) map[string]any {
		return map[string]any{"number": 1, "head": map[string]any{"ref": "feature", "sha": headSHA, "repo": map[string]any{"full_name": headRepo}},
			"base": map[string]any{"ref": "main", "sha": strings.Repeat("a", 40), "repo": map[string]any{"full_name": "alice/demo"}}}
	}
	f.pulls[1] = pull("alice/demo")
	f.pulls[2] = pull("mallory/demo")
	rep := newReporter(t, f)
	ev := commentEvent()
	h, err := rep.PullRequestHead(context.Background(), ev)
	if err != nil || h != (workflows.Head{SHA: headSHA, HeadRef: "feature", BaseRef: "main"}) {
		t.Fatalf("head %+v, %v", h, err)
	}
	ev.PullRequest.Number = 2
	if h, err := rep.PullRequestHead(context.Background(), ev); err != nil || !h.Fork {
		t.Fatalf("fork head %+v, %v", h, err)
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		wantErr string
	}{
		{Config{BaseURL: "https://gitea.example/", Token: "t", API: testAPI}, ""},
		{Config{BaseURL: "https://codeberg.org", Token: "t", API: testAPI}, ""},
		{Config{BaseURL: "https://gitea.example/api/v1/", Token: "t", API: testAPI}, "without api/v1"},
		{Config{BaseURL: "gitea.example", Token: "t", API: testAPI}, "want the server's http(s) root"},
		{Config{BaseURL: "https://gitea.example/", API: testAPI}, "set a token"},
		{Config{BaseURL: "https://gitea.example/", Token: "t"}, "no API client"},
	} {
		err := tc.cfg.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: %v, want %q", tc.cfg.BaseURL, err, tc.wantErr)
		}
	}
	for base, want := range map[string]string{"https://gitea.example/": "https://gitea.example/api/v1/", "https://host/git": "https://host/git/api/v1/"} {
		if got, _ := APIURL(base); got != want {
			t.Errorf("APIURL(%s) = %s, want %s", base, got, want)
		}
	}
	if o, _ := GitOrigin("https://Gitea.Example:3000/sub/"); o != "https://gitea.example:3000" {
		t.Errorf("GitOrigin = %s", o)
	}
}
