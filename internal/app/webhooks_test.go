package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Each forge's webhook secrets reach its provider: a forge is registered
// and verifies its deliveries with every configured secret (rotation)
// without an API token; a disabled section's route is off; Gitea's webhook
// needs its base_url.
func TestForgesCarryWebhookSecrets(t *testing.T) {
	on, off := true, false
	cfg := &Config{
		GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "gh-hook-1", WebhookSecrets: []string{"gh-hook-2"}},
		GitLab: GitLabConfig{Enabled: &off, WebhookToken: "gl-hook-1"},
		Gitea:  GiteaConfig{Enabled: &on, BaseURL: "https://gitea.example/", WebhookSecret: "gt-hook-1"},
	}
	forges, err := NewForges(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"zen":"x"}`)
	sig := func(secret string) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hex.EncodeToString(mac.Sum(nil))
	}
	gh := forges.Registry.Get(workflows.Forge("github"))
	if !gh.HookEnabled() || !errors.Is(gh.Credentials(), forge.ErrNoCredentials) {
		t.Errorf("github: hook enabled %v, credentials %v; want enabled without a token", gh.HookEnabled(), gh.Credentials())
	}
	for _, s := range []string{"gh-hook-1", "gh-hook-2"} {
		if err := gh.Verify(http.Header{"X-Hub-Signature-256": {"sha256=" + sig(s)}}, body); err != nil {
			t.Errorf("github signed with %s: %v", s, err)
		}
	}
	if err := gh.Verify(http.Header{"X-Hub-Signature-256": {"sha256=" + sig("gt-hook-1")}}, body); err == nil {
		t.Error("github accepted another forge's secret")
	}
	if gl := forges.Registry.Get(workflows.Forge("gitlab")); gl.HookEnabled() || gl.Verify(http.Header{"X-Gitlab-Token": {"gl-hook-1"}}, nil) != nil {
		t.Errorf("gitlab: hook enabled %v (want off), its token refused", gl.HookEnabled())
	}
	if gt := forges.Registry.Get(workflows.Forge("gitea")); !gt.HookEnabled() || gt.Verify(http.Header{"X-Gitea-Signature": {sig("gt-hook-1")}}, body) != nil {
		t.Errorf("gitea: hook enabled %v, its secret refused", gt.HookEnabled())
	}
	bad := &Config{Gitea: GiteaConfig{Enabled: &on, WebhookSecret: "gt-hook-1"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "gitea.base_url") {
		t.Errorf("gitea enabled without base_url: Validate %v", err)
	}
}
