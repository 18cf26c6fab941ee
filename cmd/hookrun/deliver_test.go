package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// deliverGitHub is the part of GitHub a sandboxed fix touches: git smart
// HTTP for Codertocat/Hello-World (fetch and push, Basic
// x-access-token:<token> as GitHub takes it), the sticky comment, commit
// statuses, and POST /repos/{owner}/{repo}/pulls, which, as the real API,
// wants a title, draft: true and head and base branches that exist in the
// repository. It records what it was sent.
type deliverGitHub struct {
	t     *testing.T
	token string
	bare  string
	git   http.Handler
	url   string

	mu       sync.Mutex
	nextID   int64
	comments map[int64]*pinComment
	pulls    []map[string]any // bodies of accepted POST /pulls
	gitReqs  []string         // "METHOD path" of authorized git requests
	bad      []string
}

var (
	reDeliverComments = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/(\d+)/comments$`)
	reDeliverComment  = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/comments/(\d+)$`)
	reDeliverStatus   = regexp.MustCompile(`^/repos/Codertocat/Hello-World/statuses/[0-9a-f]{40}$`)
)

func (f *deliverGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/Codertocat/Hello-World.git/") {
		if user, pass, ok := r.BasicAuth(); !ok || user != "x-access-token" || pass != f.token {
			f.mu.Lock()
			f.bad = append(f.bad, "git "+r.Method+" "+r.URL.Path+": bad credentials")
			f.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		f.gitReqs = append(f.gitReqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		f.mu.Unlock()
		f.git.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, why string) {
		f.bad = append(f.bad, r.Method+" "+r.URL.Path+": "+why)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"message":"Validation Failed"}`)
	}
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	if a := r.Header.Get("Authorization"); a != "Bearer "+f.token && a != "token "+f.token {
		fail(http.StatusUnauthorized, "bad auth")
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			fail(http.StatusBadRequest, "body not JSON")
			return
		}
	}
	switch p := r.URL.Path; {
	case r.Method == http.MethodGet && p == "/user":
		reply(200, map[string]any{"login": "hookrun-bot", "id": 1})
	case r.Method == http.MethodGet && reDeliverComments.MatchString(p):
		var n int
		fmt.Sscan(reDeliverComments.FindStringSubmatch(p)[1], &n)
		list := []map[string]any{}
		for id, c := range f.comments {
			if c.issue == n {
				list = append(list, map[string]any{"id": id, "body": c.body, "user": map[string]any{"login": "hookrun-bot"}})
			}
		}
		reply(200, list)
	case r.Method == http.MethodPost && reDeliverComments.MatchString(p):
		var n int
		fmt.Sscan(reDeliverComments.FindStringSubmatch(p)[1], &n)
		b, _ := body["body"].(string)
		if b == "" {
			fail(http.StatusUnprocessableEntity, "comment without body")
			return
		}
		f.nextID++
		f.comments[f.nextID] = &pinComment{issue: n, body: b}
		reply(201, map[string]any{"id": f.nextID, "body": b, "user": map[string]any{"login": "hookrun-bot"}})
	case r.Method == http.MethodPatch && reDeliverComment.MatchString(p):
		var id int64
		fmt.Sscan(reDeliverComment.FindStringSubmatch(p)[1], &id)
		c, ok := f.comments[id]
		b, _ := body["body"].(string)
		if !ok || b == "" {
			fail(http.StatusNotFound, "edit of an unknown comment or without body")
			return
		}
		c.body = b
		reply(200, map[string]any{"id": id, "body": b})
	case r.Method == http.MethodPost && reDeliverStatus.MatchString(p):
		reply(201, map[string]any{"id": 1, "state": body["state"]})
	case r.Method == http.MethodPost && p == "/repos/Codertocat/Hello-World/pulls":
		title, _ := body["title"].(string)
		head, _ := body["head"].(string)
		base, _ := body["base"].(string)
		if draft, _ := body["draft"].(bool); title == "" || !draft || !f.isBranch(head) || !f.isBranch(base) || head == base {
			fail(http.StatusUnprocessableEntity, fmt.Sprintf("pull request %v: want a title, draft true and two existing branches", body))
			return
		}
		f.pulls = append(f.pulls, body)
		n := 100 + len(f.pulls)
		reply(201, map[string]any{"number": n, "draft": true, "html_url": fmt.Sprintf("%s/Codertocat/Hello-World/pull/%d", f.url, n)})
	default:
		fail(http.StatusNotFound, "no such route")
	}
}

// isBranch reports whether the repository has branch b.
func (f *deliverGitHub) isBranch(b string) bool {
	return b != "" && exec.Command("git", "-C", f.bare, "rev-parse", "--verify", "--quiet", "refs/heads/"+b).Run() == nil
}

func (f *deliverGitHub) commentOn(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.comments {
		if c.issue == n {
			return c.body
		}
	}
	return ""
}

// The agent (a `run:` step, executed in the sandbox by `sbx exec`) commits
// a fix on top of the checkout, unless the title says there is nothing to
// fix. It first writes down everything it can see: its environment and
// the workspace's git configuration.
const deliverWorkflow = `name: fix
on:
  - event: pull_request
    actions: [opened]
checkout: true
sandbox: { provider: sbx, agent: claude, push: pull_request }
env:
  - GIT_AUTHOR_NAME: agent
  - GIT_AUTHOR_EMAIL: agent@example.com
  - GIT_COMMITTER_NAME: agent
  - GIT_COMMITTER_EMAIL: agent@example.com
  - SPY: %s
steps:
  - id: fix
    run: |
      { env; cat "$HOOKRUN_WORKSPACE/.git/config"; git config --list; } > "$SPY/seen-$HOOKRUN_PR_NUMBER.txt" 2>&1
      case "$HOOKRUN_PR_TITLE" in *nothing*) echo "nothing to fix"; exit 0;; esac
      echo "fixed by the agent" > FIX.txt
      git add FIX.txt
      git commit --quiet -m "agent: fix"
      echo "committed a fix"
    output: RESULT
report:
  comment: sticky
  body: "agent says: ${RESULT}"
`

// TestSandboxDeliversAgentCommits is issue 15's delivery end to end
// through a real `hookrun serve` (embedded NATS, providers/git on a bare
// repository served by git http-backend, the sbx simulator, the GitHub
// reporter against a fake API that also serves git):
//
//   - #2: the agent commits in its --clone sandbox; after the steps hookrun
//     pushes the collected commit, with the runner's token, to
//     hookrun/fix/2 of the base repository, opens a draft pull request of
//     it against the pull request's head branch (POST /pulls with draft:
//     true, head, base), and the sticky comment links the branch, the
//     compare view and the draft;
//   - #3: the agent commits nothing: nothing is pushed and the comment says
//     so;
//   - #4: a fork's pull request: the branch goes to the base repository,
//     never the fork; no draft is opened (its head branch is in the fork)
//     and the comment says why.
//
// The token is never visible to the step (environment, the workspace's git
// configuration), nor in the comments or hookrun's logs.
func TestSandboxDeliversAgentCommits(t *testing.T) {
	const secret, ghToken, apiToken = "dl-secret", "ghp_deliverT0kenNeverShown", "api-token-dl"
	up := newGitUpstream(t)
	up.git(up.bare, "config", "http.receivepack", "true")
	up.git(up.work, "checkout", "--quiet", "-b", "changes", "master")
	head := up.commit("pr head")
	up.git(up.work, "checkout", "--quiet", "master")
	up.git(up.work, "push", "--quiet", up.bare, "changes")
	for _, n := range []int{2, 3, 4} {
		up.push(n, head)
	}

	sim := filepath.Join(t.TempDir(), "sbx")
	if out, err := exec.Command("go", "build", "-o", sim, "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		t.Fatalf("building the sbx simulator: %v\n%s", err, out)
	}
	gh := &deliverGitHub{t: t, token: ghToken, bare: up.bare, git: gitHTTPBackend(t, up.root), nextID: 9000, comments: map[int64]*pinComment{}}
	ghSrv := httptest.NewServer(gh)
	t.Cleanup(ghSrv.Close)
	gh.url = ghSrv.URL
	cloneURL := ghSrv.URL + "/Codertocat/Hello-World.git"

	dir := t.TempDir()
	spy := stepWritableDir(t)
	writeFile(t, filepath.Join(dir, "workflows", "fix.yaml"), fmt.Sprintf(deliverWorkflow, spy))
	addr := freeAddr(t)
	// Host steps as serve runs them by default (isolated, as root here): a
	// sandboxed workflow's workspace stays hookrun's, which sbx create
	// --clone needs (git refuses a repository another user owns).
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
github: { webhook_secret: "`+secret+`", token: "${DL_GH_TOKEN}", api_url: "`+ghSrv.URL+`/" }
allow_repos: ["Codertocat/*"]
runner: { sbx_binary: "`+sim+`" }
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", []string{"DL_GH_TOKEN=" + ghToken, "SBXSIM_STATE=" + filepath.Join(dir, "sbx")},
		"serve", "--config", cfg, "--log-level", "debug")
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)

	runs := map[int]string{}
	for _, c := range []struct {
		n     int
		title string
		fork  bool
	}{{2, "Fix the README", false}, {3, "nothing to see", false}, {4, "Fix from a fork", true}} {
		body := patchPayload(t, "github/pull_request/opened.payload.json", cloneURL, func(m map[string]any) {
			m["number"] = c.n
			pr := m["pull_request"].(map[string]any)
			pr["number"], pr["title"] = c.n, c.title
			pr["head"].(map[string]any)["sha"] = head
			if c.fork {
				pr["head"].(map[string]any)["repo"].(map[string]any)["full_name"] = "forker/Hello-World"
			}
		})
		code, ans := postGitHub(t, url, secret, "pull_request", fmt.Sprintf("dl-%d", c.n), body)
		if code != http.StatusAccepted || len(ans.Runs) != 1 {
			t.Fatalf("#%d: %d %+v", c.n, code, ans)
		}
		runs[c.n] = ans.Runs[0].ID
	}

	var rec struct {
		Status   string `json:"status"`
		Error    string `json:"error"`
		Delivery *struct {
			Outcome     string `json:"outcome"`
			Branch      string `json:"branch"`
			Commits     int    `json:"commits"`
			PullRequest *struct {
				Number int `json:"number"`
			} `json:"pull_request"`
		} `json:"delivery"`
	}
	deliveries := map[int]string{}
	for n, id := range runs {
		deadline := time.Now().Add(120 * time.Second)
		for {
			if c := apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec); c == http.StatusOK &&
				(rec.Status == "succeeded" || rec.Status == "failed" || rec.Status == "cancelled") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("#%d: run %s did not finish: %+v\n%s", n, id, rec, tail(p.out.String(), 4000))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if rec.Status != "succeeded" {
			t.Errorf("#%d: run %s %s: %s\n%s", n, id, rec.Status, rec.Error, tail(p.out.String(), 4000))
		}
		waitFor(t, 10*time.Second, func() bool { return strings.Contains(gh.commentOn(n), "agent says") })
		if d := rec.Delivery; d != nil {
			deliveries[n] = fmt.Sprintf("%s %s %d", d.Outcome, d.Branch, d.Commits)
			if d.PullRequest != nil {
				deliveries[n] += fmt.Sprintf(" #%d", d.PullRequest.Number)
			}
		}
		rec.Delivery = nil
	}
	// The run records say where the work went.
	if want := map[int]string{2: "pushed hookrun/fix/2 1 #101", 3: "no_commits  0", 4: "pushed hookrun/fix/4 1"}; fmt.Sprint(deliveries) != fmt.Sprint(want) {
		t.Errorf("run records' deliveries %v, want %v", deliveries, want)
	}

	// #2: pushed to the base repository, on top of the pull request's head.
	tip := up.git(up.bare, "rev-parse", "refs/heads/hookrun/fix/2")
	if parent := up.git(up.bare, "rev-parse", tip+"^"); parent != head {
		t.Errorf("hookrun/fix/2 is %s with parent %s, want a commit on top of %s", tip, parent, head)
	}
	if fix := up.git(up.bare, "show", tip+":FIX.txt"); fix != "fixed by the agent" {
		t.Errorf("hookrun/fix/2 FIX.txt = %q", fix)
	}
	c2 := gh.commentOn(2)
	for _, want := range []string{
		"**Agent's commits** · 1 commit pushed to [`hookrun/fix/2`](" + ghSrv.URL + "/Codertocat/Hello-World/tree/hookrun/fix/2)",
		"[compare](" + ghSrv.URL + "/Codertocat/Hello-World/compare/" + head + "...hookrun/fix/2)",
		"Draft pull request: [#101](" + ghSrv.URL + "/Codertocat/Hello-World/pull/101)",
		"agent says: committed a fix",
	} {
		if !strings.Contains(c2, want) {
			t.Errorf("#2: the comment lacks %q:\n%s", want, c2)
		}
	}
	// #3: nothing pushed, and the comment says so.
	if out, err := exec.Command("git", "-C", up.bare, "rev-parse", "--verify", "--quiet", "refs/heads/hookrun/fix/3").Output(); err == nil {
		t.Errorf("#3: hookrun/fix/3 was pushed (%s) although the agent committed nothing", out)
	}
	if c3 := gh.commentOn(3); !strings.Contains(c3, "the agent made no commits: nothing pushed") {
		t.Errorf("#3: the comment does not say nothing was pushed:\n%s", c3)
	}
	// #4: the base repository has the branch; no draft for a fork.
	up.git(up.bare, "rev-parse", "refs/heads/hookrun/fix/4")
	if c4 := gh.commentOn(4); !strings.Contains(c4, "head branch is in a fork") ||
		!strings.Contains(c4, "[`hookrun/fix/4`]("+ghSrv.URL+"/Codertocat/Hello-World/tree/hookrun/fix/4)") {
		t.Errorf("#4: the comment does not link the branch and say why there is no draft:\n%s", c4)
	}

	gh.mu.Lock()
	pulls, bad, gitReqs := gh.pulls, gh.bad, strings.Join(gh.gitReqs, "\n")
	gh.mu.Unlock()
	if len(pulls) != 1 || pulls[0]["head"] != "hookrun/fix/2" || pulls[0]["base"] != "changes" || pulls[0]["draft"] != true {
		t.Errorf("draft pull requests %v: want one, hookrun/fix/2 into changes", pulls)
	}
	if len(bad) > 0 {
		t.Errorf("requests the real GitHub would refuse: %v", bad)
	}
	if n := strings.Count(gitReqs, "POST /Codertocat/Hello-World.git/git-receive-pack"); n != 2 {
		t.Errorf("%d pushes reached the forge, want 2 (#2 and #4):\n%s", n, gitReqs)
	}

	// The token: never seen by the step, never in a comment or a log line.
	for _, n := range []int{2, 3, 4} {
		seen, err := os.ReadFile(filepath.Join(spy, fmt.Sprintf("seen-%d.txt", n)))
		if err != nil {
			t.Fatalf("#%d: the step left no record of what it saw: %v", n, err)
		}
		if !strings.Contains(string(seen), "HOOKRUN_PR_NUMBER=") {
			t.Errorf("#%d: the step's record is not its environment:\n%s", n, seen)
		}
		if strings.Contains(string(seen), ghToken) || strings.Contains(string(seen), "extraheader") {
			t.Errorf("#%d: the step could see the token:\n%s", n, seen)
		}
		if strings.Contains(gh.commentOn(n), ghToken) {
			t.Errorf("#%d: the token is in the comment", n)
		}
	}
	if strings.Contains(p.out.String(), ghToken) {
		t.Errorf("the token is in hookrun's output")
	}
}
