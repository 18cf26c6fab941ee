package runner_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

// recordingReporter keeps the reports that reached it.
type recordingReporter struct {
	mu   sync.Mutex
	seen []string // run id + phase
}

func (r *recordingReporter) Report(_ context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, rep.RunID+" "+string(rep.Phase))
	return contract.ReportRef{CommentID: 42}, nil
}

// An older run's reports never reach a sticky comment a newer run of the
// same workflow and pull request reported in; other pull requests,
// workflows and comment modes are not affected.
func TestNewestOnlyKeepsTheNewerRunsComment(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: filepath.Join(t.TempDir(), "nats"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	q := storestest.With(t, raw)
	next := &recordingReporter{}
	rep := runner.NewestOnly(next, q.Groups(), quietLogger())
	sticky := enginetest.Parse(t, "name: review\nsteps: [{id: a, run: 'true'}]\n")
	other := enginetest.Parse(t, "name: other\nsteps: [{id: a, run: 'true'}]\n")
	fresh := enginetest.Parse(t, "name: fresh\nreport: {comment: new}\nsteps: [{id: a, run: 'true'}]\n")
	pr7, pr8 := samplePR(), samplePR()
	pr8.PullRequest.Number = 8
	send := func(w *workflows.Workflow, ev *workflows.Event, run string, phase contract.Phase) {
		t.Helper()
		ref, err := rep.Report(ctx, &contract.RunReport{Phase: phase, RunID: run, Workflow: w, Event: ev, Ref: contract.ReportRef{CommentID: 7}})
		if err != nil {
			t.Fatal(err)
		}
		if ref.CommentID == 0 {
			t.Fatal("the report's ref was lost")
		}
	}
	send(sticky, pr7, "01J00OLD", contract.PhaseStart)
	send(sticky, pr7, "01J01NEW", contract.PhaseStart)
	send(sticky, pr7, "01J00OLD", contract.PhaseFinal) // cancelled, late: dropped
	send(sticky, pr8, "01J00OLD", contract.PhaseFinal) // another pull request
	send(other, pr7, "01J00OLD", contract.PhaseFinal)  // another workflow
	send(fresh, pr7, "01J01NEW", contract.PhaseFinal)
	send(fresh, pr7, "01J00OLD", contract.PhaseFinal) // a comment of its own
	send(sticky, pr7, "01J01NEW", contract.PhaseFinal)
	want := []string{"01J00OLD start", "01J01NEW start", "01J00OLD final", "01J00OLD final", "01J01NEW final", "01J00OLD final", "01J01NEW final"}
	next.mu.Lock()
	defer next.mu.Unlock()
	if len(next.seen) != len(want) {
		t.Fatalf("reports = %q, want %q", next.seen, want)
	}
	for i := range want {
		if next.seen[i] != want[i] {
			t.Fatalf("reports = %q, want %q", next.seen, want)
		}
	}
}
