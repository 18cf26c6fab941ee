package forgetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Fake is the suite's view of a forge's fake API: what hookrun left on it.
type Fake interface {
	// Comments are the bodies of the comments (notes) hookrun created on
	// the event's pull request, by id.
	Comments() map[int64]string
	// Statuses are the commit states hookrun set, in order, in the forge's
	// own words ("pending", "running", "success").
	Statuses() []string
	// Requests is how many API requests reached the fake.
	Requests() int
	// Origin is the git origin a forge built against the fake has.
	Origin() string
}

// IssueFake is a Fake that keeps issues and pull (merge) requests, for
// the Actions cases.
type IssueFake interface {
	Fake
	// Issue is what issue n has or, with pr, the pull (merge) request n
	// (a forge that numbers both alike may ignore pr).
	Issue(n int, pr bool) IssueState
}

// IssueState is what an issue or pull (merge) request has on a fake.
type IssueState struct {
	// Labels are the names of its labels; Assignees the logins of its
	// assignees.
	Labels, Assignees []string
	// State is "open" or "closed"; Reason the close (or reopen) reason
	// the API was last sent with it, as sent ("" when none).
	State, Reason string
	// Comments are the bodies of the comments hookrun wrote on it.
	Comments []string
}

// Harness is one forge under test.
type Harness struct {
	// Name is the forge's name.
	Name workflows.Forge
	// New builds the forge against a fresh fake API: with API credentials
	// when creds, else the same forge without a token.
	New func(t *testing.T, creds bool) (forge.Forge, Fake)
	// Event is a pull request event the fake knows: reported on, its head
	// and changed files looked up.
	Event *workflows.Event
	// Head is the head the fake reports for Event's pull request.
	Head workflows.Head
	// Files are the paths the fake lists for Event's pull request.
	Files []string
	// Author is an event whose author's association is looked up; nil
	// when the forge's payloads carry it (Association then answers
	// ErrAssociationInPayload).
	Author *workflows.Event
	// Association is what the fake answers for Author.
	Association string
	// GitUser and GitPass are the credentials git fetches Event's
	// repository with.
	GitUser, GitPass string
	// Draft builds the forge against a fake of its pull/merge requests
	// API, with the request to open and the draft it answers; nil: the
	// forge's draft is not covered (the test log says so).
	Draft func(t *testing.T) (forge.Forge, contract.DraftRequest, workflows.ChangeRequest)
	// FinalState is the forge's commit state of a succeeded run
	// ("success").
	FinalState string
	// Review builds the forge against a fake of its review API serving
	// Event's pull request with the diff Patch (UnifiedDiff); nil: Review
	// is not covered (the test log says so).
	Review func(t *testing.T) (forge.Forge, ReviewFake)
	// Suggestion opens the forge's suggestion block in a comment
	// ("```suggestion\n").
	Suggestion string
	// MarksGone says the forge marks a gone finding's comment (GitHub and
	// Gitea edit it to say "Fixed in <sha>", GitLab resolves the
	// discussion).
	MarksGone bool
	// Issue is an open issue of Event's repository, without labels or
	// assignees, that New's fake (an IssueFake) keeps, as it keeps
	// Event's open pull request; the repository has the labels "bug" and
	// "area/queue" and no "area/new". Assignee is a login the fake
	// accepts as an assignee of both.
	Issue    int
	Assignee string
	// Reasons is the close reason the forge's API is sent for each that
	// actions.json names ("completed", "not_planned", "duplicate") and
	// for a reopening ("reopen"), in the API's words; nil: the forge
	// records no reason, and none is sent.
	Reasons map[string]string
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Helper()
	ctx := context.Background()
	t.Run("Name", func(t *testing.T) {
		f, _ := h.New(t, true)
		if f.Name() != h.Name {
			t.Errorf("Name %q, want %q", f.Name(), h.Name)
		}
		if got := forge.NewRegistry(f).Get(h.Name); got != f {
			t.Errorf("the registry's %s is %v, want the forge registered", h.Name, got)
		}
		if err := f.Credentials(); err != nil {
			t.Errorf("Credentials with a token: %v", err)
		}
	})
	t.Run("Report", func(t *testing.T) {
		f, fake := h.New(t, true)
		wf := &workflows.Workflow{Name: "forgetest", Report: workflows.Report{Comment: workflows.CommentSticky, Status: true}}
		ev := *h.Event
		rep := &contract.RunReport{Phase: contract.PhaseStart, RunID: "01JDQ4V6RZ3M8W1K9T2XGQY7PA", Attempt: 1, Workflow: wf,
			Event: &ev, HeadSHA: h.Head.SHA, Status: workflows.StatusRunning}
		ref, err := f.Report(ctx, rep)
		if err != nil {
			t.Fatalf("start report: %v", err)
		}
		if ref.CommentID == 0 {
			t.Fatal("start report returned no comment id")
		}
		comments := fake.Comments()
		start, ok := comments[ref.CommentID]
		if len(comments) != 1 || !ok {
			t.Fatalf("comments after start %v, want one, id %d", comments, ref.CommentID)
		}
		rep.Phase, rep.Status, rep.Ref = contract.PhaseFinal, workflows.StatusSucceeded, ref
		rep.Body = "forgetest final body"
		final, err := f.Report(ctx, rep)
		if err != nil {
			t.Fatalf("final report: %v", err)
		}
		if final.CommentID != ref.CommentID {
			t.Errorf("final report's comment %d, want the start's %d", final.CommentID, ref.CommentID)
		}
		comments = fake.Comments()
		if len(comments) != 1 || comments[ref.CommentID] == start || !strings.Contains(comments[ref.CommentID], "forgetest final body") {
			t.Errorf("comments after final %v, want the start's edited to the final body", comments)
		}
		st := fake.Statuses()
		if len(st) < 2 || st[len(st)-1] != h.FinalState || st[0] == h.FinalState {
			t.Errorf("statuses %v, want a pending one then %s", st, h.FinalState)
		}
	})
	t.Run("Head", func(t *testing.T) {
		f, _ := h.New(t, true)
		got, err := f.PullRequestHead(ctx, h.Event)
		if err != nil || got.SHA != h.Head.SHA || h.Head.HeadRef != "" && got.HeadRef != h.Head.HeadRef {
			t.Errorf("PullRequestHead %+v, %v; want %+v", got, err, h.Head)
		}
	})
	t.Run("ChangedFiles", func(t *testing.T) {
		f, _ := h.New(t, true)
		got, err := f.ChangedFiles(ctx, h.Event)
		if err != nil || !slices.Equal(got.Paths, h.Files) {
			t.Errorf("ChangedFiles %+v, %v; want %v", got, err, h.Files)
		}
	})
	t.Run("Association", func(t *testing.T) {
		f, _ := h.New(t, true)
		if h.Author == nil {
			if _, err := f.Association(ctx, h.Event); !errors.Is(err, forge.ErrAssociationInPayload) {
				t.Errorf("Association: %v, want ErrAssociationInPayload", err)
			}
			return
		}
		got, err := f.Association(ctx, h.Author)
		if err != nil || got != h.Association {
			t.Errorf("Association %q, %v; want %q", got, err, h.Association)
		}
	})
	t.Run("Draft", func(t *testing.T) {
		if h.Draft == nil {
			t.Logf("%s: no fake of the pull requests API; OpenDraft is not covered here", h.Name)
			return
		}
		f, req, want := h.Draft(t)
		got, err := f.OpenDraft(ctx, req)
		if err != nil || got != want {
			t.Errorf("OpenDraft %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("Git", func(t *testing.T) {
		f, fake := h.New(t, true)
		if o, err := f.GitOrigin(); err != nil || o != fake.Origin() {
			t.Errorf("GitOrigin %q, %v; want %q", o, err, fake.Origin())
		}
		u, p, err := f.GitCredentials(ctx, h.Event)
		if err != nil || u != h.GitUser || p != h.GitPass {
			t.Errorf("GitCredentials %q, (%d bytes), %v; want %q and the token", u, len(p), err, h.GitUser)
		}
	})
	t.Run("Review", func(t *testing.T) { reviewCase(t, h) })
	t.Run("ReviewTwoWorkflows", func(t *testing.T) { twoWorkflowsCase(t, h) })
	t.Run("Actions", func(t *testing.T) { actionCases(t, h) })
	t.Run("NoCredentials", func(t *testing.T) { noCredentials(t, h) })
	t.Run("NotConfigured", func(t *testing.T) {
		f := forge.NewRegistry().Get(h.Name)
		if f.Name() != h.Name {
			t.Errorf("Name %q", f.Name())
		}
		_, err := f.PullRequestHead(ctx, h.Event)
		if !errors.Is(err, forge.ErrNotConfigured) || !errors.Is(err, forge.ErrNoCredentials) || !strings.Contains(err.Error(), string(h.Name)) {
			t.Errorf("PullRequestHead of an unregistered forge: %v", err)
		}
		if _, err := f.GitOrigin(); !errors.Is(err, forge.ErrNotConfigured) {
			t.Errorf("GitOrigin of an unregistered forge: %v", err)
		}
	})
}

// noCredentials: a forge without a token answers ErrNoCredentials from its
// API methods, reports nothing, and still has its git origin.
func noCredentials(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, fake := h.New(t, false)
	if err := f.Credentials(); !errors.Is(err, forge.ErrNoCredentials) {
		t.Errorf("Credentials: %v, want ErrNoCredentials", err)
	}
	if _, err := f.PullRequestHead(ctx, h.Event); !errors.Is(err, forge.ErrNoCredentials) {
		t.Errorf("PullRequestHead: %v, want ErrNoCredentials", err)
	}
	if _, err := f.ChangedFiles(ctx, h.Event); !errors.Is(err, forge.ErrNoCredentials) {
		t.Errorf("ChangedFiles: %v, want ErrNoCredentials", err)
	}
	if h.Author != nil {
		if _, err := f.Association(ctx, h.Author); !errors.Is(err, forge.ErrNoCredentials) {
			t.Errorf("Association: %v, want ErrNoCredentials", err)
		}
	}
	if _, err := f.OpenDraft(ctx, contract.DraftRequest{Event: h.Event, Head: "hookrun/x", Base: "main"}); !errors.Is(err, forge.ErrNoCredentials) {
		t.Errorf("OpenDraft: %v, want ErrNoCredentials", err)
	}
	wf := &workflows.Workflow{Name: "forgetest", Report: workflows.Report{Comment: workflows.CommentSticky, Status: true}}
	ref := contract.ReportRef{CommentID: 7}
	got, err := f.Report(ctx, &contract.RunReport{Phase: contract.PhaseStart, RunID: "r", Workflow: wf, Event: h.Event, Status: workflows.StatusRunning, Ref: ref})
	if err != nil || got != ref {
		t.Errorf("Report: %+v, %v; want the ref unchanged and no error", got, err)
	}
	if _, err := f.Review(ctx, &contract.RunReport{Phase: contract.PhaseFinal, RunID: "r", Workflow: wf, Event: h.Event}); !errors.Is(err, forge.ErrNoCredentials) {
		t.Errorf("Review: %v, want ErrNoCredentials", err)
	}
	// Every method of its Actor: nothing reaches the API (a nil client
	// behind it would panic).
	a, ok := f.(forge.Actor)
	if !ok {
		t.Fatalf("%T is no forge.Actor", f)
	}
	issue := forge.Issue{Repo: h.Event.Repo, Number: 1}
	for name, call := range map[string]func() error{
		"ListRepoLabels":  func() error { _, err := a.ListRepoLabels(ctx, issue); return err },
		"CreateLabel":     func() error { return a.CreateLabel(ctx, issue, "bug") },
		"AddLabels":       func() error { return a.AddLabels(ctx, issue, []string{"bug"}) },
		"RemoveLabels":    func() error { return a.RemoveLabels(ctx, issue, []string{"bug"}) },
		"AddAssignees":    func() error { return a.AddAssignees(ctx, issue, []string{"x"}) },
		"RemoveAssignees": func() error { return a.RemoveAssignees(ctx, issue, []string{"x"}) },
		"SetState":        func() error { return a.SetState(ctx, issue, "closed", "") },
		"Comment":         func() error { _, err := a.Comment(ctx, issue, "m", "b"); return err },
	} {
		if err := call(); !errors.Is(err, forge.ErrNoCredentials) {
			t.Errorf("%s: %v, want ErrNoCredentials", name, err)
		}
	}
	if u, p, err := f.GitCredentials(ctx, h.Event); u != "" || p != "" || err != nil {
		t.Errorf("GitCredentials %q, %d bytes, %v; want none", u, len(p), err)
	}
	if o, err := f.GitOrigin(); err != nil || o != fake.Origin() {
		t.Errorf("GitOrigin %q, %v; want %q", o, err, fake.Origin())
	}
	noCredentialsActions(ctx, t, h, f)
	if n := fake.Requests(); n != 0 {
		t.Errorf("%d requests reached the API of a forge without credentials", n)
	}
}
