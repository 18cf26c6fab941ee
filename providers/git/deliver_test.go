package git_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

const deliverToken = "ghs_d3liv3rT0ken"

// forge is a git smart-HTTP server over a fresh upstream that takes only
// Basic x-access-token:deliverToken and records every request, as GitHub
// takes an installation token.
type forge struct {
	u   *upstream
	srv *httptest.Server

	mu       sync.Mutex
	requests []string // "METHOD path?query"
	refused  int
}

func newForge(t *testing.T) *forge {
	t.Helper()
	backend := filepath.Join(strings.TrimSpace(string(must(exec.Command("git", "--exec-path").Output()))), "git-http-backend")
	f := &forge{u: newUpstream(t)}
	run(t, f.u.bare, f.u.env, "config", "http.receivepack", "true")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(f.u.bare), "GIT_HTTP_EXPORT_ALL=1"}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+deliverToken))
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
		ok := r.Header.Get("Authorization") == want
		if !ok {
			f.refused++
		}
		f.mu.Unlock()
		if !ok {
			rw.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *forge) cloneURL() string { return f.srv.URL + "/" + filepath.Base(f.u.bare) }

func (f *forge) workspaces(t *testing.T, drafts contract.DraftOpener) *git.Workspaces {
	t.Helper()
	w, err := git.New(git.Config{DataDir: t.TempDir(), Drafts: drafts, Links: forgeLinks(t),
		Origins: git.Origins{workflows.Forge("github"): f.srv.URL, workflows.Forge("gitlab"): f.srv.URL},
		Auth: func(context.Context, *workflows.Event) (string, string, error) {
			return "x-access-token", deliverToken, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// ref is what the upstream's ref points at, "" when it does not exist.
func (f *forge) ref(t *testing.T, ref string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", f.u.bare, "rev-parse", "--verify", "--quiet", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// collect stands in for the sandbox: commits n times on top of the
// checkout, as the agent would, then points the workspace branch
// hookrun/<run> at the result, as sbx's collect does; the workspace then
// belongs to the step user (uid 65534), as in the servers.
func collect(t *testing.T, u *upstream, dir, runID string, n int) string {
	t.Helper()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "fix.txt"), []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, u.env, "add", "fix.txt")
		run(t, dir, u.env, "commit", "--quiet", "-m", "agent fix")
	}
	run(t, dir, u.env, "branch", "-f", "hookrun/"+runID, "HEAD")
	tip := run(t, dir, u.env, "rev-parse", "HEAD")
	if os.Geteuid() == 0 {
		chownTree(t, dir, 65534)
	}
	return tip
}

func chownTree(t *testing.T, dir string, id int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, id, id)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func reviewWorkflow(push string) *workflows.Workflow {
	return &workflows.Workflow{Name: "review", Checkout: true,
		Sandbox: &workflows.Sandbox{Provider: "sbx", Agent: "claude", Push: push}}
}

// TestDeliverPushesTheAgentsCommits: the collected branch reaches
// hookrun/<workflow>/<number> of the base repository over HTTP with the
// token in the Authorization header (never in a URL, the workspace or an
// error), the delivery links the branch and its compare view, and a
// hostile workspace (a pre-push hook, core.hooksPath, a url.insteadOf
// redirecting the push) runs nothing and redirects nothing. A second run
// overwrites the branch.
func TestDeliverPushesTheAgentsCommits(t *testing.T) {
	f := newForge(t)
	w := f.workspaces(t, nil)
	ctx := context.Background()
	ev := prEvent(workflows.Forge("github"), f.cloneURL(), 1, f.u.p1)
	ws, err := w.Prepare(ctx, "r1", ev, contract.PrepareOptions{Checkout: true, HostSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	tip := collect(t, f.u, ws.Dir, "r1", 2)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := "#!/bin/sh\ntouch " + marker + "\n"
	for _, dir := range []string{filepath.Join(ws.Dir, ".git", "hooks"), filepath.Join(ws.Dir, "evilhooks")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"pre-push", "reference-transaction", "post-checkout"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	elsewhere := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached another host: %s %s (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))
		http.Error(rw, "no", http.StatusForbidden)
	}))
	defer elsewhere.Close()
	// What a step or the agent could have written into the workspace
	// (after collect, whose own git commands would run it).
	hostile := "[core]\n\thooksPath = " + filepath.Join(ws.Dir, "evilhooks") + "\n\tfsmonitor = touch " + marker +
		"\n[url \"" + elsewhere.URL + "/\"]\n\tinsteadOf = " + f.srv.URL + "/\n[uploadpack]\n\tpackObjectsHook = touch " + marker + "\n"
	cfgFile, err := os.OpenFile(filepath.Join(ws.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfgFile.WriteString(hostile); err != nil {
		t.Fatal(err)
	}
	cfgFile.Close()

	d, err := w.Deliver(ctx, contract.DeliverRequest{RunID: "r1", Workflow: reviewWorkflow(workflows.PushBranch),
		Event: ev, Workspace: ws.Dir, Branch: "hookrun/r1", BaseSHA: f.u.p1})
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	web := f.srv.URL + "/upstream"
	want := workflows.Delivery{Outcome: workflows.DeliveryPushed, Branch: "hookrun/review/1", Head: tip, Commits: 2,
		BranchURL: web + "/tree/hookrun/review/1", CompareURL: web + "/compare/" + f.u.p1 + "...hookrun/review/1"}
	if d != want {
		t.Errorf("delivery\n got %+v\nwant %+v", d, want)
	}
	if got := f.ref(t, "refs/heads/hookrun/review/1"); got != tip {
		t.Errorf("upstream hookrun/review/1 = %q, want the agent's %s", got, tip)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a hook or command of the workspace ran during the delivery")
	}
	f.mu.Lock()
	reqs := strings.Join(f.requests, "\n")
	f.mu.Unlock()
	if !strings.Contains(reqs, "POST /upstream.git/git-receive-pack") {
		t.Errorf("no push reached the forge:\n%s", reqs)
	}
	if strings.Contains(reqs, deliverToken) {
		t.Errorf("the token is in a request URL:\n%s", reqs)
	}
	cfg, _ := os.ReadFile(filepath.Join(ws.Dir, ".git", "config"))
	if strings.Contains(string(cfg), deliverToken) || strings.Contains(string(cfg), "extraHeader") {
		t.Errorf("the token reached the workspace's git config:\n%s", cfg)
	}

	// A later run of the same pull request overwrites the branch.
	ws2, err := w.Prepare(ctx, "r2", ev, contract.PrepareOptions{Checkout: true, HostSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	tip2 := collect(t, f.u, ws2.Dir, "r2", 1)
	d, err = w.Deliver(ctx, contract.DeliverRequest{RunID: "r2", Workflow: reviewWorkflow(workflows.PushBranch),
		Event: ev, Workspace: ws2.Dir, Branch: "hookrun/r2", BaseSHA: f.u.p1})
	if err != nil || d.Commits != 1 || d.Head != tip2 {
		t.Fatalf("second delivery: %+v, %v", d, err)
	}
	if got := f.ref(t, "refs/heads/hookrun/review/1"); got != tip2 {
		t.Errorf("after the second run hookrun/review/1 = %q, want %s", got, tip2)
	}
}

// TestDeliverNothingToPush: no commits after the checkout, or an event
// without a pull request, push nothing.
func TestDeliverNothingToPush(t *testing.T) {
	f := newForge(t)
	w := f.workspaces(t, nil)
	ctx := context.Background()
	ev := prEvent(workflows.Forge("github"), f.cloneURL(), 1, f.u.p1)
	ws, err := w.Prepare(ctx, "r1", ev, contract.PrepareOptions{Checkout: true, HostSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, f.u, ws.Dir, "r1", 0)
	f.mu.Lock()
	before := len(f.requests)
	f.mu.Unlock()
	d, err := w.Deliver(ctx, contract.DeliverRequest{RunID: "r1", Workflow: reviewWorkflow(workflows.PushBranch),
		Event: ev, Workspace: ws.Dir, Branch: "hookrun/r1", BaseSHA: f.u.p1})
	if err != nil || d != (workflows.Delivery{Outcome: workflows.DeliveryNoCommits}) {
		t.Fatalf("delivery without commits: %+v, %v; want no_commits", d, err)
	}
	f.mu.Lock()
	after := len(f.requests)
	f.mu.Unlock()
	if after != before || f.ref(t, "refs/heads/hookrun/review/1") != "" {
		t.Errorf("something reached the forge: %d requests, branch %q", after-before, f.ref(t, "refs/heads/hookrun/review/1"))
	}

	push := &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPush, Repo: "acme/widgets", CloneURL: f.cloneURL(),
		Push: &workflows.Push{Ref: "refs/heads/main", Branch: "main", After: f.u.c2}}
	d, err = w.Deliver(ctx, contract.DeliverRequest{RunID: "r2", Workflow: reviewWorkflow(workflows.PushBranch),
		Event: push, Workspace: ws.Dir, Branch: "hookrun/r1", BaseSHA: f.u.c2})
	if err != nil || d.Outcome != workflows.DeliverySkipped || !strings.Contains(d.Note, "no pull or merge request") {
		t.Fatalf("delivery for a push: %+v, %v; want skipped with a note", d, err)
	}
}

// TestDeliverRefuses: a clone URL off the forge's origin, an invalid
// collected branch or base fail before any request or credential.
func TestDeliverRefuses(t *testing.T) {
	f := newForge(t)
	w := f.workspaces(t, nil)
	ctx := context.Background()
	ev := prEvent(workflows.Forge("github"), f.cloneURL(), 1, f.u.p1)
	ws, err := w.Prepare(ctx, "r1", ev, contract.PrepareOptions{Checkout: true, HostSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, f.u, ws.Dir, "r1", 1)
	base := contract.DeliverRequest{RunID: "r1", Workflow: reviewWorkflow(workflows.PushBranch),
		Event: ev, Workspace: ws.Dir, Branch: "hookrun/r1", BaseSHA: f.u.p1}
	other := *ev
	other.CloneURL = "https://evil.example/acme/widgets.git"
	cases := []struct {
		name string
		edit func(t *testing.T, r *contract.DeliverRequest)
		want string
	}{
		{"another host", func(t *testing.T, r *contract.DeliverRequest) { r.Event = &other }, "is not the github host"},
		{"option as branch", func(t *testing.T, r *contract.DeliverRequest) { r.Branch = "--upload-pack=touch /tmp/x" }, "not a valid branch name"},
		{"refspec in branch", func(t *testing.T, r *contract.DeliverRequest) { r.Branch = "a:refs/heads/main" }, "not a valid branch name"},
		{"base not a sha", func(t *testing.T, r *contract.DeliverRequest) { r.BaseSHA = "main" }, "is not a commit id"},
		{"alternates", func(t *testing.T, r *contract.DeliverRequest) {
			alt := filepath.Join(r.Workspace, ".git", "objects", "info", "alternates")
			if err := os.WriteFile(alt, []byte("/elsewhere/objects\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(alt) })
		}, "borrows objects from elsewhere"},
		{"gitdir file", func(t *testing.T, r *contract.DeliverRequest) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+f.u.bare+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r.Workspace = dir
		}, ".git is not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := base
			c.edit(t, &req)
			f.mu.Lock()
			before := len(f.requests)
			f.mu.Unlock()
			d, err := w.Deliver(ctx, req)
			if err == nil || !strings.Contains(err.Error(), c.want) || d.Outcome == workflows.DeliveryPushed {
				t.Fatalf("Deliver: %+v, %v; want an error containing %q", d, err, c.want)
			}
			if c.name == "another host" && !errors.Is(err, contract.ErrRefused) {
				t.Errorf("%v does not match ErrRefused", err)
			}
			f.mu.Lock()
			after := len(f.requests)
			f.mu.Unlock()
			if after != before {
				t.Errorf("%d requests reached the forge", after-before)
			}
		})
	}
}

// drafts records the draft requests it is asked to open.
type drafts struct {
	mu   sync.Mutex
	reqs []contract.DraftRequest
	err  error
}

func (d *drafts) OpenDraft(_ context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reqs = append(d.reqs, req)
	if d.err != nil {
		return workflows.ChangeRequest{}, d.err
	}
	return workflows.ChangeRequest{Number: 7, URL: "https://forge.example/acme/widgets/pull/7"}, nil
}

var _ contract.DraftOpener = (*drafts)(nil)

// TestDeliverDraftPullRequest: push: pull_request opens a draft of the
// pushed branch against the pull request's head branch; for a fork's pull
// request (its head branch is in the fork) it pushes the branch to the base
// repository and opens none, saying why; a failing forge API leaves the
// branch delivered with a note.
func TestDeliverDraftPullRequest(t *testing.T) {
	f := newForge(t)
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		fork     bool
		apiErr   error
		wantPR   bool
		wantNote string
	}{
		{"same repository", false, nil, true, ""},
		{"fork", true, nil, false, "head branch is in a fork"},
		{"api fails", false, errors.New("creating pull request: 403 Forbidden"), false, "opening the draft pull request failed: creating pull request: 403"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dr := &drafts{err: c.apiErr}
			w := f.workspaces(t, dr)
			ev := prEvent(workflows.Forge("github"), f.cloneURL(), 1, f.u.p1)
			ev.PullRequest.Fork = c.fork
			ws, err := w.Prepare(ctx, "r1", ev, contract.PrepareOptions{Checkout: true, HostSteps: true})
			if err != nil {
				t.Fatal(err)
			}
			tip := collect(t, f.u, ws.Dir, "r1", 1)
			d, err := w.Deliver(ctx, contract.DeliverRequest{RunID: "r1", Workflow: reviewWorkflow(workflows.PushPullRequest),
				Event: ev, Workspace: ws.Dir, Branch: "hookrun/r1", BaseSHA: f.u.p1})
			if err != nil || d.Outcome != workflows.DeliveryPushed || d.Head != tip {
				t.Fatalf("Deliver: %+v, %v", d, err)
			}
			if got := f.ref(t, "refs/heads/hookrun/review/1"); got != tip {
				t.Errorf("upstream branch %q, want %s", got, tip)
			}
			if (d.PullRequest != nil) != c.wantPR || !strings.Contains(d.Note, c.wantNote) || (c.wantNote == "") != (d.Note == "") {
				t.Errorf("pull request %+v, note %q; want pull request %v, note containing %q", d.PullRequest, d.Note, c.wantPR, c.wantNote)
			}
			dr.mu.Lock()
			defer dr.mu.Unlock()
			if c.fork {
				if len(dr.reqs) != 0 {
					t.Errorf("a draft was requested for a fork: %+v", dr.reqs)
				}
				return
			}
			if len(dr.reqs) != 1 || dr.reqs[0].Head != "hookrun/review/1" || dr.reqs[0].Base != "feature" || dr.reqs[0].Event != ev {
				t.Errorf("draft requests %+v; want one of hookrun/review/1 into feature", dr.reqs)
			}
		})
	}
}

// TestDeliverGitLab: a merge request's delivery goes to the project's
// hookrun/<workflow>/<iid> and links GitLab's /-/tree and /-/compare pages.
func TestDeliverGitLab(t *testing.T) {
	f := newForge(t)
	w := f.workspaces(t, nil)
	ctx := context.Background()
	ev := prEvent(workflows.Forge("gitlab"), f.cloneURL(), 2, f.u.p1)
	ws, err := w.Prepare(ctx, "g1", ev, contract.PrepareOptions{Checkout: true, HostSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	tip := collect(t, f.u, ws.Dir, "g1", 1)
	d, err := w.Deliver(ctx, contract.DeliverRequest{RunID: "g1", Workflow: reviewWorkflow(workflows.PushBranch),
		Event: ev, Workspace: ws.Dir, Branch: "hookrun/g1", BaseSHA: f.u.p1})
	if err != nil {
		t.Fatal(err)
	}
	web := f.srv.URL + "/upstream"
	if d.Branch != "hookrun/review/2" || d.BranchURL != web+"/-/tree/hookrun/review/2" ||
		d.CompareURL != web+"/-/compare/"+f.u.p1+"...hookrun/review/2" || f.ref(t, "refs/heads/hookrun/review/2") != tip {
		t.Errorf("delivery %+v; upstream branch %q, want %s", d, f.ref(t, "refs/heads/hookrun/review/2"), tip)
	}
}
