package ingress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// These tests fake the lookup interfaces, not the forges: the forge API
// clients that implement them (providers/github, providers/gitlab) are
// tested against httptest fakes of the APIs there, and cmd/hookrun tests the
// whole chain.

const (
	headA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	headB = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
)

// fakeHeads is a workflows.HeadLookup answering head or err; with block set
// it waits for its context to end (a forge that does not answer).
type fakeHeads struct {
	head  workflows.Head
	err   error
	block bool
	calls atomic.Int32
}

func (f *fakeHeads) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	f.calls.Add(1)
	if f.block {
		<-ctx.Done()
		return workflows.Head{}, fmt.Errorf("GET /repos/%s/pulls/%d: %w", e.Repo, e.Number(), ctx.Err())
	}
	return f.head, f.err
}

// brokenHeads is a HeadStore whose reads fail (JetStream trouble) and whose
// writes are dropped.
type brokenHeads struct{}

func (brokenHeads) Put(context.Context, workflows.Forge, string, int, workflows.Head, time.Time) error {
	return errors.New("nats: timeout")
}

func (brokenHeads) Get(context.Context, workflows.Forge, string, int) (workflows.Head, time.Time, bool, error) {
	return workflows.Head{}, time.Time{}, false, errors.New("nats: timeout")
}

// fakeClock is a settable clock, safe to read from handler goroutines.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// newTrustEnv is newEnv with the server's clock set before it serves.
func newTrustEnv(t *testing.T, cfg Config, clock *fakeClock, workflowFiles map[string]string, opts ...func(*Deps)) *testEnv {
	t.Helper()
	if cfg.Forges == nil {
		cfg.Forges = testForges() // as internal/app registers them
	}
	q := openQueue(t, t.TempDir())
	dir := t.TempDir()
	for name, content := range workflowFiles {
		writeFile(t, dir, name, content)
	}
	logger, logs := newLogger()
	set, err := workflows.NewWorkflowSet(dir, logger)
	if err != nil || len(set.Workflows()) != len(workflowFiles) {
		t.Fatalf("loading workflows: %v\n%s", err, logs)
	}
	cfg.DefaultForge = workflows.Forge("github")
	cfg.PublishTimeout = 30 * time.Second
	if clock != nil {
		opts = append(opts, func(d *Deps) { d.Now = clock.now })
	}
	s, err := New(cfg, testDeps(q, set, logger, opts...))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &testEnv{srv: s, http: hs, q: q, logs: logs}
}

// prEvent is the synchronize fixture moved to pull request #1 (the one
// prComment comments on) with the given head.
func prEvent(t *testing.T, head string) []byte {
	t.Helper()
	return patchJSON(t, githubFixtures+"pull_request/synchronize.payload.json", func(m map[string]any) {
		m["number"] = 1
		pr := obj(m, "pull_request")
		pr["number"] = 1
		obj(pr, "head")["sha"] = head
	})
}

// onlyRequest returns the one run request the stream holds for run id.
func onlyRequest(t *testing.T, env *testEnv, a answer) queue.RunRequest {
	t.Helper()
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("got %d %s, want 202 with one run\n%s", a.Code, a.Raw, env.logs)
	}
	for _, r := range streamRequests(t, env.q) {
		if r.ID == a.Runs[0].ID {
			return r
		}
	}
	t.Fatalf("run %s is not in the stream", a.Runs[0].ID)
	return queue.RunRequest{}
}

