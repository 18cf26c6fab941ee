package ingress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/workflows"
)

// fakeCommentsAPI is a strict fake of the forge API a refusal reply goes
// through (the GitHub provider's Actor): it lists pull request #1's
// comments and takes new ones, with the token, and fails the test on any
// other request or body.
type fakeCommentsAPI struct {
	t     *testing.T
	mu    sync.Mutex
	posts []string // bodies posted, in order
}

const (
	refusalToken = "ghp-refusal-test-token"
	refusalBot   = "hookrun-bot"
	commentsPath = "/repos/Codertocat/Hello-World/issues/1/comments"
)

func (f *fakeCommentsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Bearer "+refusalToken {
		f.t.Errorf("%s %s with authorization %q", r.Method, r.URL.Path, got)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == commentsPath:
		list := []map[string]any{}
		for i, b := range f.posts {
			list = append(list, map[string]any{"id": 100 + i, "body": b, "user": map[string]any{"login": refusalBot}})
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.Method == http.MethodPost && r.URL.Path == commentsPath:
		var body struct {
			Body string `json:"body"`
		}
		raw, _ := io.ReadAll(r.Body)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || body.Body == "" {
			f.t.Errorf("POST %s body %s: %v", r.URL.Path, raw, err)
			http.Error(w, "bad body", http.StatusUnprocessableEntity)
			return
		}
		f.posts = append(f.posts, body.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":%d}`, 99+len(f.posts))
	default:
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "unexpected", http.StatusNotFound)
	}
}

// posted waits for the replies posted in the background until there are
// want of them (or a few seconds passed), and a moment for more; it
// returns them all.
func (f *fakeCommentsAPI) posted(want int) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.posts)
		f.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // and no more come
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.posts...)
}

// commentWithID is prComment as comment id.
func commentWithID(t *testing.T, body, association string, id int) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(prComment(t, body, association), &m); err != nil {
		t.Fatal(err)
	}
	obj(m, "comment")["id"] = id
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A refused /retry is answered on the pull request with a reply listing
// what the webhook answer skipped: one reply per pull request per minute,
// none for a redelivered comment already answered.
func TestRefusedRetryAnswersOnThePullRequest(t *testing.T) {
	api := &fakeCommentsAPI{t: t}
	fake := httptest.NewServer(api)
	t.Cleanup(fake.Close)
	gh, err := github.NewForge(github.Config{APIURL: fake.URL + "/", Token: refusalToken, BotLogin: refusalBot,
		Webhook: forge.Webhook{WebhookEnabled: true, WebhookSecrets: []string{testGitHubSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	reg := forge.NewRegistry()
	reg.Register(gh)
	reg.Register(testForge{name: workflows.Forge("gitlab"), Webhooks: hooks(workflows.Forge("gitlab"), false)})
	clock := newFakeClock()
	env := newTrustEnv(t, Config{Forges: reg}, clock, map[string]string{"pr.yaml": prWorkflow})
	runs := runsOf(t, env.github(t, "pull_request", "refusal-pr-1", prOpenedOn(t, 1)), 1)
	setStatus(t, env.q, runs["pr-check"], workflows.StatusFailed, 31)

	refused := func(delivery string, comment int) answer {
		t.Helper()
		a := env.github(t, "issue_comment", delivery, commentWithID(t, "/retry", "NONE", comment))
		if a.Code != http.StatusAccepted || len(a.Runs) != 0 || len(a.Skipped) == 0 {
			t.Fatalf("refused /retry: %d %s\n%s", a.Code, a.Raw, env.logs)
		}
		return a
	}
	a := refused("refusal-c-1", 501)
	posts := api.posted(1)
	if len(posts) != 1 {
		t.Fatalf("%d replies to a refused /retry, want 1\n%s", len(posts), env.logs)
	}
	s := a.Skipped[len(a.Skipped)-1]
	// The reason shown as text (forge.Text: "\\/retry", "\\[OWNER …\\]").
	want := fmt.Sprintf("`/retry` from @Codertocat: not re-run\n- `%s`: %s\n\n%s", s.Workflow, forge.Text(s.Reason),
		forge.ActionMarker("/retry", 1, "refused 501"))
	if posts[0] != want || !strings.Contains(s.Reason, "/retry refused: author association NONE") {
		t.Fatalf("reply\n%q\nwant\n%q", posts[0], want)
	}
	// Another refused /retry within the minute: no second reply.
	refused("refusal-c-2", 502)
	if posts := api.posted(1); len(posts) != 1 {
		t.Fatalf("%d replies within the minute, want 1", len(posts))
	}
	// A minute later: answered again.
	clock.advance(refusalReplyInterval)
	refused("refusal-c-3", 503)
	if posts := api.posted(2); len(posts) != 2 || !strings.Contains(posts[1], forge.ActionMarker("/retry", 1, "refused 503")) {
		t.Fatalf("replies a minute later: %q", posts)
	}
	// That comment sent again later still (under another delivery id, as
	// a forge's redelivery may be): its reply is there, none posted.
	clock.advance(refusalReplyInterval)
	refused("refusal-c-3-resent", 503)
	if posts := api.posted(2); len(posts) != 2 {
		t.Fatalf("%d replies after a redelivery, want 2", len(posts))
	}
	// An admitted /retry re-runs and gets no reply; the next finds nothing
	// failed and says so.
	if a := env.github(t, "issue_comment", "refusal-c-4", commentWithID(t, "/retry", "MEMBER", 504)); len(a.Runs) != 1 {
		t.Fatalf("admitted /retry: %d %s", a.Code, a.Raw)
	}
	clock.advance(refusalReplyInterval)
	refused("refusal-c-5", 505)
	posts = api.posted(3)
	want = "`/retry` from @Codertocat: not re-run\n- " + forge.Text("no failed run on Codertocat/Hello-World#1 to re-run") + "\n\n" +
		forge.ActionMarker("/retry", 1, "refused 505")
	if len(posts) != 3 || posts[2] != want {
		t.Fatalf("replies %q, want the last %q", posts, want)
	}
}

// A refusal's reasons are shown as text: forge text in a reason (a label,
// a lookup's error) cannot close the reply's hidden marker, mention a team
// or inject HTML.
func TestRefusalBodyShowsReasonsAsText(t *testing.T) {
	body := refusalBody("/retry", "bob", []decide.Skip{
		{Workflow: "lint", Reason: `label "x --> <img src=y> @org/team" required`},
	})
	for _, bad := range []string{"-->", "<img", "@org"} {
		if strings.Contains(body, bad) {
			t.Errorf("reply body %q contains %q", body, bad)
		}
	}
	if !strings.Contains(body, "from @bob") {
		t.Errorf("reply body %q does not name the commenter", body)
	}
}
