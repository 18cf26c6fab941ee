package gitea

import (
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/workflows"
)

// forgeView is the conformance suite's view of fakeGitea.
type forgeView struct{ f *fakeGitea }

func (v forgeView) Comments() map[int64]string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	out := map[int64]string{}
	for _, cs := range v.f.comments {
		for _, c := range cs {
			if c.Login == v.f.login {
				out[c.ID] = c.Body
			}
		}
	}
	return out
}

func (v forgeView) Statuses() []string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	var out []string
	for _, s := range v.f.statuses {
		out = append(out, s.State)
	}
	return out
}

func (v forgeView) Requests() int                            { return len(v.f.reqs.All()) }
func (v forgeView) Issue(n int, _ bool) forgetest.IssueState { return v.f.issue(n) } // a pull request is an issue
func (v forgeView) Origin() string                           { return v.f.srv.URL }

// TestForgeConformance runs providers/forge/forgetest against the fake
// Gitea API (method, path, token and a strictly decoded body checked by
// the fake). Its draft is not covered: the fake has no pulls POST (the
// github client sends `draft`, which Gitea does not take).
func TestForgeConformance(t *testing.T) {
	author := commentEvent()
	author.Author = "bob"
	forgetest.Run(t, forgetest.Harness{
		Name: Name,
		New: func(t *testing.T, creds bool) (forge.Forge, forgetest.Fake) {
			f := newFakeGitea(t)
			f.pulls[1] = map[string]any{"number": 1, "head": map[string]any{"ref": "feature", "sha": headSHA, "repo": map[string]any{"full_name": "alice/demo"}},
				"base": map[string]any{"ref": "main", "sha": strings.Repeat("a", 40), "repo": map[string]any{"full_name": "alice/demo"}}}
			f.files[1] = []string{"README.md", "pr-only.txt"}
			f.issues[1] = &fakeIssue{State: "open"} // the pull request, through the issues API
			f.permissions["bob"], f.members["bob"] = "write", true
			cfg := Config{BaseURL: f.base(), API: testAPI}
			if creds {
				cfg.Token = f.token
			}
			fg, err := NewForge(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return fg, forgeView{f}
		},
		Event:       commentEvent(),
		Head:        workflows.Head{SHA: headSHA, HeadRef: "feature"},
		Files:       []string{"README.md", "pr-only.txt"},
		Author:      author,
		Association: "MEMBER",
		GitUser:     "oauth2",
		GitPass:     "gitea-token-7f3a",
		FinalState:  "success",
		Suggestion:  "```diff\n-\t\tlog.Fatal(\"no config\")\n+",
		MarksGone:   true,
		Review: func(t *testing.T) (forge.Forge, forgetest.ReviewFake) {
			f := newFakeGitea(t)
			// Someone else's review with a marker it copied: not hookrun's.
			f.rv = &fakeReviews{valid: []int{10, 11, 12, 13, 14, 15, 39, 40, 41}, reviews: []*fakeReview{{ID: 1, Login: "mallory",
				Comments: []fakeReviewComment{{ID: 2, Path: "main.go", Line: 13, Body: "<!-- hookrun:finding:0123456789abcdef0123456789abcdef -->"}}}}}
			fg, err := NewForge(Config{BaseURL: f.base(), Token: f.token, API: testAPI})
			if err != nil {
				t.Fatal(err)
			}
			return fg, reviewView{f}
		},
		Issue:    5,
		Assignee: "carol",
	})
}