// A pull_request event's head is remembered in hookrun_heads before
// matching, also when no workflow wants the event, and the runs of a later
// comment on that pull request are pinned to it without asking the forge;
// a newer pull_request event moves the pin.
func TestCommentPinnedToRememberedHead(t *testing.T) {
	api := &fakeHeads{err: errors.New("must not be called")}
	env := newTrustEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("github"), heads: api})}, nil, map[string]string{"review.yaml": reviewWorkflow})

	a := env.github(t, "pull_request", "pr-a", prEvent(t, headA))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("pull_request: %d %s", a.Code, a.Raw)
	}
	ctx := context.Background()
	h, _, ok, err := env.q.Heads().Get(ctx, workflows.Forge("github"), "Codertocat/Hello-World", 1)
	if err != nil || !ok || h != (workflows.Head{SHA: headA, HeadRef: "changes", BaseRef: "master"}) {
		t.Fatalf("remembered head %+v ok %v err %v", h, ok, err)
	}

	req := onlyRequest(t, env, env.github(t, "issue_comment", "c-1", prComment(t, "/review", "MEMBER")))
	pr := req.Event.PullRequest
	if req.Refused != "" || pr.HeadSHA != headA || pr.HeadRef != "changes" || pr.BaseRef != "master" || pr.Fork {
		t.Fatalf("run request: refused %q, pull request %+v", req.Refused, pr)
	}
	rec, _, err := env.q.Runs().Get(ctx, req.ID)
	if err != nil || rec.HeadSHA != headA {
		t.Fatalf("queued record head %q, err %v", rec.HeadSHA, err)
	}

	env.github(t, "pull_request", "pr-b", prEvent(t, headB))
	req = onlyRequest(t, env, env.github(t, "issue_comment", "c-2", touched(t, prComment(t, "/review", "MEMBER"), 2))) // a new comment
	if req.Event.PullRequest.HeadSHA != headB || req.Refused != "" {
		t.Fatalf("after the push: head %q refused %q", req.Event.PullRequest.HeadSHA, req.Refused)
	}
	if n := api.calls.Load(); n != 0 {
		t.Errorf("the forge API was asked %d times although the head was remembered", n)
	}
}

// The order in which a comment's head is found: the remembered head, else
// the forge API (bounded by LookupTimeout), else the run is Refused with a
// reason that tells the user to comment again; the delivery is accepted
// either way (202 with the run), and nothing runs the tip.
func TestCommentHeadLookupOrder(t *testing.T) {
	tests := []struct {
		name       string
		remembered string           // head of a pull_request event sent first
		heads      decide.HeadStore // nil: the queue's
		api        *fakeHeads       // nil: no API credentials
		wantSHA    string
		wantFork   bool
		wantCalls  int32
		wantRefuse []string
	}{
		{name: "remembered", remembered: headA, api: &fakeHeads{head: workflows.Head{SHA: headB}}, wantSHA: headA},
		{name: "not remembered: the API", api: &fakeHeads{head: workflows.Head{SHA: headB, HeadRef: "patch-1", BaseRef: "master", Fork: true}},
			wantSHA: headB, wantFork: true, wantCalls: 1},
		{name: "store unreadable: the API", heads: brokenHeads{}, api: &fakeHeads{head: workflows.Head{SHA: headB}}, wantSHA: headB, wantCalls: 1},
		{name: "neither", api: &fakeHeads{err: errors.New("GET /repos/Codertocat/Hello-World/pulls/1: 502 Bad Gateway")}, wantCalls: 1,
			wantRefuse: []string{"no pull_request event of it has been seen", "the github API did not tell it: GET /repos/Codertocat/Hello-World/pulls/1: 502 Bad Gateway", "Comment again"}},
		{name: "neither, no credentials", wantRefuse: []string{"no pull_request event", "no github API credentials", "Comment again"}},
		{name: "store unreadable, API down", heads: brokenHeads{}, api: &fakeHeads{err: errors.New("connection refused")}, wantCalls: 1,
			wantRefuse: []string{"reading the head remembered from its pull_request events failed", "connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			if tt.api != nil {
				cfg.Forges = testForges(testForge{name: workflows.Forge("github"), heads: tt.api})
			}
			env := newTrustEnv(t, cfg, nil, map[string]string{"review.yaml": reviewWorkflow}, func(d *Deps) {
				if tt.heads != nil {
					d.Heads = tt.heads
				}
			})
			if tt.remembered != "" {
				env.github(t, "pull_request", "pr-1", prEvent(t, tt.remembered))
			}
			req := onlyRequest(t, env, env.github(t, "issue_comment", "c-1", prComment(t, "/review", "MEMBER")))
			pr := req.Event.PullRequest
			if pr.HeadSHA != tt.wantSHA {
				t.Errorf("head %q, want %q", pr.HeadSHA, tt.wantSHA)
			}
			if tt.wantSHA != "" && (pr.Fork != tt.wantFork || req.Refused != "") {
				t.Errorf("fork %v refused %q, want fork %v and no refusal", pr.Fork, req.Refused, tt.wantFork)
			}
			if tt.wantSHA == "" && !pr.Fork {
				t.Errorf("an unpinned comment lost its conservative Fork = true")
			}
			for _, w := range tt.wantRefuse {
				mustContain(t, req.Refused, w)
			}
			if len(tt.wantRefuse) == 0 && req.Refused != "" {
				t.Errorf("refused: %s", req.Refused)
			}
			if tt.api != nil && tt.api.calls.Load() != tt.wantCalls {
				t.Errorf("API asked %d times, want %d", tt.api.calls.Load(), tt.wantCalls)
			}
		})
	}
}

