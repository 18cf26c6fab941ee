package ingress

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// instantPublisher persists nothing and answers at once: what is left of a
// delivery is ingress's own work (verify, normalize, match, metrics).
type instantPublisher struct{}

func (instantPublisher) Publish(_ context.Context, req *queue.RunRequest) (queue.PublishResult, error) {
	return queue.PublishResult{RunID: req.ID}, nil
}

func (instantPublisher) PublishDelivery(_ context.Context, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	res := make([]queue.PublishResult, len(reqs))
	for i, r := range reqs {
		res[i] = queue.PublishResult{RunID: r.ID}
	}
	return res, nil
}

func (instantPublisher) Ready(context.Context) error { return nil }

// BenchmarkDeliverGitHub measures one signed pull_request delivery through
// the server's handler, from the request to the 202, with a publisher that
// costs nothing: ingress's CPU per delivery, the metrics included.
func BenchmarkDeliverGitHub(b *testing.B) {
	env := newEnvWith(b, Config{}, instantPublisher{}, map[string]string{"pr.yaml": prWorkflow})
	body := readFile(b, githubFixtures+"pull_request/opened.payload.json")
	sig := sign(testGitHubSecret, body)
	h := env.srv.Handler()
	var seq atomic.Int64
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodPost, "/hooks/github", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("X-GitHub-Delivery", "bench-"+strconv.FormatInt(seq.Add(1), 10))
			req.Header.Set("X-Hub-Signature-256", sig)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				b.Fatalf("answered %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

// BenchmarkScrapeMetrics measures one GET /metrics of a server that has
// counted deliveries of several forges, events and outcomes.
func BenchmarkScrapeMetrics(b *testing.B) {
	env := newEnvWith(b, Config{}, instantPublisher{}, map[string]string{"pr.yaml": prWorkflow})
	for i, ev := range []string{"pull_request", "issue_comment", "push", "issues"} {
		env.srv.count(workflows.Forge("github"), ev, outcomeAccepted)
		env.srv.count(workflows.Forge("gitlab"), ev, outcomeNoRun)
		env.srv.metrics.publish.Observe(float64(i) / 100)
	}
	h := env.srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("answered %d", rec.Code)
		}
	}
}
