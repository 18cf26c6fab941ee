package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

// secondaryBody is GitHub's answer to a secondary rate limit, sent here
// without Retry-After (as GitHub does at times).
const secondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`

// fakeGitHub is the part of the GitHub API a run's reports use: it checks
// auth, method and path, and answers secondary-limit 403s (Retry-After
// when retryAfter is set) while limited is set.
type fakeGitHub struct {
	t          *testing.T
	limited    atomic.Bool
	retryAfter string

	mu       sync.Mutex
	limitHit int      // requests answered with the limit
	comments []string // bodies of comments created or edited, in order
	statuses []string // states of commit statuses set, in order
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Bearer ghs_test" && got != "token ghs_test" {
		f.t.Errorf("%s %s: authorization %q", r.Method, r.URL.Path, got)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if f.limited.Load() {
		f.mu.Lock()
		f.limitHit++
		f.mu.Unlock()
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, secondaryBody)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var in struct{ Body, State string }
	_ = json.Unmarshal(body, &in)
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch p := r.URL.Path; {
	case r.Method == http.MethodGet && p == "/user":
		io.WriteString(w, `{"login":"hookrun-bot"}`)
	case r.Method == http.MethodGet && p == "/repos/octo/demo/issues/7/comments":
		io.WriteString(w, `[]`)
	case r.Method == http.MethodPost && p == "/repos/octo/demo/issues/7/comments":
		f.comments = append(f.comments, in.Body)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":100}`)
	case r.Method == http.MethodPatch && p == "/repos/octo/demo/issues/comments/100":
		f.comments = append(f.comments, in.Body)
		io.WriteString(w, `{"id":100}`)
	case r.Method == http.MethodPost && p == "/repos/octo/demo/statuses/abc123":
		f.statuses = append(f.statuses, in.State)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	default:
		f.t.Errorf("unexpected %s %s", r.Method, p)
		http.NotFound(w, r)
	}
}

