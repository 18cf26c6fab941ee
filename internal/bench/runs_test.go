package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/queue"
)

// runsWorkflow is one `true` host step with nothing to report, the
// workflow of `make bench-peer` (issue 28's profile): what a run costs
// hookrun itself.
var runsWorkflow = noopWorkflow("bench-runs") + `report:
  comment: none
  status: false
`

// BenchmarkServeRuns puts b.N one-step `true` runs through `hookrun
// serve`'s whole stack in this process (embedded NATS, ingress, runner; host
// steps isolated as the step user when run as root), 8 deliveries at a
// time, and waits until every run is acknowledged. Beside the time per run
// it reports the CPU per run of this process (cpu-ns/run: everything but
// the steps' processes; the bench's HTTP client and its HMAC are in it) and
// of its children (the steps' inits and processes), and, per JetStream stream (KV buckets are KV_<bucket>), the
// messages stored per run: the embedded server's writes. With
// -cpuprofile, the profile is hookrun's process running them
// (docs/performance.md, "hookrun's own cost per run"):
//
//	go test ./internal/bench -run '^$' -bench ServeRuns -benchtime 1000x -cpuprofile cpu.out
//
// HOOKRUN_BENCH_TAP=1 also counts every message the server routes, by
// subject (its first three tokens), per run, and logs them: what the
// server is asked to do besides storing (JetStream API calls, pulls,
// acknowledgements). The tap costs the server a copy of each message, so
// leave it off for the profile.
func BenchmarkServeRuns(b *testing.B) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := openStack(ctx, b.TempDir(), logger, app.ModeServe, map[string]string{"bench-runs.yaml": runsWorkflow})
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	snd := newSender(s.url)
	defer snd.close()
	runs, err := s.js.Stream(ctx, queue.StreamRuns)
	if err != nil {
		b.Fatal(err)
	}
	// drain waits until every run sent is acknowledged (the work-queue
	// stream is empty).
	drain := func() {
		// Polled every 100 ms: each poll is a JetStream API call that the
		// profile would otherwise count against the runs.
		for end := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			info, err := runs.Info(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if info.State.Msgs == 0 {
				return
			}
			if time.Now().After(end) {
				b.Fatalf("%d runs still queued after 5 minutes", info.State.Msgs)
			}
		}
	}
	send := func(n int) {
		if r := closedLoop(ctx, 8, n, func(ctx context.Context, _ int) error { return snd.accept(ctx) }); r.Errors > 0 {
			b.Fatalf("%d of %d deliveries not accepted: %s", r.Errors, n, r.FirstErr)
		}
	}
	send(8) // warm-up: connections, the consumer, the first workspaces
	drain()

	var tap *subjectTap
	if os.Getenv("HOOKRUN_BENCH_TAP") != "" {
		if tap, err = newSubjectTap(s); err != nil {
			b.Fatal(err)
		}
		defer tap.close()
	}
	before, err := streamSeqs(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	self, children := rusage(b, syscall.RUSAGE_SELF), rusage(b, syscall.RUSAGE_CHILDREN)
	b.ResetTimer()
	for left := b.N; left > 0; left -= 64 { // bounded backlog, as a forge's traffic would be
		send(min(64, left))
		drain()
	}
	b.StopTimer()
	b.ReportMetric(float64(rusage(b, syscall.RUSAGE_SELF)-self)/float64(b.N), "cpu-ns/run")
	b.ReportMetric(float64(rusage(b, syscall.RUSAGE_CHILDREN)-children)/float64(b.N), "child-cpu-ns/run")
	after, err := streamSeqs(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for name, st := range after {
		if d := st.msgs - before[name].msgs; d > 0 {
			b.ReportMetric(float64(d)/float64(b.N), name+"-msgs/run")
			b.ReportMetric(float64(st.bytes-before[name].bytes)/float64(b.N), name+"-B/run")
			total += float64(d)
		}
	}
	b.ReportMetric(total/float64(b.N), "stored-msgs/run")
	if tap != nil {
		fmt.Fprintf(os.Stderr, "messages routed per run, by subject (a stored message delivered to a consumer or watcher counts twice):\n%s", tap.report(b.N))
	}
}

// rusage is the user and system CPU of who (this process, or its children
// that have been waited for: the steps' inits and their processes).
func rusage(b *testing.B, who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// streamTotals is what a stream has stored since it was made: its last
// sequence (deletes and purges of KV keys included, which are messages
// too) and the bytes of the messages it still holds.
type streamTotals struct {
	msgs  uint64
	bytes int64
}

// streamSeqs is every stream's streamTotals.
func streamSeqs(ctx context.Context, s *stack) (map[string]streamTotals, error) {
	out := map[string]streamTotals{}
	l := s.js.ListStreams(ctx)
	for info := range l.Info() {
		out[info.Config.Name] = streamTotals{msgs: info.State.LastSeq, bytes: int64(info.State.Bytes)}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	return out, nil
}

// subjectTap counts the messages the embedded server routes, by subject.
type subjectTap struct {
	nc  *nats.Conn
	mu  sync.Mutex
	cnt map[string]int
}

func newSubjectTap(s *stack) (*subjectTap, error) {
	nc, err := s.q.Connect("hookrun-bench-tap")
	if err != nil {
		return nil, err
	}
	t := &subjectTap{nc: nc, cnt: map[string]int{}}
	if _, err := nc.Subscribe(">", func(m *nats.Msg) {
		key := tapKey(m.Subject)
		t.mu.Lock()
		t.cnt[key]++
		t.mu.Unlock()
	}); err != nil {
		nc.Close()
		return nil, err
	}
	return t, nc.Flush()
}

// tapKey groups a subject: its kind and the stream or bucket it is about,
// without run ids, keys and inboxes.
func tapKey(subj string) string {
	p := strings.Split(subj, ".")
	first := func(n int) string { return strings.Join(p[:min(n, len(p))], ".") }
	switch {
	case p[0] == "_INBOX":
		return "_INBOX (replies)"
	case p[0] == "$KV" || p[0] == "$O":
		return first(2) + ".*"
	case first(2) == "$JS.API" && len(p) > 3 && (p[2] == "DIRECT" || p[2] == "STREAM" && p[3] == "MSG" || p[2] == "CONSUMER"):
		return first(5)
	case first(2) == "$JS.API":
		return first(4)
	case first(2) == "$JS.ACK":
		return first(3)
	case first(3) == "$JS.EVENT.ADVISORY":
		return first(5)
	}
	return first(3)
}

func (t *subjectTap) report(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.cnt))
	for k := range t.cnt {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return t.cnt[keys[i]] > t.cnt[keys[j]] })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%8.2f  %s\n", float64(t.cnt[k])/float64(n), k)
	}
	return sb.String()
}

func (t *subjectTap) close() { t.nc.Close() }
