package ingress

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

// rerunEnv is an API server with prWorkflow whose workflow directory the
// test may change (dir) and reload.
func rerunEnv(t *testing.T, cfg Config, files map[string]string, opts ...func(*Deps)) (*testEnv, *workflows.WorkflowSet, string) {
	t.Helper()
	q := openQueue(t, t.TempDir())
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, dir, name, content)
	}
	logger, logs := newLogger()
	set, err := workflows.NewWorkflowSet(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Forges == nil {
		cfg.Forges = registry(hooks(workflows.Forge("github"), true, testGitHubSecret), hooks(workflows.Forge("gitlab"), false))
	}
	cfg.DefaultForge = workflows.Forge("github")
	cfg.PublishTimeout = 30 * time.Second
	s, err := New(cfg, testDeps(q, set, logger, opts...))
	if err != nil {
		t.Fatal(err)
	}
	s.RegisterAPI(APIConfig{Token: testAPIToken}, q.Runs(), q.Logs(), storeCanceller{q.Runs()})
	env := &testEnv{srv: s, q: q, logs: logs}
	env.http = httptest.NewServer(s.Handler())
	t.Cleanup(env.http.Close)
	return env, set, dir
}

// prOpenedOn is the pull_request opened fixture for pull request number.
func prOpenedOn(t *testing.T, number int) []byte {
	t.Helper()
	return patchJSON(t, githubFixtures+"pull_request/opened.payload.json", func(m map[string]any) {
		m["number"] = number
		obj(m, "pull_request")["number"] = number
	})
}

func getRecord(t *testing.T, q *storestest.Queue, id string) *stores.RunRecord {
	t.Helper()
	rec, _, err := q.Runs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func setStatus(t *testing.T, q *storestest.Queue, id string, st workflows.Status, comment int64) {
	t.Helper()
	if _, err := q.Runs().Modify(context.Background(), id, func(r *stores.RunRecord) bool {
		r.Status, r.CommentID = st, comment
		return true
	}); err != nil {
		t.Fatal(err)
	}
}

// streamRequest is the message of run id on HOOKRUN_RUNS.
func streamRequest(t *testing.T, q *storestest.Queue, id string) *queue.RunRequest {
	t.Helper()
	for _, r := range streamRequests(t, q) {
		if r.ID == id {
			return &r
		}
	}
	t.Fatalf("no message of run %s on the stream", id)
	return nil
}

// TestAPIRerun: POST /api/v1/runs/{id}/rerun of a finished run queues a new
// run of the same workflow on the same event, its payload included (from
// the stored delivery), starting with the original's sticky comment; the
// records point at each other; an unfinished run, an unknown one and a
// workflow no longer loaded are refused with a reason.
func TestAPIRerun(t *testing.T) {
	env, set, dir := rerunEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	body := readFile(t, githubFixtures+"pull_request/opened.payload.json")
	a := env.github(t, "pull_request", "rerun-delivery-1", body)
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("delivery: %d %s", a.Code, a.Raw)
	}
	orig := a.Runs[0].ID
	if code, b := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", testAPIToken); code != http.StatusConflict || !strings.Contains(b, "only a finished run can be re-run") {
		t.Fatalf("re-run of a queued run: %d %s", code, b)
	}
	setStatus(t, env.q, orig, workflows.StatusFailed, 4242)
	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", ""); code != http.StatusUnauthorized {
		t.Fatalf("re-run without the token: %d", code)
	}
	code, b := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", testAPIToken)
	var ans rerunAnswer
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans) != nil || ans.Run == "" || ans.Run == orig || ans.RerunOf != orig || ans.Workflow != "pr-check" || ans.WorkflowChanged {
		t.Fatalf("re-run: %d %s", code, b)
	}
	re := getRecord(t, env.q, ans.Run)
	if re.RerunOf != orig || re.CommentID != 4242 || re.Status != workflows.StatusQueued || re.Attempt != 2 ||
		re.Event.PullRequest == nil || re.Event.PullRequest.Number != 2 || stores.OriginOf(re) != "rerun-delivery-1" {
		t.Fatalf("re-run record: %+v", re)
	}
	if o := getRecord(t, env.q, orig); len(o.Reruns) != 1 || o.Reruns[0] != ans.Run {
		t.Fatalf("original's reruns %v, want [%s]", o.Reruns, ans.Run)
	}
	want := streamRequest(t, env.q, orig).Event.Raw
	if msg := streamRequest(t, env.q, ans.Run); len(want) < 1000 || string(msg.Event.Raw) != string(want) || msg.CommentID != 4242 {
		t.Fatalf("re-run message: raw %d bytes (want the %d of the original's), comment %d", len(msg.Event.Raw), len(want), msg.CommentID)
	}

	// a second re-run of the same run is another run, linked in order
	setStatus(t, env.q, ans.Run, workflows.StatusFailed, 4242)
	code, b = apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", testAPIToken)
	var ans2 rerunAnswer
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans2) != nil || ans2.Run == ans.Run {
		t.Fatalf("second re-run: %d %s", code, b)
	}
	if o := getRecord(t, env.q, orig); len(o.Reruns) != 2 || o.Reruns[1] != ans2.Run {
		t.Fatalf("original's reruns %v", o.Reruns)
	}

	// the workflow changed: the re-run runs the one loaded now, and says so
	if err := os.WriteFile(filepath.Join(dir, "pr.yaml"), []byte(strings.Replace(prWorkflow, "make check", "make check2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	code, b = apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", testAPIToken)
	var ans3 rerunAnswer
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans3) != nil || !ans3.WorkflowChanged {
		t.Fatalf("re-run after a change: %d %s", code, b)
	}
	if w, _ := set.Lookup("pr-check"); getRecord(t, env.q, ans3.Run).WorkflowDigest != w.Digest {
		t.Errorf("re-run record does not carry the digest of the workflow loaded now")
	}

	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/runs/01NOSUCHRUN/rerun", testAPIToken); code != http.StatusNotFound {
		t.Errorf("re-run of an unknown run: %d", code)
	}
	if err := os.Remove(filepath.Join(dir, "pr.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if code, b := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", testAPIToken); code != http.StatusConflict || !strings.Contains(b, "no longer loaded") {
		t.Errorf("re-run of a workflow no longer loaded: %d %s", code, b)
	}
}

