package github

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

// fixture is one payload from testdata with the event header the forge
// would send with it.
type fixture struct {
	event string
	path  string // under testdata
}

// fixtures lists every payload under testdata/github (the event is the
// directory name).
func fixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	gh, err := filepath.Glob("testdata/github/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gh {
		out = append(out, fixture{filepath.Base(filepath.Dir(p)), p})
	}
	if len(out) < 20 {
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

// TestNormalizeFields pins down the mapping rules the golden files only
// record.
func TestNormalizeFields(t *testing.T) {
	tests := []struct {
		name  string
		event string
		path  string
		check func(t *testing.T, e *workflows.Event)
	}{
		{"github pull request opened", "pull_request", "testdata/github/pull_request/opened.payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPullRequest)
				want(t, "action", e.Action, "opened")
				want(t, "repo", e.Repo, "Codertocat/Hello-World")
				want(t, "association", e.AuthorAssociation, "OWNER")
				want(t, "fork", e.PullRequest.Fork, false)
				want(t, "number", e.PullRequest.Number, 2)
				want(t, "head sha", e.HeadSHA(), "ec26c3e57ca3a959ca5aad62de7213c562f8c821")
				want(t, "base ref", e.BaseRef(), "master")
			}},
		{"github issue comment on an issue", "issue_comment", "testdata/github/issue_comment/created.payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindComment)
				want(t, "has pull request", e.PullRequest != nil, false)
				want(t, "issue number", e.Issue.Number, 1)
				want(t, "comment starts", strings.HasPrefix(e.CommentBody(), "You are totally right!"), true)
			}},
		{"github push that deletes its branch", "push", "testdata/github/push/payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "deleted", e.Push.Deleted, true)
				want(t, "head sha (none to check out)", e.HeadSHA(), "")
				want(t, "branch", e.Push.Branch, e.BaseRef())
				want(t, "ref prefix", strings.HasPrefix(e.Push.Ref, "refs/"), true)
				want(t, "association", e.AuthorAssociation, "COLLABORATOR")
			}},
		{"github push of a new branch", "push", "testdata/github/push/with-new-branch.payload.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "deleted", e.Push.Deleted, false)
				want(t, "head sha", e.HeadSHA(), "6113728f27ae82c7b1a177c8d03f9e96e0adf246")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Normalize(tt.event, readFile(t, tt.path), "d")
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e)
		})
	}
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
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

