package runner

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/workflows"
)

// Metrics are the runner's and the engine's Prometheus families. Their
// labels are bounded: workflow names (the loaded files), final statuses,
// executors, forges and report phases; never a run id, a repository or a
// user. A nil *Metrics counts nothing. Build one per process with
// NewMetrics and register Collectors once (internal/app).
type Metrics struct {
	runsFinished   *prometheus.CounterVec   // workflow, status
	runDuration    *prometheus.HistogramVec // workflow
	stepDuration   *prometheus.HistogramVec // workflow, executor
	deliveries     *prometheus.CounterVec   // workflow
	redeliveries   *prometheus.CounterVec   // workflow
	reportFailures *prometheus.CounterVec   // forge, phase
	// unauthenticated counts run requests refused for a missing or wrong
	// authenticator; no label (nothing in them is trusted).
	unauthenticated prometheus.Counter
}

// Buckets of the duration histograms: steps and runs take seconds to
// an hour (runner.default_timeout).
var (
	stepBuckets = []float64{.1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	runBuckets  = []float64{.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
)

// NewMetrics returns the families, zero.
func NewMetrics() *Metrics {
	return &Metrics{
		runsFinished:   counterVec("hookrun_runs_finished_total", "Runs that reached a final status (succeeded, partially_succeeded, failed, cancelled, skipped), by workflow and status.", "workflow", "status"),
		runDuration:    histogramVec("hookrun_run_duration_seconds", "Wall time of finished runs from claim to final state, by workflow.", runBuckets, "workflow"),
		stepDuration:   histogramVec("hookrun_step_duration_seconds", "Wall time of steps (all their attempts), by workflow and executor (host, container, root_container, sbx, none).", stepBuckets, "workflow", "executor"),
		deliveries:     counterVec("hookrun_queue_deliveries_total", "Run requests handed to this runner by the queue, by workflow (redeliveries included).", "workflow"),
		redeliveries:   counterVec("hookrun_queue_redeliveries_total", "Run requests delivered again (a nak, a runner that died or missed AckWait), by workflow.", "workflow"),
		reportFailures: counterVec("hookrun_report_failures_total", "Reports (start, progress, final) the forge did not take, after rate-limit retries, by forge and phase.", "forge", "phase"),
		unauthenticated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrun_queue_unauthenticated_total",
			Help: "Run requests refused because their authenticator (Hookrun-Mac) was missing or wrong: someone who reaches NATS published them; nothing of them ran.",
		}),
	}
}

// counterVec is a counter family by labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// histogramVec is a histogram family by labels, with buckets.
func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// Collectors are the families, for one Prometheus registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.runsFinished, m.runDuration, m.stepDuration, m.deliveries, m.redeliveries, m.reportFailures, m.unauthenticated}
}

func (m *Metrics) runFinished(workflow string, status workflows.Status, d time.Duration) {
	if m == nil {
		return
	}
	m.runsFinished.WithLabelValues(workflow, string(status)).Inc()
	m.runDuration.WithLabelValues(workflow).Observe(d.Seconds())
}

// StepFinished observes a step's duration (engine.Observer).
func (m *Metrics) StepFinished(workflow, executor string, d time.Duration) {
	if m == nil {
		return
	}
	m.stepDuration.WithLabelValues(workflow, executor).Observe(d.Seconds())
}

// ReportFailed counts a report the forge did not take (engine.Observer).
func (m *Metrics) ReportFailed(forge workflows.Forge, phase string) {
	if m == nil {
		return
	}
	f := string(forge)
	if f == "" {
		f = "none"
	}
	m.reportFailures.WithLabelValues(f, phase).Inc()
}

// Delivered counts a delivery, and a redelivery when n > 1
// (queue.ConsumerObserver).
func (m *Metrics) Delivered(workflow string, n uint64) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(workflow).Inc()
	if n > 1 {
		m.redeliveries.WithLabelValues(workflow).Inc()
	}
}

// GaveUp counts a run the queue failed itself (queue.ConsumerObserver):
// it finished failed without a result of the runner's.
func (m *Metrics) GaveUp(workflow string) {
	if m == nil {
		return
	}
	m.runsFinished.WithLabelValues(workflow, string(workflows.StatusFailed)).Inc()
}

// Unauthenticated counts a run request refused for its authenticator
// (queue.ConsumerObserver).
func (m *Metrics) Unauthenticated() {
	if m == nil {
		return
	}
	m.unauthenticated.Inc()
}

var (
	_ queue.ConsumerObserver = (*Metrics)(nil)
	_ engine.Observer        = (*Metrics)(nil)
)