// otherWorkflow is a second workflow on opened pull requests.
const otherWorkflow = `name: other-check
on:
  - event: pull_request
    actions: [opened]
steps:
  - id: check
    run: make other
`

// runsOf is the run id of each workflow a delivery's answer a started,
// which must be n runs.
func runsOf(t *testing.T, a answer, n int) map[string]string {
	t.Helper()
	if a.Code != http.StatusAccepted || len(a.Runs) != n {
		t.Fatalf("delivery: %d %s, want %d runs", a.Code, a.Raw, n)
	}
	runs := map[string]string{}
	for _, r := range a.Runs {
		runs[r.Workflow] = r.ID
	}
	return runs
}

// TestRetryCommand: a `/retry` comment on a pull request re-runs the
// latest run of each workflow there that failed, for a commenter the
// workflow's authorize policy admits; a commenter it refuses gets the
// reason and no run; a redelivery of the comment creates nothing new; the
// command's name is the server's (commands.retry).
func TestRetryCommand(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{Commands: decide.CommandsConfig{Retry: "again"}}, map[string]string{"pr.yaml": prWorkflow, "other.yaml": otherWorkflow})
	runs := runsOf(t, env.github(t, "pull_request", "retry-pr-1", prOpenedOn(t, 1)), 2)
	setStatus(t, env.q, runs["pr-check"], workflows.StatusFailed, 31)
	setStatus(t, env.q, runs["other-check"], workflows.StatusSucceeded, 32)

	// /retry is not this server's command
	if a := env.github(t, "issue_comment", "retry-c-0", prComment(t, "/retry", "MEMBER")); a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("/retry on a server whose command is /again: %d %s", a.Code, a.Raw)
	}
	// refused: NONE is not in the default author_association
	a := env.github(t, "issue_comment", "retry-c-1", prComment(t, "/again", "NONE"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || !strings.Contains(a.Raw, "/again refused: author association NONE") {
		t.Fatalf("unauthorized /again: %d %s", a.Code, a.Raw)
	}
	if o := getRecord(t, env.q, runs["pr-check"]); len(o.Reruns) != 0 {
		t.Fatalf("a refused retry linked reruns %v", o.Reruns)
	}
	// authorized: only the failed workflow is re-run
	a = env.github(t, "issue_comment", "retry-c-2", prComment(t, "/again", "MEMBER"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != "pr-check" || a.Runs[0].RerunOf != runs["pr-check"] {
		t.Fatalf("authorized /again: %d %s", a.Code, a.Raw)
	}
	re := getRecord(t, env.q, a.Runs[0].ID)
	if re.RerunOf != runs["pr-check"] || re.CommentID != 31 || re.Event.Kind != workflows.KindPullRequest || re.Event.Sender != "Codertocat" {
		t.Fatalf("re-run record %+v: want the pull request's event, rerun_of and the comment", re)
	}
	if o := getRecord(t, env.q, runs["pr-check"]); len(o.Reruns) != 1 || o.Reruns[0] != re.ID {
		t.Fatalf("original's reruns %v", o.Reruns)
	}
	// the comment redelivered: the same run, nothing new
	again := env.github(t, "issue_comment", "retry-c-2", prComment(t, "/again", "MEMBER"))
	if again.Code != http.StatusAccepted || len(again.Runs) != 1 || again.Runs[0].ID != re.ID || !again.Duplicate {
		t.Fatalf("redelivered /again: %d %s", again.Code, again.Raw)
	}
	// the re-run is now the latest of pr-check and still queued: nothing to retry
	a = env.github(t, "issue_comment", "retry-c-3", touched(t, prComment(t, "/again", "MEMBER"), 3))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || !strings.Contains(a.Raw, "no failed run on Codertocat/Hello-World#1") {
		t.Fatalf("/again with nothing failed: %d %s", a.Code, a.Raw)
	}
	// the re-run failed too; the /again comment re-sent under another
	// delivery id is still that comment: its re-run, nothing new
	setStatus(t, env.q, re.ID, workflows.StatusFailed, 31)
	msgs := len(streamRunIDs(t, env.q))
	resent := env.github(t, "issue_comment", "retry-c-2-resent", prComment(t, "/again", "MEMBER"))
	if resent.Code != http.StatusAccepted || len(resent.Runs) != 1 || resent.Runs[0].ID != re.ID || !resent.Duplicate {
		t.Fatalf("re-sent /again: %d %s, want run %s, duplicate", resent.Code, resent.Raw, re.ID)
	}
	if n := len(streamRunIDs(t, env.q)); n != msgs {
		t.Fatalf("the re-sent /again put %d messages on the stream", n-msgs)
	}
	if r := getRecord(t, env.q, re.ID); len(r.Reruns) != 0 {
		t.Fatalf("the re-sent /again linked reruns %v to its own re-run", r.Reruns)
	}
	// a new /again comment re-runs it
	a = env.github(t, "issue_comment", "retry-c-4", touched(t, prComment(t, "/again", "MEMBER"), 4))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].RerunOf != re.ID || a.Duplicate {
		t.Fatalf("a new /again after the re-run failed: %d %s", a.Code, a.Raw)
	}
}

// TestReplayDelivery: a delivery that matched nothing is stored; replayed
// after a workflow that takes it was loaded, it queues that workflow's run
// under a new delivery id (not deduplicated by the original's keys), and
// the answer lists it; a second replay is another run; an unknown delivery
// is 404.
func TestReplayDelivery(t *testing.T) {
	env, set, dir := rerunEnv(t, Config{}, map[string]string{"review.yaml": reviewWorkflow})
	body := readFile(t, githubFixtures+"pull_request/opened.payload.json")
	a := env.github(t, "pull_request", "replay-1", body)
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("delivery: %d %s", a.Code, a.Raw)
	}
	code, b := apiDo(t, env, http.MethodPost, "/api/v1/deliveries/replay-1/replay", testAPIToken)
	if code != http.StatusOK || !strings.Contains(b, `"runs":[]`) || !strings.Contains(b, `"replay_of":"replay-1"`) {
		t.Fatalf("replay with nothing matching: %d %s", code, b)
	}
	writeFile(t, dir, "pr.yaml", prWorkflow)
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	var ans replayAnswer
	code, b = apiDo(t, env, http.MethodPost, "/api/v1/deliveries/replay-1/replay", testAPIToken)
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans) != nil || len(ans.Runs) != 1 || ans.Runs[0].Workflow != "pr-check" ||
		ans.Delivery != "replay-1:replay:2" {
		t.Fatalf("replay: %d %s", code, b)
	}
	rec := getRecord(t, env.q, ans.Runs[0].ID)
	if rec.Event.DeliveryID != "replay-1:replay:2" || stores.OriginOf(rec) != "replay-1" || rec.Event.PullRequest.Number != 2 {
		t.Fatalf("replayed record: %+v", rec)
	}
	if msg := streamRequest(t, env.q, rec.ID); string(msg.Event.Raw) != strings.TrimSpace(string(body)) {
		t.Fatalf("replayed run's payload: %d bytes, want %d", len(msg.Event.Raw), len(body))
	}
	code, b = apiDo(t, env, http.MethodPost, "/api/v1/deliveries/replay-1/replay", testAPIToken)
	var ans2 replayAnswer
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans2) != nil || len(ans2.Runs) != 1 || ans2.Runs[0].ID == rec.ID {
		t.Fatalf("second replay: %d %s", code, b)
	}
	// the replays' runs did not take the original's delivery keys: its
	// redelivery runs pr-check under its own id
	if a := env.github(t, "pull_request", "replay-1", body); a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("redelivery after loading pr-check: %d %s", a.Code, a.Raw)
	}
	if code, b := apiDo(t, env, http.MethodPost, "/api/v1/deliveries/nope/replay", testAPIToken); code != http.StatusNotFound || !strings.Contains(b, "deliveries are kept for 72h0m0s") {
		t.Errorf("unknown delivery: %d %s", code, b)
	}
	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/deliveries/replay-1/replay?forge=gitlab", testAPIToken); code != http.StatusNotFound {
		t.Errorf("replay-1 on gitlab: %d", code)
	}
}

