package gitlab

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/workflows"
)

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
		if got := forge.VerifyToken(tokens, tt.header); got != tt.ok {
			t.Errorf("VerifyToken(%q) = %v, want %v", tt.header, got, tt.ok)
		}
	}
}

func TestGitLabDeliveryKey(t *testing.T) {
	body := []byte(`{"object_kind":"push"}`)
	tests := []struct {
		name   string
		header http.Header
		want   string
	}{
		{"idempotency key first", http.Header{"Idempotency-Key": {"idem-1"}, "X-Gitlab-Event-Uuid": {"uuid-1"}}, "idem-1"},
		{"event uuid next", http.Header{"X-Gitlab-Event-Uuid": {"uuid-1"}}, "uuid-1"},
		{"body digest last", http.Header{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deliveryKey(tt.header, body)
			if tt.name == "body digest last" {
				if !strings.HasPrefix(got, "sha256-") || len(got) != len("sha256-")+64 || got != deliveryKey(http.Header{}, bytes.Clone(body)) {
					t.Fatalf("digest key %q", got)
				}
				if got == deliveryKey(http.Header{}, []byte(`{"object_kind":"push" }`)) {
					t.Fatal("different bodies share a key")
				}
				return
			}
			if got != tt.want {
				t.Fatalf("key %q, want %q", got, tt.want)
			}
		})
	}
}

// pushFiles reads the files of every commit of GitLab's and GitHub's push
// payloads, each once, and knows when the payload lists only some commits.
func TestPushFiles(t *testing.T) {
	// GitLab's example lists 2 of its total_commits_count 4.
	paths, complete := pushFiles(readFile(t, "testdata/gitlab/push.json"))
	if complete || strings.Join(paths, ",") != "CHANGELOG,app/controller/application.rb" {
		t.Fatalf("GitLab push fixture: %v complete %v, want its two files and incomplete", paths, complete)
	}
	cases := []struct {
		body     string
		paths    []string
		complete bool
	}{
		{`{"commits":[{"added":["a"],"modified":["b"]},{"removed":["a"],"modified":["c"]}],"total_commits_count":2}`, []string{"a", "b", "c"}, true},
		{`{"commits":[{"added":["a"]}],"total_commits_count":25}`, []string{"a"}, false},
		{`{"commits":[]}`, nil, true},
		{`{"commits":"x"}`, nil, false},
	}
	for _, c := range cases {
		paths, complete := pushFiles([]byte(c.body))
		if complete != c.complete || strings.Join(paths, ",") != strings.Join(c.paths, ",") {
			t.Errorf("%s: %v %v, want %v %v", c.body, paths, complete, c.paths, c.complete)
		}
	}
}

// TestWebhookConformance runs the webhook half of providers/forge/forgetest
// on GitLab's webhooks with a real payload (the delivery id is
// Idempotency-Key).
func TestWebhookConformance(t *testing.T) {
	forgetest.RunWebhooks(t, forgetest.WebhookHarness{
		Name: Name,
		New: func(t *testing.T, enabled bool, secrets ...string) forge.Forge {
			f, err := NewForge(Config{Webhook: forge.Webhook{WebhookEnabled: enabled, WebhookSecrets: secrets}})
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		Headers: func(event, id, secret string, _ []byte) http.Header {
			h := http.Header{}
			if event != "" {
				h.Set("X-Gitlab-Event", event)
			}
			if id != "" {
				h.Set("Idempotency-Key", id)
			}
			if secret != "" {
				h.Set("X-Gitlab-Token", secret)
			}
			return h
		},
		Event: "Merge Request Hook", Body: readFile(t, "testdata/gitlab/merge_request.json"), Kind: workflows.KindPullRequest,
	})
}
