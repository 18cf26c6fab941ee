package ingress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// The GitHub documentation vector over HTTP, and every way a delivery is
// refused with 401.
func TestWebhookVerification(t *testing.T) {
	env := newEnv(t, Config{
		Forges: registry(hooks(workflows.Forge("github"), true, docSecret), hooks(workflows.Forge("gitlab"), true, testGitLabToken)),
	}, nil)
	flipped := []byte(docBody)
	flipped[len(flipped)-1] ^= 1

	github := func(body []byte, headers map[string]string) http.Header {
		h := http.Header{}
		h.Set("X-GitHub-Event", "ping")
		h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		for k, v := range headers {
			h.Set(k, v)
		}
		return h
	}
	gitlab := func(token string) http.Header {
		h := http.Header{}
		h.Set("X-Gitlab-Event", "Push Hook")
		if token != "" {
			h.Set("X-Gitlab-Token", token)
		}
		return h
	}
	sha1Only := strings.Replace(docSignature, "sha256=", "sha1=", 1)
	tests := []struct {
		name     string
		path     string
		header   http.Header
		body     []byte
		wantCode int
	}{
		{"documentation vector", "/hooks/github", github([]byte(docBody), map[string]string{"X-Hub-Signature-256": docSignature}), []byte(docBody), http.StatusOK},
		{"flipped body byte", "/hooks/github", github(flipped, map[string]string{"X-Hub-Signature-256": docSignature}), flipped, http.StatusUnauthorized},
		{"missing signature", "/hooks/github", github([]byte(docBody), nil), []byte(docBody), http.StatusUnauthorized},
		{"sha1-only X-Hub-Signature", "/hooks/github", github([]byte(docBody), map[string]string{"X-Hub-Signature": sha1Only}), []byte(docBody), http.StatusUnauthorized},
		{"wrong gitlab token", "/hooks/gitlab", gitlab("gl-test-token-valuE"), []byte(`{}`), http.StatusUnauthorized},
		{"gitlab token differing only in length", "/hooks/gitlab", gitlab(testGitLabToken + "x"), []byte(`{}`), http.StatusUnauthorized},
		{"missing gitlab token", "/hooks/gitlab", gitlab(""), []byte(`{}`), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := env.do(t, tt.path, tt.header, bytes.NewReader(tt.body))
			if a.Code != tt.wantCode {
				t.Fatalf("code %d (%s), want %d", a.Code, a.Raw, tt.wantCode)
			}
			if tt.wantCode == http.StatusUnauthorized && strings.TrimSpace(a.Raw) != `{"error":"unauthorized"}` {
				t.Errorf("401 body %q, want the generic one", a.Raw)
			}
		})
	}
	logs := env.logs.String()
	for _, secret := range []string{strings.TrimPrefix(docSignature, "sha256="), "gl-test-token-valuE", testGitLabToken, docSecret} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain a received signature or token %q:\n%s", secret, logs)
		}
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "refused") && !strings.Contains(line, "level=DEBUG") {
			t.Errorf("verification failure logged above debug: %s", line)
		}
	}
}

func TestInsecureNoVerify(t *testing.T) {
	env := newEnv(t, Config{InsecureNoVerify: true, Forges: registry(hooks(workflows.Forge("github"), true), hooks(workflows.Forge("gitlab"), false))}, nil)
	h := http.Header{}
	h.Set("X-GitHub-Event", "ping")
	h.Set("X-GitHub-Delivery", "d1")
	if a := env.do(t, "/hooks/github", h, strings.NewReader(`{}`)); a.Code != http.StatusOK {
		t.Fatalf("unsigned ping in insecure mode: %d %s", a.Code, a.Raw)
	}
	mustContain(t, env.logs.String(), "level=WARN msg=\"accepting an unverified github delivery")
	if a := env.do(t, "/hooks/gitlab", http.Header{"X-Gitlab-Event": {"Push Hook"}}, strings.NewReader(`{}`)); a.Code != http.StatusNotFound {
		t.Fatalf("disabled gitlab: %d, want 404", a.Code)
	}
}

func TestNewRefusesForgeWithoutSecret(t *testing.T) {
	q := openQueue(t, t.TempDir())
	_, err := New(Config{Forges: registry(hooks(workflows.Forge("gitlab"), true))}, testDeps(q, emptySource{}, nil))
	if err == nil || !strings.Contains(err.Error(), "--insecure-no-verify") {
		t.Fatalf("New = %v, want a refusal naming --insecure-no-verify", err)
	}
}

