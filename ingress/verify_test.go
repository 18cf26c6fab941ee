package ingress

import (
	"strings"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// GitHub's documented test vector:
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const (
	docSecret    = "It's a Secret to Everybody"
	docBody      = "Hello, World!"
	docSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{}, ""},
		{"github with secret", Config{Forges: registry(hooks(workflows.Forge("github"), true, "x"))}, ""},
		{"github without secret", Config{Forges: registry(hooks(workflows.Forge("github"), true))}, "github: enabled without a webhook secret"},
		{"gitlab without token", Config{Forges: registry(hooks(workflows.Forge("gitlab"), true))}, "gitlab: enabled without a webhook token"},
		{"insecure without secrets", Config{InsecureNoVerify: true, Forges: registry(hooks(workflows.Forge("github"), true), hooks(workflows.Forge("gitlab"), true))}, ""},
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
	err := Config{Listen: "bad", Forges: registry(hooks(workflows.Forge("github"), true, "hunter2-secret"))}.Validate()
	if err == nil || strings.Contains(err.Error(), "hunter2-secret") {
		t.Fatalf("Validate = %v: want an error that does not echo the secret", err)
	}
}
