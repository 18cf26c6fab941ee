package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// fakeFiles is a workflows.ChangedFilesLookup that answers from a table
// and counts its calls.
type fakeFiles struct {
	mu    sync.Mutex
	calls []string
	files workflows.ChangedFiles
	err   error
}

func (f *fakeFiles) ChangedFiles(_ context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	what := "pull"
	if e.Push != nil {
		what = "compare " + e.Push.Before[:7] + "..." + e.Push.After[:7]
	}
	f.calls = append(f.calls, what)
	return f.files, f.err
}

func (f *fakeFiles) set(files workflows.ChangedFiles, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files, f.err, f.calls = files, err, nil
}

func (f *fakeFiles) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

const pathsWorkflow = `name: go-tests
on:
  - event: pull_request
    actions: [opened, synchronize]
    paths: ["**/*.go", go.mod]
    paths_ignore: ["vendor/**"]
  - event: push
    paths: ["**/*.go"]
authorize:
  author_association: [OWNER, MEMBER, COLLABORATOR, NONE]
steps:
  - id: t
    run: go test ./...
`

// pushBody is the GitHub push fixture with n commits, the last of which
// modifies files (GitHub's payload says nothing of how many commits there
// were).
func pushBody(t *testing.T, n int, files ...string) []byte {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(readFile(t, githubFixtures+"push/payload.json"), &p); err != nil {
		t.Fatal(err)
	}
	var commits []any
	for i := range n {
		c := map[string]any{"id": fmt.Sprintf("%040d", i+1), "message": "m", "added": []string{}, "removed": []string{}, "modified": []string{}}
		if i == n-1 {
			c["modified"] = files
		}
		commits = append(commits, c)
	}
	p["commits"] = commits
	p["before"] = strings.Repeat("1", 40)
	p["after"] = strings.Repeat("2", 40)
	p["deleted"] = false
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPathsTriggers: ingress learns the changed files only when a workflow
// selects by them, from the forge API for a pull request and from the
// payload for a push (the compare API when the payload lists 20 commits),
// skips a workflow none of whose files count and says why, and runs one
// whose files are unknown or cut, saying so in the run's event.
func TestPathsTriggers(t *testing.T) {
	files := &fakeFiles{}
	env := newEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("github"), files: files})}, map[string]string{"go.yaml": pathsWorkflow})
	pr := readFile(t, githubFixtures+"pull_request/opened.payload.json")
	n := 0
	deliver := func(event string, body []byte) answer {
		n++
		return env.github(t, event, fmt.Sprintf("paths-%d", n), touched(t, body, n)) // each a new event
	}
	runFiles := func(a answer) *workflows.ChangedFiles {
		t.Helper()
		if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
			t.Fatalf("got %d %s, want one run", a.Code, a.Raw)
		}
		rec, _, err := env.q.Runs().Get(context.Background(), a.Runs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Event.Files
	}

	files.set(workflows.ChangedFiles{Paths: []string{"README.md", "internal/x/y.go"}}, nil)
	if f := runFiles(deliver("pull_request", pr)); f == nil || f.Truncated || f.Unknown != "" {
		t.Fatalf("a PR changing Go code: files %+v", f)
	}
	if c := files.called(); len(c) != 1 || c[0] != "pull" {
		t.Fatalf("lookups %v, want one of the pull request", c)
	}

	files.set(workflows.ChangedFiles{Paths: []string{"README.md", "vendor/a/b.go"}}, nil)
	a := deliver("pull_request", pr)
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || len(a.Skipped) != 1 ||
		a.Skipped[0].Reason != `no changed file in paths [**/*.go go.mod] outside paths_ignore [vendor/**]` {
		t.Fatalf("a PR changing only docs and vendored code: %d %s", a.Code, a.Raw)
	}

	files.set(workflows.ChangedFiles{Paths: []string{"README.md"}, Truncated: true}, nil)
	if f := runFiles(deliver("pull_request", pr)); f == nil || !f.Truncated {
		t.Fatalf("a PR whose list was cut: files %+v, want truncated", f)
	}
	files.set(workflows.ChangedFiles{}, errors.New("502 Bad Gateway"))
	if f := runFiles(deliver("pull_request", pr)); f == nil || f.Unknown == "" || strings.Contains(f.Unknown, "502") {
		t.Fatalf("a PR whose files the API did not list: files %+v, want unknown (without the API's words)", f)
	}

	files.set(workflows.ChangedFiles{}, nil)
	if f := runFiles(deliver("push", pushBody(t, 3, "cmd/main.go"))); f == nil || f.Truncated {
		t.Fatalf("a push of Go code: files %+v", f)
	}
	if a := deliver("push", pushBody(t, 3, "README.md")); len(a.Runs) != 0 || len(a.Skipped) != 1 || !strings.Contains(a.Skipped[0].Reason, "no changed file in paths") {
		t.Fatalf("a push of docs: %s", a.Raw)
	}
	if c := files.called(); len(c) != 0 {
		t.Fatalf("pushes listing every commit looked up %v, want nothing", c)
	}
	files.set(workflows.ChangedFiles{Paths: []string{"pkg/z.go"}}, nil)
	if f := runFiles(deliver("push", pushBody(t, 20, "README.md"))); f == nil {
		t.Fatal("a push of 20 commits: no files")
	}
	if c := files.called(); len(c) != 1 || c[0] != "compare 1111111...2222222" {
		t.Fatalf("a push of 20 commits looked up %v, want one compare", c)
	}

	plain := &fakeFiles{}
	env2 := newEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("github"), files: plain})}, map[string]string{"pr.yaml": prWorkflow})
	if a := env2.github(t, "pull_request", "plain-1", pr); a.Code != http.StatusAccepted {
		t.Fatalf("got %d %s", a.Code, a.Raw)
	}
	if c := plain.called(); len(c) != 0 {
		t.Fatalf("no workflow has paths, yet ingress looked up %v", c)
	}
}
