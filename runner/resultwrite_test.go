package runner_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
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
// written. A write never answered at all does not take the whole
// StoreTimeout (here 2 s): the next try comes within it, and the run ends
// at once instead of through a hand-back and a redelivery (TestScaleOut
// saw a first try take all 10 s while a NATS node was killed).
func TestResultWrittenAgainNotRunAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		landed bool
		hung   bool
	}{{"lost", false, false}, {"landed", true, false}, {"never answered, lost", false, true}, {"never answered, landed", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, func(cfg *runner.Config) { cfg.StoreTimeout = 2 * time.Second })
			calls := &atomic.Int32{}
			var store runner.RunStore = unansweredFinish{f.q.Runs(), c.landed, calls}
			if c.hung {
				store = hungFinish{unansweredFinish{f.q.Runs(), c.landed, calls}}
			}
			id, err := handleWith(t, f, store)
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

// hungFinish is the real run store whose first Finish is never answered
// (a request lost with a NATS node): it returns only when its context
// ends, having written the result when landed.
type hungFinish struct {
	unansweredFinish
}

func (s hungFinish) Finish(ctx context.Context, id string, f stores.FinishSpec) error {
	if s.calls.Load() > 0 {
		return s.unansweredFinish.Finish(ctx, id, f)
	}
	s.calls.Add(1)
	if s.landed {
		if err := s.RunStore.Finish(ctx, id, f); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return fmt.Errorf("finishing run %s: updating run record %s: %w", id, id, ctx.Err())
}

// takenOverMeanwhile is the real run store whose first Finish gets no
// answer and, before the write is made again, the same runner takes its
// own run over: its heartbeat went stale while the stream did not answer,
// and the message came again (what TestScaleOut showed under a NATS node's
// loss, with one runner's claim of attempt 2 after its attempt 1).
type takenOverMeanwhile struct {
	*stores.RunStore
	calls *atomic.Int32
}

func (s takenOverMeanwhile) Finish(ctx context.Context, id string, f stores.FinishSpec) error {
	if s.calls.Add(1) > 1 {
		return s.RunStore.Finish(ctx, id, f)
	}
	res, err := s.Claim(ctx, &queue.RunRequest{ID: id}, stores.ClaimSpec{Claimant: f.Claimant, Now: f.Now.Add(time.Hour),
		StaleAfter: time.Minute, Resume: true})
	if err != nil || res.Outcome != stores.Claimed || !res.TakeOver || res.Record.Attempt != f.Attempt+1 {
		return fmt.Errorf("taking the run over: %+v, %w", res, errors.Join(err, errors.New("not taken over")))
	}
	return fmt.Errorf("finishing run %s: updating run record %s: %w", id, id, jetstream.ErrNoStreamResponse)
}

// An attempt's result made again after the same runner took its run over
// (the next attempt) is refused: the record stays the later attempt's,
// running, and the earlier attempt says it did not write its result
// rather than "run finished" (before, the claim was told by the runner
// alone, the earlier attempt's result landed on the later attempt's
// record, and the run was logged finished twice). Its message is handed
// back, not acked: it is the later attempt's delivery as much.
func TestStaleAttemptResultRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	logs := &syncBuffer{}
	f.runCfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	calls := &atomic.Int32{}
	id, err := handleWith(t, f, takenOverMeanwhile{f.q.Runs(), calls})
	if err == nil || queue.IsTerm(err) || !errors.Is(err, stores.ErrClaimLost) {
		t.Fatalf("Handle = %v, want the message handed back with the lost claim (the run is held by its later attempt, whose delivery it is too)", err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d writes of the result, want 2", n)
	}
	rec, _, err := f.q.Runs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusRunning || rec.Claimant != "runner-a" || rec.Attempt != 2 || rec.FinishedAt != nil {
		t.Fatalf("record: status %s claimant %q attempt %d finished %v, want running under runner-a at attempt 2",
			rec.Status, rec.Claimant, rec.Attempt, rec.FinishedAt)
	}
	out := logs.String()
	if strings.Contains(out, "msg=\"run finished\"") {
		t.Errorf("attempt 1 logged \"run finished\" without writing its result:\n%s", out)
	}
	if !strings.Contains(out, "run record no longer ours") {
		t.Errorf("attempt 1 did not say its result was not written:\n%s", out)
	}
}
