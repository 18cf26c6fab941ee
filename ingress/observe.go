package ingress

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

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
