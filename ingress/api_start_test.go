package ingress

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// recordingPublisher publishes to the real queue and keeps the requests.
type recordingPublisher struct {
	Publisher
	mu   sync.Mutex
	reqs []*queue.RunRequest
}

func (p *recordingPublisher) Publish(ctx context.Context, req *queue.RunRequest) (queue.PublishResult, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	return p.Publisher.Publish(ctx, req)
}

const paramsWorkflow = `name: deploy
params:
  - TARGET: staging
  - "COUNT=1"
steps:
  - id: deploy
    run: echo "$TARGET"
`

func apiPost(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPIStartRun: POST /api/v1/workflows/{name}/runs queues a run with
// the params given, behind the API token; an unknown workflow is 404, an
// unknown param name or a value that is not a string a clear 400, and
// nothing is queued for them.
func TestAPIStartRun(t *testing.T) {
	q := openQueue(t, t.TempDir())
	pub := &recordingPublisher{Publisher: q}
	env := newEnvWith(t, Config{AllowRepos: []string{"octo/*"}}, pub, map[string]string{"deploy.yaml": paramsWorkflow, "pr.yaml": prWorkflow})
	env.srv.RegisterAPI(APIConfig{Token: testAPIToken}, q.Runs(), q.Logs(), storeCanceller{q.Runs()})
	url := env.http.URL + "/api/v1/workflows/deploy/runs"

	cases := []struct {
		name, url, token, body string
		code                   int
		says                   string
	}{
		{"no token", url, "", `{}`, http.StatusUnauthorized, "unauthorized"},
		{"no repo", url, testAPIToken, `{"params": {"TARGET": "prod"}}`, http.StatusBadRequest, `repo \"\" is not one of this server's allow_repos`},
		{"repo not allowed", url, testAPIToken, `{"repo": "evil/repo"}`, http.StatusBadRequest, `repo \"evil/repo\" is not one`},
		{"bad forge", url, testAPIToken, `{"repo": "octo/hello", "forge": "bitbucket"}`, http.StatusBadRequest, "forge must be github or gitlab"},
		{"unknown workflow", env.http.URL + "/api/v1/workflows/nope/runs", testAPIToken, `{}`, http.StatusNotFound, `no workflow \"nope\" is loaded`},
		{"unknown param", url, testAPIToken, `{"params": {"TARGET": "prod", "BRANCH": "x"}}`, http.StatusBadRequest,
			"workflow deploy has no param BRANCH (its params are TARGET, COUNT)"},
		{"param of a workflow without params", env.http.URL + "/api/v1/workflows/pr-check/runs", testAPIToken, `{"params": {"A": "1"}}`,
			http.StatusBadRequest, "has no param A (it declares none)"},
		{"not a string", url, testAPIToken, `{"params": {"COUNT": 3}}`, http.StatusBadRequest, "values as strings"},
		{"unknown body field", url, testAPIToken, `{"parms": {}}`, http.StatusBadRequest, "unknown field"},
	}
	for _, tc := range cases {
		code, body := apiPost(t, tc.url, tc.token, tc.body)
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, code, body, tc.code, tc.says)
		}
	}
	if len(pub.reqs) != 0 {
		t.Fatalf("refused requests queued %d runs", len(pub.reqs))
	}

	code, body := apiPost(t, url, testAPIToken, `{"repo": "octo/hello", "params": {"TARGET": "$(touch /tmp/pwned) prod"}}`)
	if code != http.StatusAccepted || !strings.Contains(body, `"workflow":"deploy"`) {
		t.Fatalf("start: %d %s", code, body)
	}
	if len(pub.reqs) != 1 {
		t.Fatalf("%d runs queued, want 1", len(pub.reqs))
	}
	req := pub.reqs[0]
	if req.Workflow != "deploy" || req.Event.Repo != "octo/hello" || req.Event.Forge != workflows.Forge("github") || req.Params["TARGET"] != "$(touch /tmp/pwned) prod" || len(req.Params) != 1 || !strings.Contains(body, req.ID) {
		t.Errorf("queued %+v, answered %s", req, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, _, err := q.Runs().Get(ctx, req.ID)
	if err != nil || rec.Status != workflows.StatusQueued || rec.Workflow != "deploy" {
		t.Errorf("record %+v, %v", rec, err)
	}
	// no params: the defaults
	if code, body := apiPost(t, url, testAPIToken, `{"repo": "octo/hello"}`); code != http.StatusAccepted {
		t.Errorf("without params: %d %s", code, body)
	}
}
