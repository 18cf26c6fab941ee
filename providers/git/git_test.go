package git_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

// upstream is a bare repository standing in for a forge:
//
//	main:              c1 ── c2
//	refs/pull/1/head:   └── p1            (also refs/merge-requests/2/head)
//	tag v1:            c1
type upstream struct {
	bare, work string
	c1, c2, p1 string
	t          *testing.T
	env        []string
}

func run(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

var (
	sharedOnce sync.Once
	shared     *upstream
	sharedRoot string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRoot != "" {
		_ = os.RemoveAll(sharedRoot)
	}
	os.Exit(code)
}

// sharedUpstream is one upstream for the tests that only read it.
func sharedUpstream(t *testing.T) *upstream {
	t.Helper()
	sharedOnce.Do(func() {
		root, err := os.MkdirTemp("", "hookrun-git-test-")
		if err != nil {
			t.Fatal(err)
		}
		sharedRoot = root
		shared = makeUpstream(t, root)
	})
	if shared == nil {
		t.Fatal("creating the shared upstream failed earlier")
	}
	return shared
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	return makeUpstream(t, t.TempDir())
}

func makeUpstream(t *testing.T, root string) *upstream {
	t.Helper()
	u := &upstream{bare: filepath.Join(root, "upstream.git"), work: filepath.Join(root, "work"), t: t,
		env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	run(t, root, u.env, "init", "--quiet", "--bare", "--initial-branch=main", u.bare)
	run(t, root, u.env, "init", "--quiet", "--initial-branch=main", u.work)
	u.c1 = u.commit("README", "v1")
	u.c2 = u.commit("README", "v2")
	run(t, u.work, u.env, "checkout", "--quiet", "-b", "feature", u.c1)
	u.p1 = u.commit("feature.txt", "pr1")
	run(t, u.work, u.env, "checkout", "--quiet", "main")
	run(t, u.work, u.env, "tag", "v1", u.c1)
	run(t, u.work, u.env, "push", "--quiet", u.bare, "main", "v1", "feature:refs/heads/tmp")
	u.updateRef("refs/pull/1/head", u.p1)
	u.updateRef("refs/merge-requests/2/head", u.p1)
	run(t, u.bare, u.env, "update-ref", "-d", "refs/heads/tmp")
	return u
}

func (u *upstream) commit(file, content string) string {
	u.t.Helper()
	if err := os.WriteFile(filepath.Join(u.work, file), []byte(content), 0o644); err != nil {
		u.t.Fatal(err)
	}
	run(u.t, u.work, u.env, "add", file)
	run(u.t, u.work, u.env, "commit", "--quiet", "-m", file+" "+content)
	return run(u.t, u.work, u.env, "rev-parse", "HEAD")
}

// branchCommit makes a commit on a new branch from base and pushes it to
// the upstream as refs/heads/<branch>.
func (u *upstream) branchCommit(branch, base, file, content string) string {
	u.t.Helper()
	run(u.t, u.work, u.env, "checkout", "--quiet", "-b", branch, base)
	sha := u.commit(file, content)
	run(u.t, u.work, u.env, "checkout", "--quiet", "main")
	run(u.t, u.work, u.env, "push", "--quiet", u.bare, branch)
	return sha
}

func (u *upstream) updateRef(ref, sha string) {
	u.t.Helper()
	run(u.t, u.bare, u.env, "update-ref", ref, sha)
}

func prEvent(forge workflows.Forge, url string, n int, sha string) *workflows.Event {
	return &workflows.Event{Forge: forge, Kind: workflows.KindPullRequest, Action: "opened", Repo: "acme/widgets",
		CloneURL: url, PullRequest: &workflows.PullRequest{Number: n, HeadSHA: sha, BaseRef: "main", HeadRef: "feature"}}
}

// Workspaces passes the conformance suite, with a checkout of a pull
// request's head from a local upstream.
func TestWorkspacesConformance(t *testing.T) {
	u := sharedUpstream(t)
	contracttest.RunWorkspaces(t, func(t *testing.T) contract.Workspaces { return newWorkspaces(t, t.TempDir()) }, contracttest.WorkspacesOptions{
		Checkout: func(*testing.T) contracttest.Checkout {
			return contracttest.Checkout{Event: prEvent(workflows.Forge("github"), u.bare, 1, u.p1), HeadSHA: u.p1,
				Files: map[string]string{"README": "v1", "feature.txt": "pr1"}}
		},
	})
}

func newWorkspaces(t *testing.T, data string) *git.Workspaces {
	t.Helper()
	w, err := git.New(git.Config{DataDir: data, Links: forgeLinks(t)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// head is the commit checked out in dir, and whether HEAD is detached.
func head(t *testing.T, dir string) (sha string, detached bool) {
	t.Helper()
	sha = run(t, dir, nil, "rev-parse", "HEAD")
	cmd := exec.Command("git", "symbolic-ref", "-q", "HEAD")
	cmd.Dir = dir
	return sha, cmd.Run() != nil
}

func TestPrepareCheckout(t *testing.T) {
	u := sharedUpstream(t)
	comment := prEvent(workflows.Forge("github"), u.bare, 1, "")
	comment.Kind, comment.Action = workflows.KindComment, "created"
	comment.Comment = &workflows.Comment{ID: 1, Body: "/review"}
	issueComment := &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindComment, Repo: "acme/widgets",
		CloneURL: u.bare, Issue: &workflows.Issue{Number: 9}, Comment: &workflows.Comment{Body: "/triage"}}
	push := func(ref, branch, after string) *workflows.Event {
		return &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPush, Repo: "acme/widgets", CloneURL: u.bare,
			Push: &workflows.Push{Ref: ref, Branch: branch, After: after}}
	}
	tests := []struct {
		name      string
		event     *workflows.Event
		wantSHA   string
		wantFiles map[string]string
		wantErr   string
	}{
		{"github pull request", prEvent(workflows.Forge("github"), u.bare, 1, u.p1), u.p1, map[string]string{"README": "v1", "feature.txt": "pr1"}, ""},
		{"github pull request, upper-case SHA", prEvent(workflows.Forge("github"), u.bare, 1, strings.ToUpper(u.p1)), u.p1, nil, ""},
		{"gitlab merge request", prEvent(workflows.Forge("gitlab"), u.bare, 2, u.p1), u.p1, map[string]string{"feature.txt": "pr1"}, ""},
		{"gitlab merge request ref is not github's", prEvent(workflows.Forge("gitlab"), u.bare, 1, ""), "", nil, "refs/merge-requests/1/head"},
		{"push: the pushed SHA", push("refs/heads/main", "main", u.c2), u.c2, map[string]string{"README": "v2"}, ""},
		{"push: an older SHA of the branch", push("refs/heads/main", "main", u.c1), u.c1, map[string]string{"README": "v1"}, ""},
		{"push: branch only, no SHA", push("", "main", ""), u.c2, nil, ""},
		{"push: tag", push("refs/tags/v1", "", ""), u.c1, map[string]string{"README": "v1"}, ""},
		{"push: deleted branch", push("refs/heads/gone", "gone", strings.Repeat("0", 40)), "", nil, "all zeros"},
		{"comment on a pull request without SHA: the head ref's tip", comment, u.p1, map[string]string{"feature.txt": "pr1"}, ""},
		{"comment on an issue: the default branch", issueComment, u.c2, map[string]string{"README": "v2"}, ""},
		{"unknown SHA", prEvent(workflows.Forge("github"), u.bare, 1, strings.Repeat("ab", 20)), "", nil, "not found"},
		{"malformed SHA", prEvent(workflows.Forge("github"), u.bare, 1, "HEAD~1"), "", nil, "not a commit id"},
		{"unknown pull request", prEvent(workflows.Forge("github"), u.bare, 77, ""), "", nil, "refs/pull/77/head"},
		{"no clone URL", prEvent(workflows.Forge("github"), "", 1, u.p1), "", nil, "no clone URL"},
	}
	w := newWorkspaces(t, t.TempDir())
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runID := fmt.Sprintf("run-%d", i)
			dir, sha, err := prepare(w, context.Background(), runID, tt.event, true)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Prepare: err %v, want one containing %q", err, tt.wantErr)
				}
				if wsDir, _ := w.Dir(runID); exists(wsDir) {
					t.Errorf("a failed Prepare left %s behind", wsDir)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if sha != tt.wantSHA {
				t.Errorf("Prepare returned SHA %s, want %s", sha, tt.wantSHA)
			}
			got, detached := head(t, dir)
			if got != tt.wantSHA || !detached {
				t.Errorf("workspace HEAD %s (detached %v), want detached at %s", got, detached, tt.wantSHA)
			}
			for f, want := range tt.wantFiles {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
					t.Errorf("%s = %q, %v; want %q", f, b, err, want)
				}
			}
			if want := filepath.Join("workspaces", git.RunShard(runID), runID); !strings.HasSuffix(dir, want) {
				t.Errorf("workspace %s, want it under <data>/%s", dir, want)
			}
			// The workspace stands alone: no alternates pointing at the mirror.
			if exists(filepath.Join(dir, ".git", "objects", "info", "alternates")) {
				t.Errorf("workspace borrows objects from the mirror (alternates)")
			}
		})
	}
	t.Run("pull request base branch is there to diff against", func(t *testing.T) {
		dir, _, err := prepare(w, context.Background(), "base", prEvent(workflows.Forge("github"), u.bare, 1, u.p1), true)
		if err != nil {
			t.Fatal(err)
		}
		if got := run(t, dir, nil, "merge-base", "HEAD", "origin/main"); got != u.c1 {
			t.Errorf("merge-base with origin/main = %s, want %s", got, u.c1)
		}
	})
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestPrepareFollowsUpstream(t *testing.T) {
	u := newUpstream(t)
	data := t.TempDir()
	w := newWorkspaces(t, data)
	ctx := context.Background()
	if _, sha, err := prepare(w, ctx, "r1", prEvent(workflows.Forge("github"), u.bare, 1, ""), true); err != nil || sha != u.p1 {
		t.Fatalf("first Prepare: %s, %v; want %s", sha, err, u.p1)
	}
	// The PR gets a new commit: a comment event (no SHA) sees it.
	p2 := u.branchCommit("feature2", u.p1, "feature.txt", "pr2")
	u.updateRef("refs/pull/1/head", p2)
	dir, sha, err := prepare(w, ctx, "r2", prEvent(workflows.Forge("github"), u.bare, 1, ""), true)
	if err != nil || sha != p2 {
		t.Fatalf("second Prepare: %s, %v; want %s", sha, err, p2)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "feature.txt")); string(b) != "pr2" {
		t.Errorf("feature.txt = %q, want pr2", b)
	}
	// An event for the old head still checks it out (already in the mirror).
	if _, sha, err := prepare(w, ctx, "r3", prEvent(workflows.Forge("github"), u.bare, 1, u.p1), true); err != nil || sha != u.p1 {
		t.Errorf("Prepare of the old head: %s, %v; want %s", sha, err, u.p1)
	}
	mirrors, _ := filepath.Glob(filepath.Join(data, "mirrors", "*", "*.git"))
	if len(mirrors) != 1 {
		t.Errorf("mirrors %v, want exactly one for the repository", mirrors)
	}
}

