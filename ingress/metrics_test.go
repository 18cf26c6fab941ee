package ingress

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The exposition is Prometheus text format 0.0.4: HELP and TYPE per family,
// label names sorted and values escaped, cumulative histogram buckets.
func TestMetricsExposition(t *testing.T) {
	m := newMetrics(slog.New(slog.DiscardHandler))
	m.deliveries.WithLabelValues("github", "pull_request", "accepted").Inc()
	m.deliveries.WithLabelValues("github", "pull_request", "accepted").Inc()
	m.runs.WithLabelValues("gitlab", "we\"ird\\name\nx").Inc()
	for _, v := range []float64{0.0005, 0.001, 0.003, 20} {
		m.publish.Observe(v)
	}
	rec := httptest.NewRecorder()
	m.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("answered %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	out := rec.Body.String()
	for _, want := range []string{
		"# HELP hookrun_ingress_deliveries_total Webhook deliveries received, by forge, event and outcome.\n# TYPE hookrun_ingress_deliveries_total counter\n",
		`hookrun_ingress_deliveries_total{event="pull_request",forge="github",outcome="accepted"} 2` + "\n",
		`hookrun_ingress_runs_created_total{forge="gitlab",workflow="we\"ird\\name\nx"} 1` + "\n",
		"# TYPE hookrun_ingress_publish_seconds histogram\n",
		`hookrun_ingress_publish_seconds_bucket{le="0.001"} 2` + "\n", // 0.0005 and 0.001 (le is inclusive)
		`hookrun_ingress_publish_seconds_bucket{le="0.005"} 3` + "\n",
		`hookrun_ingress_publish_seconds_bucket{le="10"} 3` + "\n",
		`hookrun_ingress_publish_seconds_bucket{le="+Inf"} 4` + "\n",
		"hookrun_ingress_publish_seconds_sum 20.0045\n",
		"hookrun_ingress_publish_seconds_count 4\n",
		"# TYPE go_goroutines gauge\n",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q:\n%s", want, out)
		}
	}
	// Every sample line is "name{labels} value" or "name value".
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i < 1 || strings.ContainsAny(line[i+1:], "{}\" ") {
			t.Errorf("malformed sample line %q", line)
		}
	}
}
