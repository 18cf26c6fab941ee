package stores

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// indexProcessEnv carries an indexProcessSpec to a copy of the test binary
// started as an API process (TestMain): its memory is its own, not the
// embedded server's.
const indexProcessEnv = "HOOKRUN_INDEX_PROCESS"

func TestMain(m *testing.M) {
	if spec := os.Getenv(indexProcessEnv); spec != "" {
		os.Exit(indexProcess(spec))
	}
	os.Exit(m.Run())
}

// indexProcessSpec is what an index process does: open the stores on the
// server at URL with their index files in Dir, wait for both indexes,
// and, with Rounds, list pages of the filters that many times.
type indexProcessSpec struct {
	URL    string
	Dir    string
	Rounds int
}

// indexProcessReport is what it prints, one JSON line when its indexes
// are ready and one at the end.
type indexProcessReport struct {
	Phase                         string  // "ready", "done"
	ReadyS                        float64 // from stores.Open to both indexes caught up
	RunApplies, DeliveryApplies   int64   // changes applied by the watches
	Runs, Deliveries              int     // records indexed
	RunP50, RunP99                float64 // ms, run pages
	DeliveryP50, DeliveryP99      float64 // ms, delivery pages
	RunVisited                    float64 // index entries looked at per run page
	Lists                         int
	RSS, RSSAnon, RSSFile, RSSHWM uint64 // KiB: VmRSS, RssAnon, RssFile, VmHWM
	RSSMax                        uint64 // KiB: the largest VmRSS sampled while loading and listing
	Err                           string `json:",omitempty"`
}

// procStatus reads KiB fields of /proc/self/status.
func procStatus() map[string]uint64 {
	out := map[string]uint64{}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseUint(f[0], 10, 64)
			out[k] = n
		}
	}
	return out
}

// benchRunFilters are the run lists measured: each filter and
// combinations, over benchRecord's records.
var benchRunFilters = []ListFilter{
	{}, {Workflow: "wf-3"}, {Repo: "org/repo-7"}, {Status: workflows.StatusFailed},
	{Repo: "org/repo-1", PR: 1201}, {Workflow: "wf-13", Repo: "org/repo-13"},
	{Workflow: "wf-3", Status: workflows.StatusCancelled}, {Repo: "org/repo-9", Status: workflows.StatusPartiallySucceeded},
}

// benchDeliveryFilters are the delivery lists measured, over
// benchDelivery's rows.
var benchDeliveryFilters = []DeliveryFilter{
	{}, {Forge: "gitlab"}, {Outcome: OutcomeRefused}, {Event: "issue_comment"}, {Repo: "org/repo-7"},
	{Forge: "github", Outcome: OutcomeRan, Repo: "org/repo-5"}, {Outcome: OutcomeDuplicate, Event: "push"},
	{Repo: "Group/Sub.Project-2"},
}

// indexProcess is the API process of BenchmarkRecords1M.
func indexProcess(specJSON string) int {
	var spec indexProcessSpec
	out := json.NewEncoder(os.Stdout)
	report := func(r indexProcessReport) {
		st := procStatus()
		r.RSS, r.RSSAnon, r.RSSFile, r.RSSHWM = st["VmRSS"], st["RssAnon"], st["RssFile"], st["VmHWM"]
		_ = out.Encode(r)
	}
	fail := func(err error) int {
		report(indexProcessReport{Phase: "done", Err: err.Error()})
		return 1
	}
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(err)
	}
	var rssMax atomic.Uint64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if n := procStatus()["VmRSS"]; n > rssMax.Load() {
				rssMax.Store(n)
			}

			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	began := time.Now()
	q, err := queue.Open(ctx, queue.Config{URL: spec.URL, Logger: log, RequestKey: queuetest.RequestKey})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = q.Close() }()
	s, err := Open(ctx, q, Options{IndexDir: spec.Dir})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = s.Close() }()
	s.StartIndexes()
	if err := s.WaitIndexes(ctx); err != nil {
		return fail(err)
	}
	r := indexProcessReport{Phase: "ready", ReadyS: time.Since(began).Seconds(),
		RunApplies: s.runs.index.applies.Load(), DeliveryApplies: s.received.index.applies.Load(),
		Runs: s.runs.index.Len(), Deliveries: s.received.index.Len()}
	r.RSSMax = rssMax.Load()
	report(r)

	var runLists, deliveryLists []time.Duration
	visited := s.runs.index.visited.Load()
	for range spec.Rounds {
		for _, f := range benchRunFilters {
			f.Limit = 100
			for range 3 {
				t0 := time.Now()
				recs, next, err := s.Runs().List(ctx, f)
				runLists = append(runLists, time.Since(t0))
				if err != nil {
					return fail(err)
				}
				if len(recs) == 0 {
					return fail(fmt.Errorf("runs %+v: an empty page", f))
				}
				if f.Cursor = next; next == "" {
					break
				}
			}
		}
		for _, f := range benchDeliveryFilters {
			f.Limit = 100
			for range 3 {
				t0 := time.Now()
				rows, next, err := s.Received().List(ctx, f)
				deliveryLists = append(deliveryLists, time.Since(t0))
				if err != nil {
					return fail(err)
				}
				if len(rows) == 0 {
					return fail(fmt.Errorf("deliveries %+v: an empty page", f))
				}
				if f.Cursor = next; next == "" {
					break
				}
			}
		}
	}
	r.Phase, r.Lists = "done", len(runLists)+len(deliveryLists)
	if len(runLists) > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		r.RunP50, r.RunP99 = ms(quantile(runLists, 0.5)), ms(quantile(runLists, 0.99))
		r.DeliveryP50, r.DeliveryP99 = ms(quantile(deliveryLists, 0.5)), ms(quantile(deliveryLists, 0.99))
		r.RunVisited = float64(s.runs.index.visited.Load()-visited) / float64(len(runLists))
	}
	r.RSSMax = max(rssMax.Load(), procStatus()["VmRSS"])
	report(r)
	return 0
}

