package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// fakeGHES is one origin serving what a GitHub Enterprise Server does for a
// GitHub App: the REST API under /api/v3/ (installation tokens minted for a
// valid RS256 app JWT) and git smart HTTP under /<owner>/<repo>.git, which
// takes only a live installation token as Basic x-access-token:<token>.
type fakeGHES struct {
	t      *testing.T
	srv    *httptest.Server
	appID  int64
	appKey *rsa.PublicKey
	ttl    []time.Duration // lifetime of each minted token, in order; the last repeats
	git    http.Handler

	mu      sync.Mutex
	tokens  map[string]time.Time // minted token → expiry
	minted  []string
	gitAuth []string // token of each authorized git request, in order
	refused []string // why git requests were refused
	bad     []string // API requests the real one would refuse
}

var reMint = regexp.MustCompile(`^/api/v3/app/installations/(\d+)/access_tokens$`)

// gitHTTPBackend is git smart HTTP (git http-backend as CGI) for the
// repositories under root, at /<owner>/<name>.git as forges serve them; the
// caller checks credentials in front of it.
func gitHTTPBackend(t *testing.T, root string) http.Handler {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	return &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
}

func newFakeGHES(t *testing.T, root string, key *rsa.PublicKey, ttl ...time.Duration) *fakeGHES {
	t.Helper()
	f := &fakeGHES{t: t, appID: 4242, appKey: key, ttl: ttl, tokens: map[string]time.Time{}, git: gitHTTPBackend(t, root)}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGHES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/v3/") {
		f.api(w, r)
		return
	}
	// git: Basic x-access-token:<a minted, unexpired token>, as GitHub takes it.
	tok := ""
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic "); ok {
		if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
			if user, pass, ok := strings.Cut(string(raw), ":"); ok && user == "x-access-token" {
				tok = pass
			}
		}
	}
	f.mu.Lock()
	exp, known := f.tokens[tok]
	live := known && time.Now().Before(exp)
	if live {
		f.gitAuth = append(f.gitAuth, tok)
	} else {
		f.refused = append(f.refused, fmt.Sprintf("%s %s: token %q known %v", r.Method, r.URL.Path, tok, known))
	}
	f.mu.Unlock()
	if !live {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	f.git.ServeHTTP(w, r)
}

func (f *fakeGHES) api(w http.ResponseWriter, r *http.Request) {
	m := reMint.FindStringSubmatch(r.URL.Path)
	body, _ := io.ReadAll(r.Body)
	if m == nil || r.Method != http.MethodPost {
		f.fail(w, http.StatusNotFound, "unexpected "+r.Method+" "+r.URL.Path)
		return
	}
	if b := strings.TrimSpace(string(body)); b != "" && b != "{}" && b != "null" {
		f.fail(w, http.StatusUnprocessableEntity, "unexpected token options "+b)
		return
	}
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return f.appKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	iss, _ := claims.GetIssuer()
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if err != nil || !tok.Valid || iss != strconv.FormatInt(f.appID, 10) || iat == nil || exp.Sub(iat.Time) > 10*time.Minute {
		f.fail(w, http.StatusUnauthorized, fmt.Sprintf("bad app JWT: %v", err))
		return
	}
	f.mu.Lock()
	ttl := f.ttl[min(len(f.minted), len(f.ttl)-1)]
	minted := fmt.Sprintf("ghs_inst%s_%d", m[1], len(f.minted)+1)
	expiry := time.Now().Add(ttl).Truncate(time.Second)
	f.tokens[minted] = expiry
	f.minted = append(f.minted, minted)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"token": minted, "expires_at": expiry.UTC().Format(time.RFC3339),
		"permissions": map[string]string{"contents": "read"}, "repository_selection": "selected"})
}

func (f *fakeGHES) fail(w http.ResponseWriter, code int, why string) {
	f.mu.Lock()
	f.bad = append(f.bad, why)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, `{"message":"refused","documentation_url":"https://docs.github.com/rest"}`)
}

func (f *fakeGHES) snapshot() (minted, gitAuth, refused, bad []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.minted...), append([]string(nil), f.gitAuth...),
		append([]string(nil), f.refused...), append([]string(nil), f.bad...)
}