func TestNormalizeGitHubFork(t *testing.T) {
	const path = "testdata/github/pull_request/opened.payload.json"
	tests := []struct {
		name string
		edit func(pr map[string]any)
		fork bool
	}{
		{"same repository", func(map[string]any) {}, false},
		{"head in another repository", func(pr map[string]any) {
			obj(obj(pr, "head"), "repo")["full_name"] = "stranger/Hello-World"
		}, true},
		{"head repository deleted", func(pr map[string]any) { obj(pr, "head")["repo"] = nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := patchJSON(t, path, func(m map[string]any) { tt.edit(obj(m, "pull_request")) })
			e, err := Normalize("pull_request", body, "d")
			if err != nil {
				t.Fatal(err)
			}
			want(t, "fork", e.PullRequest.Fork, tt.fork)
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []struct {
		name      string
		event     string
		body      string
		unhandled bool
	}{
		{"github malformed json", "pull_request", `{"action":`, false},
		{"github wrong type", "pull_request", `{"pull_request": 5}`, false},
		{"github no pull request", "pull_request", `{"action":"opened","repository":{"full_name":"a/b"}}`, false},
		{"github issue comment without comment", "issue_comment", `{"issue":{"number":1},"repository":{"full_name":"a/b"}}`, false},
		{"github unhandled", "check_run", `{}`, true},
		{"github check run completed", "check_run", `{"action":"completed","check_run":{"head_sha":"abc","external_id":"r"},"repository":{"full_name":"a/b"}}`, true},
		{"github check run of another app", "check_run", `{"action":"rerequested","check_run":{"head_sha":"abc","external_id":""},"repository":{"full_name":"a/b"}}`, true},
		{"github check suite requested", "check_suite", `{"action":"requested","check_suite":{"head_sha":"abc"},"repository":{"full_name":"a/b"}}`, true},
		{"github rerequest without check run", "check_run", `{"action":"rerequested","repository":{"full_name":"a/b"}}`, false},
		{"github rerequest without check suite", "check_suite", `{"action":"rerequested","repository":{"full_name":"a/b"}}`, false},
		{"github rerequest without head", "check_suite", `{"action":"rerequested","check_suite":{},"repository":{"full_name":"a/b"}}`, false},
		{"github rerequest without repository", "check_run", `{"action":"rerequested","check_run":{"head_sha":"abc","external_id":"r"}}`, false},
		{"github ping", "ping", `{"zen":"x"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(tt.event, []byte(tt.body), "d")
			if err == nil {
				t.Fatal("Normalize succeeded, want an error")
			}
			if got := errors.Is(err, forge.ErrUnhandledEvent); got != tt.unhandled {
				t.Errorf("errors.Is(err, forge.ErrUnhandledEvent) = %v, want %v (err: %v)", got, tt.unhandled, err)
			}
			if !tt.unhandled && !errors.Is(err, forge.ErrMalformedPayload) {
				t.Errorf("err = %v, want it to wrap ErrMalformedPayload", err)
			}
		})
	}
}

var githubFuzzEvents = []string{"pull_request", "issue_comment", "issues", "push", "ping"}

func fuzzNormalize(f *testing.F, events []string) {
	for _, fx := range fixtures(f) {
		for i, ev := range events {
			if ev == fx.event {
				f.Add(uint8(i), readFile(f, fx.path))
			}
		}
	}
	f.Add(uint8(0), []byte(`{}`))
	f.Add(uint8(1), []byte(`null`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		event := events[int(which)%len(events)]
		e, err := Normalize(event, body, "fuzz")
		if err != nil {
			if !errors.Is(err, forge.ErrUnhandledEvent) && !errors.Is(err, forge.ErrMalformedPayload) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		if e.Forge != Name || e.Kind == "" || !bytes.Equal(e.Raw, body) {
			t.Fatalf("incomplete event: forge %q kind %q", e.Forge, e.Kind)
		}
		_ = e.Env()
	})
}

func FuzzNormalizeGitHub(f *testing.F) { fuzzNormalize(f, githubFuzzEvents) }

// A comment on a pull request: GitHub's issue_comment payload names the PR
// (issue.pull_request) but not its head, so the event carries the PR number
// and title, no head SHA, and is treated as coming from a fork.
func TestNormalizeGitHubPullRequestComment(t *testing.T) {
	e, err := Normalize("issue_comment", prComment(t, "/review now", "MEMBER"), "d")
	if err != nil {
		t.Fatal(err)
	}
	if e.PullRequest == nil || e.Issue != nil {
		t.Fatalf("pull request %+v, issue %+v: want only the pull request", e.PullRequest, e.Issue)
	}
	want(t, "number", e.PullRequest.Number, 1)
	want(t, "head sha", e.HeadSHA(), "")
	want(t, "fork", e.PullRequest.Fork, true)
	want(t, "association", e.AuthorAssociation, "MEMBER")
	want(t, "comment", e.CommentBody(), "/review now")
	want(t, "pr title env", e.Title(), "Spelling error in the README file")
}

// prComment is a comment on a pull request: GitHub's issue_comment
// fixture with issue.pull_request set.
func prComment(t testing.TB, body, association string) []byte {
	t.Helper()
	return patchJSON(t, "testdata/github/issue_comment/created.payload.json", func(m map[string]any) {
		issue := obj(m, "issue")
		issue["pull_request"] = map[string]any{
			"url":      "https://api.github.com/repos/Codertocat/Hello-World/pulls/1",
			"html_url": "https://github.com/Codertocat/Hello-World/pull/1",
		}
		c := obj(m, "comment")
		c["body"] = body
		c["author_association"] = association
	})
}

// BenchmarkNormalizeGitHubPullRequest measures the normalization of the
// 28 KB pull_request opened payload the ingest benchmark sends.
func BenchmarkNormalizeGitHubPullRequest(b *testing.B) {
	body, err := os.ReadFile("testdata/github/pull_request/opened.payload.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Normalize("pull_request", body, "d"); err != nil {
			b.Fatal(err)
		}
	}
}

// Each kind's payload without one of the parts it needs is malformed, and
// the error says which part (hookbody's Lacks, checked before the kind's
// mapping reads the part).
func TestNormalizeNamesTheMissingPart(t *testing.T) {
	const repo = `"repository":{"full_name":"a/b"}`
	forgetest.CheckMissingParts(t, Normalize,
		forgetest.Missing("pull_request", `{"action":"opened",`+repo+`}`, hookbody.ErrNoPullRequest),
		forgetest.Missing("pull_request", `{"action":"opened","pull_request":{"number":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("issue_comment", `{"comment":{"id":1},`+repo+`}`, hookbody.ErrNoIssue),
		forgetest.Missing("issue_comment", `{"issue":{"number":1},`+repo+`}`, hookbody.ErrNoComment),
		forgetest.Missing("issue_comment", `{"issue":{"number":1},"comment":{"id":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("pull_request_review_comment", `{"comment":{"id":1},`+repo+`}`, hookbody.ErrNoPullRequest),
		forgetest.Missing("pull_request_review_comment", `{"pull_request":{"number":1},`+repo+`}`, hookbody.ErrNoComment),
		forgetest.Missing("pull_request_review_comment", `{"pull_request":{"number":1},"comment":{"id":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("pull_request_review", `{"review":{"id":1},`+repo+`}`, hookbody.ErrNoPullRequest),
		forgetest.Missing("pull_request_review", `{"pull_request":{"number":1},`+repo+`}`, hookbody.ErrNoReview),
		forgetest.Missing("pull_request_review", `{"pull_request":{"number":1},"review":{"id":1}}`, hookbody.ErrNoRepository),
		forgetest.Missing("issues", `{"action":"opened",`+repo+`}`, hookbody.ErrNoIssue),
		forgetest.Missing("issues", `{"action":"opened","issue":{"number":1}}`, hookbody.ErrNoRepository),
	)
}
