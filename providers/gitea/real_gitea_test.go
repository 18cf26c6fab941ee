//go:build gitea

package gitea

// The end-to-end test against a real Gitea (make gitea-test): the
// conformance suite (providers/forge/forgetest) drives this package's
// Forge, with the API client internal/app gives it (testAPI), against a
// Gitea 1.26 server started here on loopback with sqlite, and reads back
// through Gitea's own API what each call did; then real label_updated
// deliveries to a local receiver are normalized with a LabelMemory.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/workflows"
)

const (
	realAdmin    = "alice"
	realPassword = "hookrun-e2e-Passw0rd"
	realRepo     = "alice/demo"
	hookSecret   = "e2e-hook-secret"
)

// realGitea is a Gitea server started by the test, its admin's token, and
// a counting proxy in front of its API (what the forge under test is
// configured with).
type realGitea struct {
	t      *testing.T
	url    string // the server itself, http://127.0.0.1:port/
	token  string
	proxy  *httptest.Server
	mu     sync.Mutex
	reqs   []string // METHOD path through the proxy
	hooks  *hookRecorder
	client *http.Client
}

// TestRealGitea: the forge conformance suite against a real Gitea, then
// real label deliveries: adding a label is labeled, removing it unlabeled.
func TestRealGitea(t *testing.T) {
	bin := os.Getenv("HOOKRUN_GITEA_BIN")
	if bin == "" {
		t.Fatal("HOOKRUN_GITEA_BIN is not set: run `make gitea-test`, which builds Gitea once and sets it")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("HOOKRUN_GITEA_BIN: %v (run `make gitea-test`)", err)
	}
	g := startGitea(t, bin, os.Getenv("HOOKRUN_GITEA_STATIC"))
	head := g.setup()
	ev := commentEvent()
	ev.PullRequest.HeadSHA = head
	author := *ev
	author.Author = "bob"
	forgetest.Run(t, forgetest.Harness{
		Name: Name,
		New: func(t *testing.T, creds bool) (forge.Forge, forgetest.Fake) {
			if sha := g.setup(); sha != head {
				t.Fatalf("the recreated pull request's head is %s, want %s (the commits have fixed dates)", sha, head)
			}
			return g.forge(t, creds), realView{g}
		},
		Event:       ev,
		Head:        workflows.Head{SHA: head, HeadRef: "feature"},
		Files:       []string{forgetest.PatchPath},
		Author:      &author,
		Association: "MEMBER",
		GitUser:     "oauth2",
		GitPass:     g.token,
		FinalState:  "success",
		Suggestion:  "```diff\n-\t\tlog.Fatal(\"no config\")\n+",
		MarksGone:   true,
		Review: func(t *testing.T) (forge.Forge, forgetest.ReviewFake) {
			if sha := g.setup(); sha != head {
				t.Fatalf("head %s, want %s", sha, head)
			}
			return g.forge(t, true), realView{g}
		},
		Issue:    2,
		Assignee: "carol",
	})
	t.Run("LabelDeliveries", func(t *testing.T) { g.labelDeliveries(t) })
}

