package ingress

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Delivery outcomes, the "outcome" label of hookrun_ingress_deliveries_total.
const (
	outcomeAccepted     = "accepted"     // at least one run published (or found as a duplicate)
	outcomeNoRun        = "no_run"       // handled event, but no workflow matched or was authorized
	outcomeUnhandled    = "unhandled"    // event type hookrun ignores
	outcomePing         = "ping"         // GitHub ping
	outcomeUnauthorized = "unauthorized" // bad or missing signature/token
	outcomeMalformed    = "malformed"    // missing headers or unparsable body
	outcomeTooLarge     = "too_large"    // body over the cap
	outcomeUnavailable  = "unavailable"  // the queue did not persist every run
)

// metrics are one Server's Prometheus collectors, on a registry of its own.
type metrics struct {
	registry   *prometheus.Registry
	deliveries *prometheus.CounterVec
	publish    prometheus.Histogram
	runs       *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrun_ingress_deliveries_total",
			Help: "Webhook deliveries received, by forge, event and outcome.",
		}, []string{"forge", "event", "outcome"}),
		publish: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrun_ingress_publish_seconds",
			Help:    "Time to publish (and get every PubAck for) the run requests of one delivery.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrun_ingress_runs_created_total",
			Help: "Run requests newly persisted (duplicates not counted), by forge and workflow.",
		}, []string{"forge", "workflow"}),
	}
	m.registry.MustRegister(m.deliveries, m.publish, m.runs,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// knownEvents bounds the "event" label: event names come from a header, and
// only these are used verbatim.
var knownEvents = map[string]bool{
	ghPing: true, ghPullRequest: true, ghIssueComment: true, ghIssues: true, ghPush: true,
	glMergeRequest: true, glNote: true, glIssue: true, glPush: true, glTagPush: true,
}

func eventLabel(name string) string {
	switch {
	case name == "":
		return "none"
	case knownEvents[name]:
		return name
	}
	return "other"
}
