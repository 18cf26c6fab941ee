package stores

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// seedRecords writes n records (made by mk from their index) to the
// bucket's subjects with async publishes (no round trip each) and waits
// for them all; records come out newest last.
func seedRecords(t testing.TB, q *testQueue, n int, mk func(i int) *RunRecord) []*RunRecord {
	t.Helper()
	recs := make([]*RunRecord, n)
	for i := range n {
		rec := mk(i)
		if rec.ID == "" {
			rec.ID = queue.NewRunID()
		}
		data, err := encodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Shared().JetStream.PublishMsgAsync(&nats.Msg{Subject: kvSubject(rec.ID), Data: data}); err != nil {
			t.Fatalf("seeding record %d: %v", i, err)
		}
		recs[i] = rec
	}
	select {
	case <-q.Shared().JetStream.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		t.Fatal("seeding records: not acknowledged in time")
	}
	return recs
}

// specRecord makes the records of the filter tests: workflow, repo,
// status and pull request cycle with different periods, so that every
// combination of filters selects a different set.
func specRecord(i int) *RunRecord {
	statuses := []workflows.Status{workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusRunning, workflows.StatusQueued, workflows.StatusCancelled}
	rec := &RunRecord{
		Workflow:  []string{"review", "lint", "triage"}[i%3],
		Repo:      []string{"o/a", "o/b"}[i%2],
		Status:    statuses[i%5],
		CreatedAt: time.Now().UTC(),
		Event:     workflows.Event{Forge: workflows.Forge("github"), PullRequest: &workflows.PullRequest{Number: 1 + i%7}},
	}
	if i%11 == 0 {
		rec.Event.PullRequest, rec.Event.Issue = nil, &workflows.Issue{Number: 1 + i%7}
	}
	return rec
}

// listAll pages through List with f (its Limit as the page size) and
// checks every page's bounds: the index looks at the page and nothing
// else, or with a pull request at most that pull request's prRuns runs;
// it returns the ids in order.
func listAll(t *testing.T, rs *RunStore, f ListFilter, prRuns int) []string {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("List(%+v) does not end", f)
		}
		before := rs.index.visited.Load()
		recs, next, err := rs.List(ctx, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		v := rs.index.visited.Load() - before
		if f.PR == 0 && (v != int64(len(recs)) || (f.Limit > 0 && v > int64(f.Limit))) {
			t.Fatalf("List(%+v) looked at %d entries for a page of %d (limit %d)", f, v, len(recs), f.Limit)
		}
		if f.PR != 0 && (v > int64(prRuns) || v < int64(len(recs))) {
			t.Fatalf("List(%+v) looked at %d entries for a page of %d; the pull request has %d runs", f, v, len(recs), prRuns)
		}
		for _, r := range recs {
			if !f.match(r) {
				t.Fatalf("List(%+v) returned %s (%s %s %s #%d)", f, r.ID, r.Workflow, r.Repo, r.Status, r.Event.Number())
			}
			ids = append(ids, r.ID)
		}
		if f.Limit > 0 && next != "" && len(recs) != f.Limit {
			t.Fatalf("List(%+v): a short page (%d) with a next cursor", f, len(recs))
		}
		if next == "" {
			return ids
		}
		f.Cursor = next
	}
}

