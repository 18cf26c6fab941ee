package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// laggingWatch is the real run store whose watches first deliver the
// record as a replica that has not applied the claim holds it: queued,
// with no claimant (what the runners' watches got from a NATS node that
// rejoined the cluster in TestComposeUp).
type laggingWatch struct {
	*stores.RunStore
}

func (s laggingWatch) Watch(ctx context.Context, id string) (<-chan *stores.RunRecord, error) {
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
	out := make(chan *stores.RunRecord, 1)
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
// The runner no longer watches records (it hears cancels on its subject);
// the run store's lagging watch stays to keep this so.
func TestStaleWatchedRecordKeepsTheClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	id, err := handleWith(t, f, laggingWatch{f.q.Runs()})
	if err != nil {
		t.Fatalf("Handle = %v, want nil", err)
	}
	rec := f.waitRecord(id, 5*time.Second, "the run's end", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.Claimant != "runner-a" {
		t.Fatalf("record: status %s claimant %q, want succeeded under runner-a", rec.Status, rec.Claimant)
	}
	if got := enginetest.ReadFile(t, f.tmp, "executions"); got != id+"\n" {
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
	f.waitRecord(id, 10*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	if _, err := f.q.Runs().Modify(ctx, id, func(r *stores.RunRecord) bool {
		r.Status, r.Claimant = workflows.StatusQueued, ""
		return true
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, stores.ErrClaimLost) {
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

// handleWith handles the first delivery of a new run of f's "count"
// workflow on a runner of f whose run store is runs; it returns the run's
// id and what Handle answered.
func handleWith(t *testing.T, f *fixture, runs runner.RunStore) (string, error) {
	t.Helper()
	r, err := runner.New(f.runCfg, runner.Deps{Runs: runs, Workflows: f.wfs, Workspaces: f.ws, Engine: f.eng, Groups: f.q.Groups()})
	if err != nil {
		t.Fatal(err)
	}
	id := f.publish("count", nil)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "count", Event: *samplePR(), Attempt: 1}
	return id, r.Handle(context.Background(), &queue.Delivery{Request: req, NumDelivered: 1})
}

// A runner whose claim another took over hands the message back rather
// than acking it: JetStream acks a message, not a delivery, so an ack
// would end it for the new claimant's delivery too. Should the new
// claimant die (here it never ran beyond its record), the run is delivered
// again once that claim goes stale, taken over and finished; before, the
// ack left it running under the dead claimant for good.
func TestLostClaimLeavesTheMessageToTheNewClaimant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"slow": `
name: slow
steps:
  - {id: slow, run: 'sleep 1; echo "$HOOKRUN_RUN_ID" >> $TMP/executions'}
`}, nil, nil)
	f.start()
	ctx := context.Background()
	id := f.publish("slow", nil)
	f.waitRecord(id, 10*time.Second, "running under runner-a", func(r *stores.RunRecord) bool {
		return r.Status == workflows.StatusRunning && r.Claimant == "runner-a"
	})
	// runner-b takes the run over, and dies at once: its claim goes stale.
	if _, err := f.q.Runs().Modify(ctx, id, func(r *stores.RunRecord) bool {
		r.Claimant, r.Attempt, r.HeartbeatAt = "runner-b", r.Attempt+1, time.Now().UTC()
		return true
	}); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecord(id, 15*time.Second, "the run's end", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.Claimant != "runner-a" || rec.Attempt != 3 {
		t.Fatalf("record: status %s claimant %q attempt %d, want succeeded under runner-a at attempt 3 (taken over from the dead runner-b)",
			rec.Status, rec.Claimant, rec.Attempt)
	}
	if got := enginetest.ReadFile(t, f.tmp, "executions"); got != id+"\n" {
		t.Fatalf("executions %q, want the run once (attempt 1 was stopped when it lost its claim)", got)
	}
}
