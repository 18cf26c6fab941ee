package ingress

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// rerequestOf is a rerequested check_run (the run of its external_id) or
// check_suite fixture of the head of pull request #2, by sender.
func rerequestOf(t *testing.T, fixture, sender, runID string) []byte {
	t.Helper()
	return patchJSON(t, githubFixtures+fixture, func(m map[string]any) {
		obj(m, "sender")["login"] = sender
		if runID != "" {
			obj(m, "check_run")["external_id"] = runID
		}
	})
}

// TestRerequest: GitHub's Re-run button re-runs failed runs as /retry
// does. A check run's rerequest re-runs the run of its external_id (not
// the other failed workflow), for a requester whose role, looked up by
// login once, the workflow's authorize policy admits; a requester it
// refuses gets the reason; a redelivery is the same run; a run that is no
// longer the latest of its workflow on the head is not re-run. A check
// suite's rerequest re-runs every failed latest run of its head, also
// when GitHub lists no pull request for it (a fork's branch): a failed run
// on another head is not re-run.
func TestRerequest(t *testing.T) {
	collab := &fakeCollaborators{roles: map[string]string{"Octocat": "MEMBER", "stranger": "NONE"}, calls: map[string]int{}}
	env, _, _ := rerunEnv(t, Config{Forges: testForges(testForge{name: workflows.Forge("github"), collab: collab})},
		map[string]string{"pr.yaml": prWorkflow, "other.yaml": otherWorkflow})
	runs := runsOf(t, env.github(t, "pull_request", "rereq-pr-2", readFile(t, githubFixtures+"pull_request/opened.payload.json")), 2)
	setStatus(t, env.q, runs["pr-check"], workflows.StatusFailed, 31)
	setStatus(t, env.q, runs["other-check"], workflows.StatusFailed, 32)
	// refused: NONE is not in the default author_association
	a := env.github(t, "check_run", "rereq-run-1", rerequestOf(t, "check_run/rerequested.payload.json", "stranger", runs["pr-check"]))
	if a.Code != http.StatusAccepted || len(a.Runs) != 0 || !strings.Contains(a.Raw, "re-run request refused: author association NONE") ||
		strings.Contains(a.Raw, "no trigger") {
		t.Fatalf("a stranger's rerequest: %d %s", a.Code, a.Raw)
	}
	// authorized: only the run the check run names
	a = env.github(t, "check_run", "rereq-run-2", rerequestOf(t, "check_run/rerequested.payload.json", "Octocat", runs["pr-check"]))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != "pr-check" || a.Runs[0].RerunOf != runs["pr-check"] {
		t.Fatalf("a member's check run rerequest: %d %s", a.Code, a.Raw)
	}
	re := getRecord(t, env.q, a.Runs[0].ID)
	if re.RerunOf != runs["pr-check"] || re.CommentID != 31 || re.Event.Kind != workflows.KindPullRequest || re.Event.PullRequest.Number != 2 {
		t.Fatalf("re-run record %+v: want the pull request's event, rerun_of and the comment", re)
	}
	if o := getRecord(t, env.q, runs["pr-check"]); len(o.Reruns) != 1 || o.Reruns[0] != re.ID {
		t.Fatalf("original's reruns %v", o.Reruns)
	}
	// redelivered: the same run
	again := env.github(t, "check_run", "rereq-run-2", rerequestOf(t, "check_run/rerequested.payload.json", "Octocat", runs["pr-check"]))
	if len(again.Runs) != 1 || again.Runs[0].ID != re.ID || !again.Duplicate {
		t.Fatalf("redelivered rerequest: %d %s", again.Code, again.Raw)
	}
	// the original is no longer the latest run of pr-check on the head
	a = env.github(t, "check_run", "rereq-run-3", rerequestOf(t, "check_run/rerequested.payload.json", "Octocat", runs["pr-check"]))
	if len(a.Runs) != 0 || !strings.Contains(a.Raw, "is not the latest run of its workflow") {
		t.Fatalf("rerequest of a superseded run: %d %s", a.Code, a.Raw)
	}

	// the check suite: other-check (pr-check's latest is the queued re-run)
	a = env.github(t, "check_suite", "rereq-suite-1", rerequestOf(t, "check_suite/rerequested.payload.json", "Octocat", ""))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != "other-check" || a.Runs[0].RerunOf != runs["other-check"] {
		t.Fatalf("check suite rerequest: %d %s", a.Code, a.Raw)
	}
	// no pull request listed (a fork's branch): pr-check's failed re-run
	// is found among the repository's runs; the failed runs of pull
	// request #1, newer, are on another head
	elsewhere := env.github(t, "pull_request", "rereq-pr-1", patchJSON(t, githubFixtures+"pull_request/opened.payload.json", func(m map[string]any) {
		m["number"] = 1
		pr := obj(m, "pull_request")
		pr["number"] = 1
		obj(pr, "head")["sha"] = "0000000000000000000000000000000000000001"
	}))
	if len(elsewhere.Runs) != 2 {
		t.Fatalf("delivery of #1: %d %s", elsewhere.Code, elsewhere.Raw)
	}
	for _, r := range elsewhere.Runs {
		setStatus(t, env.q, r.ID, workflows.StatusFailed, 0)
	}
	setStatus(t, env.q, re.ID, workflows.StatusFailed, 31)
	a = env.github(t, "check_suite", "rereq-suite-2", rerequestOf(t, "check_suite/rerequested.fork.payload.json", "Octocat", ""))
	if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].RerunOf != re.ID {
		t.Fatalf("check suite rerequest without pull requests: %d %s", a.Code, a.Raw)
	}
	for _, r := range elsewhere.Runs {
		if o := getRecord(t, env.q, r.ID); len(o.Reruns) != 0 {
			t.Errorf("run %s of another head was re-run: %v", r.ID, o.Reruns)
		}
	}
	if collab.calls["Codertocat/Hello-World Octocat"] != 1 || collab.calls["Codertocat/Hello-World stranger"] != 1 {
		t.Errorf("role lookups %v, want one per requester", collab.calls)
	}
	if n := len(streamRunIDs(t, env.q)); n != 4+3 {
		t.Errorf("%d messages on the stream, want the 4 runs and 3 re-runs", n)
	}
}
