package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
)

func TestGitOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "https://github.com",
		"https://api.github.com/":         "https://github.com",
		"https://ghe.example/api/v3/":     "https://ghe.example",
		"https://GHE.example:8443/api/v3": "https://ghe.example:8443",
		"http://127.0.0.1:4321/api/v3/":   "http://127.0.0.1:4321",
		"https://api.octocorp.ghe.com/":   "https://octocorp.ghe.com",
	} {
		if got, err := GitOrigin(in); err != nil || got != want {
			t.Errorf("GitOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := GitOrigin("ftp://ghe.example/"); err == nil {
		t.Error("GitOrigin accepted an ftp URL")
	}
}

// TestGitCredentials: with a token, git gets the token; as an App, git gets
// installation tokens (user x-access-token) minted with the app's JWT, from
// the same cache the API calls use, renewed before they expire, and found
// through GET /repos/{owner}/{repo}/installation for an event without an
// installation id.
func TestGitCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeGitHub(t)
	tokenRep := newReporter(t, f, nil)
	if user, tok, err := tokenRep.GitCredentials(ctx, prEvent(1)); err != nil || user != "x-access-token" || tok != f.token {
		t.Errorf("token mode: %q %q %v", user, tok, err)
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f.token = ""
	f.appID, f.appKey, f.appSlug, f.bot = 4242, &key.PublicKey, "hookrun-test", "hookrun-test[bot]"
	f.repoInst = 778
	// The first token is inside the refresh margin: the next use renews it.
	f.tokenTTL = []time.Duration{50 * time.Second, time.Hour}
	rep := newReporter(t, f, func(c *Config) { c.Token = ""; c.AppID = 4242; c.PrivateKey = pemKey })

	ev := prEvent(14)
	ev.InstallationID = 777
	var got []string
	for range 3 {
		user, tok, err := rep.GitCredentials(ctx, ev)
		if err != nil || user != "x-access-token" {
			t.Fatalf("app mode: %q %q %v", user, tok, err)
		}
		got = append(got, tok)
	}
	if got[0] != "ghs_installation777_1" || got[1] != "ghs_installation777_2" || got[2] != got[1] {
		t.Errorf("tokens %v: want the first, then a renewed one kept", got)
	}
	// The API calls of that installation use the very token git got.
	x := newRun(t, rep, "run-git", workflow("pr-review", "sticky", false), ev)
	x.Must(contract.PhaseStart)
	if n := f.count("POST", `/app/installations/777/access_tokens`); n != 2 {
		t.Errorf("%d tokens minted for installation 777, want 2 (git and the API share them)", n)
	}
	for _, r := range f.allRequests() {
		if strings.HasPrefix(r.Path, "/repos/") && r.Auth != "token "+got[2] {
			t.Errorf("%s %s with %q, want the cached token", r.Method, r.Path, r.Auth)
		}
	}

	// No installation id: looked up once with the JWT.
	noInst := prEvent(15)
	for range 2 {
		if _, tok, err := rep.GitCredentials(ctx, noInst); err != nil || !strings.HasPrefix(tok, "ghs_installation778_") {
			t.Fatalf("without an installation id: %q %v", tok, err)
		}
	}
	if n := f.count("GET", `^/repos/Codertocat/Hello-World/installation$`); n != 1 {
		t.Errorf("%d installation lookups, want 1", n)
	}
	for _, r := range f.allRequests() {
		if strings.HasSuffix(r.Path, "/installation") && !strings.HasPrefix(r.Auth, "Bearer ey") {
			t.Errorf("installation lookup without the app JWT: %q", r.Auth)
		}
	}
	other := prEvent(16)
	other.Repo = "someone/else"
	if _, _, err := rep.GitCredentials(ctx, other); err == nil || !strings.Contains(err.Error(), "finding the app's installation on someone/else") {
		t.Errorf("a repository without the app: %v", err)
	}
}

// TestActionsWithoutInstallationID: with an App, actions of a run whose
// event names no installation (a schedule's tick, an operator's run: the
// stale sweep's targets) go through the installation the App has on the
// repository, looked up once with the App's JWT.
func TestActionsWithoutInstallationID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, rep := appFake(t)
	f.repoInst = 778
	f.issues[7] = &fakeIssue{State: "open"}
	i := forge.Issue{Repo: "Codertocat/Hello-World", Number: 7}
	if err := rep.AddLabels(ctx, i, []string{"bug"}); err != nil {
		t.Fatalf("adding a label without an installation id: %v", err)
	}
	if err := rep.SetState(ctx, i, "closed", "not_planned"); err != nil {
		t.Fatalf("closing without an installation id: %v", err)
	}
	if is := f.issues[7]; !slices.Equal(is.Labels, []string{"bug"}) || is.State != "closed" {
		t.Errorf("issue 7: %+v, want labelled bug and closed", is)
	}
	if n := f.count("GET", `^/repos/Codertocat/Hello-World/installation$`); n != 1 {
		t.Errorf("%d installation lookups, want 1", n)
	}
	for _, r := range f.allRequests() {
		if strings.Contains(r.Path, "/issues/7") && r.Auth != "token ghs_installation778_1" {
			t.Errorf("%s %s with %q, want installation 778's token", r.Method, r.Path, r.Auth)
		}
	}
}
