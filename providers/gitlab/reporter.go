package gitlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ratelimit"
	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/providers/internal/sticky"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// statusDescriptionLimit is the longest commit status description we send.
const statusDescriptionLimit = 255

// noteLimit is the size limit of a merge request or issue note, in
// characters.
const noteLimit = 1000000

// Reporter shows runs on GitLab: a note per workflow on the merge request or
// issue, and a commit status hookrun/<workflow> on the head SHA. It is safe
// for concurrent use by many runs.
type Reporter struct {
	cfg Config
	log *slog.Logger
	api *gl.Client

	mu    sync.Mutex
	botID int64 // discovered or configured bot user id

	notes sticky.Writer // each run's note, found or created once
}

// New checks cfg and returns a Reporter. No request is made yet.
func New(cfg Config) (*Reporter, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rl := &ratelimit.Transport{Base: cfg.Transport, MaxWait: cfg.MaxWait, Backoff: cfg.Backoff, Logger: cfg.Logger}
	rl.SetDefaults()
	api, err := gl.NewClient(cfg.Token,
		gl.WithBaseURL(cfg.BaseURL),
		gl.WithHTTPClient(&http.Client{Transport: rl}),
		gl.WithoutRetries(), // rate limits and retries are the ratelimit transport's job
	)
	if err != nil {
		return nil, fmt.Errorf("creating gitlab client: %w", err)
	}
	return &Reporter{cfg: cfg, log: cfg.Logger, api: api, botID: cfg.BotUserID,
		notes: sticky.Writer{Log: cfg.Logger, Forge: "gitlab", Noun: "note"}}, nil
}

// noteable is where a run's note goes: a merge request or an issue.
type noteable struct {
	project string // path, group/.../project
	mr      bool
	iid     int64
}

func (n noteable) String() string {
	if n.mr {
		return fmt.Sprintf("%s!%d", n.project, n.iid)
	}
	return fmt.Sprintf("%s#%d", n.project, n.iid)
}