func TestBodyAndHeaderErrors(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	atCap := bytes.Repeat([]byte(" "), DefaultMaxBodyBytes)
	atCap[0] = '{' // exactly at the cap, signed, but not JSON
	overCap := append(bytes.Clone(atCap), ' ')

	t.Run("25 MiB + 1 is 413", func(t *testing.T) {
		if a := env.github(t, "pull_request", "big-1", overCap); a.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("code %d, want 413", a.Code)
		}
	})
	t.Run("25 MiB + 1 without Content-Length is 413", func(t *testing.T) {
		h := http.Header{}
		h.Set("X-GitHub-Event", "pull_request")
		h.Set("X-GitHub-Delivery", "big-2")
		h.Set("X-Hub-Signature-256", sign(testGitHubSecret, overCap))
		// A reader of unknown length makes the client send chunked.
		a := env.do(t, "/hooks/github", h, io.MultiReader(bytes.NewReader(overCap)))
		if a.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("code %d, want 413", a.Code)
		}
	})
	t.Run("25 MiB exactly is read (and is malformed)", func(t *testing.T) {
		if a := env.github(t, "pull_request", "big-3", atCap); a.Code != http.StatusBadRequest {
			t.Fatalf("code %d (%s), want 400", a.Code, a.Raw)
		}
	})
	t.Run("malformed JSON is 400", func(t *testing.T) {
		a := env.github(t, "pull_request", "bad-1", []byte(`{"action": "opened", "pull_request": `))
		if a.Code != http.StatusBadRequest || a.Error != "malformed payload" {
			t.Fatalf("code %d %s, want 400 malformed payload", a.Code, a.Raw)
		}
		if a := env.gitlab(t, "Merge Request Hook", nil, []byte(`{"object_attributes": 3}`)); a.Code != http.StatusBadRequest {
			t.Fatalf("gitlab code %d %s, want 400", a.Code, a.Raw)
		}
	})
	t.Run("missing delivery header is 400", func(t *testing.T) {
		body := readFile(t, githubFixtures+"pull_request/opened.payload.json")
		h := http.Header{}
		h.Set("X-GitHub-Event", "pull_request")
		h.Set("X-Hub-Signature-256", sign(testGitHubSecret, body))
		if a := env.do(t, "/hooks/github", h, bytes.NewReader(body)); a.Code != http.StatusBadRequest {
			t.Fatalf("code %d, want 400", a.Code)
		}
	})
	t.Run("unhandled event is 202 without runs", func(t *testing.T) {
		a := env.github(t, "check_run", "u-1", []byte(`{}`))
		if a.Code != http.StatusAccepted || a.Runs == nil || len(a.Runs) != 0 || a.Reason != "event check_run is not handled" {
			t.Fatalf("got %d %s", a.Code, a.Raw)
		}
		a = env.gitlab(t, "Pipeline Hook", nil, readFile(t, gitlabFixtures+"pipeline.json"))
		if a.Code != http.StatusAccepted || len(a.Runs) != 0 || a.Reason != "event Pipeline Hook is not handled" {
			t.Fatalf("got %d %s", a.Code, a.Raw)
		}
	})
	t.Run("no matching workflow is 202 with the reason", func(t *testing.T) {
		a := env.github(t, "issues", "nm-1", readFile(t, githubFixtures+"issues/opened.payload.json"))
		if a.Code != http.StatusAccepted || len(a.Runs) != 0 || len(a.Skipped) != 1 || a.Skipped[0].Workflow != "pr-check" {
			t.Fatalf("got %d %s", a.Code, a.Raw)
		}
		mustContain(t, a.Reason, "pr-check")
	})
}

