package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

// pinGitHub is the part of the GitHub REST API a comment-triggered run
// touches: the pull request (its head read live from the upstream bare
// repository, as GitHub reports the current head), the sticky comment, the
// eyes reaction and commit statuses. It checks method, path, token and JSON
// bodies as the real API would, and records what it was sent.
type pinGitHub struct {
	t        *testing.T
	token    string
	bare     string
	prObject map[string]any // a real pull_request object, to shape answers
	broken   map[int]bool   // pull requests whose reads answer 502

	mu       sync.Mutex
	nextID   int64
	comments map[int64]*pinComment
	statuses []pinStatus
	pullGETs map[int]int
	bad      []string

	git http.Handler // git smart HTTP for /Codertocat/Hello-World.git, as GitHub serves it
}

type pinComment struct {
	issue int
	body  string
}

type pinStatus struct{ sha, state, context string }

var (
	rePinComments = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/(\d+)/comments$`)
	rePinComment  = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/comments/(\d+)$`)
	rePinReaction = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/comments/(\d+)/reactions$`)
	rePinStatus   = regexp.MustCompile(`^/repos/Codertocat/Hello-World/statuses/([0-9a-f]{40})$`)
	rePinPull     = regexp.MustCompile(`^/repos/Codertocat/Hello-World/pulls/(\d+)$`)
)

func (f *pinGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/Codertocat/Hello-World.git/") {
		// git takes the token as Basic x-access-token:<token>.
		if user, pass, ok := r.BasicAuth(); !ok || user != "x-access-token" || pass != f.token {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		f.git.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, why string) {
		f.bad = append(f.bad, r.Method+" "+r.URL.Path+": "+why)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"message":"`+http.StatusText(code)+`"}`)
	}
	if auth := r.Header.Get("Authorization"); auth != "Bearer "+f.token && auth != "token "+f.token {
		fail(http.StatusUnauthorized, "bad credentials")
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			fail(http.StatusBadRequest, "body is not JSON")
			return
		}
	}
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && path == "/user":
		reply(200, map[string]any{"login": "hookrun-bot", "id": 1, "type": "User"})
	case r.Method == http.MethodGet && rePinPull.MatchString(path):
		n, _ := strconv.Atoi(rePinPull.FindStringSubmatch(path)[1])
		f.pullGETs[n]++
		if f.broken[n] {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>502 Bad Gateway</html>")
			return
		}
		out, err := exec.Command("git", "-C", f.bare, "rev-parse", "--verify", "--quiet", fmt.Sprintf("refs/pull/%d/head", n)).Output()
		if err != nil {
			reply(404, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"})
			return
		}
		pr := cloneJSON(f.prObject)
		pr["number"] = n
		head, base := pr["head"].(map[string]any), pr["base"].(map[string]any)
		head["sha"], head["ref"] = strings.TrimSpace(string(out)), fmt.Sprintf("pr-%d", n)
		base["ref"] = "master"
		reply(200, pr)
	case r.Method == http.MethodGet && rePinComments.MatchString(path):
		n, _ := strconv.Atoi(rePinComments.FindStringSubmatch(path)[1])
		list := []map[string]any{}
		for id, c := range f.comments {
			if c.issue == n {
				list = append(list, map[string]any{"id": id, "body": c.body, "user": map[string]any{"login": "hookrun-bot"}})
			}
		}
		reply(200, list)
	case r.Method == http.MethodPost && rePinComments.MatchString(path):
		n, _ := strconv.Atoi(rePinComments.FindStringSubmatch(path)[1])
		b, ok := body["body"].(string)
		if !ok || b == "" || len(body) != 1 {
			fail(http.StatusUnprocessableEntity, "comment without body")
			return
		}
		f.nextID++
		f.comments[f.nextID] = &pinComment{issue: n, body: b}
		reply(201, map[string]any{"id": f.nextID, "body": b, "user": map[string]any{"login": "hookrun-bot"}})
	case r.Method == http.MethodPatch && rePinComment.MatchString(path):
		id, _ := strconv.ParseInt(rePinComment.FindStringSubmatch(path)[1], 10, 64)
		b, ok := body["body"].(string)
		c := f.comments[id]
		if c == nil || !ok || b == "" {
			fail(http.StatusNotFound, "edit of an unknown comment or without body")
			return
		}
		c.body = b
		reply(200, map[string]any{"id": id, "body": b})
	case r.Method == http.MethodPost && rePinReaction.MatchString(path):
		if body["content"] != "eyes" {
			fail(http.StatusUnprocessableEntity, "reaction")
			return
		}
		reply(201, map[string]any{"id": 1, "content": "eyes"})
	case r.Method == http.MethodPost && rePinStatus.MatchString(path):
		sha := rePinStatus.FindStringSubmatch(path)[1]
		state, _ := body["state"].(string)
		ctx, _ := body["context"].(string)
		if state != "pending" && state != "success" && state != "failure" && state != "error" {
			fail(http.StatusUnprocessableEntity, "status state "+state)
			return
		}
		f.statuses = append(f.statuses, pinStatus{sha, state, ctx})
		reply(201, map[string]any{"id": len(f.statuses), "state": state, "context": ctx})
	default:
		fail(http.StatusNotFound, "no such route")
	}
}

