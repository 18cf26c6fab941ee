// Package telemetry sets up a process's OpenTelemetry tracing from the
// standard OTEL_* environment variables, and holds the pieces every half of
// hookrun traces with: the tracer provider (a no-op when tracing is off),
// the trace id of a context for log lines, and the HTTP transport that
// gives each forge API call (a report's comment or status) its own span.
//
// It sits beside the flow rather than in it: internal/app builds one
// Tracing per process and hands its TracerProvider to ingress, the runner
// and the engine, which start their spans with it; the queue carries the
// W3C trace context of a delivery in the NATS headers of its run messages,
// so ingress and the runners of other processes share one trace. It imports
// nothing of the project.
package telemetry
