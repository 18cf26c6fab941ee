package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// limitedGitHub answers every request with GitHub's secondary rate limit
// (403, no Retry-After) while limited is set, else passes it to the fake.
type limitedGitHub struct {
	fake    *fakeGitHub
	limited atomic.Bool
	hits    atomic.Int64
}

func (l *limitedGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if l.limited.Load() {
		l.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
		return
	}
	l.fake.ServeHTTP(w, r)
}

// TestFinalReportOutlivesRateLimitAndRestart: GitHub answers every report of
// a run with secondary rate limits, longer than the final report may wait.
// The run still finishes, its final report waits in the outbox; `hookrun
// serve` is stopped and started again, GitHub answers again, and the
// restarted process delivers the final comment and the success status.
func TestFinalReportOutlivesRateLimitAndRestart(t *testing.T) {
	const secret, ghToken, apiToken = "outbox-secret", "gh-token-outbox", "api-token-outbox"
	gh, _ := newFakeGitHub(t, ghToken)
	lim := &limitedGitHub{fake: gh}
	lim.limited.Store(true)
	ts := httptest.NewServer(lim)
	t.Cleanup(ts.Close)
	srv := ts.URL
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "e2e.yaml"), e2eWorkflow)
	cfg, addr := githubServeConfig(t, dir, srv, apiToken, "runner: { report_outbox: { poll: 200ms, backoff: 300ms } }\n")
	env := serveEnv(secret, ghToken)
	url := "http://" + addr
	p := startHookrun(t, "serve-1", env, "serve", "--config", cfg)
	waitReady(t, p, url, 60*time.Second)

	code, ans := postGitHub(t, url, secret, "pull_request", "outbox-delivery-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	runID := ans.Runs[0].ID
	var rec struct {
		Status      string `json:"status"`
		ReportError string `json:"report_error"`
	}
	waitFor(t, 60*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+runID, &rec) == http.StatusOK && rec.Status == "succeeded"
	})
	if !strings.Contains(rec.ReportError, "kept in the outbox") {
		t.Errorf("run record's report error %q does not say the final report was kept", rec.ReportError)
	}
	// The first process keeps trying while GitHub refuses.
	hits := lim.hits.Load()
	waitFor(t, 20*time.Second, func() bool { return lim.hits.Load() > hits })
	p.stop(syscall.SIGTERM, 20*time.Second)
	gh.mu.Lock()
	if len(gh.statuses) != 0 || len(gh.comments) != 0 {
		t.Fatalf("GitHub was limited, yet got statuses %v, comments %v", gh.statuses, gh.comments)
	}
	gh.mu.Unlock()

	lim.limited.Store(false)
	p2 := startHookrun(t, "serve-2", env, "serve", "--config", cfg)
	waitReady(t, p2, url, 60*time.Second)
	waitFor(t, 30*time.Second, func() bool {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		return len(gh.statuses) > 0 && gh.statuses[len(gh.statuses)-1] == "success" && len(gh.comments) == 1
	})
	gh.mu.Lock()
	for _, b := range gh.comments {
		if !strings.Contains(b, "e2e says title=") || !strings.Contains(b, runID) {
			t.Errorf("comment delivered after the restart is not the run's final one:\n%s", b)
		}
	}
	if len(gh.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", gh.bad)
	}
	gh.mu.Unlock()
	// The counter moves once the entry is removed, after the forge has
	// the report: wait for it rather than read it at once.
	var metrics string
	counted := func() bool {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		metrics = string(b)
		return strings.Contains(metrics, "\nhookrun_report_outbox_delivered_total ") &&
			!strings.Contains(metrics, "\nhookrun_report_outbox_delivered_total 0\n")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !counted() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(metrics, "\nhookrun_report_outbox_delivered_total 1\n") {
		i := max(strings.Index(metrics, "hookrun_report_outbox"), 0)
		t.Errorf("/metrics of the restarted serve does not count one delivery:\n%.1500s", metrics[i:])
	}
}

// TestHangingGitHubDoesNotDelayFirstStep: a GitHub API that accepts
// connections and never answers costs a run nothing: its first step starts
// within the usual dispatch time of the webhook (30.5 s, the report
// timeout, before reports left the run's critical path), and the run ends
// without waiting for the reports either (its final report goes to the
// outbox after 5 s).
func TestHangingGitHubDoesNotDelayFirstStep(t *testing.T) {
	const secret, ghToken, apiToken = "hang-secret", "gh-token-hang", "api-token-hang"
	stop := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(stop) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "e2e.yaml"), e2eWorkflow)
	cfg, addr := githubServeConfig(t, dir, ts.URL, apiToken, "")
	url := "http://" + addr
	p := startHookrun(t, "serve", serveEnv(secret, ghToken), "serve", "--config", cfg)
	waitReady(t, p, url, 60*time.Second)

	body := fixture(t, "github/pull_request/opened.payload.json")
	sent := time.Now()
	code, ans := postGitHub(t, url, secret, "pull_request", "hang-delivery-1", body)
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	var rec struct {
		Status string `json:"status"`
		Steps  []struct {
			ID        string     `json:"id"`
			StartedAt *time.Time `json:"started_at"`
		} `json:"steps"`
	}
	waitFor(t, 60*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+ans.Runs[0].ID, &rec) == http.StatusOK &&
			(rec.Status == "succeeded" || rec.Status == "failed")
	})
	ended := time.Since(sent)
	if rec.Status != "succeeded" || len(rec.Steps) == 0 || rec.Steps[0].StartedAt == nil {
		t.Fatalf("run: %+v", rec)
	}
	delay := rec.Steps[0].StartedAt.Sub(sent)
	t.Logf("first step started %s after the webhook was sent; the run ended after %s (GitHub never answering)", delay, ended)
	if delay > 5*time.Second {
		t.Errorf("first step started %s after the webhook was sent: reporting held it back", delay)
	}
	if ended > 20*time.Second {
		t.Errorf("the run ended %s after the webhook was sent: it waited for its reports (timeout 30s)", ended)
	}
}
