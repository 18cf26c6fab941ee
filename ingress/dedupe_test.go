package ingress

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/workflows"
)

// runIDs lists an answer's run ids.
func runIDs(a answer) []string {
	var ids []string
	for _, r := range a.Runs {
		ids = append(ids, r.ID)
	}
	return ids
}

// openCommandWorkflow takes /cmd from anyone, NONE included.
const openCommandWorkflow = `name: cmd
on:
  - event: comment
    command: /cmd
authorize: { author_association: [] }
steps:
  - id: run
    run: echo "$HOOKRUN_COMMAND_ARGS"
`

// issueComment is the issue_comment fixture (on an issue: no head to pin)
// with the given text by a user of the given association.
func issueComment(t testing.TB, body, association string) []byte {
	t.Helper()
	return patchJSON(t, githubFixtures+"issue_comment/created.payload.json", func(m map[string]any) {
		c := obj(m, "comment")
		c["body"] = body
		c["author_association"] = association
	})
}

// TestResentBodyIsNotANewEvent: the same signed body under a new delivery
// id (a captured delivery re-sent, or the event of a second hook) answers
// 202 with the runs the first delivery started, marked duplicate, and puts
// no new message on the stream; a redelivery of either id is the same.
// Pull request events and comments alike.
func TestResentBodyIsNotANewEvent(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow, "cmd.yaml": openCommandWorkflow})
	for _, tc := range []struct {
		name, event string
		body        []byte
	}{
		{"pull_request", "pull_request", readFile(t, githubFixtures+"pull_request/opened.payload.json")},
		{"comment", "issue_comment", issueComment(t, "/cmd one\n/cmd two", "NONE")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := env.github(t, tc.event, tc.name+"-delivery-1", tc.body)
			if first.Code != http.StatusAccepted || len(first.Runs) == 0 || first.Duplicate {
				t.Fatalf("first delivery: %d %s", first.Code, first.Raw)
			}
			msgs := len(streamRunIDs(t, env.q))
			for _, d := range []string{tc.name + "-delivery-2", tc.name + "-delivery-2", tc.name + "-delivery-1", tc.name + "-delivery-3"} {
				again := env.github(t, tc.event, d, tc.body)
				if again.Code != http.StatusAccepted || !slices.Equal(runIDs(again), runIDs(first)) || !again.Duplicate {
					t.Fatalf("the same body under delivery %s: %d %s, want the runs %v of the first, duplicate", d, again.Code, again.Raw, runIDs(first))
				}
			}
			if n := len(streamRunIDs(t, env.q)); n != msgs {
				t.Fatalf("the stream holds %d messages after the re-sent bodies, %d before", n, msgs)
			}
		})
	}
}