// Report implements contract.Reporter. Note and status are each attempted;
// their errors are joined. The returned ReportRef carries the note id
// whenever one is known, also with an error.
func (r *Reporter) Report(ctx context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	ref := rep.Ref
	if rep.Workflow == nil || rep.Event == nil {
		return ref, fmt.Errorf("reporting run %s on gitlab: report without workflow or event", rep.RunID)
	}
	ev := rep.Event
	if ev.Forge != "" && ev.Forge != Name {
		return ref, fmt.Errorf("reporting run %s on gitlab: event comes from %s", rep.RunID, ev.Forge)
	}
	if ev.Repo == "" {
		return ref, fmt.Errorf("reporting run %s on gitlab: event has no project", rep.RunID)
	}
	if rep.Phase == contract.PhaseFinal {
		ctx = ratelimit.Final(ctx)
	}

	var errs []error
	mode := rep.Workflow.Report.Comment
	if mode == "" {
		mode = workflows.CommentSticky
	}
	target := noteable{project: ev.Repo}
	switch {
	case ev.PullRequest != nil:
		target.mr, target.iid = true, int64(ev.PullRequest.Number)
	case ev.Issue != nil:
		target.iid = int64(ev.Issue.Number)
	}
	// Before the note, which shows what the review did.
	sum, err := forge.ReviewFirst(ctx, r, rep)
	if err != nil {
		errs = append(errs, err)
	}
	if mode != workflows.CommentNone && target.iid > 0 {
		id, err := r.note(ctx, target, mode, rep, sum)
		if id != 0 {
			ref.CommentID = id
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	sha := rep.HeadSHA
	if sha == "" {
		sha = ev.HeadSHA()
	}
	if rep.Workflow.Report.Status && sha != "" && (rep.Phase == contract.PhaseStart || rep.Phase == contract.PhaseFinal) {
		if err := r.status(ctx, ev.Repo, sha, rep); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("reporting run %s on gitlab: %w", rep.RunID, err)
		if d, ok := retryAfter(err); ok {
			// A limit longer than ctx allowed: whoever retries knows how long.
			return ref, &contract.RetryAfterError{After: d, Err: err}
		}
		return ref, err
	}
	return ref, nil
}

// retryAfter is the longest Retry-After of the rate-limited answers
// (403/429) in err; false when none said.
func retryAfter(err error) (time.Duration, bool) {
	var longest time.Duration
	var found bool
	var walk func(error)
	walk = func(err error) {
		switch x := err.(type) {
		case *gl.ErrorResponse:
			if r := x.Response; r != nil && (r.StatusCode == http.StatusTooManyRequests || r.StatusCode == http.StatusForbidden) {
				if d, ok := ratelimit.RetryAfter(r.Header, time.Now()); ok {
					longest, found = max(longest, d), true
				}
			}
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	return longest, found
}

// note writes the run's note (see sticky.Writer.Write) and returns its id.
func (r *Reporter) note(ctx context.Context, n noteable, mode string, rep *contract.RunReport, sum *review.Summary) (int64, error) {
	opts := render.Options{Limit: noteLimit, Links: links(""), RunURL: render.RunURL(r.cfg.RunURL, rep.RunID), Review: sum}
	body := render.Comment(rep, opts)
	// The note GitLab gets is inert(body), a backslash longer for each line
	// that could be a quick action: render it shorter until that fits.
	over := func() int { return utf8.RuneCountInString(inertMarkdown(body)) - noteLimit }
	for o := over(); o > 0 && opts.Limit > o; o = over() {
		opts.Limit -= o
		body = render.Comment(rep, opts)
	}
	return r.notes.Write(ctx, &thread{r: r, n: n}, rep, mode, body)
}

// thread is the notes of one merge request or issue, for sticky.Writer.
type thread struct {
	r *Reporter
	n noteable

	bot     int64 // the bot's user id, learned on the first List; 0 = any user
	learned bool
}

var _ sticky.Forge = (*thread)(nil)

func (t *thread) String() string { return t.n.String() }

func (t *thread) Edit(ctx context.Context, id int64, body string) error {
	n := t.n
	var err error
	if n.mr {
		_, _, err = t.r.api.Notes.UpdateMergeRequestNote(n.project, n.iid, id, &gl.UpdateMergeRequestNoteOptions{Body: inert(body)}, gl.WithContext(ctx))
	} else {
		_, _, err = t.r.api.Notes.UpdateIssueNote(n.project, n.iid, id, &gl.UpdateIssueNoteOptions{Body: inert(body)}, gl.WithContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("editing note %d on %s: %w", id, n, err)
	}
	return nil
}

func (t *thread) IsNotFound(err error) bool { return errors.Is(err, gl.ErrNotFound) }

func (t *thread) Create(ctx context.Context, body string) (int64, error) {
	n := t.n
	var nt *gl.Note
	var err error
	if n.mr {
		nt, _, err = t.r.api.Notes.CreateMergeRequestNote(n.project, n.iid, &gl.CreateMergeRequestNoteOptions{Body: inert(body)}, gl.WithContext(ctx))
	} else {
		nt, _, err = t.r.api.Notes.CreateIssueNote(n.project, n.iid, &gl.CreateIssueNoteOptions{Body: inert(body)}, gl.WithContext(ctx))
	}
	if err != nil {
		return 0, fmt.Errorf("creating note on %s: %w", n, err)
	}
	return nt.ID, nil
}

// List returns one page of the notes, oldest first; ours are the bot's user
// notes (any user's when the bot cannot be learned), never system notes.
func (t *thread) List(ctx context.Context, page int) ([]sticky.Comment, int, error) {
	if !t.learned {
		t.bot, t.learned = t.r.bot(ctx), true
	}
	n := t.n
	list := gl.ListOptions{PerPage: 100, Page: int64(max(page, 1))}
	order, sort := gl.Ptr("created_at"), gl.Ptr("asc")
	var notes []*gl.Note
	var resp *gl.Response
	var err error
	if n.mr {
		notes, resp, err = t.r.api.Notes.ListMergeRequestNotes(n.project, n.iid, &gl.ListMergeRequestNotesOptions{ListOptions: list, OrderBy: order, Sort: sort}, gl.WithContext(ctx))
	} else {
		notes, resp, err = t.r.api.Notes.ListIssueNotes(n.project, n.iid, &gl.ListIssueNotesOptions{ListOptions: list, OrderBy: order, Sort: sort}, gl.WithContext(ctx))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listing notes of %s: %w", n, err)
	}
	out := make([]sticky.Comment, len(notes))
	for i, nt := range notes {
		out[i] = sticky.Comment{ID: nt.ID, Body: nt.Body, Ours: !nt.System && (t.bot == 0 || nt.Author.ID == t.bot)}
	}
	return out, int(resp.NextPage), nil
}

// bot is the id of the user the token belongs to, learned once; 0 when it
// cannot be learned.
func (r *Reporter) bot(ctx context.Context) int64 {
	r.mu.Lock()
	id := r.botID
	r.mu.Unlock()
	if id != 0 {
		return id
	}
	u, _, err := r.api.Users.CurrentUser(gl.WithContext(ctx))
	if err != nil {
		r.log.Warn("gitlab: cannot learn the bot user, matching notes by marker only", "err", err)
		return 0
	}
	r.mu.Lock()
	r.botID = u.ID
	r.mu.Unlock()
	return u.ID
}

func (r *Reporter) status(ctx context.Context, project, sha string, rep *contract.RunReport) error {
	opt := &gl.SetCommitStatusOptions{
		State:       statusState(rep),
		Name:        gl.Ptr("hookrun/" + rep.Workflow.Name),
		Description: gl.Ptr(render.Description(rep, statusDescriptionLimit)),
	}
	if u := render.RunURL(r.cfg.RunURL, rep.RunID); u != "" {
		opt.TargetURL = gl.Ptr(u)
	}
	_, _, err := r.api.Commits.SetCommitStatus(project, sha, opt, gl.WithContext(ctx))
	if err != nil && alreadyInState(err) {
		// GitLab refuses a transition to the state the status is already in
		// (a redelivered start, a repeated final): nothing to change.
		r.log.Info("gitlab commit status already set", "run", rep.RunID, "state", opt.State)
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting status %s on %s: %w", opt.State, sha, err)
	}
	return nil
}

// alreadyInState recognizes GitLab's 400 "Cannot transition status via
// :enqueue from :pending".
func alreadyInState(err error) bool {
	var er *gl.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusBadRequest &&
		strings.Contains(er.Message, "Cannot transition status")
}

// statusState maps a run to a GitLab commit status state.
func statusState(rep *contract.RunReport) gl.BuildStateValue {
	if rep.Phase != contract.PhaseFinal {
		return gl.Pending
	}
	switch {
	case rep.Status.Passed():
		return gl.Success
	case rep.Status == workflows.StatusCancelled:
		return gl.Canceled
	default:
		return gl.Failed
	}
}

var _ contract.Reporter = (*Reporter)(nil)
