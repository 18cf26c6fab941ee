package ingress

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// A delivery's trace, when Config.Tracer is set: the server span
// "receive" (forge, event, delivery id, outcome, HTTP status) is its root;
// "verify" (the signature or token check) and "publish" (the runs
// persisted, persist.go; the context the run messages carry to the
// runners) are its
// children. Nothing of the body is recorded: no title, no comment, no
// signature. With Tracer nil none of this runs.

func newTracer(tp trace.TracerProvider) trace.Tracer { return telemetry.Tracer(tp) }

// traceReceive opens the "receive" span of a webhook request and makes it
// the request's context; the returned func ends it with the answer's
// status.
func (s *Server) traceReceive(c echo.Context, forge workflows.Forge, event string) func() {
	req := c.Request()
	ctx, span := s.tracer.Start(req.Context(), "receive", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(telemetry.AttrForge.String(string(forge)), telemetry.AttrEvent.String(s.eventLabel(event)),
			attribute.String("http.route", c.Path())))
	c.SetRequest(req.WithContext(ctx))
	return func() {
		code := c.Response().Status
		span.SetAttributes(telemetry.AttrHTTPStatus.Int(code))
		if code >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
		span.End()
	}
}

// startVerify opens the "verify" span, nil with tracing off. Its result is
// the first argument of endVerify, so that the check, the second, runs
// within it (Go evaluates call arguments left to right).
func (s *Server) startVerify(c echo.Context) trace.Span {
	if s.tracer == nil {
		return nil
	}
	_, span := s.tracer.Start(c.Request().Context(), "verify")
	return span
}

// endVerify ends a "verify" span with the check's result, and returns it.
func endVerify(span trace.Span, ok bool) bool {
	if span != nil {
		span.SetAttributes(attribute.Bool("hookrun.verified", ok))
		if !ok {
			span.SetStatus(codes.Error, "verification failed")
		}
		span.End()
	}
	return ok
}

// deliveryLogger is the logger of one delivery: with trace_id when the
// request is traced, and the delivery id on the span.
func (s *Server) deliveryLogger(c echo.Context, delivery string) *slog.Logger {
	if s.tracer == nil {
		return s.logger
	}
	ctx := c.Request().Context()
	trace.SpanFromContext(ctx).SetAttributes(telemetry.AttrDelivery.String(delivery))
	if tid := telemetry.TraceID(ctx); tid != "" {
		return s.logger.With("trace_id", tid)
	}
	return s.logger
}

// Delivery outcomes, the "outcome" label of hookrun_ingress_deliveries_total.
const (
	outcomeAccepted     = "accepted"     // at least one run published (or found as a duplicate)
	outcomeNoRun        = "no_run"       // handled event, but no workflow matched or was authorized
	outcomeUnhandled    = "unhandled"    // event type hookrun ignores
	outcomePing         = "ping"         // a forge's ping (Webhooks.Ping)
	outcomeUnauthorized = "unauthorized" // bad or missing signature/token
	outcomeMalformed    = "malformed"    // missing headers or unparsable body
	outcomeTooLarge     = "too_large"    // body over the cap
	outcomeUnavailable  = "unavailable"  // the queue did not persist every run
	outcomeNotAllowed   = "not_allowed"  // repository outside allow_repos: ignored, only its summary stored (unmatched.go)
)

// metrics are one Server's counters and histogram with the standard Go
// and process collectors, on a registry of their own (never the global
// default, so that servers in one process stay apart), served by promhttp
// in whatever exposition format the scraper asks for.
type metrics struct {
	deliveries *prometheus.CounterVec // by forge, event, outcome
	publish    prometheus.Histogram
	runs       *prometheus.CounterVec // by forge, workflow
	lateTicks  *prometheus.CounterVec // by workflow
	handler    http.Handler           // GET /metrics
}

func newMetrics(logger *slog.Logger, more ...prometheus.Collector) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrun_ingress_deliveries_total",
			Help: "Webhook deliveries received, by forge, event and outcome.",
		}, []string{"forge", "event", "outcome"}),
		publish: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrun_ingress_publish_seconds",
			Help:    "Time to publish (and get every PubAck for) the run requests of one delivery, re-run, chat command, schedule tick or API start.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrun_ingress_runs_created_total",
			Help: "Run requests newly persisted (duplicates not counted), by forge and workflow.",
		}, []string{"forge", "workflow"}),
		lateTicks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrun_ingress_schedule_ticks_late_total",
			Help: "Schedule ticks that started no run because they were handled too long after they were due (decide.LateTickBound), by workflow.",
		}, []string{"workflow"}),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.deliveries, m.publish, m.runs, m.lateTicks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(more...)
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	})
	return m
}

// knownEvents bound the "event" label: event names come from a header,
// and only those a registered forge handles (Webhooks.Events) are used
// verbatim.
func knownEvents(reg *forge.Registry) map[string]bool {
	known := map[string]bool{}
	for _, n := range reg.Names() {
		for _, e := range reg.Get(n).Events() {
			known[e] = true
		}
	}
	return known
}

func (s *Server) eventLabel(name string) string {
	switch {
	case name == "":
		return "none"
	case s.knownEvents[name]:
		return name
	}
	return "other"
}
