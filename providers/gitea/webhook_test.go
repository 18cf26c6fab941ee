package gitea

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/providers/internal/hookbody"
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

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixture is one payload from testdata with the event header the forge
// would send with it.
type fixture struct {
	event string
	path  string // under testdata
}

// fixtures lists every payload under testdata/gitea (the event is
// X-Gitea-Event of the recorded headers).
func fixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	gt, err := filepath.Glob("testdata/gitea/*.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gt {
		var h map[string]string
		if err := json.Unmarshal(readFile(t, strings.TrimSuffix(p, ".payload.json")+".headers.json"), &h); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, fixture{h["X-Gitea-Event"], p})
	}
	if len(out) < 5 {
		t.Fatalf("found only %d fixtures; is testdata complete?", len(out))
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldenResult is what a golden file holds: the event (Raw left out), or
// the error for payloads hookrun does not handle.
type goldenResult struct {
	Event     *workflows.Event `json:"event,omitempty"`
	Unhandled bool             `json:"unhandled,omitempty"`
	Error     string           `json:"error,omitempty"`
}

func TestNormalizeGolden(t *testing.T) {
	for _, fx := range fixtures(t) {
		rel := strings.TrimPrefix(fx.path, "testdata/")
		t.Run(rel, func(t *testing.T) {
			body := readFile(t, fx.path)
			ev, err := Normalize(fx.event, body, "delivery-"+filepath.Base(fx.path))
			var res goldenResult
			switch {
			case errors.Is(err, forge.ErrUnhandledEvent):
				res = goldenResult{Unhandled: true, Error: err.Error()}
			case err != nil:
				t.Fatalf("Normalize: %v", err)
			default:
				if !bytes.Equal(ev.Raw, body) {
					t.Errorf("Raw is not the body as received")
				}
				if ev.Forge != Name {
					t.Errorf("Forge = %q, want %q", ev.Forge, Name)
				}
				ev.Raw = nil
				res.Event = ev
			}
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(rel, ".json")+".golden.json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from Normalize's output (run with -update after checking):\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// patchJSON decodes a fixture, applies edit to it and encodes it again.
func patchJSON(t testing.TB, path string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, path), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// Gitea's actions and review events, beside the goldens: label_cleared is
// unlabeled; an approval, a rejection and a diff comment are comment
// events on the pull request by their sender, with the review's text; a
// head in another repository is a fork; events hookrun does not take are
// unhandled.
func TestNormalizeGitea(t *testing.T) {
	ev, err := Normalize("pull_request", patchJSON(t, "testdata/gitea/pull_request_label.payload.json",
		func(m map[string]any) { m["action"] = "label_cleared"; obj(m, "pull_request")["labels"] = []any{} }), "d")
	if err != nil || ev.Action != "unlabeled" || ev.Labels != nil {
		t.Fatalf("label_cleared: %+v, %v", ev, err)
	}
	for _, event := range []string{"pull_request_approved", "pull_request_rejected", "pull_request_comment"} {
		body := patchJSON(t, "testdata/gitea/pull_request.payload.json", func(m map[string]any) {
			m["action"] = "reviewed"
			m["review"] = map[string]any{"type": strings.Replace(event, "pull_request_", "pull_request_review_", 1), "content": "/review " + event}
			obj(m, "sender")["login"] = "bob"
			obj(obj(obj(m, "pull_request"), "head"), "repo")["full_name"] = "bob/demo"
		})
		ev, err := Normalize(event, body, "d")
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		if ev.Kind != workflows.KindComment || ev.Action != "created" || ev.Author != "bob" || ev.AuthorAssociation != "NONE" ||
			ev.Comment == nil || ev.Comment.Body != "/review "+event || ev.PullRequest == nil || ev.PullRequest.Number != 2 ||
			!workflows.IsCommitID(ev.PullRequest.HeadSHA) || !ev.PullRequest.Fork {
			ev.Raw = nil
			t.Errorf("%s: %+v comment %+v pr %+v", event, ev, ev.Comment, ev.PullRequest)
		}
	}
	if _, err := Normalize("pull_request_approved", readFile(t, "testdata/gitea/pull_request.payload.json"), "d"); !errors.Is(err, forge.ErrMalformedPayload) {
		t.Errorf("review event without review: %v", err)
	}
	for _, event := range []string{"create", "release", "workflow_run"} {
		if _, err := Normalize(event, []byte(`{}`), "d"); !errors.Is(err, forge.ErrUnhandledEvent) {
			t.Errorf("%s: %v", event, err)
		}
	}
}

// Each kind's payload without one of the parts it needs is malformed, and
// the error says which part (giteaLacks, checked before the kind's mapping
// reads the part).
func TestNormalizeNamesTheMissingPart(t *testing.T) {
	const repo = `"repository":{"full_name":"a/b"}`
	forgetest.CheckMissingParts(t, Normalize,
		forgetest.Missing("pull_request", `{"action":"opened",`+repo+`}`, hookbody.ErrNoPullRequest),
		forgetest.Missing("pull_request", `{"action":"opened","pull_request":{"number":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("pull_request_approved", `{"review":{"content":"ok"},`+repo+`}`, hookbody.ErrNoPullRequest),
		forgetest.Missing("pull_request_approved", `{"pull_request":{"number":1},`+repo+`}`, hookbody.ErrNoReview),
		forgetest.Missing("pull_request_comment", `{"pull_request":{"number":1},"review":{"content":"ok"}}`, hookbody.ErrNoRepository),
		forgetest.Missing("issue_comment", `{"comment":{"id":1},`+repo+`}`, hookbody.ErrNoIssue),
		forgetest.Missing("issue_comment", `{"issue":{"number":1},`+repo+`}`, hookbody.ErrNoComment),
		forgetest.Missing("issue_comment", `{"issue":{"number":1},"comment":{"id":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("issues", `{"action":"opened",`+repo+`}`, hookbody.ErrNoIssue),
		forgetest.Missing("issues", `{"action":"opened","issue":{"number":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("push", `{"ref":"refs/heads/main"}`, hookbody.ErrNoRepository),
	)
}
