package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// groupServe is `hookrun serve` with the workflow deploy (a concurrency
// group without cancel_in_progress, one step running script) and n
// deliveries of it sent at once: the runs' ids in the order accepted.
type groupServe struct {
	t        *testing.T
	url, api string
	ids      []string
}

func startGroupServe(t *testing.T, script, report, github string, n int) *groupServe {
	t.Helper()
	const secret, apiToken = "group-secret", "group-api"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "deploy.yaml"), `name: deploy
on:
  - event: pull_request
authorize: { author_association: [OWNER] }
concurrency: { group: deploy, cancel_in_progress: false }
steps:
  - id: deploy
    run: `+script+`
`+report+`
`)
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/Hello-World"]
github: { webhook_secret: "`+secret+`"`+github+` }
api: { token: "`+apiToken+`" }
runner: { concurrency: 4 }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", nil, "serve", "--config", cfg)
	g := &groupServe{t: t, url: "http://" + addr, api: apiToken}
	waitReady(t, p, g.url, 60*time.Second)
	body := fixture(t, "github/pull_request/opened.payload.json")
	for i := range n {
		delivery := fmt.Sprintf("group-%d", i+1)
		code, ans := postGitHub(t, g.url, secret, "pull_request", delivery, touched(t, body, i))
		if code != http.StatusAccepted || len(ans.Runs) != 1 {
			t.Fatalf("delivery %s: %d %+v", delivery, code, ans)
		}
		g.ids = append(g.ids, ans.Runs[0].ID)
	}
	return g
}

// status is a run's status in the API ("" when it cannot be read).
func (g *groupServe) status(id string) string {
	var rec struct {
		Status string `json:"status"`
	}
	if apiGet(g.t, g.url, g.api, "/api/v1/runs/"+id, &rec) != http.StatusOK {
		return ""
	}
	return rec.Status
}

// waitSucceeded waits until every run succeeded.
func (g *groupServe) waitSucceeded(within time.Duration) {
	g.t.Helper()
	waitFor(g.t, within, func() bool {
		for _, id := range g.ids {
			if g.status(id) != "succeeded" {
				return false
			}
		}
		return true
	})
}

// Two runs of a workflow with a concurrency group and no
// cancel_in_progress ("one deployment at a time") never overlap in
// `hookrun serve`: the second stays queued in the API until the first
// ended, then runs.
func TestConcurrencyGroupSerializesInServe(t *testing.T) {
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	marker := filepath.Join(stepWritableDir(t), "deploys.log")
	g := startGroupServe(t, `echo "start $HOOKRUN_RUN_ID" >> `+marker+`; sleep 2; echo "end $HOOKRUN_RUN_ID" >> `+marker,
		"report: { comment: none, status: false }", "", 2)
	ids := g.ids
	// While the first deploys, the second is queued.
	waitFor(t, 30*time.Second, func() bool { return g.status(ids[0]) == "running" })
	if s := g.status(ids[1]); s != "queued" {
		t.Errorf("second run is %q while the first runs, want queued", s)
	}
	g.waitSucceeded(60 * time.Second)
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

// The waiting run of a group starts within a second of the end of the
// run before it, also when the forge does not answer the reports: the
// group is freed when the run's steps end, not after its final report
// (which waited a sixth of the report timeout, 5s, for the start report
// still on its way before going to the outbox: issue 28's 5s gap).
func TestConcurrencyGroupNextRunStartsSoonInServe(t *testing.T) {
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	// A GitHub API that accepts connections and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	marker := filepath.Join(stepWritableDir(t), "deploys.log")
	g := startGroupServe(t, `echo "start $(date +%s.%N)" >> `+marker+`; sleep 1.5; echo "end $(date +%s.%N)" >> `+marker,
		"", `, token: "gh-token", api_url: "http://`+l.Addr().String()+`/"`, 2)
	g.waitSucceeded(90 * time.Second)
	data, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	var at []float64 // start, end, start, end
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		_, v, _ := strings.Cut(line, " ")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("marker line %q: %v", line, err)
		}
		at = append(at, f)
	}
	if len(at) != 4 || !strings.HasPrefix(string(data), "start") {
		t.Fatalf("deploys:\n%s", data)
	}
	gap := time.Duration((at[2] - at[1]) * float64(time.Second))
	t.Logf("the second run started %s after the first ended", gap.Round(time.Millisecond))
	if gap < 0 {
		t.Errorf("the runs overlapped:\n%s", data)
	}
	// About a quarter of a second (the waiting run asks again every
	// 250ms); 1s leaves room for a loaded machine.
	if gap >= time.Second {
		t.Errorf("the second run started %s after the first ended, want under 1s", gap.Round(time.Millisecond))
	}
}
