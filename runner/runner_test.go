package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

// dirWorkspaces gives each run an empty directory under root. It is the
// runner's own Workspaces interface (providers/git has its own tests).
type dirWorkspaces struct {
	root     string
	failures atomic.Int32 // Prepare fails this many more times
	refuse   error        // Prepare returns it when set (a policy refusal)
	mu       sync.Mutex
	prepared []string
}

func (w *dirWorkspaces) Prepare(_ context.Context, runID string, _ *workflows.Event, _ contract.PrepareOptions) (contract.Workspace, error) {
	if w.refuse != nil {
		return contract.Workspace{}, w.refuse
	}
	if w.failures.Add(-1) >= 0 {
		return contract.Workspace{}, errors.New("mirror fetch failed: connection refused")
	}
	dir := filepath.Join(w.root, runID)
	w.mu.Lock()
	w.prepared = append(w.prepared, runID)
	w.mu.Unlock()
	return contract.Workspace{Dir: dir}, os.MkdirAll(dir, 0o755)
}

func (w *dirWorkspaces) Remove(runID string) error { return os.RemoveAll(filepath.Join(w.root, runID)) }

// workflowSet is a WorkflowSource over parsed workflows.
type workflowSet map[string]*workflows.Workflow

func (s workflowSet) Lookup(name string) (*workflows.Workflow, bool) { w, ok := s[name]; return w, ok }

func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fixture is an embedded queue with a runner over it.
type fixture struct {
	t      *testing.T
	q      *storestest.Queue
	r      *runner.Runner
	ws     *dirWorkspaces
	wfs    workflowSet
	calls  atomic.Int32 // handler invocations
	cons   *queue.Consumer
	tmp    string
	runCfg runner.Config
	eng    *engine.Engine
}

func newFixture(t *testing.T, yamls map[string]string, envVars map[string]string, mod func(*runner.Config)) *fixture {
	t.Helper()
	return newFixtureEngine(t, yamls, envVars, mod, nil)
}

