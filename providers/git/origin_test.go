package git_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

func TestOriginsCheck(t *testing.T) {
	origins := git.Origins{workflows.Forge("github"): "https://github.com", workflows.Forge("gitlab"): "https://gitlab.example:8443/"}
	const secret = "glpat-s3cr3t"
	tests := []struct {
		forge   workflows.Forge
		url     string
		wantErr string // "" = allowed
	}{
		{workflows.Forge("github"), "https://github.com/octo/demo.git", ""},
		{workflows.Forge("github"), "HTTPS://GitHub.COM/octo/demo.git", ""},
		{workflows.Forge("github"), "https://github.com:443/octo/demo.git", ""},
		{workflows.Forge("gitlab"), "https://gitlab.example:8443/group/sub/project.git", ""},
		{workflows.Forge("github"), "https://evil.example/octo/demo.git", `host "evil.example" is not the github host (want https://github.com)`},
		{workflows.Forge("github"), "https://github.com.evil.example/octo/demo.git", `host "github.com.evil.example" is not the github host`},
		{workflows.Forge("github"), "https://github.com:8443/octo/demo.git", `host "github.com:8443" is not the github host`},
		{workflows.Forge("github"), "http://github.com/octo/demo.git", `scheme "http" is not the github one (want https://github.com)`},
		{workflows.Forge("gitlab"), "https://gitlab.example/group/project.git", `host "gitlab.example" is not the gitlab host (want https://gitlab.example:8443/)`},
		{workflows.Forge("gitlab"), "https://github.com/octo/demo.git", `is not the gitlab host`},
		{workflows.Forge("github"), "ssh://git@github.com/octo/demo.git", `scheme "ssh" is not allowed`},
		{workflows.Forge("github"), "git://github.com/octo/demo.git", `scheme "git" is not allowed`},
		{workflows.Forge("github"), "file:///srv/repos/demo.git", `not an http(s) URL`},
		{workflows.Forge("github"), "/srv/repos/demo.git", `not an http(s) URL`},
		{workflows.Forge("github"), "../demo.git", `not an http(s) URL`},
		{workflows.Forge("github"), "git@github.com:octo/demo.git", `not an http(s) URL`},
		{workflows.Forge("github"), "ext::sh -c touch% /tmp/pwned", `not an http(s) URL`},
		{workflows.Forge("github"), "https://x:" + secret + "@github.com/octo/demo.git", "carries credentials"},
		{workflows.Forge("github"), "https://github.com@evil.example/octo/demo.git", "carries credentials"},
		{workflows.Forge("github"), "", "no clone URL"},
		{"bitbucket", "https://bitbucket.org/a/b.git", `no origin is configured for forge "bitbucket"`},
	}
	for _, tt := range tests {
		err := origins.Check(&workflows.Event{Forge: tt.forge, CloneURL: tt.url})
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s %q: %v, want allowed", tt.forge, tt.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s %q: %v, want an error containing %q", tt.forge, tt.url, err, tt.wantErr)
			continue
		}
		if !errors.Is(err, contract.ErrRefused) {
			t.Errorf("%s %q: %v does not match contract.ErrRefused", tt.forge, tt.url, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q echoes the URL's credentials", err)
		}
	}
	if err := (git.Origins{workflows.Forge("github"): "https://ghe.example/api/v3/"}).Validate(); err == nil {
		t.Error("an origin with a path was accepted")
	}
	if _, err := git.New(git.Config{DataDir: t.TempDir(), Origins: git.Origins{workflows.Forge("github"): "ssh://github.com"}}); err == nil {
		t.Error("New accepted an ssh origin")
	}
}

// gitServer serves the shared upstream with git-http-backend and counts the
// requests it receives.
func gitServer(t *testing.T, u *upstream) (srv *httptest.Server, requests *atomic.Int32) {
	t.Helper()
	backend := filepath.Join(strings.TrimSpace(string(must(exec.Command("git", "--exec-path").Output()))), "git-http-backend")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(u.bare), "GIT_HTTP_EXPORT_ALL=1"}}
	requests = &atomic.Int32{}
	srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	return srv, requests
}

// TestOriginsBeforeAnyNetworkCall: with Origins set, a clone URL on another
// host (here: another port of loopback) fails Prepare with the host and the
// expected origin named, before credentials are asked for and before the
// other server sees a single request; the forge's own host still clones.
func TestOriginsBeforeAnyNetworkCall(t *testing.T) {
	u := sharedUpstream(t)
	forge, forgeRequests := gitServer(t, u)
	other, otherRequests := gitServer(t, u)
	var authCalls atomic.Int32
	w, err := git.New(git.Config{DataDir: t.TempDir(), Origins: git.Origins{workflows.Forge("github"): forge.URL},
		Auth: func(context.Context, *workflows.Event) (string, string, error) {
			authCalls.Add(1)
			return "x-access-token", "ghs_token", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	repo := "/" + filepath.Base(u.bare)

	_, _, err = prepare(w, context.Background(), "other", prEvent(workflows.Forge("github"), other.URL+repo, 1, u.p1), true)
	otherHost := strings.TrimPrefix(other.URL, "http://")
	want := `host "` + otherHost + `" is not the github host (want ` + forge.URL + `)`
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, contract.ErrRefused) {
		t.Fatalf("Prepare from another host: %v, want a refusal containing %q", err, want)
	}
	if n := otherRequests.Load(); n != 0 {
		t.Errorf("the other host received %d requests, want none", n)
	}
	if n := authCalls.Load(); n != 0 {
		t.Errorf("credentials were asked for %d times for a refused URL", n)
	}
	if dir, _ := w.Dir("other"); exists(dir) {
		t.Errorf("a refused Prepare left %s", dir)
	}
	for _, local := range []string{u.bare, "file://" + u.bare} {
		if _, _, err := prepare(w, context.Background(), "local", prEvent(workflows.Forge("github"), local, 1, u.p1), true); !errors.Is(err, contract.ErrRefused) {
			t.Errorf("Prepare from local %q: %v, want a refusal", local, err)
		}
	}

	// The forge's own host is allowed and gets the credentials.
	dir, sha, err := prepare(w, context.Background(), "forge", prEvent(workflows.Forge("github"), forge.URL+repo, 1, u.p1), true)
	if err != nil || sha != u.p1 || !exists(filepath.Join(dir, "feature.txt")) {
		t.Fatalf("Prepare from the forge: %s, %v", sha, err)
	}
	if forgeRequests.Load() == 0 || authCalls.Load() == 0 {
		t.Errorf("forge requests %d, auth calls %d; want both > 0", forgeRequests.Load(), authCalls.Load())
	}
	// Without checkout nothing is fetched, so nothing is checked.
	if _, _, err := prepare(w, context.Background(), "empty", prEvent(workflows.Forge("github"), other.URL+repo, 1, u.p1), false); err != nil {
		t.Errorf("Prepare without checkout: %v", err)
	}
}
