package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Environment variables that decide whether tracing is on (the OTLP
// exporter itself reads the other OTEL_EXPORTER_OTLP_* variables: headers,
// timeout, compression, certificates; the SDK reads OTEL_TRACES_SAMPLER,
// OTEL_TRACES_SAMPLER_ARG and OTEL_BSP_*; the resource reads
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES).
const (
	envSDKDisabled     = "OTEL_SDK_DISABLED"
	envTracesExporter  = "OTEL_TRACES_EXPORTER"
	envEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocolHTTPProto  = "http/protobuf"
	exporterOTLP       = "otlp"
	exporterNone       = "none"
	defaultServiceName = "hookrun"
)

// shutdownTimeout bounds the flush of buffered spans at Close.
const shutdownTimeout = 5 * time.Second

// Tracing is one process's tracer provider. The zero value is not usable;
// build it with Setup (or Off, or WithProvider in tests).
type Tracing struct {
	// Provider starts the process's spans: the SDK's with an OTLP/HTTP
	// exporter when tracing is on, a no-op otherwise.
	Provider trace.TracerProvider
	// Enabled says whether spans are exported.
	Enabled  bool
	shutdown func(context.Context) error
}

// Off is tracing switched off: a no-op provider, nothing exported.
func Off() *Tracing {
	return &Tracing{Provider: noop.NewTracerProvider(), shutdown: func(context.Context) error { return nil }}
}

// WithProvider wraps a provider built elsewhere (tests with an in-memory
// exporter); Close shuts it down when it is the SDK's.
func WithProvider(tp trace.TracerProvider) *Tracing {
	t := &Tracing{Provider: tp, Enabled: true, shutdown: func(context.Context) error { return nil }}
	if sdk, ok := tp.(*sdktrace.TracerProvider); ok {
		t.shutdown = sdk.Shutdown
	}
	return t
}

// Enabled reports whether the environment asks for traces to be exported:
// OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set without
// OTEL_TRACES_EXPORTER; never with OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none. Another exporter name is an error: only OTLP
// is built in.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") {
		return false, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv(envTracesExporter))); exp {
	case exporterNone:
		return false, nil
	case exporterOTLP:
		return true, nil
	case "":
		return getenv(envEndpoint) != "" || getenv(envTracesEndpoint) != "", nil
	default:
		return false, fmt.Errorf("%s=%s: only %q and %q are supported", envTracesExporter, exp, exporterOTLP, exporterNone)
	}
}

// Setup builds the tracing of a process from its environment (the OTLP
// exporter reads its OTEL_EXPORTER_OTLP_* variables there itself): Off
// when Enabled says so, else an SDK tracer
// provider exporting in batches over OTLP/HTTP (protobuf), sampled as
// OTEL_TRACES_SAMPLER says (default: parent-based, always on), with the
// resource service.name "hookrun-<component>" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES name another. Export errors are logged at Warn.
// No request is made here.
func Setup(ctx context.Context, component string, logger *slog.Logger) (*Tracing, error) {
	getenv := os.Getenv
	on, err := Enabled(getenv)
	if err != nil || !on {
		return Off(), err
	}
	for _, k := range []string{envTracesProtocol, envProtocol} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != protocolHTTPProto {
				return nil, fmt.Errorf("%s=%s: only %s is supported", k, p, protocolHTTPProto)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating otlp trace exporter: %w", err)
	}
	name := defaultServiceName
	if component != "" {
		name += "-" + component
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err == nil {
		// The environment's service.name and attributes win over ours.
		res, err = resource.Merge(res, resource.Environment())
	}
	if err != nil {
		return nil, fmt.Errorf("building trace resource: %w", err)
	}
	if logger != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("exporting traces", "err", err) }))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Enabled: true, shutdown: tp.Shutdown}, nil
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if err := t.shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutting down tracing: %w", err)
	}
	return nil
}

// Close is Shutdown within a few seconds (for the app's closers).
func (t *Tracing) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return t.Shutdown(ctx)
}

// TraceID is the id of the trace ctx's span is in, "" without one.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}
