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
	"strings"
	"testing"
	"time"
)

// A server with gitea enabled remembers the labels of each pull request
// (hookrun_labels): after a delivery with label ai-review, a
// label_updated without it is unlabeled and matches a workflow on
// unlabeled, which the one that added it did not; the first delivery, with
// nothing remembered, matches it too.
func TestGiteaLabelRemovedIsUnlabeled(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wf, "gone.yaml"), []byte("name: gone\non: [{event: pull_request, actions: [unlabeled]}]\nsteps:\n  - {id: hi, run: 'true'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	on := true
	cfg := &Config{
		Listen: "127.0.0.1:0", DataDir: data, Workflows: wf, AllowRepos: []string{"*/*"},
		Gitea: GiteaConfig{Enabled: &on, BaseURL: "http://127.0.0.1:9/", WebhookSecret: "gt-secret"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Start(ctx, ModeServe, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		_ = a.Shutdown(sctx)
	}()

	fixture, err := os.ReadFile("../../providers/gitea/testdata/gitea/pull_request_label.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(id string, labels []any) string {
		var m map[string]any
		if err := json.Unmarshal(fixture, &m); err != nil {
			t.Fatal(err)
		}
		m["pull_request"].(map[string]any)["labels"] = labels
		body, _ := json.Marshal(m)
		mac := hmac.New(sha256.New, []byte("gt-secret"))
		mac.Write(body)
		req, _ := http.NewRequest(http.MethodPost, a.URL()+"/hooks/gitea", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Gitea-Event", "pull_request")
		req.Header.Set("X-Gitea-Delivery", id)
		req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		return string(answer)
	}
	label := map[string]any{"id": 1, "name": "ai-review", "color": "e11d21"}
	seed := deliver("d-seed", []any{}) // never seen: either action
	added := deliver("d-added", []any{label})
	removed := deliver("d-removed", []any{})
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
