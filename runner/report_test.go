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

	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
)

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
	eng, err := engine.New(engine.Config{
		Providers: engine.Providers{Host: enginetest.HostExec()}, Reporter: rep, LookupEnv: enginetest.Env(testEnv),
		ReportTimeout: reportTimeout, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.Parse(t, outboxWorkflow)
	var wg sync.WaitGroup
	results := make([]*engine.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = eng.Run(context.Background(), engine.RunSpec{ID: fmt.Sprintf("r%d", i), Attempt: 1,
				Workflow: w, Event: samplePR(), Workspace: t.TempDir()})
		}()
	}
	wg.Wait()
	for i, res := range results {
		s := enginetest.Step(res, "only")
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
	rep := &enginetest.HangingStart{}
	ob := fastOutbox(t, q, rep, slog.New(slog.DiscardHandler), time.Hour)
	start := time.Now()
	res, _, _ := enginetest.Run(t, outboxWorkflow, enginetest.RunOpts{Env: testEnv, Event: samplePR(), Reporter: rep, Cfg: func(c *engine.Config) {
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
