package gitlab

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// ChangedFiles reads every page of a merge request's diffs (a rename under
// both names), stops at 3,000 and says so, and compares a push's before and
// after; each request with the token.
func TestChangedFiles(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	small := []string{"README.md", "doc/a.md => doc/b.md"}
	for i := range 150 {
		small = append(small, fmt.Sprintf("lib/x%03d.rb", i))
	}
	var many []string
	for i := range 3100 {
		many = append(many, fmt.Sprintf("app/f%04d.rb", i))
	}
	f.diffs[1], f.diffs[2] = small, many
	before, after := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	f.compares[before+"..."+after] = []string{"Gemfile", "lib/y.rb"}
	rep := newReporter(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mr := func(iid int) *workflows.Event {
		return &workflows.Event{Forge: Name, Kind: workflows.KindPullRequest, Repo: f.project, ProjectID: f.projID,
			PullRequest: &workflows.PullRequest{Number: iid}}
	}
	got, err := rep.ChangedFiles(ctx, mr(1))
	if err != nil || got.Truncated || len(got.Paths) != 153 || !slices.Contains(got.Paths, "doc/a.md") || !slices.Contains(got.Paths, "doc/b.md") {
		t.Fatalf("MR 1: %d paths truncated %v err %v", len(got.Paths), got.Truncated, err)
	}
	got, err = rep.ChangedFiles(ctx, mr(2))
	if err != nil || !got.Truncated || len(got.Paths) != 3000 {
		t.Fatalf("MR 2: %d paths truncated %v err %v, want 3000 and truncated", len(got.Paths), got.Truncated, err)
	}
	push := &workflows.Event{Forge: Name, Kind: workflows.KindPush, Repo: f.project, ProjectID: f.projID, Push: &workflows.Push{Before: before, After: after}}
	got, err = rep.ChangedFiles(ctx, push)
	if err != nil || got.Truncated || !slices.Equal(got.Paths, []string{"Gemfile", "lib/y.rb"}) {
		t.Fatalf("push: %+v %v", got, err)
	}
	if _, err := rep.ChangedFiles(ctx, mr(3)); err == nil {
		t.Error("a merge request the API does not know: no error")
	}
	if n := f.count("GET", `^/projects/5/merge_requests/1/diffs$`); n != 2 {
		t.Errorf("MR 1 read in %d pages, want 2 (per_page=100)", n)
	}
	if n := f.count("GET", `^/projects/5/merge_requests/2/diffs$`); n != 30 {
		t.Errorf("MR 2 read in %d pages, want 30", n)
	}
	for _, r := range f.allRequests() {
		if r.Auth != f.token || r.Method != "GET" {
			t.Errorf("%s %s sent PRIVATE-TOKEN %q", r.Method, r.Path, r.Auth)
		}
	}
}