// A run started through the API is re-run with its params (the record
// keeps them) and without a stored delivery to look for.
func TestAPIRerunKeepsParams(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{}, map[string]string{"deploy.yaml": paramsWorkflow})
	code, b := apiPost(t, env.http.URL+"/api/v1/workflows/deploy/runs", testAPIToken, `{"repo": "octo/demo", "params": {"TARGET": "prod $(id)"}}`)
	var started struct {
		Run string `json:"run"`
	}
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &started) != nil {
		t.Fatalf("start: %d %s", code, b)
	}
	setStatus(t, env.q, started.Run, workflows.StatusFailed, 0)
	code, b = apiDo(t, env, http.MethodPost, "/api/v1/runs/"+started.Run+"/rerun", testAPIToken)
	var ans rerunAnswer
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans) != nil {
		t.Fatalf("re-run: %d %s", code, b)
	}
	if msg := streamRequest(t, env.q, ans.Run); msg.Params["TARGET"] != "prod $(id)" || msg.RerunOf != started.Run || msg.Event.Repo != "octo/demo" {
		t.Fatalf("re-run request %+v", msg)
	}
	if strings.Contains(env.logs.String(), "no longer stored") {
		t.Errorf("looked for the stored delivery of an API run:\n%s", env.logs)
	}
}

