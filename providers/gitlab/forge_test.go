package gitlab

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// forgeView is the conformance suite's view of fakeGitLab.
type forgeView struct{ f *fakeGitLab }

func (v forgeView) Comments() map[int64]string {
	out := map[int64]string{}
	for _, n := range v.f.notesBy(v.f.botID) {
		out[n.ID] = n.Body
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

func (v forgeView) Requests() int                             { return len(v.f.allRequests()) }
func (v forgeView) Issue(n int, mr bool) forgetest.IssueState { return v.f.issue(n, mr) }
func (v forgeView) Origin() string                            { return v.f.srv.URL }

// TestForgeConformance runs providers/forge/forgetest against the fake
// GitLab API (method, path, token and body checked by the fake).
func TestForgeConformance(t *testing.T) {
	ev := mrEvent(1)
	ev.ProjectID = 5
	author := mrEvent(1)
	author.ProjectID, author.AuthorID, author.Author = 5, 40, "maintainer"
	forgetest.Run(t, forgetest.Harness{
		Name: Name,
		New: func(t *testing.T, creds bool) (forge.Forge, forgetest.Fake) {
			f := newFakeGitLab(t)
			f.mrs[1] = fakeMR{SHA: sha, Source: "feature", Target: "main"}
			f.diffs[1] = []string{"README.md", "lib/x.rb"}
			f.members[40] = fakeMember{Username: "maintainer", AccessLevel: 40}
			cfg := Config{BaseURL: f.srv.URL, RunURL: "https://hookrun.example/api/v1/runs/{run}", Client: forge.Client{MaxWait: 5 * time.Second}}
			if creds {
				cfg.Token = f.token
			}
			fg, err := NewForge(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return fg, forgeView{f}
		},
		Event:       ev,
		Head:        workflows.Head{SHA: sha, HeadRef: "feature"},
		Files:       []string{"README.md", "lib/x.rb"},
		Author:      author,
		Association: "MEMBER",
		GitUser:     "oauth2",
		GitPass:     "glpat-testtoken-abc123",
		FinalState:  "success",
		Suggestion:  "```suggestion:-0+0\n",
		MarksGone:   true,
		Review: func(t *testing.T) (forge.Forge, forgetest.ReviewFake) {
			f := newFakeGitLab(t)
			newDiscussionsFake(f)
			fg, err := NewForge(Config{BaseURL: f.srv.URL, Token: f.token, Client: forge.Client{MaxWait: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			return fg, reviewView{f}
		},
		Issue:    5,
		Assignee: "dave",
		Draft: func(t *testing.T) (forge.Forge, contract.DraftRequest, workflows.ChangeRequest) {
			srv := httptest.NewServer(&mrAPI{open: map[string]int{}})
			t.Cleanup(srv.Close)
			fg, err := NewForge(Config{BaseURL: srv.URL, Token: "gl-draft-token", Client: forge.Client{MaxWait: time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			return fg, contract.DraftRequest{Event: &workflows.Event{Forge: Name, Repo: "group/project"}, Head: "hookrun/fix/2", Base: "feature", Title: "t", Body: "b"},
				workflows.ChangeRequest{Number: 21, URL: "https://gitlab.example/group/project/-/merge_requests/21"}
		},
	})
}
