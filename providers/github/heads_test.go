package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

const headB = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"

// PullRequestHead reads GET /repos/{owner}/{repo}/pulls/{number} with the
// token: head SHA and branch, base branch, and Fork from head.repo vs
// base.repo (a deleted fork counts as one).
func TestPullRequestHead(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.pulls[1] = fakePull{HeadSHA: sha, HeadRef: "changes", BaseRef: "master", HeadRepo: "Codertocat/Hello-World"}
	f.pulls[2] = fakePull{HeadSHA: headB, HeadRef: "patch-1", BaseRef: "main", HeadRepo: "forker/Hello-World"}
	f.pulls[3] = fakePull{HeadSHA: headB, HeadRef: "gone", BaseRef: "main"}
	f.pulls[4] = fakePull{HeadSHA: "", HeadRef: "weird", BaseRef: "main", HeadRepo: "Codertocat/Hello-World"}
	rep := newReporter(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tests := []struct {
		number  int
		want    workflows.Head
		wantErr string
	}{
		{1, workflows.Head{SHA: sha, HeadRef: "changes", BaseRef: "master"}, ""},
		{2, workflows.Head{SHA: headB, HeadRef: "patch-1", BaseRef: "main", Fork: true}, ""},
		{3, workflows.Head{SHA: headB, HeadRef: "gone", BaseRef: "main", Fork: true}, ""},
		{4, workflows.Head{}, "names no head commit"},
		{5, workflows.Head{}, "404"},
	}
	for _, tt := range tests {
		ev := commentEvent(t)
		ev.Issue = nil
		ev.PullRequest = &workflows.PullRequest{Number: tt.number, Fork: true}
		got, err := rep.PullRequestHead(ctx, ev)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("#%d: err %v, want one containing %q", tt.number, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("#%d: %+v, %v; want %+v", tt.number, got, err, tt.want)
		}
	}
	if n := f.count("GET", `^/repos/Codertocat/Hello-World/pulls/\d+$`); n != len(tests) {
		t.Errorf("%d pull request reads, want %d", n, len(tests))
	}
	for _, r := range f.allRequests() {
		if r.Auth != "Bearer "+f.token {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Auth)
		}
	}

	// Wrong credentials and an event that is not about a pull request are
	// errors, and the token never appears in them.
	bad := newReporter(t, f, func(c *Config) { c.Token = "ghp_wrong_token_value" })
	ev := commentEvent(t)
	ev.PullRequest = &workflows.PullRequest{Number: 1}
	if _, err := bad.PullRequestHead(ctx, ev); err == nil || strings.Contains(err.Error(), "ghp_wrong_token_value") {
		t.Errorf("bad credentials: %v", err)
	}
	ev.PullRequest = nil
	if _, err := rep.PullRequestHead(ctx, ev); err == nil {
		t.Error("an issue comment has a pull request head")
	}
}

// As a GitHub App the lookup uses the event's installation token.
func TestPullRequestHeadAsApp(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := newFakeGitHub(t)
	f.token = ""
	f.appID, f.appKey, f.appSlug = 4242, &key.PublicKey, "hookrun-test"
	f.tokenTTL = []time.Duration{time.Hour}
	f.pulls[9] = fakePull{HeadSHA: sha, HeadRef: "changes", BaseRef: "master", HeadRepo: "Codertocat/Hello-World"}
	rep := newReporter(t, f, func(c *Config) { c.Token = ""; c.AppID = 4242; c.PrivateKey = pemKey })
	ev := prEvent(9)
	ev.Kind, ev.PullRequest.HeadSHA, ev.InstallationID = workflows.KindComment, "", 777
	got, err := rep.PullRequestHead(context.Background(), ev)
	if err != nil || got.SHA != sha || got.Fork {
		t.Fatalf("head %+v, %v", got, err)
	}
	if n := f.count("POST", `/app/installations/777/access_tokens`); n != 1 {
		t.Errorf("%d installation tokens fetched, want 1", n)
	}
	for _, r := range f.allRequests() {
		if strings.HasPrefix(r.Path, "/repos/") && !strings.HasPrefix(r.Auth, "token ghs_installation777_") {
			t.Errorf("%s %s with %q, want the installation token", r.Method, r.Path, r.Auth)
		}
	}
	ev.InstallationID = 0
	if _, err := rep.PullRequestHead(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "installation") {
		t.Errorf("without an installation id: %v", err)
	}
}