// runIndexProcess starts an index process and returns its two reports
// and the time from its start to its first.
func runIndexProcess(b *testing.B, spec indexProcessSpec) (ready, done indexProcessReport, sinceStart time.Duration) {
	b.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), indexProcessEnv+"="+string(data))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var r indexProcessReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Logf("index process: %s", sc.Text())
			continue
		}
		if r.Err != "" {
			b.Fatalf("index process: %s", r.Err)
		}
		switch r.Phase {
		case "ready":
			ready, sinceStart = r, time.Since(began)
		case "done":
			done = r
		}
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("index process: %v", err)
	}
	return ready, done, sinceStart
}

// benchDelivery is one of the benchmark's deliveries, received at: 2
// forges (a tenth gitlab), 6 event kinds, 4 outcomes, 50 repositories (a
// tenth of them named so that their token is a digest).
func benchDelivery(i int, at time.Time) DeliverySummary {
	forge, repo := "github", fmt.Sprintf("org/repo-%d", i%50)
	if i%10 == 3 {
		forge = "gitlab"
	}
	if i%50 >= 45 {
		repo = fmt.Sprintf("Group/Sub.Project-%d", i%5)
	}
	kind := []string{"pull_request", "push", "issue_comment", "pull_request", "push", "issues"}[i%6]
	outcome := []string{OutcomeRan, OutcomeRan, OutcomeRan, OutcomeSkipped, OutcomeSkipped, OutcomeRan, OutcomeRan, OutcomeRefused, OutcomeRan, OutcomeDuplicate}[i%10]
	return DeliverySummary{Forge: workflows.Forge(forge), ID: fmt.Sprintf("d0e1f2a3-%08d-11ee-8c99-0242ac120002", i), Event: kind, Kind: kind,
		Repo: repo, Outcome: outcome, ReceivedAt: at, Runs: i % 3}
}

// seed publishes n messages (made by mk from their index) to the bucket
// subjects with async publishes, waiting for the acknowledgements every
// 20,000.
func seed(b *testing.B, q *testQueue, from, n int, mk func(i int) (subject string, data []byte)) {
	b.Helper()
	js := q.Shared().JetStream
	for i := from; i < from+n; i++ {
		subject, data := mk(i)
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data}); err != nil {
			b.Fatalf("seeding %d: %v", i, err)
		}
		if (i-from+1)%20_000 == 0 || i == from+n-1 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(2 * time.Minute):
				b.Fatal("seeding: not acknowledged in time")
			}
		}
	}
}

// seedBench writes n run records and n deliveries' index keys from
// index from on; the deliveries were received 50 ms apart until now.
func seedBench(b *testing.B, q *testQueue, from, n int, now time.Time) {
	b.Helper()
	seed(b, q, from, n, func(i int) (string, []byte) {
		rec := benchRecord(i)
		rec.ID = queue.NewRunID()
		data, err := encodeRecord(rec)
		if err != nil {
			b.Fatal(err)
		}
		return kvSubject(rec.ID), data
	})
	seed(b, q, from, n, func(i int) (string, []byte) {
		sum := benchDelivery(i, now.Add(-time.Duration(from+n-i)*50*time.Millisecond))
		data, err := json.Marshal(sum)
		if err != nil {
			b.Fatal(err)
		}
		return "$KV." + BucketReceived + "." + indexKey(&sum), data
	})
}

