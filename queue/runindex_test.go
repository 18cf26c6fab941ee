package queue

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/workflows"
)

// seedRecords writes n records (made by mk from their index) to the
// bucket's subjects with async publishes (no round trip each) and waits
// for them all; records come out newest last.
func seedRecords(t testing.TB, q *Queue, n int, mk func(i int) *RunRecord) []*RunRecord {
	t.Helper()
	recs := make([]*RunRecord, n)
	for i := range n {
		rec := mk(i)
		if rec.ID == "" {
			rec.ID = NewRunID()
		}
		data, err := encodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.js.PublishMsgAsync(&nats.Msg{Subject: kvSubject(BucketRuns, rec.ID), Data: data}); err != nil {
			t.Fatalf("seeding record %d: %v", i, err)
		}
		recs[i] = rec
	}
	select {
	case <-q.js.PublishAsyncComplete():
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
		Event:     workflows.Event{Forge: workflows.GitHub, PullRequest: &workflows.PullRequest{Number: 1 + i%7}},
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
	q := openTest(t, Config{})
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
	q := openTest(t, Config{})
	ctx := testCtx(t, 30*time.Second)
	rs := q.Runs()
	rs.StartIndex()
	for i := range 30 {
		rec := &RunRecord{ID: NewRunID(), Workflow: "w", Repo: "o/a", Status: workflows.StatusQueued, CreatedAt: time.Now()}
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
	if err := q.runsKV.Delete(ctx, all[0].ID); err != nil {
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
	q := openTest(t, Config{})
	seedRecords(t, q, 500, specRecord)
	other := &RunStore{kv: q.runsKV, clock: time.Now, index: newRunIndex(q.runsKV, q.log), indexCtx: testCtx(t, time.Minute)}
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
