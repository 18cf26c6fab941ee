package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// githubServeConfig writes the `hookrun serve` configuration the
// end-to-end tests share: the workflows under dir/workflows, data under
// dir/data, the fake GitHub at apiURL with the webhook secret and token
// from $E2E_SECRET and $E2E_GH_TOKEN (serveEnv), apiToken for the API,
// and extra (YAML lines) appended. It returns the file and the address
// serve is to listen on.
func githubServeConfig(t *testing.T, dir, apiURL, apiToken, extra string) (cfg, addr string) {
	t.Helper()
	addr = freeAddr(t)
	cfg = writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/Hello-World"]
github: { webhook_secret: "${E2E_SECRET}", token: "${E2E_GH_TOKEN}", api_url: "`+apiURL+`/" }
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
`+extra)
	return cfg, addr
}

// serveEnv is the environment githubServeConfig's configuration reads.
func serveEnv(secret, ghToken string) []string {
	return []string{"E2E_SECRET=" + secret, "E2E_GH_TOKEN=" + ghToken}
}

// fakeGitHub is the part of the GitHub REST API the reporter uses, checking
// method, path, auth header and JSON body as the real API would.
type fakeGitHub struct {
	t       *testing.T
	token   string
	context string // the commit status context it accepts: hookrun/<workflow>

	mu       sync.Mutex
	nextID   int64
	comments map[int64]string // id → body
	creates  int
	edits    []string // bodies of PATCHes, in order
	statuses []string // state of each status POST, in order
	bad      []string // requests the real API would refuse
}

func newFakeGitHub(t *testing.T, token string) (*fakeGitHub, *httptest.Server) {
	f := &fakeGitHub{t: t, token: token, context: "hookrun/e2e", nextID: 1000, comments: map[int64]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

var (
	reComments = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/2/comments$`)
	reEdit     = regexp.MustCompile(`^/repos/Codertocat/Hello-World/issues/comments/(\d+)$`)
	reStatus   = regexp.MustCompile(`^/repos/Codertocat/Hello-World/statuses/ec26c3e57ca3a959ca5aad62de7213c562f8c821$`)
)

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+f.token && auth != "token "+f.token {
		f.bad = append(f.bad, r.Method+" "+r.URL.Path+": bad auth")
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			f.bad = append(f.bad, r.Method+" "+r.URL.Path+": body not JSON")
			http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/user":
		_, _ = io.WriteString(w, `{"login":"hookrun-bot","id":1}`)
	case r.Method == http.MethodGet && reComments.MatchString(r.URL.Path):
		var list []map[string]any
		for id, b := range f.comments {
			list = append(list, map[string]any{"id": id, "body": b, "user": map[string]any{"login": "hookrun-bot"}})
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.Method == http.MethodPost && reComments.MatchString(r.URL.Path):
		b, ok := body["body"].(string)
		if !ok || b == "" {
			f.bad = append(f.bad, "comment without body")
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		f.nextID++
		f.creates++
		f.comments[f.nextID] = b
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": f.nextID, "body": b, "user": map[string]any{"login": "hookrun-bot"}})
	case r.Method == http.MethodPatch && reEdit.MatchString(r.URL.Path):
		var id int64
		_, _ = fmtSscan(reEdit.FindStringSubmatch(r.URL.Path)[1], &id)
		b, ok := body["body"].(string)
		if _, exists := f.comments[id]; !exists || !ok {
			f.bad = append(f.bad, "edit of unknown comment or without body")
			w.WriteHeader(http.StatusNotFound)
			return
		}
		f.comments[id] = b
		f.edits = append(f.edits, b)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "body": b})
	case r.Method == http.MethodPost && reStatus.MatchString(r.URL.Path):
		state, _ := body["state"].(string)
		ctx, _ := body["context"].(string)
		if ctx != f.context || (state != "pending" && state != "success" && state != "failure" && state != "error") {
			f.bad = append(f.bad, "bad status "+state+" "+ctx)
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		f.statuses = append(f.statuses, state)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1}`)
	default:
		f.bad = append(f.bad, "unexpected "+r.Method+" "+r.URL.Path)
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	}
}

const e2eWorkflow = `name: e2e
on:
  - event: pull_request
    actions: [opened]
steps:
  - id: first
    run: echo "title=$HOOKRUN_PR_TITLE"
    output: TITLE_LINE
  - id: second
    depends: [first]
    run: sleep 0.2; echo done
report:
  comment: sticky
  body: "e2e says ${TITLE_LINE}"
`

// TestEndToEnd runs `hookrun serve` as a real process with its embedded
// NATS against a fake GitHub API: a signed pull_request opened delivery is
// answered 202 with a run id, the run executes, the fake API sees the
// comment created and finally edited and the status go pending → success,
// the API shows the run succeeded with step timings, and the same delivery
// sent again creates no second run.
func TestEndToEnd(t *testing.T) {
	const secret, ghToken, apiToken = "e2e-secret", "gh-token-e2e", "api-token-e2e"
	gh, ghSrv := newFakeGitHub(t, ghToken)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "e2e.yaml"), e2eWorkflow)
	cfg, addr := githubServeConfig(t, dir, ghSrv.URL, apiToken, "")
	p := startHookrun(t, "serve", serveEnv(secret, ghToken), "serve", "--config", cfg, "--log-level", "debug")
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)

	body := fixture(t, "github/pull_request/opened.payload.json")
	code, ans := postGitHub(t, url, secret, "pull_request", "e2e-delivery-1", body)
	if code != http.StatusAccepted || len(ans.Runs) != 1 || ans.Runs[0].Workflow != "e2e" || ans.Runs[0].ID == "" {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	runID := ans.Runs[0].ID

	var rec struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Steps  []struct {
			ID         string     `json:"id"`
			Status     string     `json:"status"`
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
		} `json:"steps"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c := apiGet(t, url, apiToken, "/api/v1/runs/"+runID, &rec); c == http.StatusOK && (rec.Status == "succeeded" || rec.Status == "failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not finish: %+v", runID, rec)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rec.Status != "succeeded" || len(rec.Steps) != 2 {
		t.Fatalf("run: %+v", rec)
	}
	for _, s := range rec.Steps {
		if s.Status != "succeeded" || s.StartedAt == nil || s.FinishedAt == nil || s.FinishedAt.Before(*s.StartedAt) {
			t.Fatalf("step without timings: %+v", s)
		}
	}
	if c := apiGet(t, url, "wrong-token", "/api/v1/runs/"+runID, nil); c != http.StatusUnauthorized {
		t.Fatalf("API with a wrong token: %d, want 401", c)
	}

	// The final report is sent before the terminal record is written; wait
	// anyway in case the fake's answers were slow.
	waitFor(t, 10*time.Second, func() bool {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		return len(gh.statuses) >= 2 && gh.statuses[len(gh.statuses)-1] == "success"
	})
	gh.mu.Lock()
	if len(gh.bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", gh.bad)
	}
	if gh.creates != 1 || len(gh.comments) != 1 {
		t.Errorf("comment creates = %d, comments = %d; want exactly one", gh.creates, len(gh.comments))
	}
	var final string
	for _, b := range gh.comments {
		final = b
	}
	if !strings.Contains(final, "<!-- hookrun:e2e -->") || !strings.Contains(final, "e2e says title=Update the README with new information.") || !strings.Contains(final, runID) {
		t.Errorf("final comment body lacks marker, rendered body or run id:\n%s", final)
	}
	if len(gh.edits) == 0 {
		t.Errorf("the comment was never edited")
	}
	if gh.statuses[0] != "pending" {
		t.Errorf("statuses %v: want pending first", gh.statuses)
	}
	gh.mu.Unlock()

	// The same delivery again: same run id, no second run.
	code, again := postGitHub(t, url, secret, "pull_request", "e2e-delivery-1", body)
	if code != http.StatusAccepted || len(again.Runs) != 1 || again.Runs[0].ID != runID {
		t.Fatalf("redelivery: %d %+v, want run %s again", code, again, runID)
	}
	var list struct {
		Runs []json.RawMessage `json:"runs"`
	}
	time.Sleep(500 * time.Millisecond)
	if c := apiGet(t, url, apiToken, "/api/v1/runs?workflow=e2e", &list); c != http.StatusOK || len(list.Runs) != 1 {
		t.Fatalf("runs after redelivery: %d, %d runs; want 1", c, len(list.Runs))
	}
	gh.mu.Lock()
	if gh.creates != 1 {
		t.Errorf("the redelivery created another comment")
	}
	gh.mu.Unlock()
}

func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
