package stores

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// TestDeliveriesList: each accepted copy of a delivery is listed, newest
// first, with its outcome (a run queued: ran; nothing matched: skipped; a
// match its policy refused: refused; a redelivery: duplicate); each filter
// selects its rows alone, pages follow their cursor without a gap or a
// repeat, and a cursor no page handed out is ErrBadCursor. The entry keeps
// the decisions, and a replay is noted on it with the body unchanged.
func TestDeliveriesList(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 60*time.Second)
	gh, gl := workflows.Forge("github"), workflows.Forge("gitlab")
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

	reqs := deliveryRequests(1)
	reqs[0].ID = queue.NewRunID()
	ran := &Received{Forge: gh, ID: reqs[0].Event.DeliveryID, Event: "push", Kind: "push", Repo: "o/a", ReceivedAt: at,
		Raw:       []byte(`{"ref":"refs/heads/main"}`),
		Workflows: []Considered{{Workflow: reqs[0].Workflow, Matched: true, Ran: true}},
		Runs:      []ReceivedRun{{ID: reqs[0].ID, Workflow: reqs[0].Workflow}}}
	skipped := &Received{Forge: gl, ID: "gl-1", Event: "Merge Request Hook", Kind: "pull_request", Repo: "g/sub/b.c", ReceivedAt: at.Add(time.Second),
		Raw: []byte(`{}`), Workflows: []Considered{{Workflow: "lint", Reason: "no trigger for event pull_request"}}}
	refused := &Received{Forge: gh, ID: "gh-2", Event: "issue_comment", Kind: "issue_comment", Repo: "o/a", ReceivedAt: at.Add(2 * time.Second),
		Raw: []byte(`{"comment":{}}`), Workflows: []Considered{{Workflow: "deploy", Matched: true, Reason: `author association NONE of "bob" not in [OWNER]`}}}
	for _, c := range []struct {
		d    *Received
		reqs []*queue.RunRequest
	}{{ran, reqs}, {skipped, nil}, {refused, nil}} {
		if _, err := q.AcceptDelivery(ctx, c.d, c.reqs); err != nil {
			t.Fatalf("accepting %s: %v", c.d.ID, err)
		}
	}
	again := queuetest.Redeliver(reqs)
	again[0].ID = queue.NewRunID()
	dup := &Received{Forge: gh, ID: ran.ID, Event: "push", Kind: "push", Repo: "o/a", ReceivedAt: at.Add(3 * time.Second), Raw: ran.Raw,
		Runs: []ReceivedRun{{ID: again[0].ID, Workflow: again[0].Workflow}}}
	if res, err := q.AcceptDelivery(ctx, dup, again); err != nil || !res[0].Duplicate {
		t.Fatalf("redelivery: %v %v", res, err)
	}

	rows := func(f DeliveryFilter) []string {
		t.Helper()
		page, _, err := q.Received().List(ctx, f)
		if err != nil {
			t.Fatalf("listing %+v: %v", f, err)
		}
		var out []string
		for _, s := range page {
			out = append(out, s.ID+" "+s.Outcome)
		}
		return out
	}
	all := []string{ran.ID + " duplicate", "gh-2 refused", "gl-1 skipped", ran.ID + " ran"}
	for _, c := range []struct {
		f    DeliveryFilter
		want []string
	}{
		{DeliveryFilter{}, all},
		{DeliveryFilter{Outcome: OutcomeRan}, all[3:]},
		{DeliveryFilter{Outcome: OutcomeRefused}, all[1:2]},
		{DeliveryFilter{Outcome: OutcomeDuplicate}, all[:1]},
		{DeliveryFilter{Forge: gl}, all[2:3]},
		{DeliveryFilter{Repo: "g/sub/b.c"}, all[2:3]},
		{DeliveryFilter{Repo: "o/a"}, []string{all[0], all[1], all[3]}},
		{DeliveryFilter{Event: "issue_comment"}, all[1:2]},
		{DeliveryFilter{Forge: gh, Outcome: OutcomeSkipped}, nil},
	} {
		if got := rows(c.f); !slices.Equal(got, c.want) {
			t.Errorf("list %+v: %q, want %q", c.f, got, c.want)
		}
	}

	var paged []string
	f := DeliveryFilter{Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the cursor does not end")
		}
		page, next, err := q.Received().List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 || (next != "" && len(page) != 3) {
			t.Fatalf("a page of %d for a limit of 3 (next %q)", len(page), next)
		}
		for _, s := range page {
			paged = append(paged, s.ID+" "+s.Outcome)
		}
		if next == "" {
			if pages != 1 {
				t.Errorf("%d pages of 3 for 4 deliveries, want 2", pages+1)
			}
			break
		}
		f.Cursor = next
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages of 3: %q, want %q", paged, all)
	}
	for _, c := range []string{"x", "runs.1", "x.1.github.ran.push.-.0"} {
		if _, _, err := q.Received().List(ctx, DeliveryFilter{Cursor: c}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}

	got, err := q.Received().Get(ctx, gh, "gh-2")
	if err != nil || got.Outcome() != OutcomeRefused || len(got.Workflows) != 1 || !got.Workflows[0].Matched || got.Repo != "o/a" {
		t.Fatalf("stored refused delivery %+v, %v", got, err)
	}
	if got, err := q.Received().Get(ctx, gh, ran.ID); err != nil || got.Outcome() != OutcomeRan || got.Runs[0].ID != reqs[0].ID {
		t.Fatalf("the first copy after its redelivery: %+v, %v; want its own run %s", got, err, reqs[0].ID)
	}
	replay := Replay{ID: ReplayDelivery("gh-2", 1), At: at.Add(time.Minute), Runs: []ReceivedRun{{ID: "r1", Workflow: "deploy"}}}
	if err := q.Received().AddReplay(ctx, gh, "gh-2", replay); err != nil {
		t.Fatal(err)
	}
	got, err = q.Received().Get(ctx, gh, "gh-2")
	if err != nil || len(got.Replays) != 1 || got.Replays[0].ID != "gh-2:replay:1" || string(got.Raw) != `{"comment":{}}` {
		t.Fatalf("after a replay: %+v (raw %q), %v", got, got.Raw, err)
	}
	if err := q.Received().AddReplay(ctx, gh, "nope", replay); !errors.Is(err, ErrNotReceived) {
		t.Errorf("a replay of an unknown delivery: %v, want ErrNotReceived", err)
	}
	if old := (&Received{Forge: gh, ID: "old", Event: "push"}); old.Outcome() != "" {
		t.Errorf("an entry stored before the deliveries view has outcome %q, want none", old.Outcome())
	}
	// The stall check reads the newest revision of the index's keys (a
	// wildcard, x.>, here): the index reaches it.
	x := q.Received().index
	newest := x.newestRevision(ctx)
	if newest == 0 {
		t.Fatal("the stall check reads no newest revision of the deliveries")
	}
	if err := x.waitApplied(ctx, newest); err != nil {
		t.Fatalf("the index does not reach the newest revision %d (applied %d): %v", newest, x.appliedRevision(), err)
	}
}

