package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMHandsRunsBack: SIGTERM stops `hookrun serve` within its
// shutdown grace; a run still executing is handed back to the queue instead
// of being lost or marked failed, and the next start executes it to the end.
func TestSIGTERMHandsRunsBack(t *testing.T) {
	const secret, apiToken = "term-secret", "term-api"
	dir := t.TempDir()
	marker := filepath.Join(stepWritableDir(t), "marker")
	writeFile(t, filepath.Join(dir, "workflows", "slow.yaml"), `name: slow
on:
  - event: pull_request
steps:
  - id: started
    run: echo started >> `+marker+`
  - id: slow
    depends: [started]
    run: sleep 4; echo finished >> `+marker+`
report: { comment: none, status: false }
`)
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/*"]
github: { webhook_secret: "`+secret+`" }
api: { token: "`+apiToken+`" }
shutdown_grace: 1s
runner: { ack_wait: 2s, heartbeat: 500ms }
`)
	url := "http://" + addr
	first := startHookrun(t, "serve-1", nil, "serve", "--config", cfg, "--log-format", "json")
	waitReady(t, first, url, 60*time.Second)
	code, ans := postGitHub(t, url, secret, "pull_request", "term-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	id := ans.Runs[0].ID
	waitFor(t, 30*time.Second, func() bool {
		data, _ := os.ReadFile(marker)
		return strings.Contains(string(data), "started")
	})

	start := time.Now()
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-first.done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20s of SIGTERM")
	}
	t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("still accepting connections after shutdown")
	}
	if data, _ := os.ReadFile(marker); strings.Contains(string(data), "finished") {
		t.Fatal("the slow step finished: SIGTERM came too late to test the hand-back")
	}

	second := startHookrun(t, "serve-2", nil, "serve", "--config", cfg, "--log-format", "json")
	waitReady(t, second, url, 60*time.Second)
	var rec struct {
		Status  string `json:"status"`
		Attempt int    `json:"attempt"`
	}
	waitFor(t, 60*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec) == http.StatusOK && (rec.Status == "succeeded" || rec.Status == "failed")
	})
	if rec.Status != "succeeded" {
		t.Fatalf("run after restart: %+v", rec)
	}
	data, _ := os.ReadFile(marker)
	if got := strings.Count(string(data), "finished"); got != 1 {
		t.Fatalf("marker %q: the run finished %d times, want 1", data, got)
	}
}