// A re-run of a delivery whose body was too large to travel inside its run
// request reaches the runner with that body whole (read back from
// hookrun_bodies by the stored delivery and stored again for the re-run).
func TestAPIRerunLargeBody(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	body := patchJSON(t, githubFixtures+"pull_request/opened.payload.json", func(m map[string]any) {
		m["padding"] = strings.Repeat("x", 300<<10)
	})
	a := env.github(t, "pull_request", "rerun-large-1", body)
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("delivery: %d %s", a.Code, a.Raw)
	}
	orig := a.Runs[0].ID
	setStatus(t, env.q, orig, workflows.StatusFailed, 0)
	code, b := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+orig+"/rerun", testAPIToken)
	var ans rerunAnswer
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &ans) != nil {
		t.Fatalf("re-run: %d %s", code, b)
	}
	if msg := streamRequest(t, env.q, ans.Run); msg.Body == "" || len(msg.Event.Raw) != 0 {
		t.Fatalf("re-run message: body %q, %d bytes inline; want the body referenced", msg.Body, len(msg.Event.Raw))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan []byte, 2)
	c, err := env.q.Consume(ctx, queue.ConsumerConfig{AckWait: 10 * time.Second, FetchWait: 200 * time.Millisecond}, func(_ context.Context, d *queue.Delivery) error {
		if d.Request.ID == ans.Run {
			got <- d.Request.Event.Raw
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	select {
	case raw := <-got:
		if string(raw) != string(body) {
			t.Fatalf("re-run's payload: %d bytes, want the delivery's %d", len(raw), len(body))
		}
	case <-ctx.Done():
		t.Fatal("the re-run never reached a handler")
	}
}

// On GitLab, /retry is authorized by the note author's role in the project,
// looked up as for a note trigger: an Owner's re-runs the failed run of the
// merge request, a non-member's is refused with the reason.
func TestRetryCommandGitLab(t *testing.T) {
	members := &fakeMembers{roles: map[[2]int64]string{{1, 51}: "MEMBER", {5, 1}: "OWNER", {5, 2}: "NONE"}, calls: map[[2]int64]int{}}
	env := newTrustEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("gitlab"), members: members})}, nil, map[string]string{"mr.yaml": `name: mr-check
on:
  - event: pull_request
    actions: [opened]
steps:
  - id: check
    run: make check
`})
	env.srv.RegisterAPI(APIConfig{Token: testAPIToken}, env.q.Runs(), env.q.Logs(), storeCanceller{env.q.Runs()})
	mr := patchJSON(t, gitlabFixtures+"merge_request.json", func(m map[string]any) {
		obj(m, "project")["path_with_namespace"] = "gitlab-org/gitlab-test"
	})
	a := env.gitlab(t, "Merge Request Hook", nil, mr)
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("merge request: %d %s", a.Code, a.Raw)
	}
	orig := a.Runs[0].ID
	setStatus(t, env.q, orig, workflows.StatusFailed, 0)
	note := func(author int) []byte {
		return patchJSON(t, gitlabFixtures+"note_merge_request.json", func(m map[string]any) {
			obj(m, "object_attributes")["note"] = "/retry"
			obj(m, "object_attributes")["author_id"] = author
		})
	}
	h := http.Header{}
	h.Set("X-Gitlab-Event-UUID", "note-by-2")
	a = env.gitlab(t, "Note Hook", h, note(2))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || !strings.Contains(a.Raw, "/retry refused: author association NONE") {
		t.Fatalf("non-member's /retry: %d %s", a.Code, a.Raw)
	}
	h.Set("X-Gitlab-Event-UUID", "note-by-1")
	a = env.gitlab(t, "Note Hook", h, note(1))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].RerunOf != orig {
		t.Fatalf("owner's /retry: %d %s", a.Code, a.Raw)
	}
	if re := getRecord(t, env.q, a.Runs[0].ID); re.RerunOf != orig || re.Event.Forge != workflows.Forge("gitlab") || re.Event.Kind != workflows.KindPullRequest {
		t.Fatalf("re-run record %+v", re)
	}
	if members.count(5, 1) != 1 || members.count(5, 2) != 1 {
		t.Errorf("role lookups %v, want one per note author", members.calls)
	}
}

