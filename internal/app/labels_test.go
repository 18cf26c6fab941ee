package app

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// giteaServe is a serve process with gitea enabled (no token: a matched
// workflow is refused for the author association NONE), the workflows
// given (file name → YAML) and API token "labels-token".
type giteaServe struct {
	t       *testing.T
	a       *App
	fixture []byte
}

func startGiteaServe(t *testing.T, wfs map[string]string) *giteaServe {
	t.Helper()
	dir := t.TempDir()
	wf := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, y := range wfs {
		if err := os.WriteFile(filepath.Join(wf, name), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	on := true
	cfg := &Config{
		Listen: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), Workflows: wf, AllowRepos: []string{"*/*"},
		API:   APIConfig{Token: "labels-token"},
		Gitea: GiteaConfig{Enabled: &on, BaseURL: "http://127.0.0.1:9/", WebhookSecret: "gt-secret"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	a, err := Start(ctx, ModeServe, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		_ = a.Shutdown(sctx)
	})
	fixture, err := os.ReadFile("../../providers/gitea/testdata/gitea/pull_request_label.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	return &giteaServe{t: t, a: a, fixture: fixture}
}

// deliver posts the recorded label_updated delivery, the pull request's
// labels set to names, as delivery id, and returns the answer.
func (g *giteaServe) deliver(id string, names ...string) string {
	g.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(g.fixture, &m); err != nil {
		g.t.Fatal(err)
	}
	labels := []any{}
	for i, n := range names {
		labels = append(labels, map[string]any{"id": i + 1, "name": n, "color": "e11d21"})
	}
	m["pull_request"].(map[string]any)["labels"] = labels
	body, _ := json.Marshal(m)
	mac := hmac.New(sha256.New, []byte("gt-secret"))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, g.a.URL()+"/hooks/gitea", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Gitea-Event", "pull_request")
	req.Header.Set("X-Gitea-Delivery", id)
	req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
	return g.do(req, http.StatusAccepted)
}

// api calls the API with the token and returns the answer, which must
// have status want.
func (g *giteaServe) api(method, path string, want int) string {
	g.t.Helper()
	req, _ := http.NewRequest(method, g.a.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer labels-token")
	return g.do(req, want)
}

func (g *giteaServe) do(req *http.Request, want int) string {
	g.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		g.t.Fatalf("%s %s: %d %s, want %d", req.Method, req.URL.Path, resp.StatusCode, answer, want)
	}
	return string(answer)
}

// A server with gitea enabled remembers the labels of each pull request
// (hookrun_labels): after a delivery with label ai-review, a
// label_updated without it is unlabeled and matches a workflow on
// unlabeled, which the one that added it did not; the first delivery, with
// nothing remembered, matches it too.
func TestGiteaLabelRemovedIsUnlabeled(t *testing.T) {
	g := startGiteaServe(t, map[string]string{
		"gone.yaml": "name: gone\non: [{event: pull_request, actions: [unlabeled]}]\nsteps:\n  - {id: hi, run: 'true'}\n"})
	seed := g.deliver("d-seed") // never seen: either action
	added := g.deliver("d-added", "ai-review")
	removed := g.deliver("d-removed")
	t.Logf("seed: %s\nadded: %s\nremoved: %s", seed, added, removed)
	// Matched, then refused for want of a token to look the author up.
	if strings.Contains(seed, `not in [unlabeled]`) || !strings.Contains(seed, `author association NONE`) {
		t.Errorf("the first delivery, labels unknown before, did not match the unlabeled workflow: %s", seed)
	}
	if !strings.Contains(added, `not in [unlabeled]`) {
		t.Errorf("the delivery that added a label did not skip the unlabeled workflow for its action: %s", added)
	}
	if strings.Contains(removed, `not in [unlabeled]`) || !strings.Contains(removed, `author association NONE`) {
		t.Errorf("the delivery that removed a label was not unlabeled: %s", removed)
	}
}

// TestStoredLabelDeliveryLeavesTheMemory: viewing a stored label_updated
// delivery (GET /api/v1/deliveries/{id}, twice), replaying it and the
// forge redelivering it show and use the change decided when it arrived,
// and leave the labels remembered alone: the next delivery that adds b is
// labeled b (the workflow on Label == "b" matches), and the one after that
// removes a is unlabeled a.
func TestStoredLabelDeliveryLeavesTheMemory(t *testing.T) {
	g := startGiteaServe(t, map[string]string{
		"gone.yaml":  "name: gone\non: [{event: pull_request, actions: [unlabeled]}]\nsteps:\n  - {id: hi, run: 'true'}\n",
		"onlyb.yaml": "name: only-b\non: [{event: pull_request, actions: [labeled], if: 'event.Label == \"b\"'}]\nsteps:\n  - {id: hi, run: 'true'}\n"})
	g.deliver("p-seed")
	g.deliver("p-add-a", "a")
	for range 2 {
		if got := g.normalized("p-add-a"); got != `labeled "a" known` {
			t.Errorf("the view of p-add-a: %s, want the labeled a decided at receipt", got)
		}
	}
	replay := g.api(http.MethodPost, "/api/v1/deliveries/p-add-a/replay?forge=gitea", http.StatusOK)
	if !strings.Contains(replay, `"workflow":"only-b","reason":"if `) || !strings.Contains(replay, `"workflow":"gone","reason":"action \"labeled\" not in [unlabeled]"`) {
		t.Errorf("the replay of p-add-a was not labeled a: %s", replay)
	}
	g.api(http.MethodPost, "/api/v1/deliveries/p-seed/replay?forge=gitea", http.StatusOK) // nothing runs: no token
	if got := g.normalized("p-seed"); got != `labeled "" unknown` {
		t.Errorf("the view of p-seed, whose change was unknown at receipt: %s", got)
	}
	addB := g.deliver("p-add-b", "a", "b")
	if !strings.Contains(addB, `"workflow":"only-b","reason":"author association NONE`) {
		t.Errorf("the delivery adding b did not match only-b: %s", addB)
	}
	if got := g.normalized("p-add-b"); got != `labeled "b" known` {
		t.Errorf("the view of p-add-b: %s", got)
	}
	g.deliver("p-add-a", "a") // redelivered
	if removeA := g.deliver("p-remove-a", "b"); !strings.Contains(removeA, `"workflow":"gone","reason":"author association NONE`) {
		t.Errorf("the delivery removing a after a redelivery was not unlabeled: %s", removeA)
	}
}

// normalized is the action, label and whether the change was known of
// stored delivery id's normalized event, as the deliveries view shows it.
func (g *giteaServe) normalized(id string) string {
	g.t.Helper()
	var v struct {
		Normalized struct {
			Action  string `json:"action"`
			Label   string `json:"label"`
			Unknown bool   `json:"label_action_unknown"`
		} `json:"normalized"`
	}
	if err := json.Unmarshal([]byte(g.api(http.MethodGet, "/api/v1/deliveries/"+id+"?forge=gitea", http.StatusOK)), &v); err != nil {
		g.t.Fatal(err)
	}
	known := map[bool]string{false: "known", true: "unknown"}[v.Normalized.Unknown]
	return v.Normalized.Action + " " + strconv.Quote(v.Normalized.Label) + " " + known
}