// forge is this package's Forge configured with the proxy's URL.
func (g *realGitea) forge(t *testing.T, creds bool) *Forge {
	t.Helper()
	g.mu.Lock()
	g.reqs = nil
	g.mu.Unlock()
	cfg := Config{BaseURL: g.proxy.URL + "/", API: testAPI}
	if creds {
		cfg.Token = g.token
	}
	f, err := NewForge(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startGitea writes an app.ini (sqlite, offline, no SSH, webhooks to
// loopback allowed) in a temp dir, starts `gitea web` and creates the
// admin with the CLI and its token with the API.
func startGitea(t *testing.T, bin, static string) *realGitea {
	dir := t.TempDir()
	port := freePort(t)
	root := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if static == "" {
		static = filepath.Join(filepath.Dir(bin), "src")
	}
	ini := filepath.Join(dir, "app.ini")
	conf := fmt.Sprintf(`APP_NAME = hookrun-e2e
RUN_MODE = prod
WORK_PATH = %[1]s
; CI runs as root, which Gitea refuses unless told
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
ROOT_URL = %[3]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = %[1]s/data
STATIC_ROOT_PATH = %[4]s

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db

[repository]
ROOT = %[1]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = hookrun-e2e-secret-key-0123456789

[service]
DISABLE_REGISTRATION = true

[webhook]
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 10

[actions]
ENABLED = false

[cron]
ENABLED = false

[mailer]
ENABLED = false

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = %[1]s/log
`, dir, port, root, static)
	if err := os.WriteFile(ini, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GITEA_WORK_DIR="+dir, "HOME="+dir, "USER=hookrun")
	run := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, append([]string{"--config", ini, "--work-path", dir}, args...)...)
		c.Env, c.Dir = env, dir
		return c
	}
	var out bytes.Buffer
	web := run("web")
	web.Stdout, web.Stderr = &out, &out
	if err := web.Start(); err != nil {
		t.Fatalf("starting gitea: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- web.Wait() }()
	t.Cleanup(func() {
		_ = web.Process.Kill()
		<-exited
	})
	g := &realGitea{t: t, url: root, client: &http.Client{Timeout: 30 * time.Second}}
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := g.client.Get(root + "api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		logs := func() string {
			b, _ := os.ReadFile(filepath.Join(dir, "log", "gitea.log"))
			return out.String() + "\n" + string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitea did not answer within 90s: %v\n%s", err, logs())
		}
		select {
		case werr := <-exited:
			exited <- werr
			t.Fatalf("gitea exited: %v\n%s", werr, logs())
		case <-time.After(300 * time.Millisecond):
		}
	}
	if b, err := run("admin", "user", "create", "--admin", "--username", realAdmin, "--password", realPassword,
		"--email", realAdmin+"@example.com", "--must-change-password=false").CombinedOutput(); err != nil {
		t.Fatalf("gitea admin user create: %v\n%s", err, b)
	}
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	g.call(http.MethodPost, "users/"+realAdmin+"/tokens", map[string]any{"name": "hookrun-e2e",
		"scopes": []string{"write:repository", "write:issue", "write:user", "write:admin"}}, &tok, realAdmin)
	if tok.SHA1 == "" {
		t.Fatal("gitea gave no token")
	}
	g.token = tok.SHA1
	for _, u := range []string{"bob", "carol"} {
		g.call(http.MethodPost, "admin/users", map[string]any{"username": u, "email": u + "@example.com", "password": realPassword,
			"must_change_password": false}, nil, "")
	}
	target, _ := url.Parse(root)
	rp := httputil.NewSingleHostReverseProxy(target)
	g.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.reqs = append(g.reqs, r.Method+" "+r.URL.Path)
		g.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(g.proxy.Close)
	g.hooks = newHookRecorder(t)
	return g
}

// call sends one API request to the server itself (not through the
// proxy): as the admin's token, or with basic auth as basic; v, when not
// nil, gets the JSON answer. A status of 300 or more fails the test.
func (g *realGitea) call(method, path string, body, v any, basic string) int {
	g.t.Helper()
	code, data := g.do(method, path, body, basic)
	if code >= 300 {
		g.t.Fatalf("%s %s: %d %s", method, path, code, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			g.t.Fatalf("%s %s: decoding %s: %v", method, path, data, err)
		}
	}
	return code
}

func (g *realGitea) do(method, path string, body any, basic string) (int, []byte) {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			g.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.url+"api/v1/"+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if basic != "" {
		req.SetBasicAuth(basic, realPassword)
	} else {
		req.Header.Set("Authorization", "token "+g.token)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// mainGo is main.go on main (base) and on feature (head): the head's
// diff is forgetest.Patch's (line 13 log.Fatal and 14 return added, 40
// y := x added).
func mainGo() (base, head string) {
	lines := make([]string, 0, 40)
	for i := 1; i <= 9; i++ {
		lines = append(lines, fmt.Sprintf("// line %d", i))
	}
	lines = append(lines, "\tctx := context.Background()", "\tcfg := load()", "\tif cfg == nil {", "\t\tpanic(\"no config\")", "\t}")
	for i := 15; i <= 37; i++ {
		lines = append(lines, fmt.Sprintf("// line %d", i))
	}
	lines = append(lines, "\tx := 1", "}")
	base = strings.Join(lines, "\n") + "\n"
	h := append([]string{}, lines[:12]...)
	h = append(h, "\t\tlog.Fatal(\"no config\")", "\t\treturn")
	h = append(h, lines[13:38]...)
	h = append(h, "\ty := x", "}")
	return base, strings.Join(h, "\n") + "\n"
}

// fixedCommit is what makes a commit's id the same each time: the
// author, committer and their dates.
func fixedCommit(m map[string]any) map[string]any {
	who := map[string]any{"name": "Alice", "email": "alice@example.com"}
	m["author"], m["committer"] = who, who
	m["dates"] = map[string]any{"author": "2026-01-02T03:04:05Z", "committer": "2026-01-02T03:04:05Z"}
	return m
}

// setup (re)creates alice/demo: main.go on main, the feature branch
// changing it, labels bug and area/queue, bob and carol as
// collaborators (write), pull request 1 (feature → main), issue 2, and
// a webhook to the recorder. It returns the pull request's head.
func (g *realGitea) setup() string {
	g.t.Helper()
	if code, data := g.do(http.MethodDelete, "repos/"+realRepo, nil, ""); code >= 300 && code != http.StatusNotFound {
		g.t.Fatalf("deleting %s: %d %s", realRepo, code, data)
	}
	g.call(http.MethodPost, "user/repos", map[string]any{"name": "demo", "auto_init": false, "default_branch": "main"}, nil, "")
	base, head := mainGo()
	g.call(http.MethodPost, "repos/"+realRepo+"/contents/main.go", fixedCommit(map[string]any{"branch": "main",
		"content": base64.StdEncoding.EncodeToString([]byte(base)), "message": "main.go"}), nil, "")
	var file struct {
		Content struct {
			SHA string `json:"sha"`
		} `json:"content"`
	}
	g.call(http.MethodGet, "repos/"+realRepo+"/contents/main.go?ref=main", nil, &file.Content, "")
	var changed struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	g.call(http.MethodPut, "repos/"+realRepo+"/contents/main.go", fixedCommit(map[string]any{"branch": "main", "new_branch": "feature",
		"sha": file.Content.SHA, "content": base64.StdEncoding.EncodeToString([]byte(head)), "message": "log.Fatal"}), &changed, "")
	for _, l := range []string{"bug", "area/queue"} {
		g.call(http.MethodPost, "repos/"+realRepo+"/labels", map[string]any{"name": l, "color": "#ee0701"}, nil, "")
	}
	for _, u := range []string{"bob", "carol"} {
		g.call(http.MethodPut, "repos/"+realRepo+"/collaborators/"+u, map[string]any{"permission": "write"}, nil, "")
	}
	g.call(http.MethodPost, "repos/"+realRepo+"/hooks", map[string]any{"type": "gitea", "active": true,
		"events": []string{"pull_request", "issues"}, "config": map[string]any{"url": g.hooks.srv.URL + "/hooks/gitea",
			"content_type": "json", "secret": hookSecret}}, nil, "")
	var pr struct {
		Number int `json:"number"`
	}
	g.call(http.MethodPost, "repos/"+realRepo+"/pulls", map[string]any{"head": "feature", "base": "main", "title": "Add pr-only.txt"}, &pr, "")
	var issue struct {
		Number int `json:"number"`
	}
	g.call(http.MethodPost, "repos/"+realRepo+"/issues", map[string]any{"title": "triage me"}, &issue, "")
	if pr.Number != 1 || issue.Number != 2 {
		g.t.Fatalf("pull request %d and issue %d, want 1 and 2", pr.Number, issue.Number)
	}
	return changed.Commit.SHA
}

// realView reads back, through Gitea's API, what the forge did.
type realView struct{ g *realGitea }

type realComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	Path     string `json:"path"`
	Position int    `json:"position"`
}

func (v realView) issueComments(n int) []realComment {
	var cs []realComment
	v.g.call(http.MethodGet, fmt.Sprintf("repos/%s/issues/%d/comments?limit=50", realRepo, n), nil, &cs, "")
	return cs
}

func (v realView) Comments() map[int64]string {
	out := map[int64]string{}
	for _, n := range []int{1, 2} {
		for _, c := range v.issueComments(n) {
			if c.User.Login == realAdmin {
				out[c.ID] = c.Body
			}
		}
	}
	return out
}

func (v realView) Statuses() []string {
	var sts []struct {
		State string `json:"status"`
		ID    int64  `json:"id"`
	}
	var pr struct {
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	v.g.call(http.MethodGet, "repos/"+realRepo+"/pulls/1", nil, &pr, "")
	v.g.call(http.MethodGet, "repos/"+realRepo+"/commits/"+pr.Head.SHA+"/statuses?sort=oldest&limit=50", nil, &sts, "")
	var out []string
	for _, s := range sts {
		out = append(out, s.State)
	}
	return out
}

func (v realView) Requests() int {
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	return len(v.g.reqs)
}

func (v realView) Origin() string { return v.g.proxy.URL }

// Issue is issue (or pull request) n's labels, assignees, state and the
// admin's comments; Gitea keeps no close reason.
func (v realView) Issue(n int, _ bool) forgetest.IssueState {
	var is struct {
		Labels []struct {
			Name string `json:"name"`
		} `json:"labels"`
		Assignees []struct {
			Login string `json:"login"`
		} `json:"assignees"`
		State string `json:"state"`
	}
	v.g.call(http.MethodGet, fmt.Sprintf("repos/%s/issues/%d", realRepo, n), nil, &is, "")
	out := forgetest.IssueState{State: is.State}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	for _, a := range is.Assignees {
		out.Assignees = append(out.Assignees, a.Login)
	}
	for _, c := range v.issueComments(n) {
		if c.User.Login == realAdmin {
			out.Comments = append(out.Comments, c.Body)
		}
	}
	return out
}

// reviewComments are the admin's review comments on pull request 1.
func (v realView) reviewComments() []realComment {
	var reviews []struct {
		ID   int64 `json:"id"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	v.g.call(http.MethodGet, "repos/"+realRepo+"/pulls/1/reviews?limit=50", nil, &reviews, "")
	var out []realComment
	for _, r := range reviews {
		if r.User.Login != realAdmin {
			continue
		}
		var cs []realComment
		v.g.call(http.MethodGet, fmt.Sprintf("repos/%s/pulls/1/reviews/%d/comments", realRepo, r.ID), nil, &cs, "")
		out = append(out, cs...)
	}
	return out
}

func (v realView) Inline() map[string]string {
	out := map[string]string{}
	for _, c := range v.reviewComments() {
		out[fmt.Sprintf("%s:%d", c.Path, c.Position)] = c.Body
	}
	return out
}

// Marked are the review comments edited to say a finding is fixed.
func (v realView) Marked() []string {
	var out []string
	for _, c := range v.reviewComments() {
		if strings.Contains(c.Body, "Fixed in ") {
			out = append(out, c.Body)
		}
	}
	return out
}

var reReviewPost = regexp.MustCompile(`^POST /api/v1/repos/[^/]+/[^/]+/pulls/\d+/reviews$`)

// ReviewRequests are the reviews the admin has on pull request 1.
func (v realView) ReviewRequests() int {
	v.g.mu.Lock()
	defer v.g.mu.Unlock()
	n := 0
	for _, r := range v.g.reqs {
		if reReviewPost.MatchString(r) {
			n++
		}
	}
	return n
}

// hookRecorder is a webhook receiver that keeps every delivery.
type hookRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []recordedHook
	more chan struct{}
}

type recordedHook struct {
	header http.Header
	body   []byte
}

func newHookRecorder(t *testing.T) *hookRecorder {
	h := &hookRecorder{more: make(chan struct{}, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, recordedHook{r.Header.Clone(), body})
		h.mu.Unlock()
		select {
		case h.more <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// wait returns the deliveries whose X-Gitea-Event-Type is typ once there
// are n of them, or fails after 30s.
func (h *hookRecorder) wait(t *testing.T, typ string, n int) []recordedHook {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		h.mu.Lock()
		var out []recordedHook
		for _, d := range h.got {
			if d.header.Get("X-Gitea-Event-Type") == typ {
				out = append(out, d)
			}
		}
		h.mu.Unlock()
		if len(out) >= n {
			return out
		}
		select {
		case <-h.more:
		case <-deadline:
			t.Fatalf("%d %s deliveries after 30s, want %d", len(out), typ, n)
		}
	}
}

// labelDeliveries: on a fresh pull request, the Actor adds bug then
// removes it, each in a later second; Gitea sends label_updated both
// times, each with the pull request's updated_at moved. Normalized in
// order with a LabelMemory that saw the pull request opened, the first is
// labeled bug and the second unlabeled bug; without the memory both are
// labeled with LabelActionUnknown. The first sent again afterwards (as
// Gitea's Redeliver does) is unknown and leaves the memory alone. HOOKRUN_GITEA_RECORD=dir writes the
// deliveries there (testdata/gitea's format).
func (g *realGitea) labelDeliveries(t *testing.T) {
	g.setup()
	g.hooks.mu.Lock()
	g.hooks.got = nil
	g.hooks.mu.Unlock()
	f := g.forge(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr := forge.Issue{Repo: realRepo, Number: 1, PullRequest: true}
	opened := g.hooks.wait(t, "pull_request", 1)
	nextSecond(t, opened[0].body)
	if err := f.AddLabels(ctx, pr, []string{"bug"}); err != nil {
		t.Fatal(err)
	}
	nextSecond(t, g.hooks.wait(t, "pull_request_label", 1)[0].body)
	if err := f.RemoveLabels(ctx, pr, []string{"bug"}); err != nil {
		t.Fatal(err)
	}
	labels := g.hooks.wait(t, "pull_request_label", 2)

	mem := &mapMemory{m: map[string][]string{}}
	remembering := labelForge(t, mem)
	receive(t, remembering, "pull_request", opened[0].body, "opened")
	want := []struct{ action, label string }{{"labeled", "bug"}, {"unlabeled", "bug"}}
	for i, d := range labels[:2] {
		if a := jsonField(d.body, "action"); a != "label_updated" {
			t.Errorf("delivery %d: Gitea's action %q, want label_updated", i, a)
		}
		ev := receive(t, remembering, d.header.Get("X-Gitea-Event"), d.body, d.header.Get("X-Gitea-Delivery"))
		if ev.Action != want[i].action || ev.Label != want[i].label || ev.LabelActionUnknown {
			t.Errorf("delivery %d with the memory: %s %q (unknown %v), want %s %q", i, ev.Action, ev.Label, ev.LabelActionUnknown, want[i].action, want[i].label)
		}
		ev, err := Normalize(d.header.Get("X-Gitea-Event"), d.body, "d")
		if err != nil || ev.Action != "labeled" || !ev.LabelActionUnknown {
			t.Errorf("delivery %d without the memory: %+v, %v; want labeled, unknown", i, ev, err)
		}
	}
	before := prUpdatedAt(t, opened[0].body)
	for i, d := range labels[:2] { // each a second after the change before it
		if at := prUpdatedAt(t, d.body); !at.After(before) {
			t.Errorf("label delivery %d: updated_at %v, not after the one before (%v)", i, at, before)
		}
		before = prUpdatedAt(t, d.body)
	}
	// Gitea's Redeliver (web UI only in 1.26: no API) sends a hook task's
	// stored payload as it was, under a new delivery id.
	ev := receive(t, remembering, "pull_request", labels[0].body, "redelivered")
	if ev.Action != "labeled" || !ev.LabelActionUnknown || !slices.Equal(mem.m["gitea "+realRepo+"#1"], []string{}) {
		t.Errorf("the add redelivered: %s %q (unknown %v), memory %v; want labeled, unknown, memory []", ev.Action, ev.Label, ev.LabelActionUnknown, mem.m)
	}
	if dir := os.Getenv("HOOKRUN_GITEA_RECORD"); dir != "" {
		record(t, dir, "pull_request_opened_nolabels", opened[0])
		record(t, dir, "pull_request_label_added", labels[0])
		record(t, dir, "pull_request_label_removed", labels[1])
	}
}

// prUpdatedAt is a pull request delivery's pull_request.updated_at.
func prUpdatedAt(t *testing.T, body []byte) time.Time {
	t.Helper()
	var p struct {
		PullRequest struct {
			UpdatedAt time.Time `json:"updated_at"`
		} `json:"pull_request"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	return p.PullRequest.UpdatedAt
}

// nextSecond waits (polling the clock) until the second after the pull
// request's updated_at in body, so that Gitea's next change (its times
// are whole seconds) is later.
func nextSecond(t *testing.T, body []byte) {
	t.Helper()
	next := prUpdatedAt(t, body).Truncate(time.Second).Add(time.Second)
	for time.Now().Before(next) {
		time.Sleep(10 * time.Millisecond)
	}
}

func jsonField(body []byte, key string) string {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	s, _ := m[key].(string)
	return s
}

// record writes a delivery as name.payload.json (indented) and
// name.headers.json (the X-Gitea-*, X-GitHub-*, X-Gogs-* and
// Content-Type headers, without signatures).
func record(t *testing.T, dir, name string, d recordedHook) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, d.body, "", "  "); err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for k := range d.header {
		if (strings.HasPrefix(k, "X-Gitea-") || strings.HasPrefix(k, "X-Github-") || strings.HasPrefix(k, "X-Gogs-") || k == "Content-Type") &&
			!strings.Contains(k, "Signature") {
			h[k] = d.header.Get(k)
		}
	}
	hb, _ := json.MarshalIndent(h, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name+".payload.json"), append(pretty.Bytes(), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".headers.json"), append(hb, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