// A forge that does not answer delays the delivery by LookupTimeout at
// most, and the run is refused rather than left to run the tip.
func TestCommentHeadLookupIsBounded(t *testing.T) {
	api := &fakeHeads{block: true}
	env := newTrustEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("github"), heads: api}), Trust: decide.TrustConfig{LookupTimeout: 300 * time.Millisecond}}, nil,
		map[string]string{"review.yaml": reviewWorkflow})
	start := time.Now()
	req := onlyRequest(t, env, env.github(t, "issue_comment", "c-1", prComment(t, "/review", "MEMBER")))
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the delivery took %v", took)
	}
	mustContain(t, req.Refused, "context deadline exceeded")
	mustContain(t, env.logs.String(), "refusing a comment's runs")
}

// No lookup happens for a comment no workflow wants, for a comment that
// was not authorized, or for a comment whose payload names the head (GitLab
// notes carry merge_request.last_commit).
func TestCommentHeadLookupOnlyWhenNeeded(t *testing.T) {
	api := &fakeHeads{head: workflows.Head{SHA: headB}}
	env := newTrustEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("github"), heads: api}, testForge{name: workflows.Forge("gitlab"), heads: api})}, nil, map[string]string{
		"review.yaml": reviewWorkflow + "authorize:\n  users: [root]\n"})
	if a := env.github(t, "issue_comment", "c-1", prComment(t, "just a remark", "MEMBER")); len(a.Runs) != 0 {
		t.Fatalf("a remark started runs: %s", a.Raw)
	}
	if a := env.github(t, "issue_comment", "c-2", prComment(t, "/review", "NONE")); len(a.Runs) != 0 {
		t.Fatalf("an unauthorized comment started runs: %s", a.Raw)
	}
	note := patchJSON(t, gitlabFixtures+"note_merge_request.json", func(m map[string]any) { obj(m, "object_attributes")["note"] = "/review" })
	req := onlyRequest(t, env, env.gitlab(t, "Note Hook", nil, note))
	if req.Event.PullRequest.HeadSHA != "562e173be03b8ff2efb05345d12df18815438a4b" || req.Refused != "" {
		t.Fatalf("gitlab note: head %q refused %q", req.Event.PullRequest.HeadSHA, req.Refused)
	}
	if n := api.calls.Load(); n != 0 {
		t.Errorf("the forge API was asked %d times", n)
	}
}

// fakeMembers is a workflows.AssociationLookup over a table of (project,
// user) → association; a user missing from the table makes it fail.
type fakeMembers struct {
	mu    sync.Mutex
	roles map[[2]int64]string
	calls map[[2]int64]int
}

func (f *fakeMembers) AuthorAssociation(_ context.Context, project, user int64) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]int64{project, user}
	f.calls[k]++
	a, ok := f.roles[k]
	if !ok {
		return "", errors.New("GET /projects/1/members/all/99: 503 Service Unavailable")
	}
	return a, nil
}

func (f *fakeMembers) count(project, user int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[[2]int64{project, user}]
}

// mergeRequestBy is the merge_request fixture written by another author.
func mergeRequestBy(t *testing.T, author int) []byte {
	return patchJSON(t, gitlabFixtures+"merge_request.json", func(m map[string]any) {
		obj(m, "object_attributes")["author_id"] = author
	})
}

