package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/workflows"
)

// laggingWatch is the real run store whose watches first deliver the
// record as a replica that has not applied the claim holds it: queued,
// with no claimant (what the runners' watches got from a NATS node that
// rejoined the cluster in TestComposeUp).
type laggingWatch struct {
	*queue.RunStore
}

func (s laggingWatch) Watch(ctx context.Context, id string) (<-chan *queue.RunRecord, error) {
	rec, _, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	real, err := s.RunStore.Watch(ctx, id)
	if err != nil {
		return nil, err
	}
	old := *rec
	old.Status, old.Claimant, old.HeartbeatAt, old.StartedAt = workflows.StatusQueued, "", time.Time{}, nil
	out := make(chan *queue.RunRecord, 1)
	out <- &old
	go func() {
		defer close(out)
		for r := range real {
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// A watched record that contradicts the claim is a hint, not proof: the
// run goes on under its claim and finishes (before, the runner stopped it,
// dropped its result and acked its message, and the run stayed unfinished).
func TestStaleWatchedRecordKeepsTheClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	r, err := runner.New(f.runCfg, runner.Deps{Runs: laggingWatch{f.q.Runs()}, Workflows: f.wfs, Workspaces: f.ws, Engine: f.eng, Groups: f.q.Groups()})
	if err != nil {
		t.Fatal(err)
	}
	id := f.publish("count", nil)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "count", Event: *samplePR(), Attempt: 1}
	if err := r.Handle(context.Background(), &queue.Delivery{Request: req, NumDelivered: 1}); err != nil {
		t.Fatalf("Handle = %v, want nil", err)
	}
	rec := f.waitRecord(id, 5*time.Second, "the run's end", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.Claimant != "runner-a" {
		t.Fatalf("record: status %s claimant %q, want succeeded under runner-a", rec.Status, rec.Claimant)
	}
	if got := readFile(t, f.tmp, "executions"); got != id+"\n" {
		t.Fatalf("executions %q, want the run once", got)
	}
}

// A run whose claim was lost to a record that is queued with no claimant
// (nobody runs it) is handed back, not acked: the redelivery runs it.
func TestClaimLostToQueuedRecordIsHandedBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"slow": `
name: slow
steps:
  - {id: slow, run: 'sleep 2; echo "$HOOKRUN_RUN_ID" >> $TMP/executions'}
`}, nil, nil)
	ctx := context.Background()
	id := f.publish("slow", nil)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "slow", Event: *samplePR(), Attempt: 1}
	errc := make(chan error, 1)
	go func() { errc <- f.r.Handle(ctx, &queue.Delivery{Request: req, NumDelivered: 1}) }()
	f.waitRecord(id, 10*time.Second, "running", func(r *queue.RunRecord) bool { return r.Status == workflows.StatusRunning })
	if _, err := f.q.Runs().Modify(ctx, id, func(r *queue.RunRecord) bool {
		r.Status, r.Claimant = workflows.StatusQueued, ""
		return true
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, queue.ErrClaimLost) {
			t.Fatalf("Handle = %v, want the message handed back (a retry of ErrClaimLost)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the runner kept executing a run it lost")
	}
	if err := f.r.Handle(ctx, &queue.Delivery{Request: req, NumDelivered: 2}); err != nil {
		t.Fatalf("redelivery: Handle = %v, want nil", err)
	}
	rec := f.waitRecord(id, 5*time.Second, "the run's end", terminal)
	if rec.Status != workflows.StatusSucceeded {
		t.Fatalf("record after the redelivery: %s, want succeeded", rec.Status)
	}
}
