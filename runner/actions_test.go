package runner_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// actionsRecorder keeps the reports it is given.
type actionsRecorder struct {
	mu   sync.Mutex
	reps []*contract.RunReport
}

func (r *actionsRecorder) Report(_ context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reps = append(r.reps, rep)
	return rep.Ref, nil
}

// TestOutboxCarriesActions: a final report kept in the outbox is delivered
// with the workflow's permissions and the steps' actions, so that a forge
// that was slow still gets the actions applied (forge.Report).
func TestOutboxCarriesActions(t *testing.T) {
	t.Parallel()
	q := openQueue(t, t.TempDir())
	defer q.Close()
	rec := &actionsRecorder{}
	ob := fastOutbox(t, q, rec, slog.New(slog.DiscardHandler), time.Minute)
	perms := &workflows.Permissions{Labels: []string{"bug"}, Comment: true, Targets: true}
	acts := &contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}, Comment: "hi"},
		Targets: []contract.TargetActions{{Number: 3, ActionSet: contract.ActionSet{State: "closed", Reason: "duplicate"}}}}
	r := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "01JDQ4V6RZ3M8W1K9T2XGQY7PB", Attempt: 1,
		Workflow: &workflows.Workflow{Name: "triage", Permissions: perms},
		Event:    &workflows.Event{Forge: workflows.GitHub, Kind: workflows.KindIssue, Repo: "o/r", Issue: &workflows.Issue{Number: 7}},
		Status:   workflows.StatusSucceeded, Results: &contract.Results{Actions: acts}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ob.Keep(ctx, r, errors.New("forge slow")); err != nil {
		t.Fatal(err)
	}
	ob.Start()
	defer ob.Close()
	eventually(t, 10*time.Second, "the kept report delivered", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.reps) == 1
	})
	got := rec.reps[0]
	if !reflect.DeepEqual(got.Workflow.Permissions, perms) {
		t.Errorf("delivered permissions %+v, want %+v", got.Workflow.Permissions, perms)
	}
	if got.Results == nil || !reflect.DeepEqual(got.Results.Actions, acts) {
		t.Errorf("delivered results %+v, want the actions %+v", got.Results, acts)
	}
}

// planningReporter stands for a forge's reporter: on the final report it
// decides the run's actions within its workflow's permissions and says
// what became of them (r.Acted), as forge.Report does.
type planningReporter struct{ saw *contract.RunReport }

func (p *planningReporter) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if r.Phase == contract.PhaseFinal && r.Results != nil {
		_, r.Acted = contract.PlanActions(r.Results.Actions, r.Workflow.Permissions, 7)
		p.saw = r
	}
	return r.Ref, nil
}

// TestActedInTheResult: a step's actions.json reaches the final report
// with the workflow's permissions, and what the reporter made of them
// (here: a label refused with the reason) is the run's Result.Acted, which
// the run record keeps.
func TestActedInTheResult(t *testing.T) {
	w := parse(t, `
permissions:
  labels: [bug]
steps:
  - id: triage
    run: |
      echo '{"labels": {"add": ["bug", "wontfix"]}}' > "$HOOKRUN_RESULTS/actions.json"
`)
	rep := &planningReporter{}
	eng, err := runner.NewEngine(runner.EngineConfig{Providers: runner.Providers{Host: hostExec()}, Logs: newMemSink(), Reporter: rep, LookupEnv: env(testEnv)})
	if err != nil {
		t.Fatal(err)
	}
	res := eng.Run(context.Background(), runner.RunSpec{ID: "r1", Workflow: w, Event: samplePR(), Workspace: t.TempDir()})
	if res.Status != workflows.StatusSucceeded || rep.saw == nil {
		t.Fatalf("run %s (%s); final report %v", res.Status, res.Error, rep.saw)
	}
	if rep.saw.Workflow.Permissions == nil || rep.saw.Workflow.Permissions.Labels[0] != "bug" {
		t.Errorf("final report's permissions %+v", rep.saw.Workflow.Permissions)
	}
	if res.Acted == nil || len(res.Acted.Refused) != 1 || res.Acted.Refused[0].Reason != `label "wontfix" is not in permissions.labels` {
		t.Errorf("result acted %+v, want wontfix refused", res.Acted)
	}
}
