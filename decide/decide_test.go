package decide

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// These tests decide events directly, with fakes of the dependencies;
// ingress's tests drive the same decisions through the webhook, the API
// and Slack on a real queue.

const acme workflows.Forge = "acme" // a forge: decide names none

const prWorkflow = `name: pr-check
on:
  - event: pull_request
    actions: [opened, synchronize]
steps:
  - id: check
    run: make check
`

const reviewWorkflow = `name: review
on:
  - event: comment
    command: /review
steps:
  - id: review
    run: echo "$HOOKRUN_COMMAND_ARGS"
`

// staticWorkflows is a Workflows of parsed sources.
type staticWorkflows []*workflows.Workflow

func (s staticWorkflows) Workflows() []*workflows.Workflow { return s }

func parse(t *testing.T, srcs ...string) staticWorkflows {
	t.Helper()
	var out staticWorkflows
	for i, src := range srcs {
		w, err := workflows.Parse(fmt.Sprintf("w%d.yaml", i), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

// fakeForge is a forge whose lookups a test sets; the rest of forge.Forge
// is never called.
type fakeForge struct {
	forge.Forge
	head    *workflows.Head // nil: no API credentials
	assoc   string
	asked   int
	headErr error
}

func (f *fakeForge) Name() workflows.Forge { return acme }
func (f *fakeForge) Credentials() error {
	if f.head == nil {
		return fmt.Errorf("no acme API token: %w", forge.ErrNoCredentials)
	}
	return nil
}
func (f *fakeForge) PullRequestHead(context.Context, *workflows.Event) (workflows.Head, error) {
	f.asked++
	if f.headErr != nil {
		return workflows.Head{}, f.headErr
	}
	return *f.head, nil
}
func (f *fakeForge) Association(context.Context, *workflows.Event) (string, error) {
	if f.assoc == "" {
		return "", forge.ErrAssociationInPayload
	}
	return f.assoc, nil
}

type fakeForges struct{ f *fakeForge }

func (r fakeForges) Get(workflows.Forge) forge.Forge { return r.f }

// mapHeads is a HeadStore in memory.
type mapHeads map[string]workflows.Head

func (m mapHeads) Put(_ context.Context, f workflows.Forge, repo string, n int, h workflows.Head, _ time.Time) error {
	m[fmt.Sprint(f, repo, n)] = h
	return nil
}

func (m mapHeads) Get(_ context.Context, f workflows.Forge, repo string, n int) (workflows.Head, time.Time, bool, error) {
	h, ok := m[fmt.Sprint(f, repo, n)]
	return h, time.Time{}, ok, nil
}

// records is a RunLister of one page, newest first.
type records []*stores.RunRecord

func (r records) List(context.Context, stores.ListFilter) ([]*stores.RunRecord, string, error) {
	return r, "", nil
}

func newDecider(t *testing.T, cfg Config, deps Deps) *Decider {
	t.Helper()
	d, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func prOpened(assoc string) *workflows.Event {
	return &workflows.Event{Forge: acme, Kind: workflows.KindPullRequest, Action: "opened", Repo: "o/r", Sender: "alice",
		DeliveryID: "d1", AuthorAssociation: assoc, PullRequest: &workflows.PullRequest{Number: 1, HeadSHA: "abc"}}
}

func comment(body, assoc string) *workflows.Event {
	return &workflows.Event{Forge: acme, Kind: workflows.KindComment, Action: "created", Repo: "o/r", Sender: "bob",
		DeliveryID: "c1", AuthorAssociation: assoc, PullRequest: &workflows.PullRequest{Number: 1, Fork: true},
		Comment: &workflows.Comment{ID: 7, Body: body}}
}

// TestEventSkipsEveryOtherWorkflow: a decision names every workflow
// either as a run or as a skip with its reason, in workflow order.
func TestEventSkipsEveryOtherWorkflow(t *testing.T) {
	d := newDecider(t, Config{}, Deps{Workflows: parse(t, reviewWorkflow, prWorkflow)})
	dec, err := d.Event(context.Background(), prOpened("NONE"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Runs) != 0 || len(dec.Skipped) != 2 || dec.Skipped[0].Workflow != "review" || dec.Skipped[1].Workflow != "pr-check" {
		t.Fatalf("got %+v", dec)
	}
	mustContain(t, dec.Skipped[1].Reason, "author association NONE")
	mustContain(t, dec.Reason(), "no workflow matched and authorized the event (review: ")

	closed := prOpened("MEMBER")
	closed.Action = "closed" // nothing matches
	if dec, _ := d.Event(context.Background(), closed); len(dec.Runs) != 0 || len(dec.Skipped) != 2 || dec.Skipped[1].Reason == "" {
		t.Fatalf("nothing matched: %+v", dec)
	}

	dec, err = d.Event(context.Background(), prOpened("MEMBER"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Runs) != 1 || dec.Runs[0].Workflow != "pr-check" || len(dec.Skipped) != 1 || dec.Runs[0].Object == "" {
		t.Fatalf("got %+v", dec)
	}
	if r := dec.Runs[0]; r.Attempt != 1 || r.ID == "" || r.Event.DeliveryID != "d1" {
		t.Fatalf("run request %+v", r)
	}
}

// TestCommentPinnedToHead: a comment's runs are pinned to the head the
// store remembers, else the forge API's; without either they are Refused.
func TestCommentPinnedToHead(t *testing.T) {
	heads := mapHeads{}
	f := &fakeForge{}
	d := newDecider(t, Config{}, Deps{Workflows: parse(t, reviewWorkflow), Forges: fakeForges{f}, Heads: heads})
	dec, _ := d.Event(context.Background(), comment("/review", "MEMBER"))
	if len(dec.Runs) != 1 || !strings.Contains(dec.Runs[0].Refused, "Comment again") || !strings.Contains(dec.Runs[0].Refused, "no acme API credentials") {
		t.Fatalf("unknown head: %+v", dec.Runs)
	}

	f.head = &workflows.Head{SHA: "fromapi"}
	dec, _ = d.Event(context.Background(), comment("/review", "MEMBER"))
	if pr := dec.Runs[0].Event.PullRequest; pr.HeadSHA != "fromapi" || pr.Fork || dec.Runs[0].Refused != "" || f.asked != 1 {
		t.Fatalf("from the API: %+v %+v (asked %d)", pr, dec.Runs[0], f.asked)
	}

	d.RememberHead(context.Background(), prOpened("NONE"))()
	dec, _ = d.Event(context.Background(), comment("/review", "MEMBER"))
	if pr := dec.Runs[0].Event.PullRequest; pr.HeadSHA != "abc" || f.asked != 1 {
		t.Fatalf("remembered: %+v (asked %d)", pr, f.asked)
	}

	f.headErr, heads = errors.New("502"), mapHeads{}
	d = newDecider(t, Config{}, Deps{Workflows: parse(t, reviewWorkflow), Forges: fakeForges{f}, Heads: heads})
	dec, _ = d.Event(context.Background(), comment("/review", "MEMBER"))
	mustContain(t, dec.Runs[0].Refused, "the acme API did not tell it: 502")
}

// TestRetrySelectsLatestFailedRuns: /retry re-runs, of each workflow, the
// latest run on the pull request if it failed, authorized by the
// workflow's policy; a workflow no longer loaded is skipped.
func TestRetrySelectsLatestFailedRuns(t *testing.T) {
	pr := &workflows.PullRequest{Number: 1}
	run := func(id, wf string, st workflows.Status) *stores.RunRecord {
		return &stores.RunRecord{ID: id, Workflow: wf, Status: st, Attempt: 1,
			Event: workflows.Event{Forge: acme, Repo: "o/r", DeliveryID: "d-" + id, PullRequest: pr}}
	}
	recs := records{run("r4", "gone", workflows.StatusFailed), run("r3", "pr-check", workflows.StatusFailed),
		run("r2", "review", workflows.StatusSucceeded), run("r1", "review", workflows.StatusFailed)}
	d := newDecider(t, Config{}, Deps{Workflows: parse(t, reviewWorkflow, prWorkflow), Runs: recs})

	dec, err := d.Retry(context.Background(), comment("/retry", "MEMBER"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Runs) != 1 || dec.Runs[0].RerunOf != "r3" || dec.Runs[0].Attempt != 2 || !strings.HasSuffix(dec.Runs[0].Object, "|retry") {
		t.Fatalf("runs %+v", dec.Runs)
	}
	if len(dec.Skipped) != 1 || dec.Skipped[0].Workflow != "gone" {
		t.Fatalf("skipped %+v", dec.Skipped)
	}

	dec, _ = d.Retry(context.Background(), comment("/retry", "NONE"))
	if len(dec.Runs) != 0 || len(dec.Skipped) != 2 || !strings.Contains(dec.Skipped[1].Reason, "/retry refused: author association NONE") {
		t.Fatalf("NONE: %+v", dec)
	}
	if dec, _ := d.Retry(context.Background(), comment("/review", "MEMBER")); len(dec.Runs)+len(dec.Skipped) != 0 {
		t.Fatalf("not a retry: %+v", dec)
	}
	off := newDecider(t, Config{Commands: CommandsConfig{Retry: "-"}}, Deps{Workflows: parse(t, prWorkflow), Runs: recs})
	if dec, _ := off.Retry(context.Background(), comment("/retry", "MEMBER")); len(dec.Runs)+len(dec.Skipped) != 0 {
		t.Fatalf("retry off: %+v", dec)
	}
}

// TestReplayRunsAreNew: a replay's runs remember the delivery they replay
// and dedupe by no object.
func TestReplayRunsAreNew(t *testing.T) {
	d := newDecider(t, Config{}, Deps{Workflows: parse(t, prWorkflow)})
	dec, err := d.Replay(context.Background(), prOpened("OWNER"), "orig")
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Runs) != 1 || dec.Runs[0].Origin != "orig" || dec.Runs[0].Object != "" {
		t.Fatalf("got %+v", dec.Runs)
	}
}

// TestRerunRefusals: an operator's re-run of an unfinished run, of a
// repository no longer allowed or of a workflow no longer loaded is
// refused with the error that says so.
func TestRerunRefusals(t *testing.T) {
	d := newDecider(t, Config{AllowRepos: []string{"o/*"}}, Deps{Workflows: parse(t, prWorkflow)})
	rec := &stores.RunRecord{ID: "r1", Workflow: "pr-check", Status: workflows.StatusRunning, Event: workflows.Event{Repo: "o/r"}}
	for _, tc := range []struct {
		edit func(r *stores.RunRecord)
		want error
	}{
		{func(*stores.RunRecord) {}, ErrNotFinished},
		{func(r *stores.RunRecord) { r.Status, r.Event.Repo = workflows.StatusFailed, "x/r" }, ErrRepoNotAllowed},
		{func(r *stores.RunRecord) { r.Status, r.Workflow = workflows.StatusFailed, "gone" }, ErrWorkflowGone},
		{func(r *stores.RunRecord) { r.Status = workflows.StatusFailed }, nil},
	} {
		r := *rec
		tc.edit(&r)
		req, err := d.Rerun(context.Background(), &r)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (req != nil) {
			t.Errorf("%+v: %v, want %v", r, err, tc.want)
		}
	}
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}

// TestObjectKey pins down what tells objects apart.
func TestObjectKey(t *testing.T) {
	c := &workflows.Event{Kind: workflows.KindComment, Repo: "a/b", Action: "created", UpdatedAt: "t1",
		Issue: &workflows.Issue{Number: 3}, Comment: &workflows.Comment{ID: 7, Body: "/x 1\n/x 2"}}
	if objectKey(c, "/x 1") == objectKey(c, "/x 2") {
		t.Fatal("two command lines of one comment share a key")
	}
	c2 := *c
	c2.Comment = &workflows.Comment{ID: 8, Body: c.Comment.Body}
	if objectKey(c, "/x 1") == objectKey(&c2, "/x 1") {
		t.Fatal("two comments share a key")
	}
	c3 := *c
	c3.DeliveryID, c3.InstallationID, c3.Sender = "other", 9, "someone"
	if objectKey(c, "/x 1") != objectKey(&c3, "/x 1") {
		t.Fatal("the delivery changes the key")
	}
	// Length-prefixed parts: no two part lists read alike.
	p1 := &workflows.Event{Kind: workflows.KindPush, Repo: "a/b", Push: &workflows.Push{Ref: "x:y", Before: "z"}}
	p2 := &workflows.Event{Kind: workflows.KindPush, Repo: "a/b", Push: &workflows.Push{Ref: "x", Before: "y:z"}}
	if objectKey(p1, "") == objectKey(p2, "") {
		t.Fatal("parts run into each other")
	}
	if objectKey(&workflows.Event{Kind: workflows.KindChat, Chat: &workflows.Chat{}}, "") != "" {
		t.Fatal("a chat command has an object key")
	}
}

func TestTrustConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  TrustConfig
		want string
	}{
		{TrustConfig{}, ""},
		{TrustConfig{AssociationTTL: 6 * time.Minute}, "association ttl"},
		{TrustConfig{LookupTimeout: -time.Second}, "lookup timeout"},
	} {
		c := tc.cfg
		c.setDefaults()
		err := c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	var c TrustConfig
	c.setDefaults()
	if c.LookupTimeout != 2*time.Second || c.AssociationTTL != 5*time.Minute {
		t.Errorf("defaults %+v", c)
	}
}