// Under the default authorize policy a /review comment by a NONE author on a
// pull request (treated as a fork: issue_comment payloads do not say) creates
// no run; the same comment by a MEMBER creates one, with the command's
// arguments in its event.
func TestDefaultAuthorize(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"review.yaml": reviewWorkflow})

	a := env.github(t, "issue_comment", "c-none", prComment(t, "/review please, quickly", "NONE"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("NONE: got %d %s, want 202 without runs", a.Code, a.Raw)
	}
	mustContain(t, a.Reason, "author association NONE")
	if len(a.Skipped) != 1 || a.Skipped[0].Workflow != "review" {
		t.Fatalf("NONE: skipped %+v", a.Skipped)
	}

	a = env.github(t, "issue_comment", "c-member", prComment(t, "/review please, quickly", "MEMBER"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != "review" {
		t.Fatalf("MEMBER: got %d %s, want 202 with one run", a.Code, a.Raw)
	}
	reqs := streamRequests(t, env.q)
	if len(reqs) != 1 || reqs[0].ID != a.Runs[0].ID {
		t.Fatalf("stream holds %d runs, want exactly [%s]", len(reqs), a.Runs[0].ID)
	}
	if got := reqs[0].Event; got.CommandArgs != "please, quickly" || got.AuthorAssociation != "MEMBER" ||
		!bytes.Equal(got.Raw, prComment(t, "/review please, quickly", "MEMBER")) {
		t.Fatalf("queued event: args %q association %q raw %d bytes", got.CommandArgs, got.AuthorAssociation, len(got.Raw))
	}
	rec, _, err := env.q.Runs().Get(context.Background(), a.Runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Event.CommandArgs != "please, quickly" || rec.Event.PullRequest == nil || rec.Event.PullRequest.Number != 1 {
		t.Fatalf("run event: args %q pr %+v", rec.Event.CommandArgs, rec.Event.PullRequest)
	}
}

// TestCommentCommandLines: a comment with a command on each of two lines
// (after prose, with a quoted and a fenced command that do not count) runs
// the workflow once per line, each run with its own arguments; its
// redelivery is a duplicate of both.
func TestCommentCommandLines(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"review.yaml": reviewWorkflow})
	text := "Thanks!\n> /review old\n```\n/review example\n```\n/review security\n/review docs\n/review security"
	body := prComment(t, text, "MEMBER")
	a := env.github(t, "issue_comment", "lines-1", body)
	if a.Code != http.StatusAccepted || len(a.Runs) != 2 || a.Runs[0].ID == a.Runs[1].ID {
		t.Fatalf("got %d %s, want 202 with two runs", a.Code, a.Raw)
	}
	reqs := streamRequests(t, env.q)
	if len(reqs) != 2 {
		t.Fatalf("stream holds %d runs, want 2", len(reqs))
	}
	args := map[string]string{}
	for _, r := range reqs {
		args[r.ID] = r.Event.CommandArgs
	}
	if args[a.Runs[0].ID] != "security" || args[a.Runs[1].ID] != "docs" {
		t.Fatalf("command args by run %v (runs %+v), want security then docs", args, a.Runs)
	}
	again := env.github(t, "issue_comment", "lines-1", body)
	if again.Code != http.StatusAccepted || !again.Duplicate || len(again.Runs) != 2 ||
		again.Runs[0].ID != a.Runs[0].ID || again.Runs[1].ID != a.Runs[1].ID {
		t.Fatalf("redelivery: got %d %s, want the same two runs as duplicates", again.Code, again.Raw)
	}
	if n := len(streamRequests(t, env.q)); n != 2 {
		t.Fatalf("after the redelivery the stream holds %d runs, want 2", n)
	}
}

// TestReviewCommentsAreComments: a GitHub review comment on a line of the
// diff and a review's summary are comment events on the pull request: a
// command on any of their lines runs, pinned to the head their payload
// names (no lookup), with the file and line of a review comment in the
// run's environment; a GitLab diff note likewise.
func TestReviewCommentsAreComments(t *testing.T) {
	deploy := "name: deploy\non:\n  - event: comment\n    command: /deploy\nsteps:\n  - id: d\n    run: echo \"$HOOKRUN_COMMAND_ARGS\"\n"
	env := newEnv(t, Config{}, map[string]string{"review.yaml": reviewWorkflow, "deploy.yaml": deploy})
	runEvent := func(t *testing.T, a answer, workflow string) workflows.Event {
		t.Helper()
		if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != workflow {
			t.Fatalf("got %d %s, want one run of %s", a.Code, a.Raw, workflow)
		}
		rec, _, err := env.q.Runs().Get(context.Background(), a.Runs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Event
	}
	vars := func(e workflows.Event) map[string]string {
		m := map[string]string{}
		for _, v := range e.Env() {
			m[v.Name] = v.Value
		}
		return m
	}

	ev := runEvent(t, env.github(t, "pull_request_review_comment", "rc-1", readFile(t, githubFixtures+"pull_request_review_comment/created.payload.json")), "review")
	v := vars(ev)
	if ev.Kind != workflows.KindComment || ev.CommandArgs != "security" || ev.HeadSHA() != "ec26c3e57ca3a959ca5aad62de7213c562f8c821" ||
		v["HOOKRUN_COMMENT_PATH"] != "README.md" || v["HOOKRUN_COMMENT_LINE"] != "1" || v["HOOKRUN_PR_NUMBER"] != "2" {
		t.Fatalf("review comment run: event %+v env %v", ev, v)
	}

	ev = runEvent(t, env.github(t, "pull_request_review", "rv-1", readFile(t, githubFixtures+"pull_request_review/submitted.payload.json")), "deploy")
	v = vars(ev)
	if ev.Action != "created" || ev.CommandArgs != "staging" || v["HOOKRUN_COMMENT_PATH"] != "" || v["HOOKRUN_COMMENT_LINE"] != "" {
		t.Fatalf("review run: event %+v env %v", ev, v)
	}
	if a := env.github(t, "pull_request_review", "rv-2", readFile(t, githubFixtures+"pull_request_review/dismissed.payload.json")); a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("a dismissed review: got %d %s, want 202 without runs", a.Code, a.Raw)
	}

	note, err := gitlab.Normalize("Note Hook", readFile(t, gitlabFixtures+"note_merge_request_diff.json"), "n-1")
	if err != nil {
		t.Fatal(err)
	}
	if m := mustWorkflow(t, env, "review").Match(note); !m.Matched || m.CommandArgs != "this line" {
		t.Fatalf("diff note: %+v", m)
	}
	if v := vars(*note); v["HOOKRUN_COMMENT_PATH"] != "lib/gitlab.rb" || v["HOOKRUN_COMMENT_LINE"] != "9" {
		t.Fatalf("diff note env %v", v)
	}
}

func mustWorkflow(t *testing.T, env *testEnv, name string) *workflows.Workflow {
	t.Helper()
	for _, w := range env.srv.src.Workflows() {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("workflow %s is not loaded", name)
	return nil
}

// A GitLab merge request delivered twice (same Idempotency-Key) maps to one
// run; the digest fallback dedupes identical bodies.
func TestGitLabDedupe(t *testing.T) {
	// GitLab payloads carry no association: authorize the sender by login.
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow + "authorize:\n  users: [user1]\n"})
	body := readFile(t, gitlabFixtures+"merge_request.json")
	first := env.gitlab(t, "Merge Request Hook", http.Header{"Idempotency-Key": {"k-1"}}, body)
	again := env.gitlab(t, "Merge Request Hook", http.Header{"Idempotency-Key": {"k-1"}}, body)
	if first.Code != http.StatusAccepted || len(first.Runs) != 1 {
		t.Fatalf("first: %d %s", first.Code, first.Raw)
	}
	if fmt.Sprint(first.Runs) != fmt.Sprint(again.Runs) || !again.Duplicate || first.Duplicate {
		t.Fatalf("redelivery answered %s, first %s", again.Raw, first.Raw)
	}
	// Another event (the same one under another key is the same run).
	body = patchJSON(t, gitlabFixtures+"merge_request.json", func(m map[string]any) {
		obj(m, "object_attributes")["updated_at"] = "2026-01-01 00:00:00 UTC"
	})
	digest1 := env.gitlab(t, "Merge Request Hook", nil, body)
	digest2 := env.gitlab(t, "Merge Request Hook", nil, body)
	if len(digest1.Runs) != 1 || fmt.Sprint(digest1.Runs) != fmt.Sprint(digest2.Runs) || digest1.Runs[0].ID == first.Runs[0].ID {
		t.Fatalf("digest dedupe: %s / %s", digest1.Raw, digest2.Raw)
	}
	if ids := streamRunIDs(t, env.q); len(ids) != 2 {
		t.Fatalf("stream has %d runs, want 2", len(ids))
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	if code, body := env.get(t, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d %s", code, body)
	}
	if code, body := env.get(t, "/readyz"); code != http.StatusOK {
		t.Fatalf("readyz %d %s", code, body)
	}
	if code, body := env.get(t, "/hooks/github"); code != http.StatusMethodNotAllowed || !strings.Contains(body, `"error"`) {
		t.Fatalf("GET /hooks/github: %d %s, want a JSON 405", code, body)
	}
	env.github(t, "pull_request", "m-1", readFile(t, githubFixtures+"pull_request/opened.payload.json"))
	env.github(t, "pull_request", "m-1", readFile(t, githubFixtures+"pull_request/opened.payload.json"))
	env.github(t, "ping", "m-2", []byte(`{}`))
	env.do(t, "/hooks/github", http.Header{"X-Github-Event": {"push"}}, strings.NewReader(`{}`))

	code, body := env.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("metrics %d", code)
	}
	for _, want := range []string{
		`hookrun_ingress_deliveries_total{event="pull_request",forge="github",outcome="accepted"} 2`,
		`hookrun_ingress_deliveries_total{event="ping",forge="github",outcome="ping"} 1`,
		`hookrun_ingress_deliveries_total{event="none",forge="github",outcome="unauthorized"} 1`,
		`hookrun_ingress_runs_created_total{forge="github",workflow="pr-check"} 1`,
		`hookrun_ingress_publish_seconds_count 2`,
	} {
		mustContain(t, body, want)
	}

	if err := env.q.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _ := env.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz after the queue closed: %d, want 503", code)
	}
	a := env.github(t, "pull_request", "m-3", readFile(t, githubFixtures+"pull_request/opened.payload.json"))
	if a.Code != http.StatusServiceUnavailable || strings.TrimSpace(a.Raw) != `{"error":"queue unavailable"}` {
		t.Fatalf("publish on a closed queue: %d %s", a.Code, a.Raw)
	}
}