// List pages through the index, newest first, for every filter and every
// combination of them, each page exactly what the filter selects after the
// cursor; the work of a page is bounded by the page.
func TestRunIndexPagesAndFilters(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	rs := q.Runs()
	recs := seedRecords(t, q, 300, specRecord)
	want := func(f ListFilter) []string {
		var ids []string
		for _, r := range slices.Backward(recs) {
			if f.match(r) {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	filters := []ListFilter{
		{},
		{Workflow: "lint"},
		{Repo: "o/b"},
		{Status: workflows.StatusFailed},
		{PR: 3},
		{Workflow: "review", Repo: "o/a"},
		{Workflow: "triage", Status: workflows.StatusQueued},
		{Repo: "o/a", PR: 5},
		{Workflow: "review", Repo: "o/b", Status: workflows.StatusRunning, PR: 2},
		{Workflow: "nope"},
		{PR: 99},
	}
	for _, f := range filters {
		w := want(f)
		prRuns := len(want(ListFilter{Repo: f.Repo, PR: f.PR}))
		for _, limit := range []int{0, 1, 7, 100} {
			f.Limit = limit
			if got := listAll(t, rs, f, prRuns); !slices.Equal(got, w) {
				t.Errorf("List(%+v) = %d runs %v, want %d %v", f, len(got), head(got), len(w), head(w))
			}
		}
	}
	if n := rs.singleGets.Load(); n != 0 {
		t.Errorf("List read %d records one by one; want every page in one batched read", n)
	}
	if len(want(ListFilter{PR: 3})) == 0 || len(want(ListFilter{Workflow: "review", Repo: "o/b", Status: workflows.StatusRunning, PR: 2})) == 0 {
		t.Fatal("the fixture selects nothing for a filter it should")
	}

	// A cursor that List did not hand out is refused.
	for _, c := range []string{"x", "bm9wZQ", encodeCursor("bad id!")} {
		if _, _, err := rs.List(testCtx(t, 5*time.Second), ListFilter{Cursor: c}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}

func head(ids []string) []string { return ids[:min(3, len(ids))] }

// A record this process writes is in its next List, without waiting; one
// that changes status moves between the status lists; a deleted one
// (from any process) leaves the index.
func TestRunIndexFollowsChanges(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	rs := q.Runs()
	rs.StartIndex()
	for i := range 30 {
		rec := &RunRecord{ID: queue.NewRunID(), Workflow: "w", Repo: "o/a", Status: workflows.StatusQueued, CreatedAt: time.Now()}
		if _, err := rs.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		got, _, err := rs.List(ctx, ListFilter{Status: workflows.StatusQueued, Limit: 1})
		if err != nil || len(got) != 1 || got[0].ID != rec.ID {
			t.Fatalf("write %d: List = %v, %v; want the record just written", i, got, err)
		}
		if _, err := rs.Modify(ctx, rec.ID, func(r *RunRecord) bool { r.Status = workflows.StatusSucceeded; return true }); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := rs.List(ctx, ListFilter{Status: workflows.StatusQueued}); len(got) != 0 {
			t.Fatalf("write %d: %d queued runs listed after it succeeded", i, len(got))
		}
		if got, _, _ := rs.List(ctx, ListFilter{Status: workflows.StatusSucceeded}); len(got) != i+1 {
			t.Fatalf("write %d: %d succeeded runs listed, want %d", i, len(got), i+1)
		}
	}
	// A delete through another connection: the watch removes the entry.
	all, _, _ := rs.List(ctx, ListFilter{})
	if err := q.Runs().kv.Delete(ctx, all[0].ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rs.index.Len() != len(all)-1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := rs.index.Len(); n != len(all)-1 {
		t.Fatalf("index holds %d entries after a delete, want %d", n, len(all)-1)
	}
}

// A second process's index loads what the first wrote and follows it.
func TestRunIndexLoadsAtStart(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	seedRecords(t, q, 500, specRecord)
	other := &RunStore{kv: q.Runs().kv, clock: time.Now, index: newRunIndex(q.Shared().JetStream, "", q.Shared().Logger)}
	other.indexCtx, other.stopIndex = context.WithCancel(context.Background())
	t.Cleanup(other.Close)
	x := other.StartIndex()
	if err := x.Wait(testCtx(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !x.Ready() || x.Len() != 500 {
		t.Fatalf("index after its load: ready %v, %d entries; want 500", x.Ready(), x.Len())
	}
	recs, next, err := other.List(testCtx(t, 5*time.Second), ListFilter{Repo: "o/a", Limit: 10})
	if err != nil || len(recs) != 10 || next == "" {
		t.Fatalf("List = %d, %q, %v", len(recs), next, err)
	}
}

// waitHealth polls x.Health until down is what it reports (an error or
// nil), failing after a few seconds; it returns the last error.
func waitHealth(t *testing.T, x *RunIndex, down bool) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := x.Health()
		if (err != nil) == down {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("index health %v, want down %v", err, down)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// When its watch ends the index says it is down, sets the watch up again
// and catches up with what was written and removed meanwhile, resuming
// after the last revision it applied; down for longer than the removals'
// markers live, it then reconciles with the bucket, dropping what it no
// longer holds.
func TestRunIndexWatchRestarts(t *testing.T) {
	t.Parallel()
	for _, long := range []bool{false, true} {
		t.Run(map[bool]string{false: "resume", true: "reload"}[long], func(t *testing.T) {
			t.Parallel()
			q := openTest(t, queue.Config{})
			ctx := testCtx(t, time.Minute)
			rs := q.Runs()
			recs := seedRecords(t, q, 20, specRecord)
			x := rs.StartIndex()
			if err := x.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := x.Health(); err != nil || x.Len() != 20 {
				t.Fatalf("loaded index: health %v, %d entries", err, x.Len())
			}
			if err := x.StopWatch(500 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := waitHealth(t, x, true); !strings.Contains(err.Error(), "watch down since") {
				t.Fatalf("health while down: %v", err)
			}
			if long {
				x.mu.Lock()
				x.followedAt = time.Now().Add(-RunMarkerTTL) // as if down that long
				x.mu.Unlock()
			}
			// Written and removed while the watch is down.
			added := specRecord(3)
			added.ID = queue.NewRunID()
			if _, err := rs.Create(ctx, added); err != nil {
				t.Fatal(err)
			}
			if err := rs.kv.Delete(ctx, recs[0].ID); err != nil {
				t.Fatal(err)
			}
			// Gone without a marker (as once its marker expired).
			st, err := q.Shared().JetStream.Stream(ctx, "KV_"+BucketRuns)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Purge(ctx, jetstream.WithPurgeSubject(kvSubject(recs[1].ID))); err != nil {
				t.Fatal(err)
			}
			if x.Health() == nil {
				t.Fatal("index up again within its hold")
			}
			waitHealth(t, x, false)
			if long { // ready at once; the reconciliation runs behind
				deadline := time.Now().Add(10 * time.Second)
				for x.reconciled.Load() == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			}
			want := map[string]bool{added.ID: true}
			for _, r := range recs[2:] {
				want[r.ID] = true
			}
			if !long {
				want[recs[1].ID] = true // resumed: it never saw the purge
			}
			got, err := x.ids(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("index after the restart holds %d records, want %d (added %v, deleted %v, purged %v)",
					len(got), len(want), got[added.ID], got[recs[0].ID], got[recs[1].ID])
			}
			// and it follows the bucket again
			if _, err := rs.Create(ctx, &RunRecord{ID: queue.NewRunID(), Workflow: "after", Status: workflows.StatusQueued}); err != nil {
				t.Fatal(err)
			}
			if l, _, err := rs.List(ctx, ListFilter{Workflow: "after"}); err != nil || len(l) != 1 {
				t.Fatalf("List after the restart: %d, %v", len(l), err)
			}
		})
	}
}

// A watch whose consumer goes silent without its client noticing (no
// error, no missed heartbeat: the stream's server stopped sending) is
// found by the stall check, which ends it: the index says why, sets the
// watch up again and catches up with what it missed.
func TestRunIndexRestartsAStalledWatch(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, time.Minute)
	rs := q.Runs()
	seedRecords(t, q, 5, specRecord)
	rs.index.stallEvery = 100 * time.Millisecond
	x := rs.StartIndex()
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	x.deafen.Store(x.follows.Load()) // the current watch hears nothing more
	silent := &RunRecord{ID: queue.NewRunID(), Workflow: "missed", Status: workflows.StatusQueued}
	if _, err := rs.Create(ctx, silent); err != nil {
		t.Fatal(err)
	}
	if err := waitHealth(t, x, true); !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("health of a stalled watch: %v", err)
	}
	waitHealth(t, x, false)
	if l, _, err := rs.List(ctx, ListFilter{Workflow: "missed"}); err != nil || len(l) != 1 || l[0].ID != silent.ID {
		t.Fatalf("List after the stalled watch was set up again: %v, %v", l, err)
	}
	if x.Len() != 6 {
		t.Fatalf("index holds %d records, want 6", x.Len())
	}
}

// The stall check asks the server for the newest revision of the watched
// keys (for a wildcard, a walk of every subject of the stream) only when
// the stream took a message since the check before: checks of an idle
// bucket read its last sequence and nothing more. A write makes the next
// check ask once; a watch gone deaf is still found
// (TestRunIndexRestartsAStalledWatch).
func TestStallCheckAsksOnlyAfterAWrite(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, time.Minute)
	rs := q.Runs()
	seedRecords(t, q, 5, specRecord)
	asked := queuetest.Requests(t, q.Queue, jsAPIPrefix+"STREAM.MSG.GET."+rs.index.stream)
	// Long enough that a loaded machine applies a write before the check
	// after the one that read it (or that check reports a stall).
	const every = 250 * time.Millisecond
	rs.index.stallEvery = every
	x := rs.StartIndex()
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// asksAfter waits for the checks to have asked want times, then lets
	// ten more checks pass and wants no more asks than that.
	asksAfter := func(when string, want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); asked()[0] < want && time.Now().Before(deadline); {
			time.Sleep(every)
		}
		time.Sleep(10 * every)
		if n := asked()[0]; n != want {
			t.Fatalf("%s: the stall checks asked for the newest revision %d times, want %d", when, n, want)
		}
	}
	asksAfter("an idle bucket", 1)
	if _, err := rs.Create(ctx, &RunRecord{ID: queue.NewRunID(), Workflow: "later", Status: workflows.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	asksAfter("after a write", 2)
	if err := x.Health(); err != nil {
		t.Fatalf("health after the checks: %v", err)
	}
}

// waitLog records the waits the index's restarts log, and when.
type waitLog struct {
	mu    sync.Mutex
	waits []time.Duration
	at    []time.Time
}

func (l *waitLog) Warn(msg string, args ...any) {
	for i := 0; i+1 < len(args); i += 2 {
		if d, ok := args[i+1].(time.Duration); ok && args[i] == "in" {
			l.mu.Lock()
			l.waits, l.at = append(l.waits, d), append(l.at, time.Now())
			l.mu.Unlock()
		}
	}
}

// A watch that keeps failing to be set up (here its file cannot be
// opened) is retried after waits that double from retryMin up to
// retryMax, each drawn between half and all of its step, and the index is
// down meanwhile.
func TestRunIndexRestartBacksOff(t *testing.T) {
	t.Parallel()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	log := &waitLog{}
	x := newRunIndex(nil, filepath.Join(notADir, "index"), log)
	x.retryMin, x.retryMax = 8*time.Millisecond, 64*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	x.start(ctx)
	defer x.close()
	defer cancel()
	steps := []time.Duration{8, 16, 32, 64, 64, 64}
	deadline := time.Now().Add(10 * time.Second)
	for {
		log.mu.Lock()
		n := len(log.waits)
		log.mu.Unlock()
		if n > len(steps) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d restarts in 10 s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := x.Health(); err == nil || !strings.Contains(err.Error(), "watch down since") {
		t.Errorf("health while the watch fails: %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for i, step := range steps {
		step *= time.Millisecond
		if d := log.waits[i]; d < step/2 || d > step {
			t.Errorf("wait %d before a restart is %s, want between %s and %s (all: %v)", i+1, d, step/2, step, log.waits)
		}
		if waited := log.at[i+1].Sub(log.at[i]); waited < log.waits[i] {
			t.Errorf("restart %d came %s after the one before, which said it waits %s", i+2, waited, log.waits[i])
		}
	}
}
