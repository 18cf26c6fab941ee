package main

import (
	"bufio"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is one span an OTLP/HTTP exporter sent, with the service that
// sent it.
type otlpSpan struct {
	service  string
	name     string
	traceID  string
	spanID   string
	parentID string
	attrs    map[string]string
}

// fakeCollector is an OTLP/HTTP trace receiver: POST /v1/traces with a
// protobuf ExportTraceServiceRequest, as the collector checks them.
type fakeCollector struct {
	t     *testing.T
	mu    sync.Mutex
	spans []otlpSpan
	bad   []string
}

func newFakeCollector(t *testing.T) (*fakeCollector, *httptest.Server) {
	c := &fakeCollector{t: t}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

func (c *fakeCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		c.bad = append(c.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		http.Error(w, "unsupported", http.StatusNotFound)
		return
	}
	data, err := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &req)
	}
	if err != nil {
		c.bad = append(c.bad, "undecodable export: "+err.Error())
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{service: service, name: s.Name, traceID: hex.EncodeToString(s.TraceId),
					spanID: hex.EncodeToString(s.SpanId), parentID: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
				for _, kv := range s.Attributes {
					v := kv.Value.GetStringValue()
					if v == "" {
						if iv := kv.Value.GetIntValue(); iv != 0 {
							v = strconv.FormatInt(iv, 10)
						}
					}
					sp.attrs[kv.Key] = v
				}
				c.spans = append(c.spans, sp)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (c *fakeCollector) snapshot() []otlpSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpSpan(nil), c.spans...)
}

// startTestNATS runs a nats-server with JetStream in the test process on
// a loopback port, for hookrun processes that need an external NATS.
func startTestNATS(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

const traceWorkflowTwo = `name: e2e-two
on:
  - event: pull_request
    actions: [opened]
steps:
  - id: only
    run: echo two
report: { comment: sticky, status: false }
`

// TestTraceAcrossIngressAndRunner runs `hookrun ingress` and `hookrun
// runner` as two processes that share nothing but NATS, both exporting
// OTLP/HTTP to a fake collector (OTEL_EXPORTER_OTLP_ENDPOINT). One delivery
// matching two workflows is one trace: receive → verify and publish
// (ingress), then per run a "run" span whose parent is the publish span
// (the context travelled in the NATS headers), with its claim, its steps,
// its reports and their forge calls under it (runner). The runs' records
// and the log lines of both processes carry the same trace id, and the
// runner's metrics listener counts the runs.
func TestTraceAcrossIngressAndRunner(t *testing.T) {
	const secret, ghToken, apiToken = "trace-secret", "gh-token-trace", "api-token-trace"
	natsURL := startTestNATS(t)
	gh, ghSrv := newFakeGitHub(t, ghToken)
	col, colSrv := newFakeCollector(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "e2e.yaml"), e2eWorkflow)
	writeFile(t, filepath.Join(dir, "workflows", "e2e-two.yaml"), traceWorkflowTwo)
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
workflows: `+filepath.Join(dir, "workflows")+`
nats: { url: "`+natsURL+`" }
allow_repos: ["Codertocat/Hello-World"]
github: { webhook_secret: "`+secret+`", token: "${TRACE_GH_TOKEN}", api_url: "`+ghSrv.URL+`/" }
api: { token: "`+apiToken+`" }
runner: { metrics_listen: "`+metricsAddr+`" }
runs: { request_key: "trace-request-key-0123456789abcdef0123" }
shutdown_grace: 5s
`)
	env := []string{"TRACE_GH_TOKEN=" + ghToken, "OTEL_EXPORTER_OTLP_ENDPOINT=" + colSrv.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}
	ing := startHookrun(t, "ingress", env, "ingress", "--config", cfg, "--data-dir", filepath.Join(dir, "ingress"), "--log-format", "json")
	url := "http://" + addr
	waitReady(t, ing, url, 60*time.Second)
	run := startHookrun(t, "runner", env, "runner", "--config", cfg, "--data-dir", filepath.Join(dir, "runner"), "--log-format", "json")

	body := fixture(t, "github/pull_request/opened.payload.json")
	code, ans := postGitHub(t, url, secret, "pull_request", "trace-delivery-1", body)
	if code != http.StatusAccepted || len(ans.Runs) != 2 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	type record struct {
		Status  string `json:"status"`
		TraceID string `json:"trace_id"`
	}
	recs := map[string]*record{}
	for _, r := range ans.Runs {
		rec := &record{}
		recs[r.ID] = rec
		waitFor(t, 60*time.Second, func() bool {
			return apiGet(t, url, apiToken, "/api/v1/runs/"+r.ID, rec) == http.StatusOK && rec.Status == "succeeded"
		})
	}
	traceID := recs[ans.Runs[0].ID].TraceID
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(traceID) || strings.Trim(traceID, "0") == "" {
		t.Fatalf("run record trace_id = %q, want a trace id", traceID)
	}
	for id, rec := range recs {
		if rec.TraceID != traceID {
			t.Errorf("run %s has trace %s, want the delivery's one trace %s", id, rec.TraceID, traceID)
		}
	}

	// Every span has arrived once the last report's forge call has.
	var spans []otlpSpan
	byName := map[string][]otlpSpan{}
	waitFor(t, 20*time.Second, func() bool {
		spans = col.snapshot()
		byName = map[string][]otlpSpan{}
		for _, s := range spans {
			byName[s.name] = append(byName[s.name], s)
		}
		return len(byName["run"]) >= 2 && len(byName["report"]) >= 4 && len(byName["step"]) >= 3 && len(byName["receive"]) == 1
	})
	byID := map[string]otlpSpan{}
	for _, s := range spans {
		byID[s.spanID] = s
		if s.traceID != traceID {
			t.Errorf("span %s (%s) is in trace %s, want %s", s.name, s.service, s.traceID, traceID)
		}
	}
	parentName := func(s otlpSpan) string { return byID[s.parentID].name }
	one := func(name, service string) otlpSpan {
		if len(byName[name]) != 1 {
			t.Fatalf("%d %q spans, want 1: %+v", len(byName[name]), name, byName[name])
		}
		s := byName[name][0]
		if s.service != service {
			t.Errorf("span %s from %q, want %q", name, s.service, service)
		}
		return s
	}
	receive := one("receive", "hookrun-ingress")
	if receive.parentID != "" || receive.attrs["hookrun.delivery"] != "trace-delivery-1" || receive.attrs["http.response.status_code"] != "202" {
		t.Errorf("receive span: %+v", receive)
	}
	if v := one("verify", "hookrun-ingress"); v.parentID != receive.spanID {
		t.Errorf("verify's parent is %q, want receive", parentName(v))
	}
	publish := one("publish", "hookrun-ingress")
	if publish.parentID != receive.spanID {
		t.Errorf("publish's parent is %q, want receive", parentName(publish))
	}
	runSpans := map[string]otlpSpan{} // by run id
	for _, s := range byName["run"] {
		if s.service != "hookrun-runner" || s.parentID != publish.spanID {
			t.Errorf("run span from %q with parent %q, want hookrun-runner under publish", s.service, parentName(s))
		}
		runSpans[s.attrs["hookrun.run.id"]] = s
	}
	for id := range recs {
		if _, ok := runSpans[id]; !ok {
			t.Errorf("no run span for run %s", id)
		}
	}
	for _, name := range []string{"claim", "step", "report"} {
		for _, s := range byName[name] {
			if parentName(s) != "run" || s.service != "hookrun-runner" {
				t.Errorf("%s span from %q under %q, want hookrun-runner under a run span", name, s.service, parentName(s))
			}
		}
	}
	if len(byName["claim"]) != 2 {
		t.Errorf("%d claim spans, want one per run", len(byName["claim"]))
	}
	steps := map[string]bool{}
	for _, s := range byName["step"] {
		steps[s.attrs["hookrun.workflow"]+"/"+s.attrs["hookrun.step.id"]] = true
		if s.attrs["hookrun.step.executor"] != "host" || s.attrs["hookrun.status"] != "succeeded" {
			t.Errorf("step span attributes: %v", s.attrs)
		}
	}
	for _, want := range []string{"e2e/first", "e2e/second", "e2e-two/only"} {
		if !steps[want] {
			t.Errorf("no step span for %s (have %v)", want, steps)
		}
	}
	kinds := map[string]bool{}
	for _, s := range spans {
		if strings.HasPrefix(s.name, "forge ") {
			if parentName(s) != "report" || s.attrs["http.response.status_code"] == "" {
				t.Errorf("forge call span %s under %q with status %q", s.name, parentName(s), s.attrs["http.response.status_code"])
			}
			kinds[s.attrs["hookrun.report.kind"]] = true
		}
		for k, v := range s.attrs {
			if strings.Contains(v, ghToken) || strings.Contains(v, secret) || strings.Contains(v, "Update the README") {
				t.Errorf("span %s attribute %s carries a secret or the pull request's title: %q", s.name, k, v)
			}
		}
	}
	if !kinds["comment"] || !kinds["status"] {
		t.Errorf("forge call kinds %v, want comment and status", kinds)
	}

	// Log lines of both processes carry the trace id.
	for _, p := range []*proc{ing, run} {
		if !logHas(p.out.String(), `"trace_id":"`+traceID+`"`) {
			t.Errorf("no log line of %s carries trace_id %s", p.name, traceID)
		}
	}

	// The runner's metrics listener counts what happened.
	metrics := scrape(t, "http://"+metricsAddr+"/metrics")
	for _, want := range []string{
		`hookrun_runs_finished_total{status="succeeded",workflow="e2e"} 1`,
		`hookrun_runs_finished_total{status="succeeded",workflow="e2e-two"} 1`,
		`hookrun_run_duration_seconds_count{workflow="e2e"} 1`,
		`hookrun_step_duration_seconds_count{executor="host",workflow="e2e"} 2`,
		`hookrun_queue_deliveries_total{workflow="e2e-two"} 1`,
		`hookrun_queue_pending_runs 0`,
		`hookrun_report_outbox_reports 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("runner metrics lack %q", want)
		}
	}
	gh.mu.Lock()
	if len(gh.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", gh.bad)
	}
	gh.mu.Unlock()
	col.mu.Lock()
	if len(col.bad) > 0 {
		t.Errorf("requests the collector refused: %v", col.bad)
	}
	col.mu.Unlock()
}

// logHas reports whether a line of out contains s.
func logHas(out, s string) bool {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

// scrape returns the text exposition at url.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %d %s", url, resp.StatusCode, data)
	}
	return string(data)
}
