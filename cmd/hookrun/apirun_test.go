package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const apiRunWorkflow = `name: api-params
params:
  - TARGET: staging
steps:
  - id: show
    run: printf 'target=%s\n' "$TARGET"
  - id: optional
    run: exit 7
    continue_on: {exit_code: [7]}
  - id: gated
    run: echo gated
    preconditions:
      - condition: "${TARGET}"
        expected: "re:^prod"
      - test -n "$TARGET"
  - id: gated_off
    run: echo never
    preconditions: "test -f /nonexistent"
`

// TestAPIStartRunWithParams runs `hookrun serve` and starts a workflow
// through POST /api/v1/workflows/{name}/runs with {"params": {...}}: the
// step sees the value (shell syntax in it printed, not run), the run whose
// only failure continue_on tolerates is partially_succeeded in the API, and
// an unknown param name is a 400 that names it.
func TestAPIStartRunWithParams(t *testing.T) {
	const apiToken = "api-token-params"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "api-params.yaml"), apiRunWorkflow)
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["octo/*"]
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", nil, "serve", "--config", cfg)
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)

	post := func(body string) (int, map[string]string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/workflows/api-params/runs", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apiToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var ans map[string]string
		_ = json.Unmarshal(b, &ans)
		return resp.StatusCode, ans
	}
	if code, ans := post(`{"repo": "octo/demo", "params": {"BRANCH": "x"}}`); code != http.StatusBadRequest ||
		!strings.Contains(ans["error"], "has no param BRANCH (its params are TARGET)") {
		t.Fatalf("unknown param: %d %v", code, ans)
	}
	code, ans := post(`{"repo": "octo/demo", "params": {"TARGET": "prod $(id -u)"}}`)
	if code != http.StatusAccepted || ans["run"] == "" {
		t.Fatalf("start: %d %v\n%s", code, ans, p.out.String())
	}
	id := ans["run"]
	var rec map[string]any
	waitFor(t, 60*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec) == http.StatusOK && rec["finished_at"] != nil
	})
	if rec["status"] != "partially_succeeded" {
		t.Fatalf("run %v, want partially_succeeded\n%s", rec, p.out.String())
	}
	logs := apiText(t, url, apiToken, "/api/v1/runs/"+id+"/logs")
	if !strings.Contains(logs, "target=prod $(id -u)\n") {
		t.Errorf("logs lack the param as given:\n%s", logs)
	}
	// preconditions, checked by the serve's isolated host steps
	got := map[string]any{}
	for _, st := range rec["steps"].([]any) {
		m := st.(map[string]any)
		got[m["id"].(string)] = m["status"]
	}
	for id, want := range map[string]string{"show": "succeeded", "optional": "failed", "gated": "succeeded", "gated_off": "skipped"} {
		if got[id] != want {
			t.Errorf("step %s %v, want %s\n%s", id, got[id], want, logs)
		}
	}
	if strings.Contains(logs, "never") {
		t.Errorf("gated_off ran:\n%s", logs)
	}
}
