package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// release lets the deploy steps finish.
func (f *fixture) release() {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.tmp, "release"), nil, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// releaseAtEnd releases the deploy steps before the runners close (cleanups
// run last registered first), also when the test failed.
func (f *fixture) releaseAtEnd() { f.t.Cleanup(f.release) }

// startAnother starts a second runner (another id, the same queue, the
// same consumer) beside the fixture's.
func (f *fixture) startAnother(id string) {
	f.t.Helper()
	cfg := f.runCfg
	cfg.ID = id
	r, err := runner.New(cfg, runner.Deps{Runs: f.q.Runs(), Workflows: f.wfs, Workspaces: f.ws, Engine: f.eng, Groups: f.q.Groups()})
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
}

const deployWorkflow = `
name: deploy
concurrency: {group: deploy}
steps:
  - id: deploy
    run: |
      echo "start $HOOKRUN_RUN_ID" >> $TMP/executions
      while [ ! -e $TMP/release ]; do sleep 0.05; done
      sleep 0.3
      echo "end $HOOKRUN_RUN_ID" >> $TMP/executions
`

const otherWorkflow = `
name: other
steps:
  - {id: other, run: 'echo other'}
`

// Without cancel_in_progress, the runs of a group run one at a time across
// runners, in the order they were accepted, the waiting ones queued, each
// starting soon after the previous one ended; runs of other workflows are
// not held up by the waiting ones.
func TestConcurrencyGroupSerializesAcrossRunners(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"deploy": deployWorkflow, "other": otherWorkflow}, nil, func(c *runner.Config) {
		c.Concurrency = 2
		c.Consumer.MaxAckPending = 32
	})
	f.start()
	f.startAnother("runner-b")
	f.releaseAtEnd()
	const n = 4
	ids := make([]string, n)
	ids[0] = f.publish("deploy", nil)
	f.waitRecord(ids[0], 15*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status != workflows.StatusQueued })
	for i := 1; i < n; i++ {
		ids[i] = f.publish("deploy", nil)
	}
	// While the first one runs, the others wait, queued, and a run of
	// another workflow still gets a slot on these two runners.
	other := f.publish("other", nil)
	f.waitRecord(other, 15*time.Second, "the other workflow's run to finish", terminal)
	// Each waiting run has asked for the group at least twice.
	deadline := time.Now().Add(30 * time.Second)
	for f.calls.Load() < 1+2*(n-1)+1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range ids[1:] {
		rec, _, err := f.q.Runs().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != workflows.StatusQueued {
			t.Errorf("run %s is %s while the group is busy, want queued", id, rec.Status)
		}
	}
	f.release()
	recs := make([]*stores.RunRecord, n)
	for i, id := range ids {
		recs[i] = f.waitRecord(id, 60*time.Second, "finished", terminal)
		if recs[i].Status != workflows.StatusSucceeded {
			t.Fatalf("run %d: %s (%s)", i, recs[i].Status, recs[i].Error)
		}
		if recs[i].Attempt != 1 {
			t.Errorf("run %d: attempt %d, want 1 (waiting is no attempt)", i, recs[i].Attempt)
		}
	}
	for i := 1; i < n; i++ {
		prev, cur := recs[i-1], recs[i]
		if !cur.StartedAt.After(*prev.FinishedAt) {
			t.Errorf("run %d started at %s, before run %d finished at %s", i, cur.StartedAt, i-1, prev.FinishedAt)
		}
		// The lock is asked for again every 250ms; the bound is generous
		// for a loaded machine.
		if gap := cur.StartedAt.Sub(*prev.FinishedAt); gap > 3*time.Second {
			t.Errorf("run %d started %s after run %d finished", i, gap, i-1)
		}
	}
	// The steps never overlapped: start and end alternate, in order.
	lines := strings.Fields(strings.ReplaceAll(enginetest.ReadFile(t, f.tmp, "executions"), "\n", " "))
	var want []string
	for _, id := range ids {
		want = append(want, "start", id, "end", id)
	}
	if strings.Join(lines, " ") != strings.Join(want, " ") {
		t.Errorf("executions:\n%s\nwant:\n%s", strings.Join(lines, " "), strings.Join(want, " "))
	}
}