// gitRun runs git for the test's own setup.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// privateRepo makes root/Codertocat/Hello-World.git with main and a pull
// request head; commit adds a commit to the pull request and returns it.
func privateRepo(t *testing.T, root string) (commit func(content string) string) {
	t.Helper()
	bare := filepath.Join(root, "Codertocat", "Hello-World.git")
	work := filepath.Join(t.TempDir(), "work")
	gitRun(t, t.TempDir(), "init", "--quiet", "--bare", "--initial-branch=main", bare)
	gitRun(t, filepath.Dir(work), "init", "--quiet", "--initial-branch=main", work)
	return func(content string) string {
		if err := os.WriteFile(filepath.Join(work, "README"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitRun(t, work, "add", "README")
		gitRun(t, work, "commit", "--quiet", "-m", content)
		gitRun(t, work, "push", "--quiet", bare, "HEAD:refs/heads/main", "HEAD:refs/pull/1/head")
		return gitRun(t, work, "rev-parse", "HEAD")
	}
}

// TestAppOnlyConfigClonesPrivateRepo: with only app_id and private_key_file
// (no token), the runner's workspaces clone a private repository of a GitHub
// Enterprise Server with an installation token the App minted (Basic
// x-access-token:<token>), mint a new one once it has expired, and refuse a
// clone URL on any other host before a single request reaches it.
func TestAppOnlyConfigClonesPrivateRepo(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := writeFile(t, filepath.Join(dir, "app.pem"),
		string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	root := filepath.Join(dir, "repos")
	commit := privateRepo(t, root)
	first := commit("v1")
	// The first token lives 3 s, so that the second clone comes after its
	// expiry; the next ones an hour.
	ghes := newFakeGHES(t, root, &key.PublicKey, 3*time.Second, time.Hour)
	var otherRequests atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherRequests.Add(1)
		ghes.ServeHTTP(w, r) // would even serve the repository, token and all
	}))
	t.Cleanup(other.Close)

	cfgPath := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
data_dir: `+filepath.Join(dir, "data")+`
allow_repos: ["Codertocat/*"]
github: { webhook_secret: s, app_id: 4242, private_key_file: `+keyFile+`, api_url: "`+ghes.srv.URL+`/api/v3/" }
`)
	cfg, err := loadConfig(cfgPath, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	forges, err := app.NewForges(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := forges.Workspaces(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	event := func(cloneURL, sha string) *workflows.Event {
		return &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPullRequest, Action: "synchronize",
			Repo: "Codertocat/Hello-World", CloneURL: cloneURL, InstallationID: 777,
			PullRequest: &workflows.PullRequest{Number: 1, HeadSHA: sha, HeadRef: "feature", BaseRef: "main"}}
	}
	ctx := context.Background()
	cloneURL := ghes.srv.URL + "/Codertocat/Hello-World.git"

	if got, err := ws.Prepare(ctx, "run-1", event(cloneURL, first), contract.PrepareOptions{Checkout: true, HostSteps: true}); err != nil || got.HeadSHA != first {
		_, _, refused, bad := ghes.snapshot()
		t.Fatalf("first clone: %s, %v; refused %v, bad %v", got.HeadSHA, err, refused, bad)
	}

	// Past the first token's expiry, a new commit needs a fetch: it must
	// come with a freshly minted token.
	second := commit("v2")
	minted, _, _, _ := ghes.snapshot()
	ghes.mu.Lock()
	exp := ghes.tokens[minted[0]]
	ghes.mu.Unlock()
	time.Sleep(time.Until(exp) + 100*time.Millisecond)
	if got, err := ws.Prepare(ctx, "run-2", event(cloneURL, second), contract.PrepareOptions{Checkout: true, HostSteps: true}); err != nil || got.HeadSHA != second {
		_, _, refused, bad := ghes.snapshot()
		t.Fatalf("clone after the token expired: %s, %v; refused %v, bad %v", got.HeadSHA, err, refused, bad)
	}

	minted, gitAuth, refused, bad := ghes.snapshot()
	if len(minted) != 2 || len(bad) != 0 {
		t.Fatalf("minted %v (want 2), API requests refused %v", minted, bad)
	}
	if len(refused) != 0 {
		t.Errorf("git requests refused: %v", refused)
	}
	var firstUses, secondUses int
	for _, tok := range gitAuth {
		switch tok {
		case minted[0]:
			firstUses++
		case minted[1]:
			secondUses++
		}
	}
	if firstUses == 0 || secondUses == 0 || firstUses+secondUses != len(gitAuth) {
		t.Errorf("git requests used %v; want the first token, then (after expiry) only the second %v", gitAuth, minted)
	}

	// Another host, even one that would serve the repository: refused with
	// both hosts named, before it gets a request or a token is minted.
	_, err = ws.Prepare(ctx, "run-3", event(other.URL+"/Codertocat/Hello-World.git", second), contract.PrepareOptions{Checkout: true, HostSteps: true})
	want := `host "` + strings.TrimPrefix(other.URL, "http://") + `" is not the github host (want ` + ghes.srv.URL + `)`
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, contract.ErrRefused) {
		t.Fatalf("clone from another host: %v, want a refusal containing %q", err, want)
	}
	for _, tok := range minted {
		if strings.Contains(err.Error(), tok) {
			t.Errorf("the error names a token: %v", err)
		}
	}
	if n := otherRequests.Load(); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}
	if now, _, _, _ := ghes.snapshot(); len(now) != 2 {
		t.Errorf("a token was minted for the refused URL: %v", now)
	}
}
