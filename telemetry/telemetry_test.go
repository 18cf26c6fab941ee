package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabledFollowsTheOTELVariables(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		on, err bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
	} {
		on, err := Enabled(envOf(tc.env))
		if on != tc.on || (err != nil) != tc.err {
			t.Errorf("Enabled(%v) = %v, %v; want %v, error %v", tc.env, on, err, tc.on, tc.err)
		}
	}
}

// TestSetupOffExportsNothing: without OTEL_* the provider is a no-op: its
// spans record nothing and carry no trace id, so there is nothing to
// export (and no exporter).
func TestSetupOffExportsNothing(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_SERVICE_NAME", "hookrun-test")
	tr, err := Setup(context.Background(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled {
		t.Fatal("tracing on without an exporter configured")
	}
	ctx, span := Tracer(tr.Provider).Start(context.Background(), "receive")
	if span.IsRecording() || span.SpanContext().IsValid() || TraceID(ctx) != "" {
		t.Errorf("a span of the off provider records or has an id: %+v", span.SpanContext())
	}
	span.End()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSetupExportsOverOTLPHTTP: with OTEL_EXPORTER_OTLP_ENDPOINT the spans
// reach the collector as OTLP/HTTP protobuf, under service hookrun-<mode>.
func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	got := make(chan *collectortrace.ExportTraceServiceRequest, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector got %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		data, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &req); err != nil {
			t.Errorf("undecodable export: %v", err)
		}
		got <- &req
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	tr, err := Setup(context.Background(), "runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled {
		t.Fatal("tracing off with an endpoint set")
	}
	_, span := Tracer(tr.Provider).Start(context.Background(), "claim")
	want := span.SpanContext().TraceID()
	span.End()
	if err := tr.Close(); err != nil { // flushes
		t.Fatal(err)
	}
	select {
	case req := <-got:
		rs := req.ResourceSpans[0]
		service := ""
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		s := rs.ScopeSpans[0].Spans[0]
		if service != "hookrun-runner" || s.Name != "claim" || string(s.TraceId) != string(want[:]) {
			t.Errorf("exported %q from %q in trace %x, want claim from hookrun-runner in %s", s.Name, service, s.TraceId, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing exported")
	}
}

func TestSetupRefusesOtherProtocols(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, err := Setup(context.Background(), "x", nil)
	if err == nil {
		t.Fatal("grpc accepted; only http/protobuf is built in")
	}
}

// TestTransportSpans: a forge call within a trace gets a client span with
// its kind and status code; outside any trace none.
func TestTransportSpans(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/repos/o/r/statuses/abc" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	client := &http.Client{Transport: Transport(nil, tp, "github")}
	do := func(ctx context.Context, path string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path+"?access_token=secret", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	do(context.Background(), "/repos/o/r/issues/2/comments")
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans outside a trace, want none", n)
	}
	ctx, parent := Tracer(tp).Start(context.Background(), "report")
	do(ctx, "/repos/o/r/issues/2/comments")
	do(ctx, "/repos/o/r/statuses/abc")
	parent.End()
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 2 calls and their parent", len(spans))
	}
	for i, want := range []struct {
		name string
		code int64
	}{{"forge comment", 201}, {"forge status", 422}} {
		s := spans[i]
		attrs := map[string]string{}
		var code int64
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.String()
			if kv.Key == AttrHTTPStatus {
				code = kv.Value.AsInt64()
			}
		}
		if s.Name != want.name || code != want.code || s.Parent.SpanID() != parent.SpanContext().SpanID() || attrs["hookrun.forge"] != "github" {
			t.Errorf("span %d: %s code %d attrs %v, want %s %d under report", i, s.Name, code, attrs, want.name, want.code)
		}
		for k, v := range attrs {
			if v == "secret" || len(v) > 0 && contains(v, "access_token") {
				t.Errorf("attribute %s carries the query: %q", k, v)
			}
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
