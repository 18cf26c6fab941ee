package runner_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

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
		Event:    &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindIssue, Repo: "o/r", Issue: &workflows.Issue{Number: 7}},
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
