package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerDefaultTimeout: runner.default_timeout bounds a run whose
// workflow sets no timeout; a workflow's own timeout replaces it.
func TestServerDefaultTimeout(t *testing.T) {
	const secret, apiToken = "timeout-secret", "timeout-api"
	dir := stepWritableDir(t)
	writeFile(t, filepath.Join(dir, "workflows", "unbounded.yaml"), `name: unbounded
on: [{event: pull_request}]
steps:
  - {id: slow, run: "sleep 60"}
report: { comment: none, status: false }
`)
	writeFile(t, filepath.Join(dir, "workflows", "own.yaml"), `name: own
on: [{event: pull_request}]
timeout: 1m
steps:
  - {id: slowish, run: "sleep 4"}
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
shutdown_grace: 5s
runner: { default_timeout: 2s }
`)
	p := startHookrun(t, "serve", nil, "serve", "--config", cfg, "--log-format", "json")
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)
	code, ans := postGitHub(t, url, secret, "pull_request", "timeout-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 2 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	want := map[string]struct{ status, err string }{
		"unbounded": {"failed", "run timed out after 2s"},
		"own":       {"succeeded", ""},
	}
	for _, r := range ans.Runs {
		var rec struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		waitFor(t, 60*time.Second, func() bool {
			return apiGet(t, url, apiToken, "/api/v1/runs/"+r.ID, &rec) == http.StatusOK && (rec.Status == "succeeded" || rec.Status == "failed")
		})
		w := want[r.Workflow]
		if rec.Status != w.status || !strings.Contains(rec.Error, w.err) {
			t.Errorf("run of %s: %s (%q), want %s (%q)", r.Workflow, rec.Status, rec.Error, w.status, w.err)
		}
	}
}