// TestDeliveryOfTheSameObject: a delivery under another id whose run
// already exists for the same forge object is listed as a duplicate, and
// its stored runs name the existing run, not the id it planned.
func TestDeliveryOfTheSameObject(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 60*time.Second)
	gh := workflows.Forge("github")
	first := deliveryRequests(1)
	first[0].ID, first[0].Object = queue.NewRunID(), "pr:7:opened:abc"
	d1 := &Received{Forge: gh, ID: first[0].Event.DeliveryID, Event: "pull_request", Kind: "pull_request", Repo: "o/a", Raw: []byte(`{}`),
		Runs: []ReceivedRun{{ID: first[0].ID, Workflow: first[0].Workflow}}}
	if _, err := q.AcceptDelivery(ctx, d1, first); err != nil {
		t.Fatal(err)
	}
	again := queuetest.Redeliver(first)
	again[0].ID, again[0].Event.DeliveryID = queue.NewRunID(), "another-hook-same-object"
	planned := again[0].ID
	d2 := &Received{Forge: gh, ID: "another-hook-same-object", Event: "pull_request", Kind: "pull_request", Repo: "o/a", Raw: []byte(`{}`),
		Runs: []ReceivedRun{{ID: planned, Workflow: again[0].Workflow}}}
	res, err := q.AcceptDelivery(ctx, d2, again)
	if err != nil || !res[0].SameObject || res[0].RunID != first[0].ID {
		t.Fatalf("the same object under another delivery: %+v %v", res, err)
	}
	got, err := q.Received().Get(ctx, gh, d2.ID)
	if err != nil || len(got.Runs) != 1 || got.Runs[0].ID != first[0].ID {
		t.Fatalf("stored runs of the second delivery %+v, %v; want the first's run %s, not %s", got, err, first[0].ID, planned)
	}
	page, _, err := q.Received().List(ctx, DeliveryFilter{Outcome: OutcomeDuplicate})
	if err != nil || len(page) != 1 || page[0].ID != d2.ID {
		t.Errorf("duplicates: %+v %v", page, err)
	}
}

