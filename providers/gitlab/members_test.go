package gitlab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// AuthorAssociation reads GET /projects/:id/members/all/:user_id with the
// PRIVATE-TOKEN and maps access levels: Owner → OWNER, Maintainer and
// Developer → MEMBER, Reporter → COLLABORATOR, lower levels, non-members
// (404), blocked users and expired memberships → NONE.
func TestAuthorAssociation(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	yesterday := time.Now().AddDate(0, 0, -1).Format("2006-01-02")
	nextYear := time.Now().AddDate(1, 0, 0).Format("2006-01-02")
	f.members = map[int64]fakeMember{
		50: {Username: "owner", AccessLevel: 50},
		40: {Username: "maintainer", AccessLevel: 40},
		30: {Username: "developer", AccessLevel: 30},
		20: {Username: "reporter", AccessLevel: 20},
		15: {Username: "planner", AccessLevel: 15},
		10: {Username: "guest", AccessLevel: 10},
		5:  {Username: "minimal", AccessLevel: 5},
		31: {Username: "blocked-dev", AccessLevel: 30, State: "blocked"},
		32: {Username: "expired-dev", AccessLevel: 30, ExpiresAt: yesterday},
		33: {Username: "expiring-dev", AccessLevel: 30, ExpiresAt: nextYear},
	}
	rep := newReporter(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		user int64
		want string
	}{
		{50, "OWNER"}, {40, "MEMBER"}, {30, "MEMBER"}, {20, "COLLABORATOR"}, {15, "NONE"}, {10, "NONE"}, {5, "NONE"},
		{999, "NONE"}, {31, "NONE"}, {32, "NONE"}, {33, "MEMBER"},
	}
	for _, tt := range tests {
		got, err := rep.AuthorAssociation(ctx, f.projID, tt.user)
		if err != nil || got != tt.want {
			t.Errorf("user %d: %q, %v; want %q", tt.user, got, err, tt.want)
		}
	}
	if n := f.count("GET", `^/projects/5/members/all/\d+$`); n != len(tests) {
		t.Errorf("%d member reads, want %d", n, len(tests))
	}
	for _, r := range f.allRequests() {
		if r.Auth != f.token {
			t.Errorf("%s %s sent PRIVATE-TOKEN %q", r.Method, r.Path, r.Auth)
		}
	}

	// Failures are errors (ingress then treats the user as NONE), without
	// the token in them; a project GitLab does not know is one too.
	bad := newReporter(t, f, func(c *Config) { c.Token = "glpat-wrong-token-xyz" })
	if got, err := bad.AuthorAssociation(ctx, f.projID, 30); err == nil || got != "" || strings.Contains(err.Error(), "glpat-wrong-token-xyz") {
		t.Errorf("bad token: %q, %v", got, err)
	}
	f.limit("GET /projects/5/members/all/30", 1)
	quick := newReporter(t, f, func(c *Config) { c.MaxWait = -1 })
	if _, err := quick.AuthorAssociation(ctx, f.projID, 30); err == nil {
		t.Error("a rate-limited lookup succeeded")
	}
	if _, err := rep.AuthorAssociation(ctx, 0, 30); err == nil {
		t.Error("a lookup without a project id succeeded")
	}
}

// PullRequestHead reads GET /projects/:id/merge_requests/:iid: SHA,
// branches, and Fork when source and target projects differ.
func TestMergeRequestHead(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	f.mrs[1] = fakeMR{SHA: sha, Source: "feature", Target: "main"}
	f.mrs[2] = fakeMR{SHA: sha, Source: "patch-1", Target: "main", SourceProject: 77}
	rep := newReporter(t, f, nil)
	ctx := context.Background()
	for _, tt := range []struct {
		ev   *workflows.Event
		want workflows.Head
	}{
		{&workflows.Event{Repo: f.project, ProjectID: f.projID, PullRequest: &workflows.PullRequest{Number: 1}}, workflows.Head{SHA: sha, HeadRef: "feature", BaseRef: "main"}},
		{&workflows.Event{Repo: f.project, PullRequest: &workflows.PullRequest{Number: 2}}, workflows.Head{SHA: sha, HeadRef: "patch-1", BaseRef: "main", Fork: true}},
	} {
		got, err := rep.PullRequestHead(ctx, tt.ev)
		if err != nil || got != tt.want {
			t.Errorf("!%d: %+v, %v; want %+v", tt.ev.PullRequest.Number, got, err, tt.want)
		}
	}
	if _, err := rep.PullRequestHead(ctx, &workflows.Event{Repo: f.project, ProjectID: f.projID, PullRequest: &workflows.PullRequest{Number: 3}}); err == nil {
		t.Error("an unknown merge request has a head")
	}
	if f.count("GET", `^/projects/5/merge_requests/1$`) != 1 || f.count("GET", `^/projects/gitlab-org%2Fgitlab-test/merge_requests/2$`) != 1 {
		t.Errorf("requests: %+v", f.allRequests())
	}
}
