package runner_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// swappableWorkflows is a workflow source whose contents change while the
// runner runs, as a reload does.
type swappableWorkflows struct {
	mu  sync.Mutex
	set map[string]*workflows.Workflow
}

func (s *swappableWorkflows) Lookup(name string) (*workflows.Workflow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.set[name]
	return w, ok
}

func (s *swappableWorkflows) put(w *workflows.Workflow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set[w.Name] = w
}

// startWith starts a runner over the fixture's queue with its own workflow
// source; it returns the source.
func (f *fixture) startWith(deliveries int) *swappableWorkflows {
	f.t.Helper()
	src := &swappableWorkflows{set: map[string]*workflows.Workflow{}}
	cfg := f.runCfg
	cfg.WorkflowRetry = 100 * time.Millisecond
	cfg.WorkflowDeliveries = deliveries
	cfg.Consumer.MaxDeliver = 20
	r, err := runner.New(cfg, runner.Deps{Runs: f.q.Runs(), Workflows: src, Workspaces: f.ws, Engine: f.eng, Groups: f.q.Groups()})
	if err != nil {
		f.t.Fatal(err)
	}
	ccfg := cfg.Consumer
	ccfg.Concurrency = cfg.Concurrency
	c, err := f.q.Consume(context.Background(), ccfg, func(ctx context.Context, d *queue.Delivery) error {
		f.calls.Add(1)
		return r.Handle(ctx, d)
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = c.Close(context.Background()) })
	return src
}

// A runner that has not loaded a run's workflow yet (a rolling deploy)
// hands the run back, and runs it once its workflows reloaded.
func TestUnknownWorkflowIsHandedBackUntilLoaded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	src := f.startWith(20)
	id := f.publish("count", nil)
	deadline := time.Now().Add(15 * time.Second)
	for f.calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	rec, _, err := f.q.Runs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() < 3 || rec.Status != workflows.StatusQueued {
		t.Fatalf("after %d deliveries the run is %s (%s), want queued and handed back", f.calls.Load(), rec.Status, rec.Error)
	}
	src.put(enginetest.Parse(t, strings.ReplaceAll(countingWorkflow, "$TMP", f.tmp)))
	if rec := f.waitRecord(id, 15*time.Second, "finished", terminal); rec.Status != workflows.StatusSucceeded {
		t.Fatalf("run = %s (%s), want succeeded once the workflow is loaded", rec.Status, rec.Error)
	}
}

// A runner with another version of the workflow than the run was queued
// with hands it back too, and runs it when the version arrives.
func TestOtherWorkflowDigestIsHandedBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	src := f.startWith(20)
	old := enginetest.Parse(t, strings.ReplaceAll(countingWorkflow, "$TMP", f.tmp))
	src.put(old)
	nw := *old
	nw.Digest = "sha256:newer"
	id := f.publish("count", func(r *queue.RunRequest) { r.WorkflowDigest = nw.Digest })
	deadline := time.Now().Add(15 * time.Second)
	for f.calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if rec, _, _ := f.q.Runs().Get(context.Background(), id); f.calls.Load() < 3 || rec.Status != workflows.StatusQueued {
		t.Fatalf("after %d deliveries the run is %s, want queued and handed back", f.calls.Load(), rec.Status)
	}
	src.put(&nw)
	if rec := f.waitRecord(id, 15*time.Second, "finished", terminal); rec.Status != workflows.StatusSucceeded {
		t.Fatalf("run = %s (%s), want succeeded at the digest it was queued with", rec.Status, rec.Error)
	}
}

// Past its bound, the run fails, saying why.
func TestUnknownWorkflowFailsAfterItsBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	f.startWith(3)
	id := f.publish("count", nil)
	rec := f.waitRecord(id, 15*time.Second, "failed", terminal)
	if rec.Status != workflows.StatusFailed || !strings.Contains(rec.Error, "workflow count is not loaded on runner runner-a") || !strings.Contains(rec.Error, "after 3 deliveries") {
		t.Fatalf("run = %s (%q), want failed: not loaded, after 3 deliveries", rec.Status, rec.Error)
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("delivered %d times, want 3", n)
	}
}