// benchRecordsN is BenchmarkRecords1M's size: HOOKRUN_BENCH_RECORDS, else
// 1,000,000 run records and as many deliveries.
func benchRecordsN(b *testing.B) int {
	if v := os.Getenv("HOOKRUN_BENCH_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10_000 {
			b.Fatalf("HOOKRUN_BENCH_RECORDS=%q: want a number of at least 10000", v)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkRecords1M seeds 1,000,000 run records and 1,000,000 deliveries
// (their index keys) into an embedded server and starts API processes
// (copies of the test binary, indexProcess) on it, with their index files
// in one directory: the first builds the indexes; then 1,000 more of each
// are written and a second process starts on the same files. It reports
// what the issue bounds: the second's time to ready (< 2 s) and the changes
// it applied (the 2,000 alone), its list p99 over pages of 100 of runs and
// of deliveries (< 50 ms), the processes' RSS (< 150 MiB; its peak, and
// the first's while it built the index), and the run start path at 1 M
// records against 0 (≈1). docs/performance.md ("Lists at 1,000,000").
//
//	make bench-records
func BenchmarkRecords1M(b *testing.B) {
	n := benchRecordsN(b)
	const more = 1000
	for b.Loop() {
		q := openTest(b, queue.Config{Listen: "127.0.0.1:0", InsecureNoAuth: true})
		startRuns(b, q, 50) // warm-up
		empty := startRuns(b, q, 300)

		began := time.Now()
		now := time.Now()
		seedBench(b, q, 0, n, now)
		seeded := time.Since(began)

		dir := b.TempDir()
		spec := indexProcessSpec{URL: q.ClientURL(), Dir: dir}
		built, _, _ := runIndexProcess(b, spec)
		if built.Runs < n || built.Deliveries < n {
			b.Fatalf("the first process indexed %d runs and %d deliveries, want %d each", built.Runs, built.Deliveries, n)
		}
		size := int64(0)
		if ents, err := os.ReadDir(dir); err == nil {
			for _, e := range ents {
				if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
					size += fi.Size()
				}
			}
		}

		seedBench(b, q, n, more, time.Now())
		spec.Rounds = 25
		ready, done, sinceStart := runIndexProcess(b, spec)
		full := startRuns(b, q, 300)

		ratio := float64(quantile(full, 0.5)) / float64(quantile(empty, 0.5))
		mib := func(kib uint64) float64 { return float64(kib) / 1024 }
		b.ReportMetric(built.ReadyS, "build-s")
		b.ReportMetric(mib(built.RSSMax), "build-rss-max-MiB")
		b.ReportMetric(ready.ReadyS, "restart-ready-s")
		b.ReportMetric(sinceStart.Seconds(), "restart-exec-ready-s")
		b.ReportMetric(float64(ready.RunApplies+ready.DeliveryApplies), "restart-applied")
		b.ReportMetric(done.RunP99, "runs-p99-ms")
		b.ReportMetric(done.DeliveryP99, "deliveries-p99-ms")
		b.ReportMetric(mib(done.RSS), "rss-MiB")
		b.ReportMetric(mib(done.RSSMax), "rss-max-MiB")
		b.ReportMetric(ratio, "start-ratio")
		b.Logf("seeded %d runs and %d deliveries in %s (index keys only for the deliveries: their bodies are not listed)", n, n, seeded.Round(time.Millisecond))
		b.Logf("first process: indexes built in %.1f s; RSS %.0f MiB at ready (anon %.0f, file %.0f), max sampled %.0f, peak (VmHWM) %.0f; files %.0f MiB",
			built.ReadyS, mib(built.RSS), mib(built.RSSAnon), mib(built.RSSFile), mib(built.RSSMax), mib(built.RSSHWM), float64(size)/(1<<20))
		b.Logf("restart after %d more of each: ready %.3f s after stores.Open (%.3f s after exec), applied %d run and %d delivery changes; %d runs, %d deliveries indexed",
			more, ready.ReadyS, sinceStart.Seconds(), ready.RunApplies, ready.DeliveryApplies, ready.Runs, ready.Deliveries)
		b.Logf("%d lists: runs p50 %.2f p99 %.2f ms (%.1f index entries per page), deliveries p50 %.2f p99 %.2f ms; RSS after %.0f MiB (anon %.0f, file %.0f), max sampled %.0f, peak (VmHWM) %.0f",
			done.Lists, done.RunP50, done.RunP99, done.RunVisited, done.DeliveryP50, done.DeliveryP99, mib(done.RSS), mib(done.RSSAnon), mib(done.RSSFile), mib(done.RSSMax), mib(done.RSSHWM))
		b.Logf("run start p50/p99 at 0 records %s/%s, at %d %s/%s (ratio %.2f)",
			quantile(empty, 0.5), quantile(empty, 0.99), n, quantile(full, 0.5), quantile(full, 0.99), ratio)
		if ready.RunApplies+ready.DeliveryApplies != 2*more {
			b.Errorf("the restarted process applied %d changes, want the %d made while it was away", ready.RunApplies+ready.DeliveryApplies, 2*more)
		}
		if done.RunP99 >= 50 || done.DeliveryP99 >= 50 {
			b.Errorf("list p99 runs %.1f ms, deliveries %.1f ms; want under 50 ms", done.RunP99, done.DeliveryP99)
		}
		if max(done.RSSMax, done.RSSHWM) >= 150<<10 {
			b.Errorf("the API process reached %.0f MiB RSS, want under 150 MiB", mib(max(done.RSSMax, done.RSSHWM)))
		}
		if ready.ReadyS >= 2 {
			b.Errorf("ready %.2f s after a restart, want under 2 s", ready.ReadyS)
		}
		if ratio > 2 {
			b.Errorf("run start with %d records takes %.2f× its time with none, want ≈1", n, ratio)
		}
		runtime.GC()
	}
}
