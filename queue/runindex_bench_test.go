package queue

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// fakeEntry is a KV entry as the index's watch sees it.
type fakeEntry struct {
	key   string
	value []byte
	rev   uint64
}

func (e *fakeEntry) Bucket() string                  { return BucketRuns }
func (e *fakeEntry) Key() string                     { return e.key }
func (e *fakeEntry) Value() []byte                   { return e.value }
func (e *fakeEntry) Revision() uint64                { return e.rev }
func (e *fakeEntry) Created() time.Time              { return time.Time{} }
func (e *fakeEntry) Delta() uint64                   { return 0 }
func (e *fakeEntry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchRecord is one of the benchmark's 100,000 records: 20 workflows, 50
// repositories, 4 runs per pull request, statuses mixed, a realistic event.
func benchRecord(i int) *RunRecord {
	statuses := []workflows.Status{workflows.StatusSucceeded, workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusCancelled, workflows.StatusPartiallySucceeded}
	fin := time.Now().UTC()
	repo := fmt.Sprintf("org/repo-%d", (i/4)%50) // a pull request's runs share its repository
	return &RunRecord{
		Workflow: fmt.Sprintf("wf-%d", i%20), Repo: repo, Status: statuses[i%5], Attempt: 1,
		CreatedAt: fin.Add(-time.Minute), FinishedAt: &fin, ConcurrencyGroup: fmt.Sprintf("pr:wf:%s#%d", repo, i/4),
		HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
		Event: workflows.Event{Forge: workflows.GitHub, Kind: workflows.KindPullRequest, Action: "synchronize", Repo: repo,
			DeliveryID: fmt.Sprintf("d0e1f2a3-%08d-11ee-8c99-0242ac120002", i), Sender: "octocat",
			CloneURL: "https://github.com/" + repo + ".git",
			PullRequest: &workflows.PullRequest{Number: i / 4, Title: "Refactor the widget pipeline", HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
				HeadRef: "feature", BaseRef: "main"}},
		Steps: []workflows.StepState{{ID: "build", Status: workflows.StatusSucceeded}, {ID: "test", Status: workflows.StatusSucceeded}},
	}
}

// startRuns times the start path of n cancel_in_progress runs (what a
// runner does between taking a message and its first step that depends on
// the store: Claim, then StartNewest in the run's group) and returns the
// durations.
func startRuns(b *testing.B, q *Queue, n int) []time.Duration {
	ctx := testCtx(b, time.Minute)
	out := make([]time.Duration, n)
	for i := range n {
		req := testRequest("start")
		req.ID = NewRunID()
		group := fmt.Sprintf("pr:start:o/a#%d", i%10)
		began := time.Now()
		res, err := q.Runs().Claim(ctx, req, ClaimSpec{Claimant: "bench", Now: time.Now(), StaleAfter: time.Minute, Group: group})
		if err != nil || res.Outcome != Claimed {
			b.Fatalf("claim: %v %v", res.Outcome, err)
		}
		if _, newer, err := q.Groups().StartNewest(ctx, group, req.ID, time.Now()); err != nil || newer != "" {
			b.Fatalf("start: %q %v", newer, err)
		}
		out[i] = time.Since(began)
		if err := q.Groups().LeaveNewest(ctx, group, req.ID); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

func quantile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkRunRecords100k seeds 100,000 run records and measures what the
// issue bounds: List p99 (pages of 100, each filter and combinations, the
// first three pages of each) under 50 ms, and the run start path with
// 100,000 records against 0 records in the same process (≈1). It also
// reports the index's load time (BenchmarkRunIndexMemory its memory). Numbers:
// docs/performance.md ("Run records at 100,000").
//
//	go test ./queue -run '^$' -bench BenchmarkRunRecords100k -benchtime 1x
func BenchmarkRunRecords100k(b *testing.B) {
	const records = 100_000
	q := openTest(b, Config{})
	for b.Loop() {
		startRuns(b, q, 50) // warm-up
		empty := startRuns(b, q, 300)

		began := time.Now()
		seedRecords(b, q, records, benchRecord) // not kept: the lists' GC would mark them
		seeded := time.Since(began)

		began = time.Now()
		x := q.Runs().StartIndex()
		if err := x.Wait(testCtx(b, 5*time.Minute)); err != nil {
			b.Fatal(err)
		}
		load := time.Since(began)
		if x.Len() < records {
			b.Fatalf("index holds %d records, want %d", x.Len(), records)
		}

		filters := []ListFilter{
			{}, {Workflow: "wf-3"}, {Repo: "org/repo-7"}, {Status: workflows.StatusFailed},
			{Repo: "org/repo-1", PR: 1201}, {Workflow: "wf-13", Repo: "org/repo-13"},
			{Workflow: "wf-3", Status: workflows.StatusCancelled}, {Repo: "org/repo-9", Status: workflows.StatusPartiallySucceeded},
		}
		ctx := testCtx(b, 5*time.Minute)
		runtime.GC()
		var lists []time.Duration
		visited := x.visited.Load()
		for round := range 25 {
			for _, f := range filters {
				f.Limit = 100
				for page := 0; page < 3; page++ {
					t0 := time.Now()
					recs, next, err := q.Runs().List(ctx, f)
					lists = append(lists, time.Since(t0))
					if err != nil {
						b.Fatal(err)
					}
					if round == 0 && page == 0 && len(recs) == 0 {
						b.Fatalf("List(%+v) found nothing", f)
					}
					if next == "" {
						break
					}
					f.Cursor = next
				}
			}
		}
		perList := float64(x.visited.Load()-visited) / float64(len(lists))
		full := startRuns(b, q, 300)

		p99 := quantile(lists, 0.99)
		ratio := float64(quantile(full, 0.5)) / float64(quantile(empty, 0.5))
		b.ReportMetric(float64(p99.Microseconds())/1000, "list-p99-ms")
		b.ReportMetric(float64(quantile(lists, 0.5).Microseconds())/1000, "list-p50-ms")
		b.ReportMetric(perList, "index-entries/list")
		b.ReportMetric(float64(quantile(empty, 0.5).Microseconds())/1000, "start-0-p50-ms")
		b.ReportMetric(float64(quantile(full, 0.5).Microseconds())/1000, "start-100k-p50-ms")
		b.ReportMetric(ratio, "start-ratio")
		b.ReportMetric(load.Seconds(), "index-load-s")
		b.Logf("seeded %d records in %s; index loaded in %s; %d lists: p50 %s p99 %s, %.1f index entries each; start p50/p99 at 0 records %s/%s, at %d %s/%s (ratio %.2f)",
			records, seeded.Round(time.Millisecond), load.Round(time.Millisecond),
			len(lists), quantile(lists, 0.5), p99, perList,
			quantile(empty, 0.5), quantile(empty, 0.99), records, quantile(full, 0.5), quantile(full, 0.99), ratio)
		if p99 >= 50*time.Millisecond {
			b.Errorf("list p99 %s, want under 50ms", p99)
		}
		if ratio > 2 {
			b.Errorf("run start with %d records takes %.2f× its time with none, want ≈1", records, ratio)
		}
	}
}

// BenchmarkRunIndexMemory is the index's memory per record with 100,000
// records like BenchmarkRunRecords100k's, fed to it directly: no server in
// the process, whose caches would count too.
func BenchmarkRunIndexMemory(b *testing.B) {
	const records = 100_000
	for b.Loop() {
		before := heapInUse()
		x := newRunIndex(nil, testLogger(b))
		for i := range records {
			rec := benchRecord(i)
			rec.ID = NewRunID()
			data, err := encodeRecord(rec)
			if err != nil {
				b.Fatal(err)
			}
			x.apply(&fakeEntry{key: rec.ID, value: data, rev: uint64(i + 1)})
		}
		per := float64(heapInUse()-before) / float64(x.Len())
		b.ReportMetric(per, "B/record")
		b.Logf("run index: %d records, %.0f B/record (%.1f MiB), %d lists", x.Len(), per, per*records/(1<<20), len(x.lists))
		runtime.KeepAlive(x)
	}
}
