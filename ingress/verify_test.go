package ingress

import (
	"crypto/sha256"
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
			if got := verifyGitHub(secrets, tt.header, tt.body); got != tt.ok {
				t.Errorf("verifyGitHub = %v, want %v", got, tt.ok)
			}
		})
	}
}

func TestVerifyGitLab(t *testing.T) {
	tokens := [][sha256.Size]byte{sha256.Sum256([]byte("old-token")), sha256.Sum256([]byte("s3cret-token"))}
	tests := []struct {
		header string
		ok     bool
	}{
		{"s3cret-token", true},
		{"old-token", true},
		{"s3cret-tokeN", false},
		{"s3cret-token ", false}, // differs only in length
		{"s3cret-toke", false},   // differs only in length
		{"", false},
	}
	for _, tt := range tests {
		if got := verifyGitLab(tokens, tt.header); got != tt.ok {
			t.Errorf("verifyGitLab(%q) = %v, want %v", tt.header, got, tt.ok)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{}, ""},
		{"github with secret", Config{GitHub: GitHubConfig{Enabled: true, Secrets: []string{"x"}}}, ""},
		{"github without secret", Config{GitHub: GitHubConfig{Enabled: true}}, "github: enabled without a webhook secret"},
		{"gitlab without token", Config{GitLab: GitLabConfig{Enabled: true}}, "gitlab: enabled without a webhook token"},
		{"insecure without secrets", Config{InsecureNoVerify: true, GitHub: GitHubConfig{Enabled: true}, GitLab: GitLabConfig{Enabled: true}}, ""},
		{"empty secret entry", Config{GitHub: GitHubConfig{Enabled: true, Secrets: []string{"a", ""}}}, "entry 1 is empty"},
		{"bad listen", Config{Listen: "nope"}, "checking listen address"},
		{"negative timeout", Config{PublishTimeout: -1}, "publish timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	// A secret never appears in a validation error.
	err := Config{Listen: "bad", GitHub: GitHubConfig{Enabled: true, Secrets: []string{"hunter2-secret"}}}.Validate()
	if err == nil || strings.Contains(err.Error(), "hunter2-secret") {
		t.Fatalf("Validate = %v: want an error that does not echo the secret", err)
	}
}
