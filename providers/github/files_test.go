package github

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// ChangedFiles reads every page of a pull request's files (a rename under
// both names), stops at GitHub's 3,000 and says so, and compares a push's
// before and after; each request with the token.
func TestChangedFiles(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	var many []string
	for i := range 3250 {
		many = append(many, fmt.Sprintf("src/f%04d.go", i))
	}
	small := []string{"README.md", "docs/a.md => docs/b.md"}
	for i := range 200 {
		small = append(small, fmt.Sprintf("pkg/x%03d.go", i))
	}
	f.files[1], f.files[2] = small, many
	before, after := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	f.compares[before+"..."+after] = []string{"main.go", "docs/c.md"}
	rep := newReporter(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	pr := func(n int) *workflows.Event {
		return &workflows.Event{Forge: Name, Kind: workflows.KindPullRequest, Repo: f.repo, PullRequest: &workflows.PullRequest{Number: n}}
	}
	got, err := rep.ChangedFiles(ctx, pr(1))
	if err != nil || got.Truncated || len(got.Paths) != 203 || !slices.Contains(got.Paths, "docs/a.md") || !slices.Contains(got.Paths, "docs/b.md") || !slices.Contains(got.Paths, "pkg/x199.go") {
		t.Fatalf("PR 1: %d paths truncated %v err %v", len(got.Paths), got.Truncated, err)
	}
	if n := f.count("GET", `^/repos/Codertocat/Hello-World/pulls/1/files$`); n != 3 {
		t.Errorf("PR 1 read in %d pages, want 3 (per_page=100)", n)
	}
	got, err = rep.ChangedFiles(ctx, pr(2))
	if err != nil || !got.Truncated || len(got.Paths) != 3000 {
		t.Fatalf("PR 2: %d paths truncated %v err %v, want 3000 and truncated", len(got.Paths), got.Truncated, err)
	}
	if n := f.count("GET", `^/repos/Codertocat/Hello-World/pulls/2/files$`); n != 30 {
		t.Errorf("PR 2 read in %d pages, want 30", n)
	}
	if _, err := rep.ChangedFiles(ctx, pr(3)); err == nil {
		t.Error("a pull request the API does not know: no error")
	}
	push := &workflows.Event{Forge: Name, Kind: workflows.KindPush, Repo: f.repo, Push: &workflows.Push{Before: before, After: after}}
	got, err = rep.ChangedFiles(ctx, push)
	if err != nil || got.Truncated || !slices.Equal(got.Paths, []string{"main.go", "docs/c.md"}) {
		t.Fatalf("push: %+v %v", got, err)
	}
	for _, r := range f.allRequests() {
		if r.Auth != "Bearer "+f.token || r.Method != "GET" {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
}
