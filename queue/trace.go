package queue

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The trace context of a delivery travels with each of its run messages as
// W3C Trace Context headers (traceparent, tracestate): PublishDelivery
// writes the context of its caller's span, the consumer hands it to the
// handler as the remote parent. Without a span there is no header and
// nothing to read.
var traceContext propagation.TraceContext

// headerCarrier reads and writes NATS headers under their exact keys (NATS
// headers are case-sensitive; W3C names them in lower case).
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// injectTrace writes the trace context of ctx's span into h; nothing
// without a sampled or unsampled span.
func injectTrace(ctx context.Context, h nats.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, headerCarrier(h))
	}
}

// extractTrace returns ctx carrying the remote span context of h, or ctx
// itself when h has none.
func extractTrace(ctx context.Context, h nats.Header) context.Context {
	if len(h[traceparentHeader]) == 0 {
		return ctx
	}
	return traceContext.Extract(ctx, headerCarrier(h))
}

const traceparentHeader = "traceparent"

// TraceID is the id of the trace ctx's span is in, "" without one.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}
