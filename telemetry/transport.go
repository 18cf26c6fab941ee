package telemetry

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of hookrun's spans, in one place.
const (
	AttrWorkflow     = attribute.Key("hookrun.workflow")
	AttrRunID        = attribute.Key("hookrun.run.id")
	AttrAttempt      = attribute.Key("hookrun.run.attempt")
	AttrStatus       = attribute.Key("hookrun.status")
	AttrForge        = attribute.Key("hookrun.forge")
	AttrEvent        = attribute.Key("hookrun.event")
	AttrDelivery     = attribute.Key("hookrun.delivery")
	AttrRuns         = attribute.Key("hookrun.runs")
	AttrStepID       = attribute.Key("hookrun.step.id")
	AttrExecutor     = attribute.Key("hookrun.step.executor")
	AttrExitCode     = attribute.Key("hookrun.step.exit_code")
	AttrAttempts     = attribute.Key("hookrun.step.attempts")
	AttrReportPhase  = attribute.Key("hookrun.report.phase")
	AttrReportKind   = attribute.Key("hookrun.report.kind")
	AttrNumDelivered = attribute.Key("messaging.delivery.count")
	AttrHTTPMethod   = attribute.Key("http.request.method")
	AttrHTTPStatus   = attribute.Key("http.response.status_code")
	AttrServer       = attribute.Key("server.address")
)

// Kinds of forge API call (the "hookrun.report.kind" attribute).
const (
	KindComment = "comment" // a pull/merge request comment or note, or finding it
	KindStatus  = "status"  // a commit status
	KindOther   = "other"   // anything else (tokens, lookups, drafts)
)

// ForgeCallKind classifies a forge API path: comments (a path with a
// .../comments or .../notes segment: an issue or pull request comment, a
// merge request note), commit statuses (.../statuses/SHA), or other.
func ForgeCallKind(path string) string {
	switch {
	case strings.Contains(path, "/comments") || strings.Contains(path, "/notes"):
		return KindComment
	case strings.Contains(path, "/statuses/"):
		return KindStatus
	}
	return KindOther
}

// Transport gives every request through base a client span "forge
// <kind>" (comment, status, other) in the trace of the request's context,
// with the method, the host and the answer's status code, never the URL's
// query, a header or a body (tokens and comment text stay out of traces).
// base nil: http.DefaultTransport. With a no-op provider it costs one
// span start that does nothing.
func Transport(base http.RoundTripper, tp trace.TracerProvider, forge string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &tracingTransport{base: base, tracer: tp.Tracer(scope), forge: forge}
}

// scope is the instrumentation scope of every hookrun tracer.
const scope = "github.com/hookrun/hookrun"

// Tracer is the tracer hookrun's packages start spans with.
func Tracer(tp trace.TracerProvider) trace.Tracer { return tp.Tracer(scope) }

type tracingTransport struct {
	base   http.RoundTripper
	tracer trace.Tracer
	forge  string
}

func (t *tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		// Outside any trace (a lookup of ingress, a token refresh): no root span of its own.
		return t.base.RoundTrip(req)
	}
	kind := ForgeCallKind(req.URL.Path)
	ctx, span := t.tracer.Start(req.Context(), "forge "+kind, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrForge.String(t.forge), AttrReportKind.String(kind),
			AttrHTTPMethod.String(req.Method), AttrServer.String(req.URL.Host)))
	defer span.End()
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		span.SetStatus(codes.Error, "request failed")
		return resp, err
	}
	span.SetAttributes(AttrHTTPStatus.Int(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	return resp, nil
}
