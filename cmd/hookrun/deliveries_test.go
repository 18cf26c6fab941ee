package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCLIDeliveries: `deliveries list` sends its flags as the API's
// filters and prints a table (the next page's cursor on stderr) or, with
// --json, the API's answer; `deliveries get` prints the delivery's fields,
// headers, every workflow considered with why it did not run, its runs and
// replays, or the API's answer with --json; a 404 exits 1 with the
// server's reason.
func TestCLIDeliveries(t *testing.T) {
	const token = "cli-deliveries-token"
	var mu sync.Mutex
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer "+token:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"unauthorized"}`))
		case r.URL.Path == "/api/v1/deliveries":
			_, _ = w.Write([]byte(`{"deliveries":[{"forge":"github","id":"d-1","event":"issue_comment","kind":"comment","repo":"octo/demo",
				"outcome":"refused","received_at":"` + time.Now().Add(-time.Minute).UTC().Format(time.RFC3339) + `","runs":0}],"next_cursor":"x.c"}`))
		case r.URL.Path == "/api/v1/deliveries/d-1":
			_, _ = w.Write([]byte(`{"forge":"github","id":"d-1","event":"issue_comment","kind":"comment","repo":"octo/demo","outcome":"refused",
				"received_at":"2026-12-06T08:00:00Z","headers":{"X-GitHub-Event":"issue_comment"},
				"workflows":[{"workflow":"deploy","matched":true,"ran":false,"reason":"author association NONE of \"bob\" not in [OWNER]"},
				{"workflow":"lint","matched":false,"ran":false,"reason":"no trigger for event comment"}],
				"normalized":{"kind":"comment","action":"created"},
				"replays":[{"id":"d-1:replay:1","at":"2026-12-06T08:05:00Z","runs":[{"id":"01RUN","workflow":"deploy"}]}]}`))
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/deliveries/d-1/replay":
			_, _ = w.Write([]byte(`{"delivery":"d-1:replay:2","replay_of":"d-1","runs":[{"id":"01RUN2","workflow":"deploy"}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no stored delivery \"nope\" (deliveries are kept for 720h0m0s)"}`))
		}
	}))
	t.Cleanup(api.Close)
	t.Setenv("HOOKRUN_SERVER", api.URL)
	t.Setenv("HOOKRUN_API_TOKEN", token)

	code, out, errs := runCLIWithin(t, 10*time.Second, "deliveries", "list", "--forge", "github", "--repo", "octo/demo",
		"--event", "comment", "--outcome", "refused", "--limit", "5", "--cursor", "x.b")
	if code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "d-1") || !strings.Contains(out, "refused") ||
		!strings.Contains(out, "octo/demo") || !strings.Contains(errs, "--cursor x.c") {
		t.Errorf("deliveries list: %d %q %q", code, out, errs)
	}
	mu.Lock()
	if want := "/api/v1/deliveries?cursor=x.b&event=comment&forge=github&limit=5&outcome=refused&repo=octo%2Fdemo"; len(asked) != 1 || asked[0] != want {
		t.Errorf("deliveries list asked %q, want %q", asked, want)
	}
	mu.Unlock()
	code, out, _ = runCLIWithin(t, 10*time.Second, "deliveries", "list", "--json")
	var page struct {
		Deliveries []struct{ ID, Outcome string } `json:"deliveries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 1 || page.Deliveries[0].Outcome != "refused" {
		t.Errorf("deliveries list --json: %d %q", code, out)
	}

	code, out, errs = runCLIWithin(t, 10*time.Second, "deliveries", "get", "d-1")
	for _, want := range []string{"issue_comment (comment.created)", "Outcome:", "refused", "X-GitHub-Event:", "WORKFLOW", `deploy    yes      no   author association NONE of "bob" not in [OWNER]`,
		"no trigger for event comment", "01RUN", "d-1:replay:1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("deliveries get: %d, want %q in\n%s%s", code, want, out, errs)
		}
	}
	code, out, _ = runCLIWithin(t, 10*time.Second, "deliveries", "get", "d-1", "--json", "--forge", "github")
	var v struct {
		Workflows []struct{ Workflow string } `json:"workflows"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Workflows) != 2 {
		t.Errorf("deliveries get --json: %d %q", code, out)
	}
	mu.Lock()
	if last := asked[len(asked)-1]; last != "/api/v1/deliveries/d-1?forge=github" {
		t.Errorf("deliveries get --forge asked %q", last)
	}
	mu.Unlock()
	if code, _, errs := runCLIWithin(t, 10*time.Second, "deliveries", "get", "nope"); code != 1 || !strings.Contains(errs, "404") || !strings.Contains(errs, "kept for") {
		t.Errorf("deliveries get of an unknown delivery: %d %q", code, errs)
	}
	// replay asks for the server's default forge unless --forge names one
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "/api/v1/deliveries/d-1/replay"},
		{[]string{"--forge", "gitea"}, "/api/v1/deliveries/d-1/replay?forge=gitea"},
	} {
		code, out, errs := runCLIWithin(t, 10*time.Second, append([]string{"deliveries", "replay", "d-1"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, "01RUN2") || !strings.Contains(out, "d-1:replay:2") {
			t.Errorf("deliveries replay %q: %d %q %q", tc.args, code, out, errs)
		}
		mu.Lock()
		if last := asked[len(asked)-1]; last != tc.want {
			t.Errorf("deliveries replay %q asked %q, want %q", tc.args, last, tc.want)
		}
		mu.Unlock()
	}
	if code, _, errs := runCLI(t, "deliveries", "get"); code != 2 || !strings.Contains(errs, "want a delivery id") {
		t.Errorf("deliveries get without an id: %d %q", code, errs)
	}
}

// TestCLIDeliveriesUnmatched runs `hookrun serve` and reads with the CLI
// what became of deliveries it did not match against the workflows: one
// for a repository outside allow_repos is listed as refused with the
// reason "repository not allowed" (--outcome refused --json, the table and
// `deliveries get`), an event hookrun does not handle as skipped with its
// reason; one with a bad signature is not stored.
func TestCLIDeliveriesUnmatched(t *testing.T) {
	const secret, ghToken, apiToken = "cli-unmatched-secret", "gh-token-unmatched", "api-token-unmatched"
	_, url := serveForCLI(t, secret, ghToken, apiToken)

	var m map[string]any
	if err := json.Unmarshal(fixture(t, "github/pull_request/opened.payload.json"), &m); err != nil {
		t.Fatal(err)
	}
	m["repository"].(map[string]any)["full_name"] = "stranger/repo"
	stranger, _ := json.Marshal(m)
	if code, ans := postGitHub(t, url, secret, "pull_request", "cli-stranger", stranger); code != http.StatusAccepted || len(ans.Runs) != 0 {
		t.Fatalf("not allowed: %d %+v", code, ans)
	}
	if code, ans := postGitHub(t, url, secret, "check_run", "cli-unhandled", []byte(`{}`)); code != http.StatusAccepted || ans.Reason != "event check_run is not handled" {
		t.Fatalf("unhandled: %d %+v", code, ans)
	}
	if code, _ := postGitHub(t, url, "not-the-secret", "pull_request", "cli-forged", stranger); code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", code)
	}

	type row struct{ ID, Outcome, Reason, Repo string }
	list := func(args ...string) []row {
		t.Helper()
		code, out, errs := runCLIWithin(t, 10*time.Second, append([]string{"deliveries", "list", "--json"}, args...)...)
		var page struct{ Deliveries []row }
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil {
			t.Fatalf("deliveries list --json %q: %d %q %q", args, code, out, errs)
		}
		return page.Deliveries
	}
	if got := list("--outcome", "refused"); len(got) != 1 || got[0] != (row{"cli-stranger", "refused", "repository not allowed", "stranger/repo"}) {
		t.Errorf("deliveries list --outcome refused: %+v, want cli-stranger refused: repository not allowed", got)
	}
	want := []row{{"cli-unhandled", "skipped", "event check_run is not handled", ""}, {"cli-stranger", "refused", "repository not allowed", "stranger/repo"}}
	if got := list(); !slices.Equal(got, want) {
		t.Errorf("deliveries list: %+v, want %+v (never the forged one)", got, want)
	}
	code, out, _ := runCLIWithin(t, 10*time.Second, "deliveries", "list")
	if code != 0 || !strings.Contains(out, "REASON") || !strings.Contains(out, "repository not allowed") || !strings.Contains(out, "check_run") {
		t.Errorf("deliveries list: %d\n%s", code, out)
	}
	code, out, _ = runCLIWithin(t, 10*time.Second, "deliveries", "get", "cli-stranger")
	for _, want := range []string{"Outcome:", "refused", "Reason:", "repository not allowed", "stranger/repo"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("deliveries get: %d, want %q in\n%s", code, want, out)
		}
	}
	if code, _, errs := runCLIWithin(t, 10*time.Second, "deliveries", "get", "cli-forged"); code != 1 || !strings.Contains(errs, "404") {
		t.Errorf("deliveries get of the forged delivery: %d %q, want 404", code, errs)
	}
}
