package runner_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// heldFinish is the real run store whose first Finish is not answered
// until release is closed (the stream takes no write while a NATS node is
// lost); started is closed when that Finish begins.
type heldFinish struct {
	*stores.RunStore
	once             *sync.Once
	started, release chan struct{}
}

func (s heldFinish) Finish(ctx context.Context, id string, f stores.FinishSpec) error {
	first := false
	s.once.Do(func() { first = true; close(s.started) })
	if first {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.RunStore.Finish(ctx, id, f)
}

// A delivery of a run that an earlier delivery still executes in the same
// runner is handed back, not taken over, even though the run's claim
// looks stale (its heartbeats stopped reaching the stream and the message
// came again). Before, the runner took its own run over: the run executed
// twice in the same directories, and the earlier attempt's Remove deleted
// the later attempt's workspace under its next step, which failed
// (TestComposeUp, a NATS node killed). Now the earlier attempt writes its
// result once the stream answers, and the run ends once, succeeded.
func TestRedeliveryOfARunExecutingHereIsHandedBack(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64 // added to the runner's clock
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, func(cfg *runner.Config) {
		cfg.StoreTimeout = 20 * time.Second // the held Finish's try waits a quarter of it
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	store := heldFinish{RunStore: f.q.Runs(), once: &sync.Once{}, started: make(chan struct{}), release: make(chan struct{})}
	r, err := runner.New(f.runCfg, runner.Deps{Runs: store, Workflows: f.wfs, Workspaces: f.ws, Engine: f.eng, Groups: f.q.Groups()})
	if err != nil {
		t.Fatal(err)
	}
	id := f.publish("count", nil)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "count", Event: *samplePR(), Attempt: 1}
	first := make(chan error, 1)
	go func() { first <- r.Handle(context.Background(), &queue.Delivery{Request: req, NumDelivered: 1}) }()
	select {
	case <-store.started:
	case err := <-first:
		t.Fatalf("the first delivery ended before writing its result: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the first delivery never wrote its result")
	}
	// An hour on, the claim is stale by the store's reckoning.
	skew.Store(int64(time.Hour))
	again := *req
	err = r.Handle(context.Background(), &queue.Delivery{Request: &again, NumDelivered: 2})
	if !errors.Is(err, runner.ErrRunningHere) || queue.IsTerm(err) {
		t.Fatalf("second delivery: Handle = %v, want it handed back (%v)", err, runner.ErrRunningHere)
	}
	rec, _, gerr := f.q.Runs().Get(context.Background(), id)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if rec.Status != workflows.StatusRunning || rec.Attempt != 1 {
		t.Fatalf("record after the second delivery: status %s attempt %d, want running at attempt 1 (not taken over)", rec.Status, rec.Attempt)
	}
	close(store.release)
	if err := <-first; err != nil {
		t.Fatalf("first delivery: Handle = %v, want nil (its result written once the stream answers)", err)
	}
	rec = f.waitRecord(id, 5*time.Second, "the run's end", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.Attempt != 1 {
		t.Fatalf("record: status %s attempt %d, want succeeded at attempt 1", rec.Status, rec.Attempt)
	}
	if got := enginetest.ReadFile(t, f.tmp, "executions"); got != id+"\n" {
		t.Fatalf("executions %q, want the run once", got)
	}
	// Delivered again after the hand-back, the run is found finished.
	if err := r.Handle(context.Background(), &queue.Delivery{Request: &again, NumDelivered: 3}); err != nil {
		t.Fatalf("third delivery: Handle = %v, want nil (the run finished)", err)
	}
}