// TestDepsSayWhatTheServerDoes: what a server can do follows from the
// Deps given to New, not from what its publisher happens to be. On a
// *storestest.Queue that stores deliveries and keeps run records, a server
// given neither its stored deliveries nor its run records replays
// nothing (404), re-runs nothing through the API (503) and answers no
// /retry.
func TestDepsSayWhatTheServerDoes(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow}, func(d *Deps) {
		d.Deliveries, d.Runs = nil, nil
	})
	a := env.github(t, "pull_request", "deps-1", prOpenedOn(t, 1))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("delivery: %d %s", a.Code, a.Raw)
	}
	if _, err := env.q.Received().Get(context.Background(), workflows.Forge("github"), "deps-1"); err != nil {
		t.Fatalf("the acceptor did not store the delivery: %v", err)
	}
	setStatus(t, env.q, a.Runs[0].ID, workflows.StatusFailed, 0)
	if a := env.github(t, "issue_comment", "deps-retry", prComment(t, "/retry", "MEMBER")); a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Errorf("/retry without run records: %d %s, want no run", a.Code, a.Raw)
	}
	if code, b := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+a.Runs[0].ID+"/rerun", testAPIToken); code != http.StatusServiceUnavailable {
		t.Errorf("re-run without run records: %d %s, want 503", code, b)
	}
	if code, b := apiDo(t, env, http.MethodPost, "/api/v1/deliveries/deps-1/replay", testAPIToken); code != http.StatusNotFound {
		t.Errorf("replay without stored deliveries: %d %s, want 404", code, b)
	}
}
