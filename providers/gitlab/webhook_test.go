package gitlab

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
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

// fixture is one payload from testdata with the event header the forge
// would send with it.
type fixture struct {
	event string
	path  string // under testdata
}

// gitlabEventHeader maps a GitLab payload's object_kind to the X-Gitlab-Event
// value GitLab sends with it.
var gitlabEventHeader = map[string]string{
	"merge_request": "Merge Request Hook",
	"note":          "Note Hook",
	"issue":         "Issue Hook",
	"push":          "Push Hook",
	"tag_push":      "Tag Push Hook",
	"pipeline":      "Pipeline Hook",
}

// fixtures lists every payload under testdata/gitlab (the event follows
// object_kind).
func fixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	gl, err := filepath.Glob("testdata/gitlab/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gl {
		var head struct {
			ObjectKind string `json:"object_kind"`
		}
		if err := json.Unmarshal(readFile(t, p), &head); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ev, ok := gitlabEventHeader[head.ObjectKind]
		if !ok {
			t.Fatalf("%s: no X-Gitlab-Event known for object_kind %q", p, head.ObjectKind)
		}
		out = append(out, fixture{ev, p})
	}
	if len(out) < 8 {
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
		{"gitlab push", "Push Hook", "testdata/gitlab/push.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "deleted", e.Push.Deleted, false)
				want(t, "head sha", e.HeadSHA(), "da1560886d4f094c3e6c9ef40349f7d38b5d27d7")
			}},
		{"gitlab push that deletes its branch", "Push Hook", "testdata/gitlab/push_deleted.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "branch", e.Push.Branch, "master")
				want(t, "deleted", e.Push.Deleted, true)
				want(t, "head sha (none to check out)", e.HeadSHA(), "")
			}},
		{"gitlab merge request", "Merge Request Hook", "testdata/gitlab/merge_request.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPullRequest)
				want(t, "association", e.AuthorAssociation, "NONE")
				want(t, "has head sha", e.HeadSHA() != "", true)
				want(t, "project id", e.ProjectID, int64(1))
				want(t, "author id (the merge request's author, not the sender)", e.AuthorID, int64(51))
			}},
		{"gitlab note on merge request", "Note Hook", "testdata/gitlab/note_merge_request.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindComment)
				want(t, "has pull request", e.PullRequest != nil, true)
				want(t, "has issue", e.Issue != nil, false)
				want(t, "action", e.Action, "created")
				want(t, "project id", e.ProjectID, int64(5))
				want(t, "author id (the note's author)", e.AuthorID, int64(1))
			}},
		{"gitlab note on issue", "Note Hook", "testdata/gitlab/note_issue.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindComment)
				want(t, "has pull request", e.PullRequest != nil, false)
				want(t, "has issue", e.Issue != nil, true)
				want(t, "project id", e.ProjectID, int64(5))
				want(t, "author id (the note's author)", e.AuthorID, int64(1))
			}},
		{"gitlab issue", "Issue Hook", "testdata/gitlab/issue.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindIssue)
				want(t, "project id", e.ProjectID, int64(1))
				want(t, "author id (the issue's author, not the sender)", e.AuthorID, int64(51))
			}},
		{"gitlab tag push", "Tag Push Hook", "testdata/gitlab/tag_push.json",
			func(t *testing.T, e *workflows.Event) {
				want(t, "kind", e.Kind, workflows.KindPush)
				want(t, "branch", e.Push.Branch, "")
				want(t, "ref prefix", strings.HasPrefix(e.Push.Ref, "refs/tags/"), true)
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

func TestNormalizeGitLabMergeActions(t *testing.T) {
	tests := []struct {
		action, oldrev, state string
		sourceProject         float64
		wantAction            string
		wantMerged, wantFork  bool
	}{
		{"open", "", "opened", 0, "opened", false, false},
		{"reopen", "", "opened", 0, "reopened", false, false},
		{"update", "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "opened", 0, "synchronize", false, false},
		{"update", "", "opened", 0, "edited", false, false},
		{"close", "", "closed", 0, "closed", false, false},
		{"merge", "", "merged", 0, "closed", true, false},
		{"approved", "", "opened", 0, "approved", false, false},
		{"unapproved", "", "opened", 0, "unapproved", false, false},
		{"open", "", "opened", 424242, "opened", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.action+"/"+tt.wantAction, func(t *testing.T) {
			body := patchJSON(t, "testdata/gitlab/merge_request.json", func(m map[string]any) {
				oa := obj(m, "object_attributes")
				oa["action"] = tt.action
				oa["state"] = tt.state
				if tt.oldrev != "" {
					oa["oldrev"] = tt.oldrev
				}
				if tt.sourceProject != 0 {
					oa["source_project_id"] = tt.sourceProject
				}
			})
			e, err := Normalize("Merge Request Hook", body, "d")
			if err != nil {
				t.Fatal(err)
			}
			want(t, "action", e.Action, tt.wantAction)
			want(t, "merged", e.PullRequest.Merged, tt.wantMerged)
			want(t, "fork", e.PullRequest.Fork, tt.wantFork)
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
		{"gitlab malformed json", "Push Hook", `[`, false},
		{"gitlab note on snippet", "Note Hook", `{"object_kind":"note","object_attributes":{"noteable_type":"Snippet"}}`, true},
		{"gitlab note of unknown type", "Note Hook", `{"object_kind":"note","object_attributes":{"noteable_type":"Nope"}}`, false},
		{"gitlab pipeline", "Pipeline Hook", `{}`, true},
		{"gitlab confidential note", "Confidential Note Hook", `{}`, true},
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

var gitlabFuzzEvents = []string{"Merge Request Hook", "Note Hook", "Issue Hook", "Push Hook", "Tag Push Hook"}

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

func FuzzNormalizeGitLab(f *testing.F) { fuzzNormalize(f, gitlabFuzzEvents) }
