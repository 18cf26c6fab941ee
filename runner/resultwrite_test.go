package runner_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// unansweredFinish is the real run store whose first Finish gets no
// answer from the stream (as while a NATS node is lost): the write is
// lost, or (landed) made and its answer lost.
type unansweredFinish struct {
	*stores.RunStore
	landed bool
	calls  *atomic.Int32
}

func (s unansweredFinish) Finish(ctx context.Context, id string, f stores.FinishSpec) error {
	if s.calls.Add(1) > 1 {
		return s.RunStore.Finish(ctx, id, f)
	}
	if s.landed {
		if err := s.RunStore.Finish(ctx, id, f); err != nil {
			return err
		}
	}
	return fmt.Errorf("finishing run %s: updating run record %s: %w", id, id, jetstream.ErrNoStreamResponse)
}

// A run's result whose write got no answer is written again, not handed
// back: the run is not executed a second time (before, the redelivery
// found the runner's own claim stale and ran it again, as TestScaleOut
// showed under a NATS node's loss), and a write that did land counts as
// written.
func TestResultWrittenAgainNotRunAgain(t *testing.T) {
	t.Parallel()
	for _, landed := range []bool{false, true} {
		t.Run(map[bool]string{false: "lost", true: "landed"}[landed], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
			calls := &atomic.Int32{}
			id, err := handleWith(t, f, unansweredFinish{f.q.Runs(), landed, calls})
			if err != nil {
				t.Fatalf("Handle = %v, want nil (the result written on a later try)", err)
			}
			rec := f.waitRecord(id, 5*time.Second, "the run's end", terminal)
			if rec.Status != workflows.StatusSucceeded || rec.Claimant != "runner-a" || rec.Attempt != 1 {
				t.Fatalf("record: status %s claimant %q attempt %d, want succeeded under runner-a at attempt 1", rec.Status, rec.Claimant, rec.Attempt)
			}
			if n := calls.Load(); n != 2 {
				t.Fatalf("%d writes of the result, want 2", n)
			}
			if got := enginetest.ReadFile(t, f.tmp, "executions"); got != id+"\n" {
				t.Fatalf("executions %q, want the run once", got)
			}
		})
	}
}
