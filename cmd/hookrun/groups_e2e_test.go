package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two runs of a workflow with a concurrency group and no
// cancel_in_progress ("one deployment at a time") never overlap in
// `hookrun serve`: the second stays queued in the API until the first
// ended, then runs.
func TestConcurrencyGroupSerializesInServe(t *testing.T) {
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	const secret, apiToken = "group-secret", "group-api"
	dir := t.TempDir()
	marker := filepath.Join(stepWritableDir(t), "deploys.log")
	writeFile(t, filepath.Join(dir, "workflows", "deploy.yaml"), `name: deploy
on:
  - event: pull_request
authorize: { author_association: [OWNER] }
concurrency: { group: deploy, cancel_in_progress: false }
steps:
  - id: deploy
    run: echo "start $HOOKRUN_RUN_ID" >> `+marker+`; sleep 2; echo "end $HOOKRUN_RUN_ID" >> `+marker+`
report: { comment: none, status: false }
`)
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/Hello-World"]
github: { webhook_secret: "`+secret+`" }
api: { token: "`+apiToken+`" }
runner: { concurrency: 4 }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", nil, "serve", "--config", cfg)
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)
	body := fixture(t, "github/pull_request/opened.payload.json")
	var ids []string
	for i, delivery := range []string{"group-1", "group-2"} {
		code, ans := postGitHub(t, url, secret, "pull_request", delivery, touched(t, body, i))
		if code != http.StatusAccepted || len(ans.Runs) != 1 {
			t.Fatalf("delivery %s: %d %+v", delivery, code, ans)
		}
		ids = append(ids, ans.Runs[0].ID)
	}
	status := func(id string) string {
		var rec struct {
			Status string `json:"status"`
		}
		if apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec) != http.StatusOK {
			return ""
		}
		return rec.Status
	}
	// While the first deploys, the second is queued.
	waitFor(t, 30*time.Second, func() bool { return status(ids[0]) == "running" })
	if s := status(ids[1]); s != "queued" {
		t.Errorf("second run is %q while the first runs, want queued", s)
	}
	waitFor(t, 60*time.Second, func() bool { return status(ids[0]) == "succeeded" && status(ids[1]) == "succeeded" })
	data, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	want := "start " + ids[0] + "\nend " + ids[0] + "\nstart " + ids[1] + "\nend " + ids[1] + "\n"
	if string(data) != want {
		t.Errorf("deploys overlapped or ran out of order:\n%s\nwant:\n%s", data, want)
	}
	if strings.Count(string(data), "start") != 2 {
		t.Errorf("deploys: %s", data)
	}
}