// TestUnmatchedDeliveries: a delivery that was not matched against the
// workflows (KeepUnmatched) is listed with its outcome (refused or skipped)
// and reason, and Get reads it back without a body; an accepted copy of
// the same delivery stored afterwards (a redelivery once its repository
// is allowed) is what Get reads then, body and all, both copies listed.
func TestUnmatchedDeliveries(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 60*time.Second)
	gh := workflows.Forge("github")
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

	notAllowed := &Received{Forge: gh, ID: "na-1", Event: "pull_request", Kind: "pull_request", Repo: "stranger/repo", ReceivedAt: at,
		Raw: []byte(`{"large":"body"}`), Headers: map[string]string{"X-GitHub-Event": "pull_request"}, Reason: "repository not allowed", Refused: true}
	unhandled := &Received{Forge: gh, ID: "uh-1", Event: "check_run", ReceivedAt: at.Add(time.Second), Raw: []byte(`{}`), Reason: "event check_run is not handled"}
	for _, d := range []*Received{notAllowed, unhandled} {
		if err := q.Received().KeepUnmatched(ctx, d); err != nil {
			t.Fatalf("keeping %s: %v", d.ID, err)
		}
	}
	if err := q.Received().KeepUnmatched(ctx, &Received{Forge: gh, ID: "no-reason"}); err == nil {
		t.Error("an unmatched delivery without a reason was stored")
	}
	page, _, err := q.Received().List(ctx, DeliveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []DeliverySummary{
		{Forge: gh, ID: "uh-1", Event: "check_run", Outcome: OutcomeSkipped, Reason: "event check_run is not handled", ReceivedAt: unhandled.ReceivedAt},
		{Forge: gh, ID: "na-1", Event: "pull_request", Kind: "pull_request", Repo: "stranger/repo", Outcome: OutcomeRefused, Reason: "repository not allowed", ReceivedAt: at},
	}
	sameRow := func(a, b DeliverySummary) bool {
		same := a.ReceivedAt.Equal(b.ReceivedAt)
		a.ReceivedAt = b.ReceivedAt
		return same && a == b
	}
	if !slices.EqualFunc(page, want, sameRow) {
		t.Errorf("list %+v, want %+v", page, want)
	}
	if page, _, err := q.Received().List(ctx, DeliveryFilter{Outcome: OutcomeRefused}); err != nil || len(page) != 1 || page[0].ID != "na-1" {
		t.Errorf("refused: %+v %v", page, err)
	}
	d, err := q.Received().Get(ctx, gh, "na-1")
	if err != nil || d.Outcome() != OutcomeRefused || d.Reason != "repository not allowed" || len(d.Raw) != 0 || d.Repo != "stranger/repo" || d.Headers["X-GitHub-Event"] != "pull_request" {
		t.Fatalf("get na-1: %+v %v", d, err)
	}

	accepted := &Received{Forge: gh, ID: "na-1", Event: "pull_request", Kind: "pull_request", Repo: "stranger/repo", ReceivedAt: at.Add(2 * time.Second),
		Raw: []byte(`{"large":"body"}`), Workflows: []Considered{{Workflow: "lint", Reason: "no trigger for event pull_request"}}}
	if _, err := q.AcceptDelivery(ctx, accepted, nil); err != nil {
		t.Fatal(err)
	}
	d, err = q.Received().Get(ctx, gh, "na-1")
	if err != nil || d.Outcome() != OutcomeSkipped || d.Reason != "" || string(d.Raw) != `{"large":"body"}` {
		t.Fatalf("get na-1 once accepted: %+v %v", d, err)
	}
	if page, _, err := q.Received().List(ctx, DeliveryFilter{Repo: "stranger/repo"}); err != nil || len(page) != 2 || page[0].Outcome != OutcomeSkipped || page[1].Outcome != OutcomeRefused {
		t.Errorf("both copies: %+v %v", page, err)
	}
}