// A run waiting for its group is cancelled at once (queued), and leaves
// the group to the next one.
func TestCancelWaitingRunOfGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"deploy": deployWorkflow}, nil, func(c *runner.Config) { c.Consumer.MaxAckPending = 32 })
	f.start()
	f.releaseAtEnd()
	a, b, c := f.publish("deploy", nil), f.publish("deploy", nil), f.publish("deploy", nil)
	f.waitRecord(a, 15*time.Second, "running", func(r *stores.RunRecord) bool { return r.Status != workflows.StatusQueued })
	if err := f.r.Cancel(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if rec := f.waitRecord(b, 5*time.Second, "cancelled", terminal); rec.Status != workflows.StatusCancelled {
		t.Errorf("waiting run = %s, want cancelled", rec.Status)
	}
	f.release()
	for _, id := range []string{a, c} {
		if rec := f.waitRecord(id, 30*time.Second, "finished", terminal); rec.Status != workflows.StatusSucceeded {
			t.Errorf("run %s = %s (%s)", id, rec.Status, rec.Error)
		}
	}
	if strings.Contains(enginetest.ReadFile(t, f.tmp, "executions"), b) {
		t.Error("the cancelled waiting run executed")
	}
}

// group: pull_request on push events is one group per pushed branch.
func TestPullRequestGroupOfPushIsTheBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"ci": `
name: ci
concurrency: {group: pull_request}
steps:
  - {id: ci, run: 'echo ci'}
`}, nil, nil)
	f.start()
	push := func(branch string) func(*queue.RunRequest) {
		return func(r *queue.RunRequest) {
			r.Event.Kind = workflows.KindPush
			r.Event.PullRequest = nil
			r.Event.Push = &workflows.Push{Ref: "refs/heads/" + branch, Branch: branch, After: strings.Repeat("a", 40)}
		}
	}
	groups := map[string]bool{}
	for _, b := range []string{"main", "feature", "main"} {
		rec := f.waitRecord(f.publish("ci", push(b)), 15*time.Second, "finished", terminal)
		groups[rec.ConcurrencyGroup] = true
	}
	var got []string
	for g := range groups {
		got = append(got, g)
	}
	sort.Strings(got)
	want := []string{"branch:ci:octo/demo@refs/heads/feature", "branch:ci:octo/demo@refs/heads/main"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("groups = %v, want %v", got, want)
	}
}

// slowAcquire is the real group store whose Acquire answers late, as a
// loaded store does; acquired is when it answered that the lock is held.
type slowAcquire struct {
	runner.GroupLocks
	acquired *atomic.Int64
}

func (s slowAcquire) Acquire(ctx context.Context, l stores.GroupLock) (bool, string, error) {
	held, holder, err := s.GroupLocks.Acquire(ctx, l)
	time.Sleep(50 * time.Millisecond)
	if held {
		s.acquired.Store(time.Now().UnixNano())
	}
	return held, holder, err
}

// A run of a serialized group starts (its record's StartedAt) once it holds
// the group, not when it began asking for it: before, the claim's clock was
// read before the lock's round trip, and under load a run seemed to start
// before the run it waited for had ended (TestConcurrencyGroupSerializesAcrossRunners
// failed so once).
func TestGroupRunStartsOnceItHoldsTheGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"deploy": `
name: deploy
concurrency: {group: deploy}
steps:
  - {id: deploy, run: 'true'}
`}, nil, nil)
	acquired := &atomic.Int64{}
	r, err := runner.New(f.runCfg, runner.Deps{Runs: f.q.Runs(), Workflows: f.wfs, Workspaces: f.ws, Engine: f.eng,
		Groups: slowAcquire{f.q.Groups(), acquired}})
	if err != nil {
		t.Fatal(err)
	}
	id := f.publish("deploy", nil)
	req := &queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "deploy", Event: *samplePR(), Attempt: 1}
	for n := uint64(1); ; n++ {
		err := r.Handle(context.Background(), &queue.Delivery{Request: req, NumDelivered: n})
		if err == nil {
			break
		}
		if n == 5 {
			t.Fatalf("Handle = %v, want the run to take the free group", err)
		}
	}
	rec := f.waitRecord(id, 5*time.Second, "the run's end", terminal)
	if rec.Status != workflows.StatusSucceeded || rec.StartedAt == nil || acquired.Load() == 0 {
		t.Fatalf("record: status %s, started %v; group acquired at %d", rec.Status, rec.StartedAt, acquired.Load())
	}
	if got := time.Unix(0, acquired.Load()); rec.StartedAt.Before(got) {
		t.Errorf("the run started at %s, %s before it held its group (%s)", rec.StartedAt, got.Sub(*rec.StartedAt), got)
	}
}
