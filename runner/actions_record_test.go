package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/stores"
)

// triageWorkflow asks to label the event's pull request, which its
// permissions allow.
const triageWorkflow = `
name: triage
permissions:
  labels: [bug]
steps:
  - id: triage
    run: |
      echo '{"labels": {"add": ["bug"]}}' > "$HOOKRUN_RESULTS/actions.json"
report:
  comment: sticky
  status: false
`

// actionsGitHub is the part of GitHub's API the report and the actions of
// a triage run on pull request 7 of octo/demo use: the sticky comment, the
// repository's labels and the (its body decoded strictly). While
// limited, the label endpoints alone answer secondary rate limits
// (Retry-After 1): the comment lands, the actions fail.
type actionsGitHub struct {
	t       *testing.T
	limited atomic.Bool

	mu       sync.Mutex
	limitHit int
	labels   []string // on issue 7
	comments []string // bodies of comments created or edited, in order
	writes   []string // method and path of the requests that change something, in order
}

func (f *actionsGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Bearer ghs_test" && got != "token ghs_test" {
		f.t.Errorf("%s %s: authorization %q", r.Method, r.URL.Path, got)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	defer f.mu.Unlock()
	p := r.URL.Path
	if r.Method != http.MethodGet {
		f.writes = append(f.writes, r.Method+" "+p)
	}
	if f.limited.Load() && (p == "/repos/octo/demo/labels" || p == "/repos/octo/demo/issues/7/labels") {
		f.limitHit++
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, secondaryBody)
		return
	}
	switch {
	case r.Method == http.MethodGet && p == "/user":
		io.WriteString(w, `{"login":"hookrun-bot"}`)
	case r.Method == http.MethodGet && p == "/repos/octo/demo/labels":
		io.WriteString(w, `[{"id":11,"name":"bug","color":"d73a4a","default":false,"description":null}]`)
	case r.Method == http.MethodPost && p == "/repos/octo/demo/issues/7/labels":
		var in struct {
			Labels []string `json:"labels"`
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil || !slices.Equal(in.Labels, []string{"bug"}) {
			f.t.Errorf("adding labels: body %s (%v)", body, err)
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"message":"Validation Failed"}`)
			return
		}
		if !slices.Contains(f.labels, "bug") {
			f.labels = append(f.labels, "bug")
		}
		io.WriteString(w, `[{"id":11,"name":"bug","color":"d73a4a","default":false,"description":null}]`)
	case r.Method == http.MethodDelete && p == "/repos/octo/demo/issues/7/labels/bug":
		if len(body) != 0 {
			f.t.Errorf("removing a label: body %s", body)
		}
		f.labels = slices.DeleteFunc(f.labels, func(l string) bool { return l == "bug" })
		io.WriteString(w, `[]`)
	case r.Method == http.MethodGet && p == "/repos/octo/demo/issues/7/comments":
		io.WriteString(w, `[]`)
	case r.Method == http.MethodPost && p == "/repos/octo/demo/issues/7/comments",
		r.Method == http.MethodPatch && p == "/repos/octo/demo/issues/comments/100":
		var in struct {
			Body string `json:"body"`
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil || in.Body == "" {
			f.t.Errorf("%s %s: body %s (%v)", r.Method, p, body, err)
		}
		f.comments = append(f.comments, in.Body)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		io.WriteString(w, `{"id":100}`)
	default:
		f.t.Errorf("unexpected %s %s", r.Method, p)
		http.NotFound(w, r)
	}
}

func (f *actionsGitHub) snapshot() (hits int, labels, comments []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limitHit, slices.Clone(f.labels), slices.Clone(f.comments)
}

// changes are the method and path of the requests that changed something.
func (f *actionsGitHub) changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

// forgeReports reports on one forge as internal/app does: forge.Report
// applies a final report's actions, then reports it; ApplyActions applies
// them alone (forge.Act).
type forgeReports struct{ f forge.Forge }

func (r forgeReports) Report(ctx context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	return forge.Report(ctx, r.f, rep)
}

func (r forgeReports) ApplyActions(ctx context.Context, rep *contract.RunReport) error {
	return forge.Act(ctx, r.f, rep)
}

// githubForge is a GitHub forge at url with token (ghs_test, or none).
func githubForge(t *testing.T, url, token string) forge.Forge {
	t.Helper()
	fg, err := github.NewForge(github.Config{APIURL: url + "/", Token: token, BotLogin: "hookrun-bot",
		Client: forge.Client{MaxWait: 300 * time.Millisecond, Backoff: 200 * time.Millisecond, Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	return fg
}

// triageFixture is a runner whose engine reports on a GitHub forge (token
// ghs_test, or none) at url, with an outbox (not started) over the
// fixture's queue that tells the run records what its deliveries did;
// both report through runner.NewestOnly, as internal/app's do.
func triageFixture(t *testing.T, url string, token string) (*fixture, *runner.Outbox) {
	t.Helper()
	fg := githubForge(t, url, token)
	var ob *runner.Outbox
	f := newFixtureEngine(t, map[string]string{"triage": triageWorkflow}, nil, nil, func(f *fixture, c *engine.Config) {
		rep := runner.NewestOnly(forgeReports{fg}, f.q.Groups(), quietLogger())
		var err error
		ob, err = runner.NewOutbox(runner.OutboxConfig{Poll: 100 * time.Millisecond, AttemptTimeout: time.Second,
			Backoff: 300 * time.Millisecond, MaxBackoff: time.Second, Runs: f.q.Runs(), Logger: quietLogger()}, f.q.Outbox(), rep)
		if err != nil {
			t.Fatal(err)
		}
		c.Reporter, c.Outbox, c.ReportTimeout = rep, ob, 6*time.Second
	})
	t.Cleanup(func() { _ = ob.Close() })
	f.start()
	return f, ob
}

// limitedTriage is triageFixture against a fake GitHub whose label
// endpoints answer secondary rate limits until gh.limited is cleared; url
// is the fake's.
func limitedTriage(t *testing.T) (gh *actionsGitHub, url string, f *fixture, ob *runner.Outbox) {
	t.Helper()
	gh = &actionsGitHub{t: t}
	gh.limited.Store(true)
	srv := httptest.NewServer(gh)
	t.Cleanup(srv.Close)
	f, ob = triageFixture(t, srv.URL, "ghs_test")
	return gh, srv.URL, f, ob
}

// A final report whose actions fail on a rate-limited forge is kept in
// the outbox (its comment landed: the apply error alone keeps it), the
// run record says the actions failed; once the forge answers, the outbox
// delivers it, the label lands, and the record's actions say applied.
func TestOutboxRecordsActionsAppliedLater(t *testing.T) {
	t.Parallel()
	gh, _, f, ob := limitedTriage(t)

	id := f.publish("triage", nil)
	rec := f.waitRecord(id, 30*time.Second, "the run finished", terminal)
	if rec.Status != succeeded || rec.Actions == nil || len(rec.Actions.Failed) != 1 || len(rec.Actions.Applied) != 0 ||
		rec.Actions.Failed[0].What != `add label "bug" to #7` {
		t.Fatalf("record after the run: status %s, actions %+v; want the label failed", rec.Status, rec.Actions)
	}
	if !strings.Contains(rec.ReportError, "applying the run's actions") || !strings.Contains(rec.ReportError, "kept in the outbox") {
		t.Errorf("report error %q, want the actions' failure kept in the outbox", rec.ReportError)
	}
	hits, labels, comments := gh.snapshot()
	if hits == 0 || len(labels) != 0 || len(comments) == 0 || !strings.Contains(comments[len(comments)-1], "**Actions**") {
		t.Fatalf("while limited: %d limited answers, labels %q, comments %q; want the comment listing the failed action", hits, labels, comments)
	}
	if list := outboxLen(t, f.q); len(list) != 1 || list[0].RunID != id {
		t.Fatalf("outbox after the run: %+v, want the final report of %s", list, id)
	}

	gh.limited.Store(false)
	ob.Start()
	rec = f.waitRecord(id, 15*time.Second, "the record's actions applied by the outbox", func(r *stores.RunRecord) bool {
		return r.Actions != nil && len(r.Actions.Failed) == 0
	})
	if len(rec.Actions.Applied) != 1 || rec.Actions.Applied[0].What != `add label "bug" to #7` || len(rec.Actions.Refused) != 0 {
		t.Errorf("record's actions after the outbox's delivery: %+v", rec.Actions)
	}
	if rec.Status != succeeded || rec.FinishedAt == nil {
		t.Errorf("record after the outbox's delivery: status %s, finished %v", rec.Status, rec.FinishedAt)
	}
	if _, labels, _ := gh.snapshot(); !slices.Equal(labels, []string{"bug"}) {
		t.Errorf("labels on #7 %q, want bug", labels)
	}
	eventually(t, 10*time.Second, "the outbox empty after delivery", func() bool { return len(outboxLen(t, f.q)) == 0 })
}

// Without forge credentials a run's actions are not dropped unsaid: its
// record lists each refused with the reason, which names the forge.
func TestRecordListsActionsRefusedWithoutCredentials(t *testing.T) {
	t.Parallel()
	gh := &actionsGitHub{t: t}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	f, _ := triageFixture(t, srv.URL, "")

	id := f.publish("triage", nil)
	rec := f.waitRecord(id, 30*time.Second, "the run finished", terminal)
	if rec.Status != succeeded || rec.Actions == nil || len(rec.Actions.Refused) != 1 || len(rec.Actions.Applied)+len(rec.Actions.Failed) != 0 {
		t.Fatalf("record: status %s, actions %+v; want the label refused", rec.Status, rec.Actions)
	}
	if n := rec.Actions.Refused[0]; n.What != `add label "bug" to #7` || !strings.HasPrefix(n.Reason, "no github API credentials") {
		t.Errorf("refused %q for %q, want the missing credentials", n.What, n.Reason)
	}
	if hits, labels, comments := gh.snapshot(); hits != 0 || len(labels)+len(comments) != 0 {
		t.Errorf("a forge without credentials was called: labels %q, comments %q", labels, comments)
	}
}