// A GitLab merge request is authorized by its author's role in the project:
// a Developer (MEMBER) runs under the default policy, a non-member (NONE)
// does not, a failed lookup counts as NONE and says so. Answers are reused
// for AssociationTTL and looked up again after it.
func TestGitLabAuthorAssociation(t *testing.T) {
	members := &fakeMembers{roles: map[[2]int64]string{{1, 51}: "MEMBER", {1, 52}: "NONE"}, calls: map[[2]int64]int{}}
	clock := newFakeClock()
	env := newTrustEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("gitlab"), members: members})}, clock, map[string]string{"pr.yaml": prWorkflow})

	req := onlyRequest(t, env, env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 51)))
	if req.Event.AuthorAssociation != "MEMBER" || req.Event.AuthorID != 51 || req.Event.ProjectID != 1 {
		t.Fatalf("queued event: association %q author %d project %d", req.Event.AuthorAssociation, req.Event.AuthorID, req.Event.ProjectID)
	}

	a := env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 52))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || len(a.Skipped) != 1 {
		t.Fatalf("non-member: %d %s", a.Code, a.Raw)
	}
	mustContain(t, a.Skipped[0].Reason, `author association NONE of "user1" not in [OWNER MEMBER COLLABORATOR]`)

	a = env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 99))
	if len(a.Runs) != 0 || len(a.Skipped) != 1 {
		t.Fatalf("failed lookup: %s", a.Raw)
	}
	mustContain(t, a.Skipped[0].Reason, "author association NONE")
	mustContain(t, a.Skipped[0].Reason, "looking up the author's gitlab membership failed: GET /projects/1/members/all/99: 503")
	mustContain(t, env.logs.String(), "treating the author as NONE")

	// Within the TTL: no new lookup, also for the failed one's neighbours.
	clock.advance(4*time.Minute + 59*time.Second)
	env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 51))
	env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 52))
	if members.count(1, 51) != 1 || members.count(1, 52) != 1 {
		t.Fatalf("lookups within the TTL: %v", members.calls)
	}
	// A failure is not cached.
	env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 99))
	if members.count(1, 99) != 2 {
		t.Fatalf("failed lookup cached: %v", members.calls)
	}

	// After the TTL the role is looked up again: the developer was removed.
	members.mu.Lock()
	members.roles[[2]int64{1, 51}] = "NONE"
	members.mu.Unlock()
	clock.advance(time.Second)
	a = env.gitlab(t, "Merge Request Hook", nil, mergeRequestBy(t, 51))
	if len(a.Runs) != 0 || members.count(1, 51) != 2 {
		t.Fatalf("after the TTL: %s, lookups %v", a.Raw, members.calls)
	}
}

// Which user is looked up: a note's author, an issue's author; nothing for
// an event no workflow wants, nor for pushes.
func TestGitLabAssociationWhichUser(t *testing.T) {
	members := &fakeMembers{roles: map[[2]int64]string{{5, 1}: "OWNER", {1, 51}: "COLLABORATOR"}, calls: map[[2]int64]int{}}
	env := newTrustEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("gitlab"), members: members})}, nil, map[string]string{
		"review.yaml": reviewWorkflow,
		"triage.yaml": "name: triage\non:\n  - event: issue\nsteps:\n  - {id: t, run: 'true'}\n",
		"push.yaml":   "name: push\non:\n  - event: push\nsteps:\n  - {id: t, run: 'true'}\n",
	})
	note := patchJSON(t, gitlabFixtures+"note_merge_request.json", func(m map[string]any) { obj(m, "object_attributes")["note"] = "/review" })
	if req := onlyRequest(t, env, env.gitlab(t, "Note Hook", nil, note)); req.Event.AuthorAssociation != "OWNER" {
		t.Errorf("note: association %q", req.Event.AuthorAssociation)
	}
	if req := onlyRequest(t, env, env.gitlab(t, "Issue Hook", nil, readFile(t, gitlabFixtures+"issue.json"))); req.Event.AuthorAssociation != "COLLABORATOR" {
		t.Errorf("issue: association %q", req.Event.AuthorAssociation)
	}
	env.gitlab(t, "Note Hook", nil, readFile(t, gitlabFixtures+"note_issue.json")) // no /review: nothing matches
	onlyRequest(t, env, env.gitlab(t, "Push Hook", nil, readFile(t, gitlabFixtures+"push.json")))
	members.mu.Lock()
	defer members.mu.Unlock()
	if len(members.calls) != 2 || members.calls[[2]int64{5, 1}] != 1 || members.calls[[2]int64{1, 51}] != 1 {
		t.Errorf("lookups %v, want one for the note's author and one for the issue's", members.calls)
	}
}

// Without a member lookup GitLab events stay NONE, and the reason says why.
func TestGitLabAssociationWithoutToken(t *testing.T) {
	env := newTrustEnv(t, Config{}, nil, map[string]string{"pr.yaml": prWorkflow})
	a := env.gitlab(t, "Merge Request Hook", nil, readFile(t, gitlabFixtures+"merge_request.json"))
	if len(a.Runs) != 0 || len(a.Skipped) != 1 || !strings.Contains(a.Skipped[0].Reason, "no gitlab API token is configured") {
		t.Fatalf("got %s", a.Raw)
	}
}
