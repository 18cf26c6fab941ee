package engine_test

import (
	"context"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

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
	w := enginetest.Parse(t, `
permissions:
  labels: [bug]
steps:
  - id: triage
    run: |
      echo '{"labels": {"add": ["bug", "wontfix"]}}' > "$HOOKRUN_RESULTS/actions.json"
`)
	rep := &planningReporter{}
	eng, err := engine.New(engine.Config{Providers: engine.Providers{Host: enginetest.HostExec()}, Logs: enginetest.NewMemSink(), Reporter: rep, LookupEnv: enginetest.Env(testEnv)})
	if err != nil {
		t.Fatal(err)
	}
	res := eng.Run(context.Background(), engine.RunSpec{ID: "r1", Workflow: w, Event: samplePR(), Workspace: t.TempDir()})
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
