package runner_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
)

// hangingReporter is a forge API that accepts the start report and never
// answers it: Report blocks until its context ends. Other phases answer at
// once, with the comment id the start report would have created.
type hangingReporter struct {
	mu     sync.Mutex
	phases []contract.Phase
	refs   []contract.ReportRef // the Ref each report carried
	times  []time.Time          // when each report was called
	ended  time.Time            // when the start report gave up
}

func (h *hangingReporter) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	h.mu.Lock()
	h.phases = append(h.phases, r.Phase)
	h.refs = append(h.refs, r.Ref)
	h.times = append(h.times, time.Now())
	h.mu.Unlock()
	if r.Phase == contract.PhaseStart {
		<-ctx.Done()
		h.mu.Lock()
		h.ended = time.Now()
		h.mu.Unlock()
		return contract.ReportRef{CommentID: 9}, ctx.Err()
	}
	return r.Ref, nil
}

// A start report that never returns does not hold the run's steps back:
// they run while it waits for its timeout, and the final report still
// comes after it (it edits the comment the start report made).
func TestHangingStartReportDoesNotDelaySteps(t *testing.T) {
	t.Parallel()
	const reportTimeout = 4 * time.Second
	rep := &hangingReporter{}
	res, _, _ := runWorkflow(t, `
type: chain
steps:
  - id: first
    run: "true"
  - id: second
    run: "true"
`, runOpts{reporter: rep, cfg: func(c *runner.EngineConfig) { c.ReportTimeout = reportTimeout }})
	if res.Status != succeeded {
		t.Fatalf("status %s, want succeeded (error %q)", res.Status, res.Error)
	}
	first := step(res, "first")
	if first.StartedAt == nil {
		t.Fatalf("first step has no start time: %+v", first)
	}
	d := first.StartedAt.Sub(res.StartedAt)
	t.Logf("first step started %s after the run (start report hanging for %s)", d, reportTimeout)
	if d > reportTimeout/2 {
		t.Errorf("first step started %s after the run; the hanging start report held it back (report timeout %s)", d, reportTimeout)
	}
	if s := step(res, "second"); s.FinishedAt == nil || s.FinishedAt.After(res.StartedAt.Add(reportTimeout/2)) {
		t.Errorf("the steps finished %s after the run started; they waited for the start report", s.FinishedAt.Sub(res.StartedAt))
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if len(rep.phases) < 2 || rep.phases[0] != contract.PhaseStart || rep.phases[len(rep.phases)-1] != contract.PhaseFinal {
		t.Fatalf("phases %v, want start first and final last", rep.phases)
	}
	if got := rep.refs[len(rep.refs)-1]; got.CommentID != 9 {
		t.Errorf("final report carried ref %+v, want the start report's comment 9", got)
	}
	if last := rep.times[len(rep.times)-1]; rep.ended.IsZero() || last.Before(rep.ended) {
		t.Errorf("the final report was sent (%s) before the start report ended (%s): it may race it", last, rep.ended)
	}
}

// Against a GitHub API that accepts connections and never answers, two
// runs of one workflow on one pull request both start their first step at
// once: neither waits for its own start report, nor for the other's (the
// reporter serialises the search for the sticky comment per pull request).
func TestHangingForgeDoesNotQueueRunsOfOnePR(t *testing.T) {
	t.Parallel()
	const reportTimeout = 3 * time.Second
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	defer close(stop)
	rep := githubReporter(t, srv.URL, slog.New(slog.DiscardHandler))
	eng, err := runner.NewEngine(runner.EngineConfig{
		Providers: runner.Providers{Host: hostExec()}, Reporter: rep, LookupEnv: env(testEnv),
		ReportTimeout: reportTimeout, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := parse(t, outboxWorkflow)
	var wg sync.WaitGroup
	results := make([]*runner.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = eng.Run(context.Background(), runner.RunSpec{ID: fmt.Sprintf("r%d", i), Attempt: 1,
				Workflow: w, Event: samplePR(), Workspace: t.TempDir()})
		}()
	}
	wg.Wait()
	for i, res := range results {
		s := step(res, "only")
		if s.StartedAt == nil {
			t.Fatalf("run %d: step never started: %+v", i, res)
		}
		d := s.StartedAt.Sub(res.StartedAt)
		t.Logf("run %d: first step started %s after the run (forge hanging, report timeout %s)", i, d, reportTimeout)
		if d > reportTimeout/2 {
			t.Errorf("run %d: first step started %s after the run: reporting held it back", i, d)
		}
		if res.Status != succeeded {
			t.Errorf("run %d: status %s (%s)", i, res.Status, res.Error)
		}
	}
}

// With an outbox, the end of a run does not wait for a start report that is
// still hanging either: its final report goes to the outbox, due once the
// start report has surely ended.
func TestHangingStartReportDoesNotHoldTheRunsEnd(t *testing.T) {
	t.Parallel()
	const reportTimeout = 12 * time.Second // the run's end waits 2s for it
	q := openQueue(t, t.TempDir())
	defer q.Close()
	rep := &hangingReporter{}
	ob := fastOutbox(t, q, rep, slog.New(slog.DiscardHandler), time.Hour)
	start := time.Now()
	res, _, _ := runWorkflow(t, outboxWorkflow, runOpts{reporter: rep, cfg: func(c *runner.EngineConfig) {
		c.ReportTimeout = reportTimeout
		c.Outbox = ob
	}})
	took := time.Since(start)
	t.Logf("run took %s with its start report hanging (report timeout %s)", took, reportTimeout)
	if took > reportTimeout/2 {
		t.Errorf("the run took %s: its end waited for the hanging start report", took)
	}
	if res.Status != succeeded || !strings.Contains(res.ReportError, "kept in the outbox") {
		t.Errorf("status %s, report error %q; want succeeded, final report kept", res.Status, res.ReportError)
	}
	list := outboxLen(t, q)
	if len(list) != 1 || list[0].RunID != "r1" {
		t.Fatalf("outbox %+v, want r1's final report", list)
	}
	if due := list[0].NextAt.Sub(list[0].CreatedAt); due < reportTimeout-time.Second {
		t.Errorf("kept final report due %s after it was kept; the start report may still be on its way until %s", due, reportTimeout)
	}
}
