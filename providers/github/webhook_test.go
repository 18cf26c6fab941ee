package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/workflows"
)

// GitHub's documented test vector:
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const (
	docSecret    = "It's a Secret to Everybody"
	docBody      = "Hello, World!"
	docSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestVerifyGitHub(t *testing.T) {
	flipped := []byte(docBody)
	flipped[0] ^= 1
	tests := []struct {
		name    string
		secrets []string
		header  string
		body    []byte
		ok      bool
	}{
		{"documentation vector", []string{docSecret}, docSignature, []byte(docBody), true},
		{"second of two secrets (rotation)", []string{"old-secret", docSecret}, docSignature, []byte(docBody), true},
		{"flipped body byte", []string{docSecret}, docSignature, flipped, false},
		{"wrong secret", []string{"It's a Secret to Somebody"}, docSignature, []byte(docBody), false},
		{"missing header", []string{docSecret}, "", []byte(docBody), false},
		{"no prefix", []string{docSecret}, strings.TrimPrefix(docSignature, "sha256="), []byte(docBody), false},
		{"sha1 prefix", []string{docSecret}, "sha1=" + strings.TrimPrefix(docSignature, "sha256="), []byte(docBody), false},
		{"uppercase hex", []string{docSecret}, "sha256=" + strings.ToUpper(strings.TrimPrefix(docSignature, "sha256=")), []byte(docBody), true},
		{"truncated", []string{docSecret}, docSignature[:len(docSignature)-2], []byte(docBody), false},
		{"not hex", []string{docSecret}, "sha256=" + strings.Repeat("zz", 32), []byte(docBody), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewForge(Config{Webhook: forge.Webhook{WebhookEnabled: true, WebhookSecrets: tt.secrets}})
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			h.Set(headerSignature, tt.header)
			if err := f.Verify(h, tt.body); (err == nil) != tt.ok {
				t.Errorf("Verify = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// A webhook secret's empty entry is refused when the forge is built; the
// error names the entry, never a secret.
func TestNewForgeRefusesEmptySecret(t *testing.T) {
	_, err := NewForge(Config{Webhook: forge.Webhook{WebhookEnabled: true, WebhookSecrets: []string{"hunter2-secret", ""}}})
	if err == nil || !strings.Contains(err.Error(), "entry 1 is empty") || strings.Contains(err.Error(), "hunter2-secret") {
		t.Fatalf("NewForge = %v, want a refusal naming entry 1 and no secret", err)
	}
}

// TestWebhookConformance runs the webhook half of providers/forge/forgetest
// on GitHub's webhooks with a real payload.
func TestWebhookConformance(t *testing.T) {
	body, err := os.ReadFile("testdata/github/pull_request/opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	forgetest.RunWebhooks(t, forgetest.WebhookHarness{
		Name: Name,
		New: func(t *testing.T, enabled bool, secrets ...string) forge.Forge {
			f, err := NewForge(Config{Webhook: forge.Webhook{WebhookEnabled: enabled, WebhookSecrets: secrets}})
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		Headers: func(event, id, secret string, body []byte) http.Header {
			h := http.Header{}
			if event != "" {
				h.Set("X-GitHub-Event", event)
			}
			if id != "" {
				h.Set("X-GitHub-Delivery", id)
			}
			if secret != "" {
				mac := hmac.New(sha256.New, []byte(secret))
				mac.Write(body)
				h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
			}
			return h
		},
		Event: "pull_request", Body: body, Kind: workflows.KindPullRequest, Ping: "ping", SignsBody: true,
	})
}
