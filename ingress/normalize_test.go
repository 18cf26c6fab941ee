package ingress

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixture is one payload from testdata with the event header its forge
// would send with it.
type fixture struct {
	forge workflows.Forge
	event string // X-GitHub-Event, X-Gitlab-Event or X-Gitea-Event
	path  string // under testdata
}

// gitlabEventHeader maps a GitLab payload's object_kind to the X-Gitlab-Event
// value GitLab sends with it.
var gitlabEventHeader = map[string]string{
	"merge_request": "Merge Request Hook",
	"note":          "Note Hook",
	"issue":         "Issue Hook",
	"push":          "Push Hook",
	"tag_push":      "Tag Push Hook",
	"pipeline":      "Pipeline Hook",
}

// fixtures lists every payload under testdata/github (the event is the
// directory name), testdata/gitlab (the event follows object_kind) and
// testdata/gitea (the event is X-Gitea-Event of the recorded headers).
func fixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	gh, err := filepath.Glob("testdata/github/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gh {
		out = append(out, fixture{workflows.GitHub, filepath.Base(filepath.Dir(p)), p})
	}
	gl, err := filepath.Glob("testdata/gitlab/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gl {
		var head struct {
			ObjectKind string `json:"object_kind"`
		}
		if err := json.Unmarshal(readFile(t, p), &head); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ev, ok := gitlabEventHeader[head.ObjectKind]
		if !ok {
			t.Fatalf("%s: no X-Gitlab-Event known for object_kind %q", p, head.ObjectKind)
		}
		out = append(out, fixture{workflows.GitLab, ev, p})
	}
	gt, err := filepath.Glob("testdata/gitea/*.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gt {
		var h map[string]string
		if err := json.Unmarshal(readFile(t, strings.TrimSuffix(p, ".payload.json")+".headers.json"), &h); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, fixture{workflows.Gitea, h["X-Gitea-Event"], p})
	}
	if len(out) < 30 {
		t.Fatalf("found only %d fixtures; is testdata complete?", len(out))
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldenResult is what a golden file holds: the event (Raw left out), or
// the error for payloads hookrun does not handle.
type goldenResult struct {
	Event     *workflows.Event `json:"event,omitempty"`
	Unhandled bool             `json:"unhandled,omitempty"`
	Error     string           `json:"error,omitempty"`
}

func TestNormalizeGolden(t *testing.T) {
	for _, fx := range fixtures(t) {
		rel := strings.TrimPrefix(fx.path, "testdata/")
		t.Run(rel, func(t *testing.T) {
			body := readFile(t, fx.path)
			ev, err := Normalize(fx.forge, fx.event, body, "delivery-"+filepath.Base(fx.path))
			var res goldenResult
			switch {
			case errors.Is(err, ErrUnhandledEvent):
				res = goldenResult{Unhandled: true, Error: err.Error()}
			case err != nil:
				t.Fatalf("Normalize: %v", err)
			default:
				if !bytes.Equal(ev.Raw, body) {
					t.Errorf("Raw is not the body as received")
				}
				if ev.Forge != fx.forge {
					t.Errorf("Forge = %q, want %q", ev.Forge, fx.forge)
				}
				ev.Raw = nil
				res.Event = ev
			}
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(rel, ".json")+".golden.json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from Normalize's output (run with -update after checking):\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestNormalizeFields pins down the mapping rules the golden files only
// record.
func TestNormalizeFields(t *testing.T) {
	tests := []struct {
		name  string
		forge workflows.Forge
		event string
		path  string
		check func(t *testing.T, e *workflows.Event)
	}{
		{"github pull request opened", workflows.GitHub, "pull_request", "testdata/github/pull_request/opened.payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPullRequest)
				want(t, "action", e.Action, "opened")
				want(t, "repo", e.Repo, "Codertocat/Hello-World")
				want(t, "association", e.AuthorAssociation, "OWNER")
				want(t, "fork", e.PullRequest.Fork, false)
				want(t, "number", e.PullRequest.Number, 2)
				want(t, "head sha", e.HeadSHA(), "ec26c3e57ca3a959ca5aad62de7213c562f8c821")
				want(t, "base ref", e.BaseRef(), "master")
			}},
		{"github issue comment on an issue", workflows.GitHub, "issue_comment", "testdata/github/issue_comment/created.payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindComment)
				want(t, "has pull request", e.PullRequest != nil, false)
				want(t, "issue number", e.Issue.Number, 1)
				want(t, "comment starts", strings.HasPrefix(e.CommentBody(), "You are totally right!"), true)
			}},
		{"github push that deletes its branch", workflows.GitHub, "push", "testdata/github/push/payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "deleted", e.Push.Deleted, true)
				want(t, "head sha (none to check out)", e.HeadSHA(), "")
				want(t, "branch", e.Push.Branch, e.BaseRef())
				want(t, "ref prefix", strings.HasPrefix(e.Push.Ref, "refs/"), true)
				want(t, "association", e.AuthorAssociation, "COLLABORATOR")
			}},
		{"github push of a new branch", workflows.GitHub, "push", "testdata/github/push/with-new-branch.payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "deleted", e.Push.Deleted, false)
				want(t, "head sha", e.HeadSHA(), "6113728f27ae82c7b1a177c8d03f9e96e0adf246")
			}},
		{"gitlab push", workflows.GitLab, "Push Hook", "testdata/gitlab/push.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "deleted", e.Push.Deleted, false)
				want(t, "head sha", e.HeadSHA(), "da1560886d4f094c3e6c9ef40349f7d38b5d27d7")
			}},
		{"gitlab push that deletes its branch", workflows.GitLab, "Push Hook", "testdata/gitlab/push_deleted.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "branch", e.Push.Branch, "master")
				want(t, "deleted", e.Push.Deleted, true)
				want(t, "head sha (none to check out)", e.HeadSHA(), "")
			}},
		{"gitlab merge request", workflows.GitLab, "Merge Request Hook", "testdata/gitlab/merge_request.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPullRequest)
				want(t, "association", e.AuthorAssociation, "NONE")
				want(t, "has head sha", e.HeadSHA() != "", true)
				want(t, "project id", e.ProjectID, int64(1))
				want(t, "author id (the merge request's author, not the sender)", e.AuthorID, int64(51))
			}},
		{"gitlab note on merge request", workflows.GitLab, "Note Hook", "testdata/gitlab/note_merge_request.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindComment)
				want(t, "has pull request", e.PullRequest != nil, true)
				want(t, "has issue", e.Issue != nil, false)
				want(t, "action", e.Action, "created")
				want(t, "project id", e.ProjectID, int64(5))
				want(t, "author id (the note's author)", e.AuthorID, int64(1))
			}},
		{"gitlab note on issue", workflows.GitLab, "Note Hook", "testdata/gitlab/note_issue.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindComment)
				want(t, "has pull request", e.PullRequest != nil, false)
				want(t, "has issue", e.Issue != nil, true)
				want(t, "project id", e.ProjectID, int64(5))
				want(t, "author id (the note's author)", e.AuthorID, int64(1))
			}},
		{"gitlab issue", workflows.GitLab, "Issue Hook", "testdata/gitlab/issue.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindIssue)
				want(t, "project id", e.ProjectID, int64(1))
				want(t, "author id (the issue's author, not the sender)", e.AuthorID, int64(51))
			}},
		{"gitlab tag push", workflows.GitLab, "Tag Push Hook", "testdata/gitlab/tag_push.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "branch", e.Push.Branch, "")
				want(t, "ref prefix", strings.HasPrefix(e.Push.Ref, "refs/tags/"), true)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Normalize(tt.forge, tt.event, readFile(t, tt.path), "d")
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e)
		})
	}
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// patchJSON decodes a fixture, applies edit to it and encodes it again.
func patchJSON(t testing.TB, path string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, path), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func TestNormalizeGitLabMergeActions(t *testing.T) {
	tests := []struct {
		action, oldrev, state string
		sourceProject         float64
		wantAction            string
		wantMerged, wantFork  bool
	}{
		{"open", "", "opened", 0, "opened", false, false},
		{"reopen", "", "opened", 0, "reopened", false, false},
		{"update", "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "opened", 0, "synchronize", false, false},
		{"update", "", "opened", 0, "edited", false, false},
		{"close", "", "closed", 0, "closed", false, false},
		{"merge", "", "merged", 0, "closed", true, false},
		{"approved", "", "opened", 0, "approved", false, false},
		{"unapproved", "", "opened", 0, "unapproved", false, false},
		{"open", "", "opened", 424242, "opened", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.action+"/"+tt.wantAction, func(t *testing.T) {
			body := patchJSON(t, "testdata/gitlab/merge_request.json", func(m map[string]any) {
				oa := obj(m, "object_attributes")
				oa["action"] = tt.action
				oa["state"] = tt.state
				if tt.oldrev != "" {
					oa["oldrev"] = tt.oldrev
				}
				if tt.sourceProject != 0 {
					oa["source_project_id"] = tt.sourceProject
				}
			})
			e, err := Normalize(workflows.GitLab, "Merge Request Hook", body, "d")
			if err != nil {
				t.Fatal(err)
			}
			want(t, "action", e.Action, tt.wantAction)
			want(t, "merged", e.PullRequest.Merged, tt.wantMerged)
			want(t, "fork", e.PullRequest.Fork, tt.wantFork)
		})
	}
}

func TestNormalizeGitHubFork(t *testing.T) {
	const path = "testdata/github/pull_request/opened.payload.json"
	tests := []struct {
		name string
		edit func(pr map[string]any)
		fork bool
	}{
		{"same repository", func(map[string]any) {}, false},
		{"head in another repository", func(pr map[string]any) {
			obj(obj(pr, "head"), "repo")["full_name"] = "stranger/Hello-World"
		}, true},
		{"head repository deleted", func(pr map[string]any) { obj(pr, "head")["repo"] = nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := patchJSON(t, path, func(m map[string]any) { tt.edit(obj(m, "pull_request")) })
			e, err := Normalize(workflows.GitHub, "pull_request", body, "d")
			if err != nil {
				t.Fatal(err)
			}
			want(t, "fork", e.PullRequest.Fork, tt.fork)
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name      string
		forge     workflows.Forge
		event     string
		body      string
		unhandled bool
	}{
		{"github malformed json", workflows.GitHub, "pull_request", `{"action":`, false},
		{"github wrong type", workflows.GitHub, "pull_request", `{"pull_request": 5}`, false},
		{"github no pull request", workflows.GitHub, "pull_request", `{"action":"opened","repository":{"full_name":"a/b"}}`, false},
		{"github issue comment without comment", workflows.GitHub, "issue_comment", `{"issue":{"number":1},"repository":{"full_name":"a/b"}}`, false},
		{"github unhandled", workflows.GitHub, "check_run", `{}`, true},
		{"github ping", workflows.GitHub, "ping", `{"zen":"x"}`, true},
		{"gitlab malformed json", workflows.GitLab, "Push Hook", `[`, false},
		{"gitlab note on snippet", workflows.GitLab, "Note Hook", `{"object_kind":"note","object_attributes":{"noteable_type":"Snippet"}}`, true},
		{"gitlab note of unknown type", workflows.GitLab, "Note Hook", `{"object_kind":"note","object_attributes":{"noteable_type":"Nope"}}`, false},
		{"gitlab pipeline", workflows.GitLab, "Pipeline Hook", `{}`, true},
		{"gitlab confidential note", workflows.GitLab, "Confidential Note Hook", `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(tt.forge, tt.event, []byte(tt.body), "d")
			if err == nil {
				t.Fatal("Normalize succeeded, want an error")
			}
			if got := errors.Is(err, ErrUnhandledEvent); got != tt.unhandled {
				t.Errorf("errors.Is(err, ErrUnhandledEvent) = %v, want %v (err: %v)", got, tt.unhandled, err)
			}
			if !tt.unhandled && !errors.Is(err, ErrMalformedPayload) {
				t.Errorf("err = %v, want it to wrap ErrMalformedPayload", err)
			}
		})
	}
}

var githubFuzzEvents = []string{"pull_request", "issue_comment", "issues", "push", "ping"}
var gitlabFuzzEvents = []string{"Merge Request Hook", "Note Hook", "Issue Hook", "Push Hook", "Tag Push Hook"}

func fuzzNormalize(f *testing.F, forge workflows.Forge, events []string) {
	for _, fx := range fixtures(f) {
		if fx.forge != forge {
			continue
		}
		for i, ev := range events {
			if ev == fx.event {
				f.Add(uint8(i), readFile(f, fx.path))
			}
		}
	}
	f.Add(uint8(0), []byte(`{}`))
	f.Add(uint8(1), []byte(`null`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		event := events[int(which)%len(events)]
		e, err := Normalize(forge, event, body, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrUnhandledEvent) && !errors.Is(err, ErrMalformedPayload) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		if e.Forge != forge || e.Kind == "" || !bytes.Equal(e.Raw, body) {
			t.Fatalf("incomplete event: forge %q kind %q", e.Forge, e.Kind)
		}
		_ = e.Env()
	})
}

func FuzzNormalizeGitHub(f *testing.F) { fuzzNormalize(f, workflows.GitHub, githubFuzzEvents) }

func FuzzNormalizeGitLab(f *testing.F) { fuzzNormalize(f, workflows.GitLab, gitlabFuzzEvents) }

// A comment on a pull request: GitHub's issue_comment payload names the PR
// (issue.pull_request) but not its head, so the event carries the PR number
// and title, no head SHA, and is treated as coming from a fork.
func TestNormalizeGitHubPullRequestComment(t *testing.T) {
	e, err := Normalize(workflows.GitHub, "issue_comment", prComment(t, "/review now", "MEMBER"), "d")
	if err != nil {
		t.Fatal(err)
	}
	if e.PullRequest == nil || e.Issue != nil {
		t.Fatalf("pull request %+v, issue %+v: want only the pull request", e.PullRequest, e.Issue)
	}
	want(t, "number", e.PullRequest.Number, 1)
	want(t, "head sha", e.HeadSHA(), "")
	want(t, "fork", e.PullRequest.Fork, true)
	want(t, "association", e.AuthorAssociation, "MEMBER")
	want(t, "comment", e.CommentBody(), "/review now")
	want(t, "pr title env", e.Title(), "Spelling error in the README file")
}

// A push that deletes its branch, delivered to the server: a push workflow
// does not run on it (no run to fail on a checkout of zeros), a trigger with
// deleted: true does, with no head SHA; a normal push runs only the former.
func TestDeletedPushStartsOnlyDeletedTriggers(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{
		"build.yaml":   "name: build\ncheckout: true\non:\n  - event: push\nsteps:\n  - {id: t, run: 'true'}\n",
		"cleanup.yaml": "name: cleanup\non:\n  - event: push\n    deleted: true\nsteps:\n  - {id: t, run: 'true'}\n",
	})
	for _, tt := range []struct {
		name, forge, event, fixture string
		want                        string // the one workflow that runs
	}{
		{"github deletion", "github", "push", "testdata/github/push/payload.json", "cleanup"},
		{"github new branch", "github", "push", "testdata/github/push/with-new-branch.payload.json", "build"},
		{"gitlab deletion", "gitlab", "Push Hook", "testdata/gitlab/push_deleted.json", "cleanup"},
		{"gitlab push", "gitlab", "Push Hook", "testdata/gitlab/push.json", "build"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a answer
			if tt.forge == "github" {
				a = env.github(t, tt.event, "d-"+strings.ReplaceAll(tt.name, " ", "-"), readFile(t, tt.fixture))
			} else {
				a = env.gitlab(t, tt.event, nil, readFile(t, tt.fixture))
			}
			if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != tt.want {
				t.Fatalf("got %d %s, want one run of %s", a.Code, a.Raw, tt.want)
			}
			req := onlyRequest(t, env, a)
			if deleted := tt.want == "cleanup"; req.Event.Push == nil || req.Event.Push.Deleted != deleted || (req.Event.HeadSHA() == "") != deleted {
				t.Errorf("run request's push %+v (head %q), want deleted %v", req.Event.Push, req.Event.HeadSHA(), deleted)
			}
		})
	}
}