// TestDistinctEventsAreNotMerged: events about the same object that the
// forge sent as distinct events each start their runs: two synchronize
// events with different heads (even in the same second), two labeled
// events for two labels in the same second, a comment edited, two reviewers
// requested at once.
func TestDistinctEventsAreNotMerged(t *testing.T) {
	const labeledWorkflow = `name: on-label
on:
  - event: pull_request
    actions: [labeled, review_requested]
authorize: { author_association: [] }
steps:
  - id: run
    run: "true"
`
	const editedWorkflow = `name: on-edit
on:
  - event: comment
    actions: [created, edited]
authorize: { author_association: [] }
steps:
  - id: run
    run: "true"
`
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow, "label.yaml": labeledWorkflow, "edit.yaml": editedWorkflow})
	sync := func(sha string) []byte {
		return patchJSON(t, githubFixtures+"pull_request/synchronize.payload.json", func(m map[string]any) {
			pr := obj(m, "pull_request")
			obj(pr, "head")["sha"] = sha
			pr["updated_at"] = "2026-12-01T10:00:00Z"
		})
	}
	labeled := func(label string) []byte {
		return patchJSON(t, githubFixtures+"pull_request/labeled.payload.json", func(m map[string]any) {
			obj(m, "label")["name"] = label
		})
	}
	requested := func(login string) []byte {
		return patchJSON(t, githubFixtures+"pull_request/labeled.payload.json", func(m map[string]any) {
			m["action"] = "review_requested"
			delete(m, "label")
			m["requested_reviewer"] = map[string]any{"login": login}
		})
	}
	edited := func(at string) []byte {
		return patchJSON(t, githubFixtures+"issue_comment/created.payload.json", func(m map[string]any) {
			m["action"] = "edited"
			obj(m, "comment")["updated_at"] = at
		})
	}
	for _, tc := range []struct {
		name, event string
		a, b        []byte
	}{
		{"synchronize", "pull_request", sync("1111111111111111111111111111111111111111"), sync("2222222222222222222222222222222222222222")},
		{"labeled", "pull_request", labeled("bug"), labeled("security")},
		{"review_requested", "pull_request", requested("alice"), requested("bob")},
		{"edited", "issue_comment", edited("2026-12-01T10:00:00Z"), edited("2026-12-01T10:00:07Z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := env.github(t, tc.event, tc.name+"-a", tc.a)
			b := env.github(t, tc.event, tc.name+"-b", tc.b)
			if a.Code != http.StatusAccepted || b.Code != http.StatusAccepted || len(a.Runs) != 1 || len(b.Runs) != 1 {
				t.Fatalf("answers: %d %s; %d %s", a.Code, a.Raw, b.Code, b.Raw)
			}
			if a.Runs[0].ID == b.Runs[0].ID || b.Duplicate {
				t.Fatalf("two distinct events were merged into run %s: %s", a.Runs[0].ID, b.Raw)
			}
		})
	}
}