// TestPrepareForcePushedHead: the event's SHA is no longer the PR ref's tip
// nor its ancestor (force push), but still reachable upstream: fetched by id.
func TestPrepareForcePushedHead(t *testing.T) {
	u := newUpstream(t)
	other := u.branchCommit("rewritten", u.c2, "feature.txt", "rewritten")
	u.branchCommit("keep", u.p1, "keep.txt", "k") // keeps p1 reachable
	u.updateRef("refs/pull/1/head", other)
	w := newWorkspaces(t, t.TempDir())
	dir, sha, err := prepare(w, context.Background(), "r", prEvent(workflows.Forge("github"), u.bare, 1, u.p1), true)
	if err != nil || sha != u.p1 {
		t.Fatalf("Prepare: %s, %v; want %s", sha, err, u.p1)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "feature.txt")); string(b) != "pr1" {
		t.Errorf("feature.txt = %q, want pr1", b)
	}
}

func TestPrepareConcurrent(t *testing.T) {
	u := sharedUpstream(t)
	data := t.TempDir()
	// Two Workspaces on one data dir stand for two runner processes: the
	// flock serializes them, the in-process lock serializes goroutines.
	ws := []*git.Workspaces{newWorkspaces(t, data), newWorkspaces(t, data)}
	events := []struct {
		e    *workflows.Event
		want string
	}{
		{prEvent(workflows.Forge("github"), u.bare, 1, u.p1), u.p1},
		{prEvent(workflows.Forge("github"), u.bare, 1, ""), u.p1},
		{&workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPush, Repo: "acme/widgets", CloneURL: u.bare,
			Push: &workflows.Push{Ref: "refs/heads/main", Branch: "main", After: u.c2}}, u.c2},
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := events[i%len(events)]
			runID := fmt.Sprintf("c%d", i)
			dir, sha, err := prepare(ws[i%2], context.Background(), runID, ev.e, true)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", runID, err)
				return
			}
			if sha != ev.want {
				errs <- fmt.Errorf("%s: SHA %s, want %s", runID, sha, ev.want)
				return
			}
			if got, _ := head(t, dir); got != ev.want {
				errs <- fmt.Errorf("%s: HEAD %s, want %s", runID, got, ev.want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mirrors, _ := filepath.Glob(filepath.Join(data, "mirrors", "*", "*.git"))
	leftovers, _ := filepath.Glob(filepath.Join(data, "mirrors", "*", ".init-*"))
	if len(mirrors) != 1 || len(leftovers) != 0 {
		t.Errorf("mirrors %v, temporary dirs %v; want one mirror and nothing else", mirrors, leftovers)
	}
}

func TestPrepareWithoutCheckoutAndRemove(t *testing.T) {
	data := t.TempDir()
	// What attempts left under the layouts before, which New finds: the
	// event file in a directory of its own, the flat one without shards,
	// and the one before it (a directory of the run's own).
	shard := git.RunShard("r1")
	var olds []string
	for _, d := range []string{"scratch/" + shard + "/r1+event", "workspaces/r1", "scratch/r1+home", "scratch/r1+tmp", "scratch/r1+event", "scratch/r1+results", "scratch/r1"} {
		old := filepath.Join(data, d)
		if err := os.MkdirAll(filepath.Join(old, "home"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(old, "home", "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		olds = append(olds, old)
	}
	w := newWorkspaces(t, data)
	dir, _ := w.Dir("r1")
	// Leftovers of an earlier attempt, including a read-only directory.
	if err := os.MkdirAll(filepath.Join(dir, "ro", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ro", "sub", "f"), []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	got, sha, err := prepare(w, context.Background(), "r1", nil, false)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	for _, old := range olds {
		if exists(old) {
			t.Errorf("Prepare left %s", old)
		}
	}
	if got != dir || sha != "" {
		t.Errorf("Prepare = %s, %q; want %s, \"\"", got, sha, dir)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("workspace entries %v, %v; want an empty directory", entries, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	// The event file, as the engine writes it.
	event := filepath.Join(data, "scratch", shard, "r1+event.json")
	if err := os.WriteFile(event, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove("r1"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if exists(dir) || exists(event) {
		t.Errorf("Remove left %s or %s", dir, event)
	}
	if err := w.Remove("r1"); err != nil {
		t.Errorf("Remove of a missing workspace: %v", err)
	}
}

// A run whose id names a shard ("3") prepares and removes its own
// directories only: the shard and the other runs in it stay.
func TestRunIDThatNamesAShard(t *testing.T) {
	data := t.TempDir()
	// Another run's leftover in the flat layout, so that New finds one and
	// Prepare clears the flat paths of each run.
	leftover := filepath.Join(data, "workspaces", "old-flat-run")
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWorkspaces(t, data)
	other := ""
	for i := 0; other == ""; i++ {
		if id := fmt.Sprintf("other-%d", i); git.RunShard(id) == "3" {
			other = id
		}
	}
	ws, err := w.Prepare(context.Background(), other, nil, contract.PrepareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Prepare(context.Background(), "3", nil, contract.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove("3"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ws.Dir, ws.Home, ws.TmpDir, ws.Results, leftover} {
		if !exists(d) {
			t.Errorf("run 3's Prepare and Remove took %s with them (run %s lies in shard 3)", d, other)
		}
	}
}

func TestUntrustedInput(t *testing.T) {
	u := sharedUpstream(t)
	data := t.TempDir()
	w := newWorkspaces(t, data)
	pwned := filepath.Join(t.TempDir(), "pwned")
	push := func(url, ref, branch string) *workflows.Event {
		return &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPush, Repo: "acme/widgets", CloneURL: url,
			Push: &workflows.Push{Ref: ref, Branch: branch}}
	}
	tests := []struct {
		name  string
		runID string
		event *workflows.Event
	}{
		{"run id escaping the workspaces dir", "../escape", prEvent(workflows.Forge("github"), u.bare, 1, u.p1)},
		{"run id with a slash", "a/b", prEvent(workflows.Forge("github"), u.bare, 1, u.p1)},
		{"empty run id", "", prEvent(workflows.Forge("github"), u.bare, 1, u.p1)},
		{"clone URL as an option", "r", prEvent(workflows.Forge("github"), "--upload-pack=touch "+pwned, 1, u.p1)},
		{"ext transport", "r", prEvent(workflows.Forge("github"), "ext::sh -c touch% "+pwned, 1, u.p1)},
		{"ref as an option", "r", push(u.bare, "--upload-pack=touch "+pwned, "")},
		{"branch as an option", "r", push(u.bare, "", "--upload-pack=touch "+pwned)},
		{"ref with a refspec colon", "r", push(u.bare, "refs/heads/main:refs/heads/x", "")},
		{"base branch with ..", "r", func() *workflows.Event {
			e := prEvent(workflows.Forge("github"), u.bare, 1, u.p1)
			e.PullRequest.BaseRef = "../../etc"
			return e
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := prepare(w, context.Background(), tt.runID, tt.event, true); err == nil {
				t.Errorf("Prepare accepted it")
			}
			if exists(pwned) {
				t.Fatalf("untrusted text was executed")
			}
		})
	}
	if exists(filepath.Join(data, "escape")) || exists(filepath.Join(filepath.Dir(data), "escape")) {
		t.Errorf("a workspace was created outside <data>/workspaces")
	}
	// A repository name full of path syntax stays one mirror under mirrors/.
	e := prEvent(workflows.Forge("github"), u.bare, 1, u.p1)
	e.Repo = "../../evil/.."
	if _, _, err := prepare(w, context.Background(), "odd-name", e, true); err != nil {
		t.Fatalf("Prepare with an odd repo name: %v", err)
	}
	// A very long one (deep GitLab groups) still fits in a path element.
	e.Repo = strings.Repeat("group/", 60) + "project"
	if _, _, err := prepare(w, context.Background(), "long-name", e, true); err != nil {
		t.Fatalf("Prepare with a long repo name: %v", err)
	}
	mirrors, _ := filepath.Glob(filepath.Join(data, "mirrors", "github", "*.git"))
	if len(mirrors) != 2 {
		t.Errorf("mirrors %v, want two escaped names under mirrors/github", mirrors)
	}
}

func TestPrepareCancelled(t *testing.T) {
	w := newWorkspaces(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := prepare(w, ctx, "r", prEvent(workflows.Forge("github"), "/nonexistent/upstream.git", 1, strings.Repeat("a", 40)), true); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Prepare with a cancelled context: %v, want a context error", err)
	}
}

// TestAuthOverHTTP serves the upstream with git-http-backend behind a check
// of the Authorization header: the token travels as a header, never in the
// URL, a command line, the workspace's remote or an error.
func TestAuthOverHTTP(t *testing.T) {
	backend := filepath.Join(strings.TrimSpace(string(must(exec.Command("git", "--exec-path").Output()))), "git-http-backend")
	if !exists(backend) {
		t.Fatalf("git-http-backend not found at %s", backend)
	}
	u := sharedUpstream(t)
	const token = "ghs_s3cr3tT0ken"
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	var authorized, refused atomic.Int32
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(u.bare), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.String(), token) {
			t.Errorf("token in the request URL")
		}
		if r.Header.Get("Authorization") != wantAuth {
			refused.Add(1)
			rw.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		h.ServeHTTP(rw, r)
	}))
	defer srv.Close()
	cloneURL := srv.URL + "/" + filepath.Base(u.bare)

	var calls atomic.Int32
	auth := func(ctx context.Context, e *workflows.Event) (string, string, error) {
		calls.Add(1)
		if e.Repo != "acme/widgets" {
			return "", "", fmt.Errorf("unexpected repo %s", e.Repo)
		}
		return "x-access-token", token, nil
	}
	w, err := git.New(git.Config{DataDir: t.TempDir(), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	dir, sha, err := prepare(w, context.Background(), "auth", prEvent(workflows.Forge("github"), cloneURL, 1, u.p1), true)
	if err != nil || sha != u.p1 {
		t.Fatalf("Prepare with a token: %s, %v; want %s", sha, err, u.p1)
	}
	if calls.Load() == 0 || authorized.Load() == 0 {
		t.Errorf("auth hook calls %d, authorized requests %d; want both > 0", calls.Load(), authorized.Load())
	}
	if got := run(t, dir, nil, "remote", "get-url", "origin"); got != cloneURL {
		t.Errorf("workspace origin %q, want %q", got, cloneURL)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if strings.Contains(string(cfg), token) || strings.Contains(string(cfg), "extraHeader") {
		t.Errorf("the token was stored in the workspace's git config")
	}

	// Without credentials the server refuses, and the error says so
	// without any secret.
	anon := newWorkspaces(t, t.TempDir())
	_, _, err = prepare(anon, context.Background(), "anon", prEvent(workflows.Forge("github"), cloneURL, 1, u.p1), true)
	if err == nil || refused.Load() == 0 {
		t.Fatalf("Prepare without a token: err %v, refused %d; want a refusal", err, refused.Load())
	}
	// Credentials in the URL itself are kept out of errors too.
	_, _, err = prepare(anon, context.Background(), "anon2",
		prEvent(workflows.Forge("github"), strings.Replace(cloneURL, "://", "://user:"+token+"@", 1)+"-missing", 1, u.p1), true)
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("error %v: want one without the token", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     git.Config
		wantErr bool
	}{
		{"ok", git.Config{DataDir: "x", GitBinary: "git"}, false},
		{"no data dir", git.Config{GitBinary: "git"}, true},
		{"missing git", git.Config{DataDir: "x", GitBinary: "/nonexistent/git"}, true},
		{"negative poll", git.Config{DataDir: "x", GitBinary: "git", LockPoll: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// prepare is Prepare with the workspace directory and head SHA apart, as
// most tests look at nothing else.
func prepare(w *git.Workspaces, ctx context.Context, runID string, e *workflows.Event, checkout bool) (string, string, error) {
	ws, err := w.Prepare(ctx, runID, e, contract.PrepareOptions{Checkout: checkout, HostSteps: true})
	return ws.Dir, ws.HeadSHA, err
}

// Prepare makes the workspaces and scratch directories again when they
// went away after New (an operator's cleanup of data_dir).
func TestPrepareRemakesItsParents(t *testing.T) {
	data := t.TempDir()
	w := newWorkspaces(t, data)
	for _, d := range []string{"workspaces", "scratch"} {
		if err := os.RemoveAll(filepath.Join(data, d)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := w.Prepare(context.Background(), "r1", nil, contract.PrepareOptions{HostSteps: true})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	for _, d := range []string{ws.Dir, ws.Home, ws.TmpDir, ws.Results, filepath.Dir(ws.EventFile)} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if err := w.Remove("r1"); err != nil {
		t.Fatal(err)
	}
}

// Remove removes the run's directories even when its event file cannot be
// unlinked (here a directory stands in its place), and says so.
func TestRemoveWhenTheEventFileWillNotGo(t *testing.T) {
	data := t.TempDir()
	w := newWorkspaces(t, data)
	ws, err := w.Prepare(context.Background(), "r1", nil, contract.PrepareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws.EventFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = w.Remove("r1")
	if err == nil || !strings.Contains(err.Error(), "removing the event file of run r1") {
		t.Errorf("Remove: %v, want the event file's failure", err)
	}
	for _, d := range []string{ws.Dir, ws.Home, ws.TmpDir, ws.Results} {
		if exists(d) {
			t.Errorf("Remove left %s", d)
		}
	}
}
