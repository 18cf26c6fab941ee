package gitea

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/workflows"
)

const (
	testGiteaSecret    = "gt-test-secret-value"
	testGiteaOldSecret = "gt-old-secret-value"
)

// giteaSign is X-Gitea-Signature: the hex HMAC-SHA256, without a prefix.
func giteaSign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// verifyGitea is the forge's Verify of a delivery whose X-Gitea-Signature
// is header, with secrets.
func verifyGitea(t *testing.T, secrets []string, header string, body []byte) bool {
	t.Helper()
	f, err := NewForge(Config{BaseURL: "https://gitea.example/", Webhook: forge.Webhook{WebhookEnabled: true, WebhookSecrets: secrets}})
	if err != nil {
		t.Fatal(err)
	}
	return f.Verify(http.Header{"X-Gitea-Signature": {header}}, body) == nil
}

func TestVerifyGitea(t *testing.T) {
	body := readFile(t, "testdata/gitea/push.payload.json")
	secrets := []string{testGiteaSecret, testGiteaOldSecret}
	for _, tc := range []struct {
		name   string
		header string
		want   bool
	}{
		{"current secret", giteaSign(testGiteaSecret, body), true},
		{"old secret (rotation)", giteaSign(testGiteaOldSecret, body), true},
		{"other secret", giteaSign("nope", body), false},
		{"github's prefixed form", "sha256=" + giteaSign(testGiteaSecret, body), false},
		{"body changed", giteaSign(testGiteaSecret, append([]byte(" "), body...)), false},
		{"truncated", giteaSign(testGiteaSecret, body)[:62], false},
		{"empty", "", false},
	} {
		if got := verifyGitea(t, secrets, tc.header, body); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWebhookConformance runs the webhook half of providers/forge/forgetest
// on Gitea's webhooks with a recorded delivery.
func TestWebhookConformance(t *testing.T) {
	forgetest.RunWebhooks(t, forgetest.WebhookHarness{
		Name: Name,
		New: func(t *testing.T, enabled bool, secrets ...string) forge.Forge {
			f, err := NewForge(Config{BaseURL: "https://gitea.example/", Webhook: forge.Webhook{WebhookEnabled: enabled, WebhookSecrets: secrets}})
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		Headers: func(event, id, secret string, body []byte) http.Header {
			h := http.Header{}
			if event != "" {
				h.Set("X-Gitea-Event", event)
			}
			if id != "" {
				h.Set("X-Gitea-Delivery", id)
			}
			if secret != "" {
				h.Set("X-Gitea-Signature", giteaSign(secret, body))
			}
			return h
		},
		Event: "pull_request", Body: readFile(t, "testdata/gitea/pull_request.payload.json"), Kind: workflows.KindPullRequest, SignsBody: true,
	})
}
