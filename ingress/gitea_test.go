package ingress

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

const (
	testGiteaSecret    = "gt-test-secret-value"
	testGiteaOldSecret = "gt-old-secret-value"
)

// giteaSign is X-Gitea-Signature: the hex HMAC-SHA256, without a prefix.
func giteaSign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// gitea posts body with the headers Gitea recorded for fixture name
// (testdata/gitea/<name>.headers.json), signed with secret.
func (e *testEnv) gitea(t testing.TB, name, secret string, body []byte) answer {
	t.Helper()
	var rec map[string]string
	if err := json.Unmarshal(readFile(t, giteaFixtures+name+".headers.json"), &rec); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range rec {
		h.Set(k, v)
	}
	h.Set("X-Gitea-Signature", giteaSign(secret, body))
	return e.do(t, "/hooks/gitea", h, bytes.NewReader(body))
}

// fakeCollaborators is a workflows.CollaboratorLookup over a table of
// login → association; a login missing from it makes the lookup fail.
type fakeCollaborators struct {
	mu    sync.Mutex
	roles map[string]string
	calls map[string]int
}

func (f *fakeCollaborators) CollaboratorAssociation(_ context.Context, repo, login string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[repo+" "+login]++
	a, ok := f.roles[login]
	if !ok {
		return "", errors.New("GET /repos/alice/demo/collaborators/" + login + "/permission: 503")
	}
	return a, nil
}

func (f *fakeCollaborators) count(login string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls["alice/demo "+login]
}

// syncBy is the recorded pull_request_sync delivery of a pull request by
// author, its head in headRepo.
func syncBy(t *testing.T, author, headRepo string) []byte {
	return patchJSON(t, giteaFixtures+"pull_request_sync.payload.json", func(m map[string]any) {
		pr := obj(m, "pull_request")
		obj(pr, "user")["login"] = author
		obj(obj(pr, "head"), "repo")["full_name"] = headRepo
	})
}