type emptySource struct{}

func (emptySource) Workflows() []*workflows.Workflow { return nil }

// Start binds and serves, seeing the workflow set as it reloads; Shutdown
// lets an in-flight delivery finish publishing before it returns.
func TestStartShutdown(t *testing.T) {
	q := openQueue(t, t.TempDir())
	dir := t.TempDir()
	writeFile(t, dir, "pr.yaml", prWorkflow)
	logger, _ := newLogger()
	slow := &slowPublisher{Publisher: q, delay: 300 * time.Millisecond, started: make(chan struct{})}
	set, err := workflows.NewWorkflowSet(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	reloadCtx, stopReload := context.WithCancel(context.Background())
	t.Cleanup(stopReload)
	go set.Run(reloadCtx, 20*time.Millisecond)
	s, err := New(Config{Listen: "127.0.0.1:0",
		Forges: registry(hooks(workflows.Forge("github"), true, testGitHubSecret))}, testDeps(slow, set, logger))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := "http://" + s.Addr().String()

	// Reload: a second workflow file appears and is picked up by polling.
	writeFile(t, dir, "review.yaml", reviewWorkflow)
	deadline := time.Now().Add(5 * time.Second)
	for len(s.src.Workflows()) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("new workflow file not picked up by the reload loop")
		}
		time.Sleep(10 * time.Millisecond)
	}

	body := readFile(t, githubFixtures+"pull_request/opened.payload.json")
	req, _ := http.NewRequest(http.MethodPost, url+"/hooks/github", bytes.NewReader(body))
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "inflight-1")
	req.Header.Set("X-Hub-Signature-256", sign(testGitHubSecret, body))
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{0, err}
			return
		}
		resp.Body.Close()
		done <- result{resp.StatusCode, nil}
	}()
	<-slow.started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	r := <-done
	if r.err != nil || r.code != http.StatusAccepted {
		t.Fatalf("in-flight delivery during shutdown: %d %v, want 202", r.code, r.err)
	}
	if ids := streamRunIDs(t, q); len(ids) != 1 {
		t.Fatalf("stream has %d runs after shutdown, want 1", len(ids))
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("server still accepts connections after Shutdown")
	}
}

// slowPublisher delays each publish to the real queue, to hold a delivery
// in flight.
type slowPublisher struct {
	Publisher
	delay   time.Duration
	started chan struct{}
	once    sync.Once
}

func (p *slowPublisher) PublishDelivery(ctx context.Context, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	p.once.Do(func() { close(p.started) })
	time.Sleep(p.delay)
	return p.Publisher.PublishDelivery(ctx, reqs)
}
