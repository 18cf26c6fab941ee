package runner_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
)

// failingFinal is a reporter the forge refuses final reports of.
type failingFinal struct {
	mu     sync.Mutex
	phases []contract.Phase
}

func (f *failingFinal) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phases = append(f.phases, r.Phase)
	if r.Phase == contract.PhaseFinal {
		return r.Ref, errors.New("422 Unprocessable Entity")
	}
	return r.Ref, nil
}

const metricsOK = `name: ok
steps:
  - id: a
    run: "true"
  - id: b
    depends: [a]
    run: "true"
`

const metricsBad = `name: bad
steps:
  - id: boom
    run: exit 3
`

// TestRunnerMetricsAndSpans: runs move the runner's families (finished by
// workflow and status, run and step durations by executor, deliveries,
// redeliveries, report failures by forge and phase), and a run published
// within a span is traced under it: "run" (child of the publish span, as
// the message header carries it), "claim", one "step" per step and one
// "report" per Reporter call, all in the publish span's trace, which the
// record keeps.
func TestRunnerMetricsAndSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	metrics := runner.NewMetrics()
	f := newFixture(t, map[string]string{"ok": metricsOK, "bad": metricsBad}, nil, func(c *runner.Config) {
		c.Tracer, c.Metrics = tp, metrics
		c.Consumer.Observer = metrics
	})
	rep := &failingFinal{}
	eng, err := engine.New(engine.Config{
		Providers: engine.Providers{Host: enginetest.HostExec()},
		Logs:      f.q.Logs(),
		LookupEnv: enginetest.Env(testEnv),
		Logger:    quietLogger(),
		Reporter:  rep,
		Tracer:    tp,
		Metrics:   metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.r, err = runner.New(f.runCfg, runner.Deps{Runs: f.q.Runs(), Workflows: f.wfs, Workspaces: f.ws, Engine: eng, Groups: f.q.Groups()})
	if err != nil {
		t.Fatal(err)
	}
	f.ws.failures.Store(1) // the first run's first delivery is handed back: one redelivery
	f.start()

	pctx, publish := tp.Tracer("test").Start(context.Background(), "publish")
	res, err := f.q.Publish(pctx, &queue.RunRequest{Workflow: "ok", Event: *samplePR()})
	publish.End()
	if err != nil {
		t.Fatal(err)
	}
	okRec := f.waitRecord(res.RunID, 20*time.Second, "ok finished", terminal)
	badID := f.publish("bad", nil)
	f.waitRecord(badID, 20*time.Second, "bad finished", terminal)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.Collectors()...)
	want := `
# HELP hookrun_queue_deliveries_total Run requests handed to this runner by the queue, by workflow (redeliveries included).
# TYPE hookrun_queue_deliveries_total counter
hookrun_queue_deliveries_total{workflow="bad"} 1
hookrun_queue_deliveries_total{workflow="ok"} 2
# HELP hookrun_queue_redeliveries_total Run requests delivered again (a nak, a runner that died or missed AckWait), by workflow.
# TYPE hookrun_queue_redeliveries_total counter
hookrun_queue_redeliveries_total{workflow="ok"} 1
# HELP hookrun_report_failures_total Reports (start, progress, final) the forge did not take, after rate-limit retries, by forge and phase.
# TYPE hookrun_report_failures_total counter
hookrun_report_failures_total{forge="github",phase="final"} 2
# HELP hookrun_runs_finished_total Runs that reached a final status (succeeded, partially_succeeded, failed, cancelled, skipped), by workflow and status.
# TYPE hookrun_runs_finished_total counter
hookrun_runs_finished_total{status="failed",workflow="bad"} 1
hookrun_runs_finished_total{status="succeeded",workflow="ok"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hookrun_queue_deliveries_total", "hookrun_queue_redeliveries_total",
		"hookrun_report_failures_total", "hookrun_runs_finished_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(metrics.Collectors()[1]); n != 2 {
		t.Errorf("run duration series: %d, want one per workflow", n)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != "hookrun_step_duration_seconds" {
			continue
		}
		counts := map[string]uint64{}
		for _, m := range fam.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + " "
			}
			counts[labels] = m.GetHistogram().GetSampleCount()
		}
		if counts["executor=host workflow=ok "] != 2 || counts["executor=host workflow=bad "] != 1 {
			t.Errorf("step duration samples %v, want 2 host steps of ok and 1 of bad", counts)
		}
	}

	// The ok run's spans: under the publish span, in its trace.
	traceID := publish.SpanContext().TraceID()
	if okRec.TraceID != traceID.String() {
		t.Errorf("record trace_id %q, want %s", okRec.TraceID, traceID)
	}
	var runs, claims, steps, reports int
	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != traceID {
			continue
		}
		parent := byID[s.Parent.SpanID().String()].Name
		switch s.Name {
		case "run":
			runs++
			if s.Parent.SpanID() != publish.SpanContext().SpanID() || !s.Parent.IsRemote() {
				t.Errorf("run span's parent %v, want the publish span, remote", s.Parent)
			}
		case "claim":
			claims++
		case "step":
			steps++
		case "report":
			reports++
		}
		if s.Name != "run" && s.Name != "publish" && parent != "run" {
			t.Errorf("%s span under %q, want under run", s.Name, parent)
		}
	}
	// Two deliveries (the first handed back at prepare): two run and
	// claim spans; the steps and reports of the one execution.
	if runs != 2 || claims != 2 || steps != 2 || reports < 2 {
		t.Errorf("spans in the ok run's trace: %d run, %d claim, %d step, %d report; want 2, 2, 2, ≥2", runs, claims, steps, reports)
	}
}