// newFixtureEngine is newFixture whose engine's configuration engMod
// changes (a reporter, an outbox over the fixture's queue).
func newFixtureEngine(t *testing.T, yamls map[string]string, envVars map[string]string, mod func(*runner.Config), engMod func(*fixture, *engine.Config)) *fixture {
	t.Helper()
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: filepath.Join(tmp, "nats"), Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	f := &fixture{t: t, q: storestest.With(t, q), ws: &dirWorkspaces{root: filepath.Join(tmp, "ws")}, wfs: workflowSet{}, tmp: tmp}
	for name, y := range yamls {
		w, err := workflows.Parse(name+".yaml", []byte(strings.ReplaceAll(y, "$TMP", tmp)))
		if err != nil {
			t.Fatal(err)
		}
		f.wfs[w.Name] = w
	}
	if envVars == nil {
		envVars = testEnv
	}
	ec := engine.Config{
		Providers: engine.Providers{Host: enginetest.HostExec()},
		Logs:      f.q.Logs(),
		LookupEnv: enginetest.Env(envVars),
		Logger:    quietLogger(),
	}
	if engMod != nil {
		engMod(f, &ec)
	}
	eng, err := engine.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	f.runCfg = runner.Config{
		ID:                "runner-a",
		Concurrency:       2,
		HeartbeatInterval: 200 * time.Millisecond,
		PrepareRetry:      100 * time.Millisecond,
		Logger:            quietLogger(),
		// The fixture's workflows have no triggers and its events no
		// author association: these tests are about the runner's
		// mechanics. recheck_test.go runs the real CheckRequest.
		Recheck: func(*workflows.Workflow, *queue.RunRequest) error { return nil },
		Consumer: queue.ConsumerConfig{
			Durable: "test-runners", AckWait: 2 * time.Second, Heartbeat: 300 * time.Millisecond,
			FetchWait: 100 * time.Millisecond, Backoff: []time.Duration{100 * time.Millisecond}, DrainTimeout: 5 * time.Second,
		},
	}
	if mod != nil {
		mod(&f.runCfg)
	}
	f.eng = eng
	f.r, err = runner.New(f.runCfg, runner.Deps{Runs: f.q.Runs(), Workflows: f.wfs, Workspaces: f.ws, Engine: eng, Groups: f.q.Groups()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// start consumes with the runner's handler, counting invocations.
func (f *fixture) start() {
	f.t.Helper()
	cfg := f.runCfg.Consumer
	cfg.Concurrency = f.runCfg.Concurrency
	c, err := f.q.Consume(context.Background(), cfg, func(ctx context.Context, d *queue.Delivery) error {
		f.calls.Add(1)
		return f.r.Handle(ctx, d)
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.cons = c
	f.t.Cleanup(func() { _ = c.Close(context.Background()) })
}

var prSeq atomic.Int64

func (f *fixture) publish(workflow string, mod func(*queue.RunRequest)) string {
	f.t.Helper()
	n := prSeq.Add(1)
	ev := samplePR()
	ev.DeliveryID = fmt.Sprintf("delivery-%d-%d", time.Now().UnixNano(), n)
	req := &queue.RunRequest{Workflow: workflow, Event: *ev}
	if mod != nil {
		mod(req)
	}
	res, err := f.q.Publish(context.Background(), req)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.RunID
}

// waitRecord polls the run record until cond holds.
func (f *fixture) waitRecord(id string, d time.Duration, what string, cond func(*stores.RunRecord) bool) *stores.RunRecord {
	f.t.Helper()
	deadline := time.Now().Add(d)
	var rec *stores.RunRecord
	for time.Now().Before(deadline) {
		var err error
		rec, _, err = f.q.Runs().Get(context.Background(), id)
		if err == nil && cond(rec) {
			return rec
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	f.t.Fatalf("run %s: timed out waiting for %s; record:\n%s", id, what, b)
	return nil
}

func terminal(r *stores.RunRecord) bool { return r.Status.Terminal() }

// streamMsgs is the number of unacknowledged messages in HOOKRUN_RUNS.
func (f *fixture) streamMsgs() uint64 {
	f.t.Helper()
	nc, err := f.q.Connect("test")
	if err != nil {
		f.t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), queue.StreamRuns)
	if err != nil {
		f.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return info.State.Msgs
}

const countingWorkflow = `
name: count
steps:
  - {id: count, run: 'echo "$HOOKRUN_RUN_ID" >> $TMP/executions; echo counted'}
`

func TestRedeliveredFinishedRunIsAckedWithoutSecondExecution(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	f.start()
	id := f.publish("count", nil)
	rec := f.waitRecord(id, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.Attempt != 1 || rec.Claimant != "runner-a" {
		t.Fatalf("record = status %s attempt %d claimant %q error %q", rec.Status, rec.Attempt, rec.Claimant, rec.Error)
	}

	// The same run arrives again (a redelivery after a lost ack, or a
	// duplicate publish): a second message with the same run id.
	f.publish("count", func(r *queue.RunRequest) { r.ID = id })
	deadline := time.Now().Add(10 * time.Second)
	for (f.calls.Load() < 2 || f.streamMsgs() != 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if f.calls.Load() != 2 {
		t.Fatalf("handler called %d times, want 2", f.calls.Load())
	}
	if n := f.streamMsgs(); n != 0 {
		t.Errorf("%d messages left in the stream: the redelivery was not acked", n)
	}
	if got := strings.Count(enginetest.ReadFile(t, f.tmp, "executions"), id); got != 1 {
		t.Errorf("run executed %d times, want 1", got)
	}
	again, _, err := f.q.Runs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if again.Attempt != 1 || again.Status != workflows.StatusSucceeded {
		t.Errorf("record after redelivery: status %s attempt %d", again.Status, again.Attempt)
	}
	lines, err := f.q.Logs().Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range lines {
		if l.StepID == "count" && l.Stream == "stdout" {
			out = append(out, l.Text)
		}
	}
	if strings.Join(out, "|") != "counted" {
		t.Errorf("log store has %q for step count, want one line \"counted\"", out)
	}
}

func TestStaleClaimIsTakenOverWithNextAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	ctx := context.Background()
	ev := samplePR()
	id := queue.NewRunID()
	started := time.Now().Add(-time.Minute).UTC()
	// A runner claimed the run and died: its last heartbeat is a minute old.
	if _, err := f.q.Runs().Create(ctx, &stores.RunRecord{
		ID: id, Workflow: "count", Repo: ev.Repo, Status: workflows.StatusRunning, Attempt: 1, Event: *ev,
		Claimant: "dead-runner", HeartbeatAt: started, StartedAt: &started, CreatedAt: started,
	}); err != nil {
		t.Fatal(err)
	}
	f.start()
	f.publish("count", func(r *queue.RunRequest) { r.ID = id })
	rec := f.waitRecord(id, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.Attempt != 2 || rec.Claimant != "runner-a" {
		t.Errorf("record = status %s attempt %d claimant %q error %q; want succeeded, attempt 2, runner-a", rec.Status, rec.Attempt, rec.Claimant, rec.Error)
	}
	if got := strings.Count(enginetest.ReadFile(t, f.tmp, "executions"), id); got != 1 {
		t.Errorf("run executed %d times, want 1", got)
	}
}

func TestFreshClaimOfAnotherRunnerIsLeftAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	ctx := context.Background()
	ev := samplePR()
	id := queue.NewRunID()
	now := time.Now().UTC()
	rec := &stores.RunRecord{ID: id, Workflow: "count", Status: workflows.StatusRunning, Attempt: 1, Event: *ev,
		Claimant: "runner-b", HeartbeatAt: now, StartedAt: &now, CreatedAt: now}
	rev, err := f.q.Runs().Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "count", Event: *ev, Attempt: 1}
	err = f.r.Handle(ctx, &queue.Delivery{Request: req, NumDelivered: 2})
	if err == nil || !strings.Contains(err.Error(), "running on runner-b") {
		t.Fatalf("Handle = %v, want a retry because runner-b is alive", err)
	}
	if enginetest.ReadFile(t, f.tmp, "executions") != "" {
		t.Fatal("the run was executed although another runner holds a fresh claim")
	}
	// On the last delivery before the queue would give up (and mark the
	// run failed under its live claimant) the delivery is acked instead.
	if err := f.r.Handle(ctx, &queue.Delivery{Request: req, NumDelivered: 4}); err != nil {
		t.Errorf("Handle on delivery 4 of 5 = %v, want nil (ack, leave the run to runner-b)", err)
	}
	if got, _, _ := f.q.Runs().Get(ctx, id); got.Status != workflows.StatusRunning || got.Claimant != "runner-b" {
		t.Errorf("record changed: %s %s", got.Status, got.Claimant)
	}
	// runner-b stops heartbeating: the next delivery takes the run over.
	rec.HeartbeatAt = now.Add(-time.Minute)
	if _, err := f.q.Runs().Update(ctx, rec, rev); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Handle(ctx, &queue.Delivery{Request: req, NumDelivered: 3}); err != nil {
		t.Fatalf("Handle after the claim went stale: %v", err)
	}
	got, _, _ := f.q.Runs().Get(ctx, id)
	if got.Status != workflows.StatusSucceeded || got.Attempt != 2 {
		t.Errorf("after takeover: status %s attempt %d", got.Status, got.Attempt)
	}
}

func TestShutdownHandsTheRunBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"slow": `
name: slow
steps:
  - {id: slow, run: 'echo started >> $TMP/executions; sleep 5'}
handler_on:
  exit: {run: 'echo handler >> $TMP/executions'}
`}, nil, nil)
	ctx := context.Background()
	id := f.publish("slow", nil)
	hctx, cancel := context.WithCancelCause(ctx)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "slow", Event: *samplePR(), Attempt: 1}
	errc := make(chan error, 1)
	go func() { errc <- f.r.Handle(hctx, &queue.Delivery{Request: req, NumDelivered: 1}) }()
	// The heartbeat writes the step states while the run is in progress.
	f.waitRecord(id, 10*time.Second, "step slow running in the record", func(r *stores.RunRecord) bool {
		return r.Status == workflows.StatusRunning && len(r.Steps) == 1 && r.Steps[0].Status == workflows.StatusRunning
	})
	for enginetest.ReadFile(t, f.tmp, "executions") == "" {
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	cancel(queue.ErrShuttingDown)
	select {
	case err := <-errc:
		if err == nil {
			t.Error("Handle returned nil on shutdown; the message would be acked")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Handle did not return after shutdown")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %s", d)
	}
	rec, _, _ := f.q.Runs().Get(ctx, id)
	if rec.Status != workflows.StatusQueued || rec.Claimant != "" || rec.Attempt != 1 {
		t.Errorf("after shutdown: status %s claimant %q attempt %d, want queued, none, 1", rec.Status, rec.Claimant, rec.Attempt)
	}
	if e := enginetest.ReadFile(t, f.tmp, "executions"); strings.Contains(e, "handler") {
		t.Errorf("a handler ran for a run handed back on shutdown: %q", e)
	}
}

func TestLostClaimStopsExecution(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"slow": `
name: slow
steps:
  - {id: slow, run: 'sleep 5; echo finished >> $TMP/executions'}
`}, nil, nil)
	ctx := context.Background()
	id := f.publish("slow", nil)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "slow", Event: *samplePR(), Attempt: 1}
	errc := make(chan error, 1)
	go func() { errc <- f.r.Handle(ctx, &queue.Delivery{Request: req, NumDelivered: 1}) }()
	f.waitRecord(id, 10*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	// Another runner took the run over (we looked dead to it).
	if _, err := f.q.Runs().Modify(ctx, id, func(r *stores.RunRecord) bool {
		r.Claimant, r.Attempt, r.HeartbeatAt = "runner-b", r.Attempt+1, time.Now().UTC()
		return true
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		// Not acked: the message is the other runner's as much (an ack
		// would end it for that runner's delivery too, and nothing would
		// deliver the run again should it die); handed back, not given up.
		if err == nil || queue.IsTerm(err) || !errors.Is(err, stores.ErrClaimLost) {
			t.Errorf("Handle = %v, want the message handed back with the lost claim (the other runner owns the run now)", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the runner kept executing a run it lost")
	}
	rec, _, _ := f.q.Runs().Get(ctx, id)
	if rec.Claimant != "runner-b" || rec.Status != workflows.StatusRunning || rec.Attempt != 2 {
		t.Errorf("record overwritten by the loser: claimant %q status %s attempt %d", rec.Claimant, rec.Status, rec.Attempt)
	}
	time.Sleep(100 * time.Millisecond)
	if enginetest.ReadFile(t, f.tmp, "executions") != "" {
		t.Error("the lost run's step was not stopped")
	}
}

func TestCancelAndConcurrencyGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"pr": `
name: pr
concurrency: {group: pull_request, cancel_in_progress: true}
steps:
  - {id: work, run: 'echo "start $HOOKRUN_RUN_ID" >> $TMP/executions; sleep 5'}
handler_on:
  cancel: {run: 'echo "cancelled $HOOKRUN_RUN_ID" >> $TMP/executions'}
`}, nil, nil)
	f.start()
	first := f.publish("pr", nil)
	f.waitRecord(first, 10*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	start := time.Now()
	// A newer run for the same pull request cancels the first.
	second := f.publish("pr", nil)
	rec := f.waitRecord(first, 5*time.Second, "cancelled", terminal)
	if rec.Status != workflows.StatusCancelled {
		t.Errorf("first run = %s (%s), want cancelled by the newer run", rec.Status, rec.Error)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if rec.ConcurrencyGroup != "pr:pr:octo/demo#7" {
		t.Errorf("concurrency group = %q", rec.ConcurrencyGroup)
	}
	if !strings.Contains(enginetest.ReadFile(t, f.tmp, "executions"), "cancelled "+first) {
		t.Errorf("cancel handler did not run for the first run:\n%s", enginetest.ReadFile(t, f.tmp, "executions"))
	}

	// Runner.Cancel (the API) stops the second one.
	f.waitRecord(second, 10*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	if err := f.r.Cancel(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	rec = f.waitRecord(second, 5*time.Second, "cancelled", terminal)
	if rec.Status != workflows.StatusCancelled {
		t.Errorf("second run = %s, want cancelled", rec.Status)
	}
	if err := f.r.Cancel(context.Background(), second); !errors.Is(err, runner.ErrRunFinished) {
		t.Errorf("Cancel of a finished run = %v, want ErrRunFinished", err)
	}
	if err := f.r.Cancel(context.Background(), "01NOPE"); !errors.Is(err, stores.ErrNotFound) {
		t.Errorf("Cancel of an unknown run = %v, want ErrNotFound", err)
	}
}

// A run of a cancel_in_progress group claimed after a newer run of its
// group started (it was accepted first but delivered late) is superseded:
// it ends cancelled without running a step, and the newer run goes on.
// Three runs started in order each cancel the one before.
func TestCancelInProgressSupersedesLateOlderRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"pr": `
name: pr
concurrency: {group: pull_request, cancel_in_progress: true}
steps:
  - {id: work, run: 'echo "start $HOOKRUN_RUN_ID" >> $TMP/executions; sleep 5'}
`}, nil, nil)
	f.start()
	late := queue.NewRunID() // accepted first, delivered after the newer run started
	newer := f.publish("pr", nil)
	f.waitRecord(newer, 10*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	f.publish("pr", func(r *queue.RunRequest) { r.ID = late })
	rec := f.waitRecord(late, 10*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusCancelled || !strings.Contains(rec.Error, "superseded by the newer run "+newer) {
		t.Errorf("late older run = %s (%q), want cancelled as superseded by %s", rec.Status, rec.Error, newer)
	}
	if ex := enginetest.ReadFile(t, f.tmp, "executions"); strings.Contains(ex, late) {
		t.Errorf("the superseded run executed a step:\n%s", ex)
	}
	if rec, _, _ := f.q.Runs().Get(context.Background(), newer); rec.Status != workflows.StatusRunning || rec.CancelRequested {
		t.Errorf("the newer run = %s (cancel requested %v), want it running on", rec.Status, rec.CancelRequested)
	}
	third := f.publish("pr", nil)
	if rec := f.waitRecord(newer, 10*time.Second, "cancelled", terminal); rec.Status != workflows.StatusCancelled {
		t.Errorf("second run = %s, want cancelled by the third", rec.Status)
	}
	f.waitRecord(third, 10*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	if err := f.r.Cancel(context.Background(), third); err != nil {
		t.Fatal(err)
	}
	f.waitRecord(third, 10*time.Second, "cancelled", terminal)
}

// A cancel requested through the record alone (another process: `hookrun
// ingress`'s API) stops a running run at once, long before its claimant's
// next heartbeat: the runner hears it on its own subject, without a watch
// of each run's record.
func TestCancelFromAnotherProcessIsHeardAtOnce(t *testing.T) {
	t.Parallel()
	const heartbeat = 10 * time.Second
	f := newFixture(t, map[string]string{"slow": `
name: slow
steps:
  - {id: slow, run: 'sleep 30'}
`}, nil, func(c *runner.Config) {
		c.HeartbeatInterval = heartbeat
		c.Consumer.AckWait = 3 * heartbeat
	})
	c, err := f.r.Start(context.Background(), f.q.Queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	id := f.publish("slow", nil)
	f.waitRecord(id, 15*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status == workflows.StatusRunning })
	start := time.Now()
	if _, err := f.q.Runs().RequestCancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecord(id, 2*heartbeat, "cancelled", terminal)
	took := time.Since(start)
	if rec.Status != workflows.StatusCancelled {
		t.Errorf("run = %s (%s), want cancelled", rec.Status, rec.Error)
	}
	if took > heartbeat/2 {
		t.Errorf("the cancel took %s: it waited for the heartbeat (%s)", took.Round(time.Millisecond), heartbeat)
	}
}

func TestCancelQueuedRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	id := f.publish("count", nil)
	if err := f.r.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	rec, _, err := f.q.Runs().Get(context.Background(), id)
	if err != nil || rec.Status != workflows.StatusCancelled || !rec.CancelRequested || rec.FinishedAt == nil {
		t.Fatalf("queued run after Cancel: %+v, %v", rec, err)
	}
	f.start()
	deadline := time.Now().Add(10 * time.Second)
	for (f.calls.Load() < 1 || f.streamMsgs() != 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if f.streamMsgs() != 0 {
		t.Error("the cancelled run's message was not acked")
	}
	if enginetest.ReadFile(t, f.tmp, "executions") != "" {
		t.Error("a run cancelled while queued was executed")
	}
}

func TestPrepareFailureIsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	f.ws.failures.Store(2)
	f.start()
	id := f.publish("count", nil)
	rec := f.waitRecord(id, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusSucceeded {
		t.Errorf("status %s (%s), want succeeded after two failed workspace preparations", rec.Status, rec.Error)
	}
	if c := f.calls.Load(); c != 3 {
		t.Errorf("handler called %d times, want 3 (two infra failures, then success)", c)
	}
}

func TestSecretsNeverReachTheRunRecordOrLogStore(t *testing.T) {
	t.Parallel()
	const secret = "tok-9f8e7d6c5b4a"
	e := map[string]string{"DEPLOY_TOKEN": secret}
	for k, v := range testEnv {
		e[k] = v
	}
	f := newFixture(t, map[string]string{"sec": `
name: sec
secrets: [DEPLOY_TOKEN]
steps:
  - {id: show, run: 'echo "token=$DEPLOY_TOKEN"; echo "$DEPLOY_TOKEN" >&2', output: SHOWN}
  - {id: fail, run: 'echo "bad $DEPLOY_TOKEN"; exit 1', depends: [show]}
`}, e, nil)
	f.start()
	id := f.publish("sec", nil)
	rec := f.waitRecord(id, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusFailed {
		t.Errorf("status %s", rec.Status)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := f.q.Logs().Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := json.Marshal(lines)
	if len(lines) == 0 || !strings.Contains(string(lb), "token=***") {
		t.Errorf("log store lacks the masked line: %s", lb)
	}
	for where, text := range map[string]string{"run record": string(b), "log store": string(lb)} {
		if strings.Contains(text, secret) {
			t.Errorf("the secret appears in the %s:\n%s", where, text)
		}
	}
}