func (f *fakeGitHub) snapshot() (hits int, comments, statuses []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limitHit, append([]string(nil), f.comments...), append([]string(nil), f.statuses...)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func githubReporter(t *testing.T, url string, log *slog.Logger) *github.Reporter {
	t.Helper()
	rep, err := github.New(github.Config{APIURL: url + "/", Token: "ghs_test", BotLogin: "hookrun-bot",
		Client: forge.Client{MaxWait: 300 * time.Millisecond, Backoff: 200 * time.Millisecond, Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func openQueue(t *testing.T, dir string) *storestest.Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return storestest.With(t, q)
}

// fastOutbox is an outbox whose timing suits a test.
func fastOutbox(t *testing.T, q *storestest.Queue, rep contract.Reporter, log *slog.Logger, maxAge time.Duration) *runner.Outbox {
	t.Helper()
	o, err := runner.NewOutbox(runner.OutboxConfig{Poll: 100 * time.Millisecond, AttemptTimeout: time.Second,
		Backoff: 300 * time.Millisecond, MaxBackoff: time.Second, MaxAge: maxAge, Logger: log}, q.Outbox(), rep)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func outboxLen(t *testing.T, q *storestest.Queue) []*stores.OutboxEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := q.Outbox().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// counter is the value of the outbox's counter name, as a registry gathers it.
func counter(t *testing.T, o *runner.Outbox, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(o.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const outboxWorkflow = `
name: check
steps:
  - id: only
    run: "true"
report:
  status: true
`

// A final report GitHub refuses with secondary rate limits for longer than
// the report's deadline is not dropped: it waits in the outbox, survives a
// restart of the runner (the outbox worker closed and a new one opened
// over the same queue data dir), and lands once GitHub answers again.
func TestFinalReportSurvivesRateLimitAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	fake := &fakeGitHub{t: t}
	fake.limited.Store(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	rep := githubReporter(t, srv.URL, log)

	q1 := openQueue(t, dir)
	ob1 := fastOutbox(t, q1, rep, log, time.Hour)
	res, _, _ := enginetest.Run(t, outboxWorkflow, enginetest.RunOpts{Env: testEnv, Event: samplePR(), Reporter: rep, Cfg: func(c *engine.Config) {
		c.ReportTimeout = 6 * time.Second // the start report (rate limited, ~0.3s) ends well within a sixth of it
		c.Outbox = ob1
		c.Logger = log
	}})
	if res.Status != succeeded {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	if !strings.Contains(res.ReportError, "kept in the outbox") {
		t.Errorf("report error %q does not say the final report was kept", res.ReportError)
	}
	if list := outboxLen(t, q1); len(list) != 1 || list[0].RunID != "r1" {
		t.Fatalf("outbox after the run: %+v, want the final report of r1", list)
	}
	if got := counter(t, ob1, "hookrun_report_outbox_kept_total"); got != 1 {
		t.Errorf("kept counter %v, want 1", got)
	}
	// The first runner keeps trying while GitHub still refuses.
	ob1.Start()
	eventually(t, 15*time.Second, "the outbox tried again while limited", func() bool {
		list := outboxLen(t, q1)
		return len(list) == 1 && list[0].Attempts >= 2
	})
	ob1.Close()
	if err := q1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, comments, statuses := fake.snapshot(); len(comments) != 0 || len(statuses) != 0 {
		t.Fatalf("GitHub was limited, yet got comments %q, statuses %q", comments, statuses)
	}

	// Restart: a new queue over the same data dir, a new outbox; GitHub
	// answers again.
	fake.limited.Store(false)
	q2 := openQueue(t, dir)
	defer q2.Close()
	if list := outboxLen(t, q2); len(list) != 1 || list[0].Attempts < 2 {
		t.Fatalf("outbox after the restart: %+v, want the entry, tried at least twice", list)
	}
	ob2 := fastOutbox(t, q2, rep, log, time.Hour)
	ob2.Start()
	defer ob2.Close()
	eventually(t, 15*time.Second, "the final report landed after the restart", func() bool {
		_, comments, statuses := fake.snapshot()
		return len(comments) > 0 && len(statuses) > 0
	})
	_, comments, statuses := fake.snapshot()
	if last := comments[len(comments)-1]; !strings.Contains(last, "succeeded") {
		t.Errorf("comment delivered from the outbox is not the final one:\n%s", last)
	}
	if statuses[len(statuses)-1] != "success" {
		t.Errorf("statuses %q, want success last", statuses)
	}
	eventually(t, 10*time.Second, "the outbox empty after delivery", func() bool { return len(outboxLen(t, q2)) == 0 })
	if got := counter(t, ob2, "hookrun_report_outbox_delivered_total"); got != 1 {
		t.Errorf("delivered counter %v, want 1", got)
	}
}

// A report the forge keeps refusing is given up at the outbox's max age,
// counted and logged; Retry-After sets when it is tried again.
func TestOutboxGivesUpAndHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	fake := &fakeGitHub{t: t, retryAfter: "3"}
	fake.limited.Store(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	rep := githubReporter(t, srv.URL, log)
	q := openQueue(t, t.TempDir())
	defer q.Close()
	const maxAge = 2 * time.Second
	ob := fastOutbox(t, q, rep, log, maxAge)

	res, _, _ := enginetest.Run(t, outboxWorkflow, enginetest.RunOpts{Env: testEnv, Event: samplePR(), Reporter: rep, Cfg: func(c *engine.Config) {
		c.ReportTimeout = 6 * time.Second // the start report (rate limited, ~0.3s) ends well within a sixth of it
		c.Outbox = ob
		c.Logger = log
	}})
	list := outboxLen(t, q)
	if len(list) != 1 {
		t.Fatalf("outbox after the run: %+v (report error %q)", list, res.ReportError)
	}
	if wait := list[0].NextAt.Sub(list[0].CreatedAt); wait < 2*time.Second {
		t.Errorf("next attempt %s after the entry was made; Retry-After said 3s (backoff is 300ms)", wait)
	}
	ob.Start()
	defer ob.Close()
	eventually(t, 15*time.Second, "the report given up", func() bool {
		return counter(t, ob, "hookrun_report_outbox_given_up_total") == 1
	})
	if n := len(outboxLen(t, q)); n != 0 {
		t.Errorf("%d entries left after giving up", n)
	}
	if !strings.Contains(logs.String(), "giving up a final report") {
		t.Errorf("no log line for the given-up report:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "ghs_test") {
		t.Error("the token is in the log")
	}
	if _, comments, statuses := fake.snapshot(); len(comments) != 0 || len(statuses) != 0 {
		t.Errorf("limited GitHub got comments %q, statuses %q", comments, statuses)
	}
}

// An undelivered final report of an older run is dropped, not delivered,
// once a newer run of the workflow has started on the same pull request and
// head: it would overwrite the newer run's sticky comment and status.
func TestOutboxDropsReportSupersededByNewerRun(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	fake := &fakeGitHub{t: t}
	fake.limited.Store(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	rep := githubReporter(t, srv.URL, log)
	q := openQueue(t, t.TempDir())
	defer q.Close()
	ob, err := runner.NewOutbox(runner.OutboxConfig{Poll: 100 * time.Millisecond, AttemptTimeout: time.Second,
		Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, Runs: q.Runs(), Logger: log}, q.Outbox(), rep)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Run(t, outboxWorkflow, enginetest.RunOpts{Env: testEnv, Event: samplePR(), Reporter: rep, Cfg: func(c *engine.Config) {
		c.ReportTimeout = 6 * time.Second // the start report (rate limited, ~0.3s) ends well within a sixth of it
		c.Outbox = ob
	}})
	if n := len(outboxLen(t, q)); n != 1 {
		t.Fatalf("%d outbox entries after the run, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := samplePR()
	ev.Raw = nil
	if _, err := q.Runs().Create(ctx, &stores.RunRecord{ID: "r2", Workflow: "check", Repo: ev.Repo,
		Status: workflows.StatusRunning, Event: *ev}); err != nil {
		t.Fatal(err)
	}
	fake.limited.Store(false)
	ob.Start()
	defer ob.Close()
	eventually(t, 10*time.Second, "the superseded report dropped", func() bool { return len(outboxLen(t, q)) == 0 })
	if _, comments, statuses := fake.snapshot(); len(comments) != 0 || len(statuses) != 0 {
		t.Errorf("a superseded report was delivered: comments %q, statuses %q", comments, statuses)
	}
	if !strings.Contains(logs.String(), "newer=r2") {
		t.Errorf("no log line naming the newer run:\n%s", logs.String())
	}
}
