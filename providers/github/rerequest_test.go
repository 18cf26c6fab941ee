package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// TestRerequestNormalize: a rerequested check run names the hookrun run
// of its external_id and its head; a rerequested check suite every failed
// run of its head (the pull requests GitHub lists, none for a fork's
// branch); the requester is the sender, whose role is looked up (Author).
func TestRerequestNormalize(t *testing.T) {
	const head = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	for _, tc := range []struct {
		event, file, runID string
		prs                []int
	}{
		{ghCheckRun, "check_run/rerequested.payload.json", "01JDQ4V6RZ3M8W1K9T2XGQY7PA", []int{2}},
		{ghCheckSuite, "check_suite/rerequested.payload.json", "", []int{2}},
		{ghCheckSuite, "check_suite/rerequested.fork.payload.json", "", nil},
	} {
		ev, err := Normalize(tc.event, readFile(t, "testdata/github/"+tc.file), "d")
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		rq := ev.Rerequest
		if ev.Kind != workflows.KindRerequest || rq == nil || rq.RunID != tc.runID || rq.HeadSHA != head || len(rq.PullRequests) != len(tc.prs) ||
			len(tc.prs) > 0 && rq.PullRequests[0] != tc.prs[0] || ev.Sender != "Octocat" || ev.Author != "Octocat" || ev.AuthorAssociation != "" ||
			ev.InstallationID != 1 || ev.Repo != "Codertocat/Hello-World" || ev.PullRequest != nil {
			t.Errorf("%s: %+v, rerequest %+v", tc.file, ev, rq)
		}
	}
}

// TestRerequestAssociation: the requester of a rerequest is looked up as
// the App's installation by permission on the repository (the fake checks
// method, path and the installation token): write is MEMBER, the owner's
// admin OWNER, read COLLABORATOR only for a collaborator; events whose
// payload carries the association are not looked up, and without
// credentials the answer is ErrNoCredentials.
func TestRerequestAssociation(t *testing.T) {
	fake, rep := appFake(t)
	fake.permissions = map[string]string{"Octocat": "write", "Codertocat": "admin", "reader": "read", "helper": "read", "nobody": "none"}
	fake.collaborators = map[string]bool{"helper": true}
	f := &Forge{rep: rep}
	ctx := context.Background()
	ev, err := Normalize(ghCheckRun, readFile(t, "testdata/github/check_run/rerequested.payload.json"), "d")
	if err != nil {
		t.Fatal(err)
	}
	for login, want := range map[string]string{"Octocat": "MEMBER", "Codertocat": "OWNER", "reader": "NONE", "helper": "COLLABORATOR", "nobody": "NONE"} {
		ev.Author = login
		if got, err := f.Association(ctx, ev); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", login, got, err, want)
		}
	}
	for _, r := range fake.allRequests() {
		if strings.Contains(r.Path, "/collaborators/") && (r.Method != "GET" || r.Auth != "token ghs_installation1_1") {
			t.Errorf("%s %s with %q, want GET as installation 1", r.Method, r.Path, r.Auth)
		}
	}
	if n, c := fake.count("GET", `^/repos/Codertocat/Hello-World/collaborators/[^/]+/permission$`), fake.count("GET", `^/repos/Codertocat/Hello-World/collaborators/[^/]+$`); n != 5 || c != 2 {
		t.Errorf("%d permission and %d collaborator lookups, want 5 and 2 (the read users only)", n, c)
	}
	ev.Author = "ghost"
	if _, err := f.Association(ctx, ev); err == nil || errors.Is(err, forge.ErrAssociationInPayload) {
		t.Errorf("unknown user: %v, want the lookup's error", err)
	}
	pr, err := Normalize(ghPullRequest, readFile(t, "testdata/github/pull_request/opened.payload.json"), "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Association(ctx, pr); !errors.Is(err, forge.ErrAssociationInPayload) {
		t.Errorf("pull_request: %v, want ErrAssociationInPayload", err)
	}
	if _, err := (&Forge{}).Association(ctx, ev); !errors.Is(err, forge.ErrNoCredentials) {
		t.Errorf("without credentials: %v, want ErrNoCredentials", err)
	}
}
