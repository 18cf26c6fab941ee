package github

import (
	"strings"
	"testing"
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
			var secrets [][]byte
			for _, s := range tt.secrets {
				secrets = append(secrets, []byte(s))
			}
			if got := verifySignature(secrets, tt.header, tt.body); got != tt.ok {
				t.Errorf("verifySignature = %v, want %v", got, tt.ok)
			}
		})
	}
}

// A webhook secret's empty entry is refused when the forge is built; the
// error names the entry, never a secret.
func TestNewForgeRefusesEmptySecret(t *testing.T) {
	_, err := NewForge(Config{WebhookEnabled: true, WebhookSecrets: []string{"hunter2-secret", ""}})
	if err == nil || !strings.Contains(err.Error(), "entry 1 is empty") || strings.Contains(err.Error(), "hunter2-secret") {
		t.Fatalf("NewForge = %v, want a refusal naming entry 1 and no secret", err)
	}
}
