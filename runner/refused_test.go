package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

const refusedWorkflow = `
name: review
checkout: true
steps:
  - {id: review, run: 'touch $TMP/step-ran'}
handler_on:
  exit: {run: 'touch $TMP/handler-ran'}
`

// A run request that ingress marked Refused (the head of the commented pull
// request could not be pinned) is failed at claim with that reason: no
// workspace is prepared, no step or handler runs, the message is acked, and
// the one report, final and failed, carries the reason.
func TestRefusedRunFailsAtClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"review": refusedWorkflow}, nil, nil)
	rep := &enginetest.Reporter{Ref: contract.ReportRef{CommentID: 77}}
	eng, err := engine.New(engine.Config{Providers: engine.Providers{Host: enginetest.HostExec()}, Logs: f.q.Logs(),
		Reporter: rep, LookupEnv: enginetest.Env(testEnv), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	f.r, err = runner.New(f.runCfg, runner.Deps{Runs: f.q.Runs(), Workflows: f.wfs, Workspaces: f.ws, Engine: eng, Groups: f.q.Groups()})
	if err != nil {
		t.Fatal(err)
	}
	f.start()
	const reason = "the head of pull request #7 is unknown; comment again"
	id := f.publish("review", func(r *queue.RunRequest) {
		r.Event.Kind, r.Event.Action = workflows.KindComment, "created"
		r.Event.PullRequest.HeadSHA = ""
		r.Event.Comment = &workflows.Comment{ID: 5, Body: "/review"}
		r.Refused = reason
	})
	rec := f.waitRecord(id, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusFailed || rec.Error != reason || rec.HeadSHA != "" || rec.CommentID != 77 {
		t.Fatalf("record: status %s error %q head %q comment %d", rec.Status, rec.Error, rec.HeadSHA, rec.CommentID)
	}
	if len(rec.Steps) != 1 || rec.Steps[0].Status != workflows.StatusSkipped {
		t.Fatalf("steps %+v, want review skipped", rec.Steps)
	}
	for _, name := range []string{"step-ran", "handler-ran"} {
		if _, err := os.Stat(filepath.Join(f.tmp, name)); err == nil {
			t.Errorf("%s exists: something of the refused run executed", name)
		}
	}
	f.ws.mu.Lock()
	prepared := len(f.ws.prepared)
	f.ws.mu.Unlock()
	if prepared != 0 {
		t.Errorf("a workspace was prepared %d times", prepared)
	}
	reports := rep.All()
	if len(reports) != 1 || reports[0].Phase != contract.PhaseFinal || reports[0].Status != workflows.StatusFailed ||
		!strings.Contains(reports[0].Error, "comment again") || reports[0].HeadSHA != "" {
		t.Fatalf("reports %+v, want one final failed report with the reason", reports)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.streamMsgs() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := f.streamMsgs(); n != 0 {
		t.Errorf("%d messages left: the refused run was not acked", n)
	}
}

// A run request whose params the loaded workflow does not declare (the
// workflow changed after the API queued it) is failed at claim naming the
// param, without running anything; declared params reach the steps.
func TestRunParamsCheckedAtClaim(t *testing.T) {
	t.Parallel()
	const wf = `
name: deploy
params: [{TARGET: staging}]
steps:
  - {id: show, run: 'printf "%s" "$TARGET" > $TMP/target'}
`
	f := newFixture(t, map[string]string{"deploy": wf}, nil, nil)
	f.start()
	bad := f.publish("deploy", func(r *queue.RunRequest) { r.Params = map[string]string{"BRANCH": "x"} })
	rec := f.waitRecord(bad, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusFailed || !strings.Contains(rec.Error, "has no param BRANCH") {
		t.Fatalf("unknown param: status %s error %q", rec.Status, rec.Error)
	}
	if _, err := os.Stat(filepath.Join(f.tmp, "target")); err == nil {
		t.Fatal("the step of the refused run ran")
	}
	good := f.publish("deploy", func(r *queue.RunRequest) { r.Params = map[string]string{"TARGET": "prod"} })
	if rec := f.waitRecord(good, 15*time.Second, "a terminal state", terminal); rec.Status != workflows.StatusSucceeded {
		t.Fatalf("declared param: status %s error %q", rec.Status, rec.Error)
	}
	if b, err := os.ReadFile(filepath.Join(f.tmp, "target")); err != nil || string(b) != "prod" {
		t.Errorf("the step saw TARGET=%q (%v), want prod", b, err)
	}
}
