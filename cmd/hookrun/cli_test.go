package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const cliWorkflow = `name: e2e
on:
  - event: pull_request
    actions: [opened]
steps:
  - id: check
    run: echo "checking $HOOKRUN_PR_NUMBER"; sleep 0.3; echo "check failed" >&2; exit 3
report:
  comment: sticky
  body: "e2e check for run ${HOOKRUN_RUN_ID}"
`

// runCLIWithin is runCLI bounded by d: a command that does not end fails
// the test instead of hanging it.
func runCLIWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errb bytes.Buffer
	code := dispatch(ctx, args, &out, &errb)
	if ctx.Err() != nil {
		t.Fatalf("hookrun %v did not end within %v:\n%s%s", args, d, out.String(), errb.String())
	}
	return code, out.String(), errb.String()
}

// TestCLIAgainstServe runs `hookrun serve` against a fake GitHub API and
// drives it with the CLI only: a failed run is listed (table with its
// columns, --json that parses, --pr filtering), shown and its logs read;
// `runs rerun` starts a new run whose `runs logs -f` streams its output and
// ends when it ends, which edits the first run's sticky comment instead of
// creating one, and the records link both ways; `deliveries replay` queues
// the delivery's run again; HTTP errors exit 1 with the server's reason
// (401 names HOOKRUN_API_TOKEN).
func TestCLIAgainstServe(t *testing.T) {
	const secret, ghToken, apiToken = "cli-secret", "gh-token-cli", "api-token-cli"
	gh, url := serveForCLI(t, secret, ghToken, apiToken)

	code, ans := postGitHub(t, url, secret, "pull_request", "cli-delivery-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	orig := ans.Runs[0].ID
	waitFor(t, 60*time.Second, func() bool {
		_, out, _ := runCLIWithin(t, 10*time.Second, "runs", "get", orig, "--json")
		var rec struct {
			FinishedAt *time.Time `json:"finished_at"`
			CommentID  int64      `json:"comment_id"`
		}
		return json.Unmarshal([]byte(out), &rec) == nil && rec.FinishedAt != nil && rec.CommentID != 0
	})

	// list: a table with its columns, JSON for scripts, --pr
	code, out, errs := runCLIWithin(t, 10*time.Second, "runs", "list")
	if code != 0 || !strings.HasPrefix(out, "ID ") {
		t.Fatalf("runs list: %d %q %q", code, out, errs)
	}
	for _, col := range []string{"ID", "WORKFLOW", "STATUS", "REPO", "PR", "EVENT", "CREATED", "DURATION"} {
		if !strings.Contains(strings.SplitN(out, "\n", 2)[0], col) {
			t.Errorf("table header %q lacks %s", strings.SplitN(out, "\n", 2)[0], col)
		}
	}
	if !strings.Contains(out, orig) || !strings.Contains(out, "failed") || !strings.Contains(out, "#2") || !strings.Contains(out, "pull_request.opened") {
		t.Errorf("table lacks the run's row:\n%s", out)
	}
	var list struct {
		Runs []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	code, out, _ = runCLIWithin(t, 10*time.Second, "runs", "list", "--workflow", "e2e", "--status", "failed", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Runs) != 1 || list.Runs[0].ID != orig {
		t.Fatalf("runs list --json: %d %s", code, out)
	}
	if code, out, _ = runCLIWithin(t, 10*time.Second, "runs", "list", "--pr", "3", "--json"); code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Runs) != 0 {
		t.Errorf("runs list --pr 3: %d %s", code, out)
	}

	// get and logs
	code, out, _ = runCLIWithin(t, 10*time.Second, "runs", "get", orig)
	for _, want := range []string{"Status:", "failed", "Pull request:", "#2", "STEP", "check", "3"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("runs get lacks %q: %d\n%s", want, code, out)
		}
	}
	code, out, _ = runCLIWithin(t, 10*time.Second, "runs", "logs", orig)
	if code != 0 || !strings.Contains(out, "[check] checking 2") || !strings.Contains(out, "[check] (stderr) check failed") {
		t.Errorf("runs logs: %d\n%s", code, out)
	}

	// rerun, then follow it to its end
	gh.mu.Lock()
	edits := len(gh.edits)
	gh.mu.Unlock()
	code, out, errs = runCLIWithin(t, 10*time.Second, "runs", "rerun", orig, "--json")
	var re struct {
		Run     string `json:"run"`
		RerunOf string `json:"rerun_of"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &re) != nil || re.Run == "" || re.RerunOf != orig {
		t.Fatalf("runs rerun: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLIWithin(t, 60*time.Second, "runs", "logs", re.Run, "-f")
	if code != 0 || !strings.Contains(out, "[check] checking 2") || !strings.Contains(errs, "run "+re.Run+" failed") {
		t.Fatalf("runs logs -f: %d\nstdout %s\nstderr %s", code, out, errs)
	}
	var o, n struct {
		Reruns    []string `json:"reruns"`
		RerunOf   string   `json:"rerun_of"`
		CommentID int64    `json:"comment_id"`
		Status    string   `json:"status"`
	}
	_, out, _ = runCLIWithin(t, 10*time.Second, "runs", "get", orig, "--json")
	if json.Unmarshal([]byte(out), &o) != nil || len(o.Reruns) != 1 || o.Reruns[0] != re.Run {
		t.Errorf("original's reruns: %s", out)
	}
	waitFor(t, 20*time.Second, func() bool {
		_, out, _ = runCLIWithin(t, 10*time.Second, "runs", "get", re.Run, "--json")
		return json.Unmarshal([]byte(out), &n) == nil && n.Status == "failed"
	})
	if n.RerunOf != orig || n.CommentID != o.CommentID {
		t.Errorf("re-run record: rerun_of %q comment %d, want %s and %d", n.RerunOf, n.CommentID, orig, o.CommentID)
	}
	waitFor(t, 20*time.Second, func() bool {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		return strings.Contains(gh.comments[o.CommentID], re.Run)
	})
	gh.mu.Lock()
	if gh.creates != 1 || len(gh.comments) != 1 || len(gh.edits) <= edits {
		t.Errorf("after the re-run: %d comments created, %d exist, %d edits (before %d); want the first one edited", gh.creates, len(gh.comments), len(gh.edits), edits)
	}
	if len(gh.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", gh.bad)
	}
	gh.mu.Unlock()

	// replay the stored delivery
	code, out, errs = runCLIWithin(t, 10*time.Second, "deliveries", "replay", "cli-delivery-1")
	if code != 0 || !strings.HasPrefix(out, "RUN ") || !strings.Contains(out, "e2e") || !strings.Contains(out, "cli-delivery-1:replay:1") {
		t.Errorf("deliveries replay: %d %q %q", code, out, errs)
	}

	// HTTP errors: the reason, exit 1
	if code, _, errs = runCLIWithin(t, 10*time.Second, "runs", "cancel", orig); code != 1 || !strings.Contains(errs, "409") || !strings.Contains(errs, "already finished") {
		t.Errorf("cancel of a finished run: %d %q", code, errs)
	}
	if code, _, errs = runCLIWithin(t, 10*time.Second, "runs", "get", "01NOSUCHRUN"); code != 1 || !strings.Contains(errs, "404") || !strings.Contains(errs, "no such run") {
		t.Errorf("get of an unknown run: %d %q", code, errs)
	}
	t.Setenv("HOOKRUN_API_TOKEN", "wrong")
	if code, _, errs = runCLIWithin(t, 10*time.Second, "runs", "list"); code != 1 || !strings.Contains(errs, "check HOOKRUN_API_TOKEN") || strings.Contains(errs, "wrong") {
		t.Errorf("a wrong token: %d %q", code, errs)
	}
	tokenFile := writeFile(t, filepath.Join(t.TempDir(), "token"), apiToken+"\n")
	if code, out, errs = runCLIWithin(t, 10*time.Second, "runs", "list", "--token-file", tokenFile, "--server", url); code != 0 || !strings.Contains(out, orig) {
		t.Errorf("--token-file: %d %q %q", code, out, errs)
	}

	// sessions revoke --all ends the UI's sessions, not the token
	checkRevokeAll(t, url, apiToken, tokenFile)
}

// TestCLICommandTree: every command and subcommand answers --help (exit 0),
// completion scripts are generated for the four shells, and command line
// mistakes are usage errors (exit 2) that say what is wrong.
func TestCLICommandTree(t *testing.T) {
	for _, args := range [][]string{
		{"runs", "--help"}, {"runs", "list", "--help"}, {"runs", "get", "--help"}, {"runs", "logs", "--help"},
		{"runs", "cancel", "--help"}, {"runs", "rerun", "--help"}, {"deliveries", "--help"}, {"deliveries", "replay", "--help"},
		{"deliveries", "list", "--help"}, {"deliveries", "get", "--help"},
		{"sessions", "--help"}, {"sessions", "revoke", "--help"}, {"completion", "--help"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || !strings.Contains(out+errs, "Usage:") {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	if _, out, _ := runCLI(t, "runs", "logs", "--help"); !strings.Contains(out, "-f, --follow") {
		t.Errorf("runs logs --help lacks -f:\n%s", out)
	}
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errs := runCLI(t, "completion", sh)
		if code != 0 || len(out) < 500 || !strings.Contains(out, "hookrun") {
			t.Errorf("completion %s: %d, %d bytes, %q", sh, code, len(out), errs)
		}
	}
	// cobra's completion of the subcommands and of a flag's values
	if _, out, _ := runCLI(t, "__complete", "runs", ""); !strings.Contains(out, "rerun") || !strings.Contains(out, "logs") {
		t.Errorf("completing runs: %q", out)
	}
	if _, out, _ := runCLI(t, "__complete", "runs", "list", "--status", ""); !strings.Contains(out, "partially_succeeded") {
		t.Errorf("completing --status: %q", out)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"runs", "get"}, "want a run id"},
		{[]string{"runs", "nope"}, `unknown command "nope"`},
		{[]string{"deliveries"}, "replay"},
		{[]string{"sessions"}, "revoke"},
		{[]string{"sessions", "revoke"}, "want --all"},
		{[]string{"runs", "rerun", "a", "b"}, "want a run id, got 2"},
		{[]string{"runs", "list", "--limit", "x"}, "invalid argument"},
		{[]string{"runs", "list", "--server", "ftp://x"}, "is not an http(s) URL"},
		{[]string{"runs", "list", "--token-file", "/nonexistent/token"}, "reading --token-file"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(out+errs, tc.msg) {
			t.Errorf("%v: %d %q, want %d and %q", tc.args, code, errs, exitUsage, tc.msg)
		}
	}
	t.Setenv("HOOKRUN_SERVER", "http://127.0.0.1:1")
	if code, _, errs := runCLI(t, "runs", "list"); code != 1 || !strings.Contains(errs, "connecting to http://127.0.0.1:1") {
		t.Errorf("no server: %d %q", code, errs)
	}
}

// TestCLIListPaging: `runs list` passes every filter to the API (a server
// with the paged list contract), prints the next page's cursor, and reads
// an answer with or without next_cursor; the token goes only into the
// Authorization header.
func TestCLIListPaging(t *testing.T) {
	const token = "paging-token"
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/runs" || r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":"unexpected request"}`, http.StatusBadRequest)
			return
		}
		seen = append(seen, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "" {
			_, _ = io.WriteString(w, `{"runs":[{"id":"01A","workflow":"w","status":"failed","repo":"o/r","event":{"kind":"pull_request","action":"opened","pull_request":{"number":7}}}],"next_cursor":"c2"}`)
			return
		}
		_, _ = io.WriteString(w, `{"runs":[{"id":"01B","workflow":"w","status":"succeeded","repo":"o/r","event":{"pull_request":{"number":7}}}]}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("HOOKRUN_API_TOKEN", token)
	code, out, errs := runCLIWithin(t, 10*time.Second, "runs", "list", "--server", srv.URL, "--workflow", "w", "--repo", "o/r", "--status", "failed", "--pr", "7", "--limit", "1")
	if code != 0 || !strings.Contains(out, "01A") || !strings.Contains(errs, "more runs: --cursor c2") {
		t.Fatalf("first page: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLIWithin(t, 10*time.Second, "runs", "list", "--server", srv.URL, "--pr", "7", "--cursor", "c2")
	if code != 0 || !strings.Contains(out, "01B") || strings.Contains(errs, "more runs") {
		t.Fatalf("last page: %d %q %q", code, out, errs)
	}
	want := []string{"limit=1&pr=7&repo=o%2Fr&status=failed&workflow=w", "cursor=c2&pr=7"}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("queries %q, want %q", seen, want)
	}
	if strings.Contains(out+errs, token) {
		t.Error("the token was printed")
	}
}

// serveForCLI starts `hookrun serve` on cliWorkflow against a fake GitHub
// and points the CLI at it (HOOKRUN_SERVER, HOOKRUN_API_TOKEN).
func serveForCLI(t *testing.T, secret, ghToken, apiToken string) (*fakeGitHub, string) {
	t.Helper()
	gh, ghSrv := newFakeGitHub(t, ghToken)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "e2e.yaml"), cliWorkflow)
	cfg, addr := githubServeConfig(t, dir, ghSrv.URL, apiToken, "")
	p := startHookrun(t, "serve", serveEnv(secret, ghToken), "serve", "--config", cfg)
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)
	t.Setenv("HOOKRUN_SERVER", url)
	t.Setenv("HOOKRUN_API_TOKEN", apiToken)
	return gh, url
}