// POST /hooks/gitea beside /hooks/github on one server: Gitea's signature
// is checked (401 otherwise, also for a GitHub signature), the recorded
// push to a pull request (`synchronized`) starts `actions: [synchronize]`,
// the event says gitea, and the author's permission decides: the owner's
// pull request runs, a stranger's does not, a lookup failure is NONE.
// Answers are reused for 5 minutes. GitHub deliveries still work.
func TestGiteaWebhook(t *testing.T) {
	collab := &fakeCollaborators{roles: map[string]string{"alice": "OWNER", "mallory": "NONE"}, calls: map[string]int{}}
	clock := newFakeClock()
	env := newTrustEnv(t, Config{
		Forges: testForges(testForge{name: workflows.Forge("gitea"), collab: collab, Webhooks: hooks(workflows.Forge("gitea"), true, testGiteaSecret, testGiteaOldSecret)})}, clock, map[string]string{"pr.yaml": prWorkflow})

	body := syncBy(t, "alice", "alice/demo")
	req := onlyRequest(t, env, env.gitea(t, "pull_request_sync", testGiteaSecret, body))
	ev := req.Event
	if ev.Forge != workflows.Forge("gitea") || ev.Action != "synchronize" || ev.AuthorAssociation != "OWNER" || ev.Author != "alice" ||
		ev.DeliveryID != "d730450a-8fae-4975-88c3-1d1bfe0bf147" || ev.PullRequest.Fork || ev.PullRequest.HeadSHA != "faa6f2b1967e6ac56d39735259f837348f1488d4" {
		t.Fatalf("queued event %+v %+v", ev, ev.PullRequest)
	}
	if env := ev.Env(); env[0] != (workflows.EnvVar{Name: "HOOKRUN_FORGE", Value: "gitea"}) {
		t.Errorf("HOOKRUN_FORGE: %v", env[0])
	}

	// A stranger's pull request, from a fork: NONE, not run.
	a := env.gitea(t, "pull_request_sync", testGiteaOldSecret, syncBy(t, "mallory", "mallory/demo"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || len(a.Skipped) != 1 {
		t.Fatalf("stranger: %d %s", a.Code, a.Raw)
	}
	mustContain(t, a.Skipped[0].Reason, `author association NONE`)
	a = env.gitea(t, "pull_request_sync", testGiteaSecret, syncBy(t, "nobody", "alice/demo"))
	if len(a.Runs) != 0 || len(a.Skipped) != 1 {
		t.Fatalf("failed lookup: %s", a.Raw)
	}
	mustContain(t, a.Skipped[0].Reason, "looking up the author's gitea permission on the repository failed")

	// Within 5 minutes nothing is asked again; after, it is.
	clock.advance(4*time.Minute + 59*time.Second)
	onlyRequest(t, env, env.gitea(t, "pull_request_sync", testGiteaSecret, body))
	if n := collab.count("alice"); n != 1 {
		t.Fatalf("lookups of alice within the TTL: %d", n)
	}
	clock.advance(time.Second)
	collab.mu.Lock()
	collab.roles["alice"] = "NONE" // alice lost her access
	collab.mu.Unlock()
	if a := env.gitea(t, "pull_request_sync", testGiteaSecret, body); len(a.Runs) != 0 || collab.count("alice") != 2 {
		t.Fatalf("after the TTL: %s, lookups %d", a.Raw, collab.count("alice"))
	}

	// Signatures: Gitea's only, on Gitea's route.
	h := http.Header{}
	h.Set("X-Gitea-Event", "pull_request")
	h.Set("X-Gitea-Delivery", "x")
	h.Set("X-Hub-Signature-256", sign(testGiteaSecret, body))
	if a := env.do(t, "/hooks/gitea", h, bytes.NewReader(body)); a.Code != http.StatusUnauthorized {
		t.Errorf("GitHub-style signature on /hooks/gitea: %d", a.Code)
	}
	if a := env.gitea(t, "pull_request_sync", "wrong", body); a.Code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d", a.Code)
	}

	// GitHub beside it.
	if req := onlyRequest(t, env, env.github(t, "pull_request", "gh-1", readFile(t, githubFixtures+"pull_request/synchronize.payload.json"))); req.Event.Forge != workflows.Forge("github") {
		t.Errorf("github delivery forge %q", req.Event.Forge)
	}
}

// /hooks/gitea is 404 unless the section enables it, and refuses to start
// without a secret.
func TestGiteaRouteConfig(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	if a := env.gitea(t, "push", testGiteaSecret, readFile(t, giteaFixtures+"push.payload.json")); a.Code != http.StatusNotFound {
		t.Errorf("disabled: %d %s", a.Code, a.Raw)
	}
	err := Config{Forges: registry(hooks(workflows.Forge("gitea"), true))}.Validate()
	if err == nil || !strings.Contains(err.Error(), "checking gitea: enabled without a webhook secret") {
		t.Errorf("Validate: %v", err)
	}
}

// A comment delivery carries the pull request: its runs check out that
// head, with its refs and fork flag, without asking anyone; the commenter's
// permission is looked up.
func TestGiteaCommentUsesPayloadHead(t *testing.T) {
	collab := &fakeCollaborators{roles: map[string]string{"alice": "MEMBER"}, calls: map[string]int{}}
	heads := &fakeHeads{err: errors.New("must not be called")}
	env := newTrustEnv(t, Config{
		Forges: testForges(testForge{name: workflows.Forge("gitea"), collab: collab, heads: heads, Webhooks: hooks(workflows.Forge("gitea"), true, testGiteaSecret)})}, nil, map[string]string{"review.yaml": reviewWorkflow})
	body := patchJSON(t, giteaFixtures+"pull_request_comment.payload.json", func(m map[string]any) { obj(m, "comment")["body"] = "/review now" })
	req := onlyRequest(t, env, env.gitea(t, "pull_request_comment", testGiteaSecret, body))
	pr := req.Event.PullRequest
	if req.Refused != "" || pr.HeadSHA != "faa6f2b1967e6ac56d39735259f837348f1488d4" || pr.HeadRef != "feature" || pr.BaseRef != "main" || pr.Fork {
		t.Fatalf("refused %q, pull request %+v", req.Refused, pr)
	}
	if req.Event.AuthorAssociation != "MEMBER" || req.Event.CommandArgs != "now" || collab.count("alice") != 1 {
		t.Errorf("association %q args %q lookups %d", req.Event.AuthorAssociation, req.Event.CommandArgs, collab.count("alice"))
	}
}
