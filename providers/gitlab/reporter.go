package gitlab

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/providers/internal/ratelimit"
	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// statusDescriptionLimit is the longest commit status description we send.
const statusDescriptionLimit = 255

// Reporter shows runs on GitLab: a note per workflow on the merge request or
// issue, and a commit status hookrun/<workflow> on the head SHA. It is safe
// for concurrent use by many runs.
type Reporter struct {
	cfg Config
	log *slog.Logger
	api *gl.Client

	mu       sync.Mutex
	botID    int64            // discovered or configured bot user id
	comments map[string]int64 // run id + workflow → note id, until the final report

	locks [64]sync.Mutex // striped by project, noteable and workflow: one find-or-create at a time
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
	return &Reporter{cfg: cfg, log: cfg.Logger, api: api, botID: cfg.BotUserID, comments: map[string]int64{}}, nil
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
	if ev.Forge != "" && ev.Forge != workflows.GitLab {
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
	if mode != workflows.CommentNone && target.iid > 0 {
		id, err := r.note(ctx, target, mode, rep)
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
		return ref, fmt.Errorf("reporting run %s on gitlab: %w", rep.RunID, err)
	}
	return ref, nil
}

// note writes the run's note and returns its id: the one the run record or
// this process knows, else (sticky) the workflow's note found by its marker
// among the bot's notes, else (new, on a later attempt) the run's own note,
// else a new one.
func (r *Reporter) note(ctx context.Context, n noteable, mode string, rep *contract.RunReport) (int64, error) {
	body := render.Comment(rep, render.Options{Limit: render.GitLabNoteLimit, RunURL: render.RunURL(r.cfg.RunURL, rep.RunID)})
	key := rep.RunID + "\x00" + rep.Workflow.Name
	final := rep.Phase == contract.PhaseFinal
	defer func() {
		if final {
			r.mu.Lock()
			delete(r.comments, key)
			r.mu.Unlock()
		}
	}()

	id := rep.Ref.CommentID
	if id == 0 {
		r.mu.Lock()
		id = r.comments[key]
		r.mu.Unlock()
	}
	if id != 0 {
		err := r.edit(ctx, n, id, body)
		if err == nil || !errors.Is(err, gl.ErrNotFound) {
			return id, err
		}
		r.log.Warn("gitlab note gone, looking for it again", "run", rep.RunID, "note", id)
	}

	lock := &r.locks[stripe(n.String()+"/"+rep.Workflow.Name)]
	lock.Lock()
	defer lock.Unlock()

	var match func(*gl.Note) bool
	switch {
	case mode == workflows.CommentSticky:
		match = func(nt *gl.Note) bool { return render.HasMarker(nt.Body, rep.Workflow.Name) }
	case rep.Phase != contract.PhaseStart || rep.Attempt > 1:
		match = func(nt *gl.Note) bool {
			return render.HasMarker(nt.Body, rep.Workflow.Name) && render.HasRunMarker(nt.Body, rep.RunID)
		}
	}
	if match != nil {
		found, err := r.find(ctx, n, match)
		if err != nil {
			return 0, err
		}
		if found != 0 {
			r.remember(key, found, final)
			return found, r.edit(ctx, n, found, body)
		}
	}
	var nt *gl.Note
	var err error
	if n.mr {
		nt, _, err = r.api.Notes.CreateMergeRequestNote(n.project, n.iid, &gl.CreateMergeRequestNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	} else {
		nt, _, err = r.api.Notes.CreateIssueNote(n.project, n.iid, &gl.CreateIssueNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	}
	if err != nil {
		return 0, fmt.Errorf("creating note on %s: %w", n, err)
	}
	r.remember(key, nt.ID, final)
	return nt.ID, nil
}

func (r *Reporter) remember(key string, id int64, final bool) {
	if final {
		return
	}
	r.mu.Lock()
	r.comments[key] = id
	r.mu.Unlock()
}

func (r *Reporter) edit(ctx context.Context, n noteable, id int64, body string) error {
	var err error
	if n.mr {
		_, _, err = r.api.Notes.UpdateMergeRequestNote(n.project, n.iid, id, &gl.UpdateMergeRequestNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	} else {
		_, _, err = r.api.Notes.UpdateIssueNote(n.project, n.iid, id, &gl.UpdateIssueNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("editing note %d on %s: %w", id, n, err)
	}
	return nil
}

// find pages through the notes of a merge request or issue (oldest first)
// and returns the id of the first user note that matches and was written by
// the bot (by any user when the bot cannot be learned).
func (r *Reporter) find(ctx context.Context, n noteable, match func(*gl.Note) bool) (int64, error) {
	bot := r.bot(ctx)
	list := gl.ListOptions{PerPage: 100, Page: 1}
	order, sort := gl.Ptr("created_at"), gl.Ptr("asc")
	for pages := 0; pages < 100; pages++ {
		var notes []*gl.Note
		var resp *gl.Response
		var err error
		if n.mr {
			notes, resp, err = r.api.Notes.ListMergeRequestNotes(n.project, n.iid, &gl.ListMergeRequestNotesOptions{ListOptions: list, OrderBy: order, Sort: sort}, gl.WithContext(ctx))
		} else {
			notes, resp, err = r.api.Notes.ListIssueNotes(n.project, n.iid, &gl.ListIssueNotesOptions{ListOptions: list, OrderBy: order, Sort: sort}, gl.WithContext(ctx))
		}
		if err != nil {
			return 0, fmt.Errorf("listing notes of %s: %w", n, err)
		}
		for _, nt := range notes {
			if !nt.System && match(nt) && (bot == 0 || nt.Author.ID == bot) {
				return nt.ID, nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		list.Page = resp.NextPage
	}
	return 0, nil
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
	switch rep.Status {
	case workflows.StatusSucceeded, workflows.StatusSkipped:
		return gl.Success
	case workflows.StatusCancelled:
		return gl.Canceled
	default:
		return gl.Failed
	}
}

func stripe(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % 64)
}

var _ contract.Reporter = (*Reporter)(nil)
