package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
)

// A start report that never returns does not hold the run's steps back:
// they run while it waits for its timeout, and the final report still
// comes after it (it edits the comment the start report made).
func TestHangingStartReportDoesNotDelaySteps(t *testing.T) {
	t.Parallel()
	const reportTimeout = 4 * time.Second
	rep := &enginetest.HangingStart{}
	res, _, _ := runWorkflow(t, `
type: chain
steps:
  - id: first
    run: "true"
  - id: second
    run: "true"
`, enginetest.RunOpts{Reporter: rep, Cfg: func(c *engine.Config) { c.ReportTimeout = reportTimeout }})
	if res.Status != succeeded {
		t.Fatalf("status %s, want succeeded (error %q)", res.Status, res.Error)
	}
	first := enginetest.Step(res, "first")
	if first.StartedAt == nil {
		t.Fatalf("first step has no start time: %+v", first)
	}
	d := first.StartedAt.Sub(res.StartedAt)
	t.Logf("first step started %s after the run (start report hanging for %s)", d, reportTimeout)
	if d > reportTimeout/2 {
		t.Errorf("first step started %s after the run; the hanging start report held it back (report timeout %s)", d, reportTimeout)
	}
	if s := enginetest.Step(res, "second"); s.FinishedAt == nil || s.FinishedAt.After(res.StartedAt.Add(reportTimeout/2)) {
		t.Errorf("the steps finished %s after the run started; they waited for the start report", s.FinishedAt.Sub(res.StartedAt))
	}
	phases, refs, times, ended := rep.Calls()
	if len(phases) < 2 || phases[0] != contract.PhaseStart || phases[len(phases)-1] != contract.PhaseFinal {
		t.Fatalf("phases %v, want start first and final last", phases)
	}
	if got := refs[len(refs)-1]; got.CommentID != 9 {
		t.Errorf("final report carried ref %+v, want the start report's comment 9", got)
	}
	if last := times[len(times)-1]; ended.IsZero() || last.Before(ended) {
		t.Errorf("the final report was sent (%s) before the start report ended (%s): it may race it", last, ended)
	}
}

// OnEnd is called once, when the steps have ended and before the final
// report, which a forge that does not answer holds up (here the start
// report, still on its way until the report timeout): the runner frees
// the run's concurrency group there.
func TestOnEndComesBeforeTheFinalReport(t *testing.T) {
	t.Parallel()
	const reportTimeout = 3 * time.Second
	rep := &enginetest.HangingStart{}
	var (
		mu    sync.Mutex
		calls []time.Time
	)
	res, _, _ := runWorkflow(t, `
steps:
  - {id: only, run: "true"}
`, enginetest.RunOpts{Reporter: rep, Cfg: func(c *engine.Config) { c.ReportTimeout = reportTimeout },
		OnEnd: func() { mu.Lock(); calls = append(calls, time.Now()); mu.Unlock() }})
	if res.Status != succeeded {
		t.Fatalf("status %s, want succeeded (error %q)", res.Status, res.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 {
		t.Fatalf("OnEnd called %d times, want once", len(calls))
	}
	phases, _, times, ended := rep.Calls()
	if phases[len(phases)-1] != contract.PhaseFinal {
		t.Fatalf("phases %v, want final last", phases)
	}
	if s := enginetest.Step(res, "only"); s.FinishedAt == nil || calls[0].Before(*s.FinishedAt) {
		t.Errorf("OnEnd called at %s, before the step finished (%+v)", calls[0], s)
	}
	if !calls[0].Before(ended) || !calls[0].Before(times[len(times)-1]) {
		t.Errorf("OnEnd called at %s, after the start report gave up (%s) or the final report (%s)", calls[0], ended, times[len(times)-1])
	}
}