// TestCommandsPerComment: a comment of 900 distinct command lines by a
// NONE user, on a workflow open to anyone, starts 10 runs (the default
// commands.max_per_comment); the answer names the first 20 lines it did
// not run and counts the other 870.
func TestCommandsPerComment(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"cmd.yaml": openCommandWorkflow})
	var lines []string
	for i := range 900 {
		lines = append(lines, fmt.Sprintf("/cmd %d", i))
	}
	a := env.github(t, "issue_comment", "many-commands", issueComment(t, strings.Join(lines, "\n"), "NONE"))
	if a.Code != http.StatusAccepted || len(a.Runs) != decide.DefaultMaxCommandsPerComment {
		t.Fatalf("answer %d with %d runs, want 202 with %d: %.500s", a.Code, len(a.Runs), decide.DefaultMaxCommandsPerComment, a.Raw)
	}
	if n := len(streamRunIDs(t, env.q)); n != decide.DefaultMaxCommandsPerComment {
		t.Fatalf("%d messages on the stream, want %d", n, decide.DefaultMaxCommandsPerComment)
	}
	if len(a.Skipped) != decide.MaxListedSkips+1 {
		t.Fatalf("%d skipped entries, want %d listed and one count: %v", len(a.Skipped), decide.MaxListedSkips, a.Skipped)
	}
	mustContain(t, a.Skipped[0].Reason, `command line "/cmd 10" not run: a comment starts at most 10 distinct command lines (commands.max_per_comment)`)
	mustContain(t, a.Skipped[decide.MaxListedSkips].Reason, "870 more command lines not run")
	for i, r := range a.Runs {
		if msg := streamRequest(t, env.q, r.ID); msg.Event.CommandArgs != fmt.Sprint(i) {
			t.Fatalf("run %d has arguments %q, want %d", i, msg.Event.CommandArgs, i)
		}
	}

	// Configured lower, and a line repeated word for word is one line.
	env = newEnv(t, Config{Commands: decide.CommandsConfig{MaxPerComment: 2}}, map[string]string{"cmd.yaml": openCommandWorkflow})
	a = env.github(t, "issue_comment", "three-commands", issueComment(t, "/cmd a\n/cmd a\n/cmd b\n/cmd c", "NONE"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 2 || len(a.Skipped) != 1 {
		t.Fatalf("answer %d: %s, want 2 runs and /cmd c skipped", a.Code, a.Raw)
	}
	mustContain(t, a.Skipped[0].Reason, `"/cmd c" not run`)
	if err := (Config{Commands: decide.CommandsConfig{MaxPerComment: -1}}).Validate(); err == nil || !strings.Contains(err.Error(), "max per comment") {
		t.Fatalf("a negative limit: %v", err)
	}
}

// TestRerunOfRepositoryNoLongerAllowed: once a repository has left
// allow_repos, POST /api/v1/runs/{id}/rerun of one of its runs answers 403
// with a JSON error and publishes nothing; so does the UI's re-run
// (Server.Rerun).
func TestRerunOfRepositoryNoLongerAllowed(t *testing.T) {
	q := openQueue(t, t.TempDir())
	server := func(allow ...string) *testEnv {
		dir := t.TempDir()
		writeFile(t, dir, "pr.yaml", prWorkflow)
		logger, logs := newLogger()
		set, err := workflows.NewWorkflowSet(dir, logger)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{AllowRepos: allow, PublishTimeout: 30 * time.Second,
			Forges: registry(hooks(workflows.Forge("github"), true, testGitHubSecret)), DefaultForge: workflows.Forge("github")}, testDeps(q, set, logger))
		if err != nil {
			t.Fatal(err)
		}
		s.RegisterAPI(APIConfig{Token: testAPIToken}, q.Runs(), q.Logs(), storeCanceller{q.Runs()})
		env := &testEnv{srv: s, q: q, logs: logs, http: httptest.NewServer(s.Handler())}
		t.Cleanup(env.http.Close)
		return env
	}
	before := server("codertocat/*")
	a := before.github(t, "pull_request", "left-allow-repos", readFile(t, githubFixtures+"pull_request/opened.payload.json"))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("delivery: %d %s", a.Code, a.Raw)
	}
	setStatus(t, q, a.Runs[0].ID, workflows.StatusFailed, 0)

	after := server("myorg/*") // restarted with the repository removed
	code, b := apiDo(t, after, http.MethodPost, "/api/v1/runs/"+a.Runs[0].ID+"/rerun", testAPIToken)
	var e errorBody
	if code != http.StatusForbidden || json.Unmarshal([]byte(b), &e) != nil || !strings.Contains(e.Error, "not allowed") {
		t.Fatalf("re-run: %d %s, want 403 with a JSON error", code, b)
	}
	if _, err := after.srv.Rerun(context.Background(), a.Runs[0].ID); err == nil {
		t.Fatal("the UI's re-run of a repository no longer allowed was accepted")
	}
	if n := len(streamRunIDs(t, q)); n != 1 {
		t.Fatalf("%d messages on the stream, want only the original", n)
	}
	if rec := getRecord(t, q, a.Runs[0].ID); len(rec.Reruns) != 0 {
		t.Fatalf("the run was linked to re-runs %v", rec.Reruns)
	}

	// Still allowed: the re-run is queued.
	if code, b := apiDo(t, before, http.MethodPost, "/api/v1/runs/"+a.Runs[0].ID+"/rerun", testAPIToken); code != http.StatusAccepted {
		t.Fatalf("re-run on the server that allows it: %d %s", code, b)
	}
}

// touched is a GitHub body as the forge would send it for a new event
// about the same object: its pull_request, issue and comment updated n
// seconds into 2026 (other tests send one fixture as many events).
func touched(t testing.TB, body []byte, n int) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second).Format(time.RFC3339)
	for _, k := range []string{"pull_request", "issue", "comment"} {
		if o, ok := m[k].(map[string]any); ok {
			o["updated_at"] = at
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
