package ingress

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestDeliveryTrace: with a tracer, a delivery is one trace whose root
// "receive" has "verify" and "publish" as children; the queued records and
// the delivery's log line carry its trace id; a refused signature ends
// "verify" in error. Without one nothing carries a trace id.
func TestDeliveryTrace(t *testing.T) {
	body := readFile(t, githubFixtures+"pull_request/opened.payload.json")
	second := strings.Replace(prWorkflow, "name: pr-check", "name: pr-check-two", 1)

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	env := newEnv(t, Config{Tracer: tp}, map[string]string{"a.yaml": prWorkflow, "b.yaml": second})
	a := env.github(t, "pull_request", "trace-1", body)
	if a.Code != 202 || len(a.Runs) != 2 {
		t.Fatalf("delivery: %d %s", a.Code, a.Raw)
	}
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	receive, verify, publish := byName["receive"], byName["verify"], byName["publish"]
	if len(spans) != 3 || receive.Parent.IsValid() {
		t.Fatalf("spans %v, want receive (a root), verify, publish", names(spans))
	}
	for _, s := range []tracetest.SpanStub{verify, publish} {
		if s.Parent.SpanID() != receive.SpanContext.SpanID() || s.SpanContext.TraceID() != receive.SpanContext.TraceID() {
			t.Errorf("%s is not a child of receive", s.Name)
		}
	}
	traceID := receive.SpanContext.TraceID().String()
	for _, r := range a.Runs {
		rec, _, err := env.q.Runs().Get(t.Context(), r.ID)
		if err != nil || rec.TraceID != traceID {
			t.Errorf("record %s trace_id %q (err %v), want %s", r.ID, rec.TraceID, err, traceID)
		}
	}
	mustContain(t, env.logs.String(), "trace_id="+traceID)
	for _, kv := range receive.Attributes {
		if strings.Contains(kv.Value.String(), "Update the README") {
			t.Errorf("receive attribute %s carries the title", kv.Key)
		}
	}

	exp.Reset()
	if a := env.do(t, "/hooks/github", githubHeaders("pull_request", "trace-2", "sha256=00"), strings.NewReader(string(body))); a.Code != 401 {
		t.Fatalf("bad signature: %d", a.Code)
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "verify" && s.Status.Code.String() != "Error" {
			t.Errorf("verify of a bad signature has status %v", s.Status)
		}
	}

	off := newEnv(t, Config{}, map[string]string{"a.yaml": prWorkflow})
	a = off.github(t, "pull_request", "trace-3", body)
	if a.Code != 202 || len(a.Runs) != 1 {
		t.Fatalf("delivery without tracing: %d %s", a.Code, a.Raw)
	}
	rec, _, err := off.q.Runs().Get(t.Context(), a.Runs[0].ID)
	if err != nil || rec.TraceID != "" || strings.Contains(off.logs.String(), "trace_id") {
		t.Errorf("without a tracer: record trace_id %q (err %v), logs %q", rec.TraceID, err, off.logs.String())
	}
}

func names(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

// githubHeaders are a delivery's headers with the given signature.
func githubHeaders(event, delivery, signature string) http.Header {
	h := http.Header{}
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-Hub-Signature-256", signature)
	return h
}

// TestEveryPersistPathIsTraced: a run started through the API (like a
// re-run, a schedule tick and a chat command, it persists through the same
// persister) is a "publish" span whose trace its record carries.
func TestEveryPersistPathIsTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	q := openQueue(t, t.TempDir())
	env := newEnvWith(t, Config{Tracer: tp, AllowRepos: []string{"octo/*"}}, q, map[string]string{"deploy.yaml": paramsWorkflow})
	env.srv.RegisterAPI(APIConfig{Token: testAPIToken}, q.Runs(), q.Logs(), storeCanceller{q.Runs()})
	code, body := apiPost(t, env.http.URL+"/api/v1/workflows/deploy/runs", testAPIToken, `{"repo": "octo/hello"}`)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %s", code, body)
	}
	var publish []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "publish" {
			publish = append(publish, s)
		}
	}
	if len(publish) != 1 {
		t.Fatalf("spans %v, want one publish", names(exp.GetSpans()))
	}
	var ans struct{ Run string }
	if err := json.Unmarshal([]byte(body), &ans); err != nil {
		t.Fatal(err)
	}
	rec, _, err := q.Runs().Get(t.Context(), ans.Run)
	if err != nil || rec.TraceID != publish[0].SpanContext.TraceID().String() {
		t.Errorf("record %s trace_id %q (err %v), want the publish span's %s", ans.Run, rec.TraceID, err, publish[0].SpanContext.TraceID())
	}
}