func cloneJSON(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// commentsOn returns the bodies of the comments on issue n.
func (f *pinGitHub) commentsOn(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.comments {
		if c.issue == n {
			out = append(out, c.body)
		}
	}
	return out
}

// gitUpstream is a bare repository standing in for GitHub's copy of
// Codertocat/Hello-World, with a work tree to make commits in.
type gitUpstream struct {
	t                *testing.T
	root, bare, work string // root holds <owner>/<name>.git, as a git server's project root
	env              []string
}

func newGitUpstream(t *testing.T) *gitUpstream {
	root := t.TempDir()
	u := &gitUpstream{t: t, root: root, bare: filepath.Join(root, "Codertocat", "Hello-World.git"), work: filepath.Join(root, "work"),
		env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	u.git(root, "init", "--quiet", "--bare", "--initial-branch=master", u.bare)
	u.git(root, "init", "--quiet", "--initial-branch=master", u.work)
	u.commit("main")
	u.git(u.work, "push", "--quiet", u.bare, "master")
	return u
}

func (u *gitUpstream) git(dir string, args ...string) string {
	u.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), u.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes version.txt = content on the current branch and commits.
func (u *gitUpstream) commit(content string) string {
	u.t.Helper()
	if err := os.WriteFile(filepath.Join(u.work, "version.txt"), []byte(content+"\n"), 0o644); err != nil {
		u.t.Fatal(err)
	}
	u.git(u.work, "add", "version.txt")
	u.git(u.work, "commit", "--quiet", "-m", "version "+content)
	return u.git(u.work, "rev-parse", "HEAD")
}

// push sets refs/pull/<n>/head to sha, as a push to the pull request's
// branch makes GitHub do.
func (u *gitUpstream) push(n int, sha string) {
	u.t.Helper()
	u.git(u.work, "push", "--quiet", "--force", u.bare, sha+":refs/pull/"+strconv.Itoa(n)+"/head")
}

// branch makes commits first, second on a new branch from master and
// returns their ids; only first is pushed (to refs/pull/<n>/head).
func (u *gitUpstream) branch(n int, first, second string) (string, string) {
	u.t.Helper()
	u.git(u.work, "checkout", "--quiet", "-b", "pr-"+strconv.Itoa(n), "master")
	a := u.commit(first)
	b := u.commit(second)
	u.git(u.work, "checkout", "--quiet", "master")
	u.push(n, a)
	return a, b
}

const pinReviewWorkflow = `name: review
on:
  - event: comment
    command: /review
checkout: true
steps:
  - id: version
    run: cat version.txt
    output: VERSION
report:
  comment: sticky
  status: true
  body: "version ${VERSION}"
`

// The gate holds the only runner slot until the test opens it, so that the
// review runs are claimed only after the pull requests moved on.
const pinGateWorkflow = `name: gate
on:
  - event: pull_request
    actions: [opened]
report: { comment: none, status: false }
steps:
  - id: wait
    run: 'while [ ! -e "$GATE" ]; do sleep 0.1; done'
    timeout: 2m
env:
  - GATE: %s
`

// TestCommentRunPinnedToCommentedHead is issue 13's trust-boundary case,
// end to end through a real `hookrun serve` (embedded NATS, ingress, runner,
// providers/git on a real bare repository, the GitHub reporter against a
// fake API): a maintainer comments `/review` while a fork's pull request is
// at commit A, the fork pushes B, and only then does the runner claim the
// run. The run checks out A (the step reads A's version.txt), the run
// record and the sticky comment name A, and the commit status lands on A.
//
//   - #1: ingress saw a pull_request event at A (hookrun_heads).
//   - #3: no pull_request event was seen; GitHub's API said A3 when the
//     comment was accepted.
//   - #4: neither: the API answers 502. The run fails with a message to
//     comment again, its step never runs, and nothing is checked out.
func TestCommentRunPinnedToCommentedHead(t *testing.T) {
	const secret, ghToken, apiToken = "pin-secret", "gh-token-pin", "api-token-pin"
	up := newGitUpstream(t)
	a1, b1 := up.branch(1, "A1", "B1")
	a3, b3 := up.branch(3, "A3", "B3")
	up.branch(4, "A4", "B4")

	var prPayload struct {
		PullRequest map[string]any `json:"pull_request"`
	}
	if err := json.Unmarshal(fixture(t, "github/pull_request/opened.payload.json"), &prPayload); err != nil {
		t.Fatal(err)
	}
	gh := &pinGitHub{t: t, token: ghToken, bare: up.bare, prObject: prPayload.PullRequest, broken: map[int]bool{4: true},
		nextID: 5000, comments: map[int64]*pinComment{}, pullGETs: map[int]int{}}
	gh.git = gitHTTPBackend(t, up.root)
	ghSrv := httptest.NewServer(gh)
	t.Cleanup(ghSrv.Close)
	cloneURL := ghSrv.URL + "/Codertocat/Hello-World.git"

	dir := t.TempDir()
	gate := filepath.Join(stepWritableDir(t), "gate")
	writeFile(t, filepath.Join(dir, "workflows", "review.yaml"), pinReviewWorkflow)
	writeFile(t, filepath.Join(dir, "workflows", "gate.yaml"), fmt.Sprintf(pinGateWorkflow, gate))
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
github: { webhook_secret: "`+secret+`", token: "${PIN_GH_TOKEN}", api_url: "`+ghSrv.URL+`/" }
allow_repos: ["Codertocat/*"]
runner: { concurrency: 1, max_ack_pending: 1 }
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", []string{"PIN_GH_TOKEN=" + ghToken}, "serve", "--config", cfg, "--log-level", "debug")
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)

	post := func(event, delivery string, body []byte) hookAnswer {
		t.Helper()
		code, ans := postGitHub(t, url, secret, event, delivery, body)
		if code != http.StatusAccepted || len(ans.Runs) != 1 {
			t.Fatalf("%s %s: %d %+v", event, delivery, code, ans)
		}
		return ans
	}
	// The pull request event at A1 starts the gate and is remembered.
	post("pull_request", "pin-pr-1", patchPayload(t, "github/pull_request/opened.payload.json", cloneURL, func(m map[string]any) {
		m["number"] = 1
		pr := m["pull_request"].(map[string]any)
		pr["number"] = 1
		pr["head"].(map[string]any)["sha"] = a1
		pr["head"].(map[string]any)["repo"].(map[string]any)["full_name"] = "forker/Hello-World"
	}))
	comment := func(n int) []byte {
		return patchPayload(t, "github/issue_comment/created.payload.json", cloneURL, func(m map[string]any) {
			issue := m["issue"].(map[string]any)
			issue["number"] = n
			issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/Codertocat/Hello-World/pulls/%d", n)}
			c := m["comment"].(map[string]any)
			c["body"], c["author_association"], c["id"] = "/review", "MEMBER", 7000+n
		})
	}
	run1 := post("issue_comment", "pin-c-1", comment(1)).Runs[0].ID
	run3 := post("issue_comment", "pin-c-3", comment(3)).Runs[0].ID
	run4 := post("issue_comment", "pin-c-4", comment(4)).Runs[0].ID

	// The forks push, then the runner gets to the review runs.
	up.push(1, b1)
	up.push(3, b3)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	type record struct {
		Status  string `json:"status"`
		HeadSHA string `json:"head_sha"`
		Error   string `json:"error"`
		Steps   []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"steps"`
	}
	wait := func(id string) record {
		t.Helper()
		var rec record
		deadline := time.Now().Add(90 * time.Second)
		for {
			if c := apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec); c == http.StatusOK &&
				(rec.Status == "succeeded" || rec.Status == "failed" || rec.Status == "cancelled") {
				return rec
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not finish: %+v", id, rec)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, tc := range []struct {
		id, sha, version string
		pr               int
	}{{run1, a1, "A1", 1}, {run3, a3, "A3", 3}} {
		rec := wait(tc.id)
		if rec.Status != "succeeded" || rec.HeadSHA != tc.sha {
			t.Errorf("#%d: run %s ended %s at %s (error %q), want succeeded at %s", tc.pr, tc.id, rec.Status, rec.HeadSHA, rec.Error, tc.sha)
		}
		waitFor(t, 10*time.Second, func() bool {
			c := gh.commentsOn(tc.pr)
			return len(c) == 1 && strings.Contains(c[0], "succeeded")
		})
		body := gh.commentsOn(tc.pr)[0]
		if !strings.Contains(body, "version "+tc.version) || !strings.Contains(body, "commit `"+tc.sha[:12]+"`") {
			t.Errorf("#%d: the comment does not show version %s at commit %s:\n%s", tc.pr, tc.version, tc.sha[:12], body)
		}
	}

	rec := wait(run4)
	if rec.Status != "failed" || rec.HeadSHA != "" || !strings.Contains(rec.Error, "Comment again") ||
		!strings.Contains(rec.Error, "502") || len(rec.Steps) != 1 || rec.Steps[0].Status != "skipped" {
		t.Errorf("#4: run %+v, want failed before any step with a message to comment again", rec)
	}
	waitFor(t, 10*time.Second, func() bool { return len(gh.commentsOn(4)) == 1 })
	if body := gh.commentsOn(4)[0]; !strings.Contains(body, "failed") || !strings.Contains(body, "Comment again") {
		t.Errorf("#4: the comment does not show the refusal:\n%s", body)
	}

	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", gh.bad)
	}
	// #4 is read twice: the reporters' transport retries a 502 once, within
	// ingress's lookup timeout.
	if gh.pullGETs[1] != 0 || gh.pullGETs[3] != 1 || gh.pullGETs[4] < 1 {
		t.Errorf("pull request reads %v: want none for #1 (remembered), one for #3, some for #4", gh.pullGETs)
	}
	want := map[string][]string{a1: {"pending", "success"}, a3: {"pending", "success"}}
	got := map[string][]string{}
	for _, s := range gh.statuses {
		if s.context != "hookrun/review" {
			t.Errorf("status %+v from another workflow", s)
		}
		got[s.sha] = append(got[s.sha], s.state)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v (nothing on %s or %s)", got, want, b1, b3)
	}
}

// patchPayload is a GitHub fixture with its repository's clone URL set and
// edit applied.
func patchPayload(t *testing.T, rel, cloneURL string, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fixture(t, rel), &m); err != nil {
		t.Fatal(err)
	}
	m["repository"].(map[string]any)["clone_url"] = cloneURL
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// glMembers is GET /api/v4/projects/:id/members/all/:user_id of GitLab: it
// checks the method, the path (project by numeric id) and the PRIVATE-TOKEN
// header, answers a member object shaped like GitLab's, or 404 for a user
// who is not a member.
type glMembers struct {
	t       *testing.T
	token   string
	project int64

	mu     sync.Mutex
	levels map[int64]int // user id → access level
	gets   map[int64]int
	bad    []string
}

var reGLMember = regexp.MustCompile(`^/api/v4/projects/(\d+)/members/all/(\d+)$`)

func (f *glMembers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("PRIVATE-TOKEN") != f.token {
		f.bad = append(f.bad, r.Method+" "+r.URL.Path+": bad token")
		reply(401, map[string]string{"message": "401 Unauthorized"})
		return
	}
	m := reGLMember.FindStringSubmatch(r.URL.EscapedPath())
	if r.Method != http.MethodGet || m == nil || m[1] != strconv.FormatInt(f.project, 10) {
		f.bad = append(f.bad, r.Method+" "+r.URL.Path+": no such route")
		reply(404, map[string]string{"message": "404 Not Found"})
		return
	}
	uid, _ := strconv.ParseInt(m[2], 10, 64)
	f.gets[uid]++
	level, ok := f.levels[uid]
	if !ok {
		reply(404, map[string]string{"message": "404 Not found"})
		return
	}
	reply(200, map[string]any{"id": uid, "username": fmt.Sprintf("user%d", uid), "name": "User", "state": "active",
		"avatar_url": "https://www.gravatar.com/avatar/x?s=80&d=identicon", "web_url": fmt.Sprintf("http://example.com/user%d", uid),
		"access_level": level, "created_at": "2012-10-22T14:13:35Z", "expires_at": nil, "membership_state": "active"})
}

func (f *glMembers) count(uid int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[uid]
}

// TestGitLabMemberMergeRequestRuns is issue 13's GitLab trust case through
// the wiring `serve` and `ingress` use (app.Forges.Registry → ingress, on a real
// embedded NATS, against a fake GitLab API): under the default authorize
// policy a Developer's merge request runs and a non-member's is refused;
// the member lookup is cached within its TTL and made again after it.
func TestGitLabMemberMergeRequestRuns(t *testing.T) {
	const glToken, hookToken = "glpat-pin-test-token", "gl-hook-token"
	api := &glMembers{t: t, token: glToken, project: 1, levels: map[int64]int{51: 30}, gets: map[int64]int{}}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)

	logger := slog.New(slog.DiscardHandler)
	on := true
	forges, err := app.NewForges(&app.Config{GitLab: app.GitLabConfig{Token: glToken, BaseURL: apiSrv.URL, Enabled: &on, WebhookToken: hookToken}}, logger)
	if err != nil {
		t.Fatal(err)
	}
	trust := decide.TrustConfig{AssociationTTL: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	q := storestest.With(t, raw)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pr.yaml"), "name: pr\non:\n  - event: pull_request\n    actions: [opened]\nsteps:\n  - {id: check, run: 'true'}\n")
	set, err := workflows.NewWorkflowSet(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ingress.New(ingress.Config{Trust: trust, Forges: forges.Registry}, ingress.Deps{Publisher: q, Workflows: set,
		Acceptor: q, Runs: q.Runs(), Deliveries: q.Received(), Heads: q.Heads(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)

	mr := func(author int64) (runs int, reason string) {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(fixture(t, "gitlab/merge_request.json"), &m); err != nil {
			t.Fatal(err)
		}
		m["object_attributes"].(map[string]any)["author_id"] = author
		body, _ := json.Marshal(m)
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/hooks/gitlab", strings.NewReader(string(body)))
		req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
		req.Header.Set("X-Gitlab-Token", hookToken)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a struct {
			Runs   []json.RawMessage `json:"runs"`
			Reason string            `json:"reason"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("merge request by %d: %d %v", author, resp.StatusCode, err)
		}
		return len(a.Runs), a.Reason
	}

	if n, reason := mr(51); n != 1 {
		t.Fatalf("the Developer's merge request started %d runs: %s", n, reason)
	}
	if n, reason := mr(52); n != 0 || !strings.Contains(reason, "author association NONE") {
		t.Fatalf("the non-member's merge request: %d runs, reason %q", n, reason)
	}
	if n, _ := mr(51); n != 1 || api.count(51) != 1 {
		t.Fatalf("within the TTL: %d runs, %d lookups of the Developer; want 1 and 1", n, api.count(51))
	}
	// The Developer is demoted to Guest; once the cached answer expired
	// the merge request is refused.
	api.mu.Lock()
	api.levels[51] = 10
	api.mu.Unlock()
	time.Sleep(1100 * time.Millisecond)
	if n, reason := mr(51); n != 0 || api.count(51) != 2 || !strings.Contains(reason, "author association NONE") {
		t.Fatalf("after the TTL: %d runs, %d lookups, reason %q", n, api.count(51), reason)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", api.bad)
	}
}
