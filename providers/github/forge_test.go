package github

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// forgeView is the conformance suite's view of fakeGitHub.
type forgeView struct{ f *fakeGitHub }

func (v forgeView) Comments() map[int64]string {
	out := map[int64]string{}
	for _, c := range v.f.commentsBy(v.f.bot) {
		out[c.ID] = c.Body
	}
	return out
}

func (v forgeView) Statuses() []string {
	var out []string
	for _, s := range v.f.allStatuses() {
		out = append(out, s.State)
	}
	return out
}

func (v forgeView) Requests() int                            { return len(v.f.allRequests()) }
func (v forgeView) Issue(n int, _ bool) forgetest.IssueState { return v.f.issue(n) } // a pull request is an issue
func (v forgeView) Origin() string                           { return v.f.srv.URL }

// TestForgeConformance runs providers/forge/forgetest against the fake
// GitHub API (method, path, token and body checked by the fake).
func TestForgeConformance(t *testing.T) {
	forgetest.Run(t, forgetest.Harness{
		Name: Name,
		New: func(t *testing.T, creds bool) (forge.Forge, forgetest.Fake) {
			f := newFakeGitHub(t)
			f.pulls[1] = fakePull{HeadSHA: sha, HeadRef: "changes", BaseRef: "main", HeadRepo: "Codertocat/Hello-World"}
			f.files[1] = []string{"README.md", "docs/a.md"}
			f.issues[1] = &fakeIssue{State: "open"} // the pull request, through the issues API
			cfg := Config{APIURL: f.url(), RunURL: "https://hookrun.example/api/v1/runs/{run}", Client: forge.Client{MaxWait: 5 * time.Second}}
			if creds {
				cfg.Token = f.token
			}
			fg, err := NewForge(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return fg, forgeView{f}
		},
		Event:      prEvent(1),
		Head:       workflows.Head{SHA: sha, HeadRef: "changes"},
		Files:      []string{"README.md", "docs/a.md"},
		GitUser:    "x-access-token",
		GitPass:    "ghp_testtoken123",
		FinalState: "success",
		Suggestion: "```suggestion\n",
		MarksGone:  true,
		Review: func(t *testing.T) (forge.Forge, forgetest.ReviewFake) {
			f := newFakeGitHub(t)
			rv := newReviewFake(f)
			// Someone else's comment with a marker it copied: not hookrun's.
			rv.comments = append(rv.comments, &fakeReviewComment{ID: 1, Path: "main.go", Line: 13, Login: "mallory",
				Body: "<!-- hookrun:finding:0123456789abcdef0123456789abcdef -->"})
			fg, err := NewForge(Config{APIURL: f.url(), Token: f.token, RunURL: "https://hookrun.example/runs/{run}", Client: forge.Client{MaxWait: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			return fg, reviewView{f}
		},
		Issue:    5,
		Assignee: "octocat",
		// go-github's IssueRequest: completed, not_planned, reopened.
		Reasons: map[string]string{"completed": "completed", "not_planned": "not_planned", "duplicate": "not_planned", "reopen": "reopened"},
		Draft: func(t *testing.T) (forge.Forge, contract.DraftRequest, workflows.ChangeRequest) {
			srv := httptest.NewServer(&pullsAPI{t: t, open: map[string]int{}})
			t.Cleanup(srv.Close)
			fg, err := NewForge(Config{APIURL: srv.URL + "/", Token: "gh-draft-token", Client: forge.Client{MaxWait: time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			return fg, contract.DraftRequest{Event: &workflows.Event{Forge: Name, Repo: "Codertocat/Hello-World"}, Head: "hookrun/fix/2", Base: "changes", Title: "t", Body: "b"},
				workflows.ChangeRequest{Number: 12, URL: "https://github.com/Codertocat/Hello-World/pull/12"}
		},
	})
}
