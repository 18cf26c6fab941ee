package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/dialect"
	"github.com/hookrun/hookrun/providers/internal/ratelimit"
	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/providers/internal/sticky"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// statusDescriptionLimit is the longest description the statuses API takes.
const statusDescriptionLimit = 140

// commentLimit is the size limit of an issue or pull request comment, in
// characters.
const commentLimit = 65536

// Reporter shows runs on GitHub: a comment per workflow on the pull request
// or issue, a commit status hookrun/<workflow> on the head SHA, and an
// "eyes" reaction on the comment that triggered a command. It is safe for
// concurrent use by many runs.
type Reporter struct {
	cfg  Config
	log  *slog.Logger
	base *url.URL

	token *gh.Client // token auth; nil for an App
	app   *gh.Client // App auth (JWT) for the app's own endpoints; nil for a token
	rl    http.RoundTripper

	mu       sync.Mutex
	installs map[int64]*gh.Client         // App: one client per installation
	tokens   map[int64]*installationToken // App: the cached token of each installation (API and git)
	repoApps map[string]int64             // App: installation of a repository, for events without one
	login    string                       // discovered bot login

	comments sticky.Writer // each run's comment, found or created once
}

// New checks cfg and returns a Reporter. No request is made yet.
func New(cfg Config) (*Reporter, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, _ := url.Parse(cfg.APIURL)
	rl := &ratelimit.Transport{Base: cfg.Transport, MaxWait: cfg.MaxWait, Backoff: cfg.Backoff, Logger: cfg.Logger}
	rl.SetDefaults()
	r := &Reporter{cfg: cfg, log: cfg.Logger, base: base,
		installs: map[int64]*gh.Client{}, tokens: map[int64]*installationToken{}, repoApps: map[string]int64{}, login: cfg.BotLogin,
		comments: sticky.Writer{Log: cfg.Logger, Forge: string(cfg.Forge), Noun: "comment"}}
	switch {
	case cfg.Dialect != nil && cfg.Dialect.TokenScheme != "":
		r.token = r.newClient(&schemeAuth{base: rl, value: cfg.Dialect.TokenScheme + " " + cfg.Token})
		return r, nil
	case cfg.Token != "":
		r.token = r.newClient(rl).WithAuthToken(cfg.Token)
		return r, nil
	}
	apps, err := newAppJWT(rl, cfg.AppID, cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("loading github app private key: %w", err)
	}
	r.app = r.newClient(apps)
	r.rl = rl
	return r, nil
}

// dialect is how this reporter's forge differs from GitHub (the zero
// Dialect for GitHub).
func (r *Reporter) dialect() dialect.Dialect {
	if r.cfg.Dialect == nil {
		return dialect.Dialect{}
	}
	return *r.cfg.Dialect
}

// takes reports whether ev is an event of this reporter's forge.
func (r *Reporter) takes(ev *workflows.Event) bool {
	return ev.Forge == r.cfg.Forge || ev.Forge == "" && r.cfg.Forge == Name
}

// schemeAuth sets the Authorization header of every request to value.
type schemeAuth struct {
	base  http.RoundTripper
	value string
}

func (a *schemeAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", a.value)
	return a.base.RoundTrip(r)
}

func (r *Reporter) newClient(tr http.RoundTripper) *gh.Client {
	c := gh.NewClient(&http.Client{Transport: tr})
	c.BaseURL = r.base
	c.UploadURL = r.base
	return c
}

// client returns the API client for an event: the token client, or the
// installation's client for an App (its token is fetched on first use and
// refreshed a minute before it expires).
func (r *Reporter) client(installation int64) (*gh.Client, error) {
	if r.token != nil {
		return r.token, nil
	}
	if installation == 0 {
		return nil, errors.New("authenticating as github app: event has no installation id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.installs[installation]; ok {
		return c, nil
	}
	c := r.newClient(r.tokenLocked(installation))
	r.installs[installation] = c
	return c, nil
}

// clientOf is client for an event of repo: with an App and an event that
// carries no installation id (a schedule's tick, an operator's run), the
// installation the App has on repo (repoInstallation, asked once).
func (r *Reporter) clientOf(ctx context.Context, installation int64, repo string) (*gh.Client, error) {
	if r.token == nil && installation == 0 {
		id, err := r.repoInstallation(ctx, repo)
		if err != nil {
			return nil, err
		}
		installation = id
	}
	return r.client(installation)
}

// Report implements contract.Reporter. Comment, status and reaction are each
// attempted; their errors are joined. The returned ReportRef carries the
// comment id whenever one is known, also with an error.
func (r *Reporter) Report(ctx context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	ref := rep.Ref
	if rep.Workflow == nil || rep.Event == nil {
		return ref, fmt.Errorf("reporting run %s on %s: report without workflow or event", rep.RunID, r.cfg.Forge)
	}
	ev := rep.Event
	if !r.takes(ev) {
		return ref, fmt.Errorf("reporting run %s on %s: event comes from %s", rep.RunID, r.cfg.Forge, ev.Forge)
	}
	owner, repo, ok := strings.Cut(ev.Repo, "/")
	if !ok || owner == "" || repo == "" {
		return ref, fmt.Errorf("reporting run %s on %s: repository %q is not owner/name", rep.RunID, r.cfg.Forge, ev.Repo)
	}
	if rep.Phase == contract.PhaseFinal {
		ctx = ratelimit.Final(ctx)
	}
	c, err := r.client(ev.InstallationID)
	if err != nil {
		return ref, fmt.Errorf("reporting run %s on %s: %w", rep.RunID, r.cfg.Forge, err)
	}

	var errs []error
	// Before the comment, which shows what the review did.
	sum, err := forge.ReviewFirst(ctx, r, rep)
	if err != nil {
		errs = append(errs, err)
	}
	if mode := commentMode(rep.Workflow); mode != workflows.CommentNone && ev.Number() > 0 {
		id, err := r.comment(ctx, c, owner, repo, mode, rep, sum)
		if id != 0 {
			ref.CommentID = id
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if sha := headSHA(rep); rep.Workflow.Report.Status && sha != "" &&
		(rep.Phase == contract.PhaseStart || rep.Phase == contract.PhaseFinal) {
		if r.checks() {
			// With an App: a check run instead of a status (checks.go).
			if err := r.checkRun(ctx, c, owner, repo, sha, rep, sum); err != nil {
				errs = append(errs, err)
			}
		} else if err := r.status(ctx, c, owner, repo, sha, rep); err != nil {
			errs = append(errs, err)
		}
	}
	if rep.Phase == contract.PhaseStart && ev.Kind == workflows.KindComment && ev.Comment != nil && ev.Comment.ID != 0 {
		if err := r.call(ctx, func() error {
			_, _, err := c.Reactions.CreateIssueCommentReaction(ctx, owner, repo, ev.Comment.ID, "eyes")
			return err
		}); err != nil {
			errs = append(errs, fmt.Errorf("reacting to comment %d: %w", ev.Comment.ID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ref, fmt.Errorf("reporting run %s on %s: %w", rep.RunID, r.cfg.Forge, err)
	}
	return ref, nil
}

func commentMode(w *workflows.Workflow) string {
	if w.Report.Comment == "" {
		return workflows.CommentSticky
	}
	return w.Report.Comment
}

func headSHA(rep *contract.RunReport) string {
	if rep.HeadSHA != "" {
		return rep.HeadSHA
	}
	return rep.Event.HeadSHA()
}

// comment writes the run's comment (see sticky.Writer.Write) and returns its
// id.
func (r *Reporter) comment(ctx context.Context, c *gh.Client, owner, repo, mode string, rep *contract.RunReport, sum *review.Summary) (int64, error) {
	body := render.Comment(rep, render.Options{Limit: commentLimit, RunURL: render.RunURL(r.cfg.RunURL, rep.RunID), Review: sum})
	return r.comments.Write(ctx, &thread{r: r, c: c, owner: owner, repo: repo, number: rep.Event.Number()}, rep, mode, body)
}

// thread is the comments of one issue or pull request, for sticky.Writer.
type thread struct {
	r           *Reporter
	c           *gh.Client
	owner, repo string
	number      int

	login   string // the bot's login, learned on the first List; "" = any author
	learned bool
}

var _ sticky.Forge = (*thread)(nil)

func (t *thread) String() string { return fmt.Sprintf("%s/%s#%d", t.owner, t.repo, t.number) }

func (t *thread) Edit(ctx context.Context, id int64, body string) error {
	if err := t.r.call(ctx, func() error {
		_, _, err := t.c.Issues.EditComment(ctx, t.owner, t.repo, id, &gh.IssueComment{Body: gh.String(body)})
		return err
	}); err != nil {
		return fmt.Errorf("editing comment %d: %w", id, err)
	}
	return nil
}

func (t *thread) IsNotFound(err error) bool { return isStatus(err, http.StatusNotFound) }

func (t *thread) Create(ctx context.Context, body string) (int64, error) {
	var cm *gh.IssueComment
	if err := t.r.call(ctx, func() (err error) {
		cm, _, err = t.c.Issues.CreateComment(ctx, t.owner, t.repo, t.number, &gh.IssueComment{Body: gh.String(body)})
		return err
	}); err != nil {
		return 0, fmt.Errorf("creating comment on %s: %w", t, err)
	}
	return cm.GetID(), nil
}

// List returns one page of the comments; ours are the bot's (any author's
// when the bot's login cannot be learned).
func (t *thread) List(ctx context.Context, page int) ([]sticky.Comment, int, error) {
	if !t.learned {
		t.login, t.learned = t.r.botLogin(ctx), true
	}
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100, Page: page}}
	list, resp, err := callPage(ctx, t.r, func() ([]*gh.IssueComment, *gh.Response, error) {
		return t.c.Issues.ListComments(ctx, t.owner, t.repo, t.number, opts)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("listing comments of %s: %w", t, err)
	}
	out := make([]sticky.Comment, len(list))
	for i, cm := range list {
		out[i] = sticky.Comment{ID: cm.GetID(), Body: cm.GetBody(),
			Ours: t.login == "" || strings.EqualFold(cm.GetUser().GetLogin(), t.login)}
	}
	return out, resp.NextPage, nil
}

// botLogin is the login our comments are written by: configured, or learned
// once from GET /user (token) or GET /app (App). "" when it cannot be learned.
func (r *Reporter) botLogin(ctx context.Context) string {
	r.mu.Lock()
	login := r.login
	r.mu.Unlock()
	if login != "" {
		return login
	}
	if r.token != nil {
		u, _, err := r.token.Users.Get(ctx, "")
		if err != nil {
			r.log.Warn(string(r.cfg.Forge)+": cannot learn the bot login, matching comments by marker only", "err", err)
			return ""
		}
		login = u.GetLogin()
	} else {
		app, _, err := r.app.Apps.Get(ctx, "")
		if err != nil {
			r.log.Warn("github: cannot learn the app slug, matching comments by marker only", "err", err)
			return ""
		}
		login = app.GetSlug() + "[bot]"
	}
	r.mu.Lock()
	r.login = login
	r.mu.Unlock()
	return login
}

func (r *Reporter) status(ctx context.Context, c *gh.Client, owner, repo, sha string, rep *contract.RunReport) error {
	st := &gh.RepoStatus{
		State:       gh.String(statusState(rep)),
		Context:     gh.String("hookrun/" + rep.Workflow.Name),
		Description: gh.String(render.Description(rep, statusDescriptionLimit)),
	}
	if u := render.RunURL(r.cfg.RunURL, rep.RunID); u != "" {
		st.TargetURL = gh.String(u)
	}
	if err := r.call(ctx, func() error {
		_, _, err := c.Repositories.CreateStatus(ctx, owner, repo, sha, st)
		return err
	}); err != nil {
		return fmt.Errorf("setting status %s on %s: %w", st.GetState(), sha, err)
	}
	return nil
}

// statusState maps a run to a GitHub commit status state.
func statusState(rep *contract.RunReport) string {
	if rep.Phase != contract.PhaseFinal {
		return "pending"
	}
	switch {
	case rep.Status.Passed():
		return "success"
	case rep.Status == workflows.StatusCancelled:
		return "error"
	default:
		return "failure"
	}
}

// callPage is call for one page of a list endpoint.
func callPage[T any](ctx context.Context, r *Reporter, list func() ([]T, *gh.Response, error)) (page []T, resp *gh.Response, err error) {
	err = r.call(ctx, func() (err error) {
		page, resp, err = list()
		return err
	})
	return page, resp, err
}

// call runs one API call. The rate-limit transport has already waited out
// every limit GitHub answered with, but go-github remembers a limit it saw
// (the answer of a report that gave up waiting, or a response with
// x-ratelimit-remaining 0) and then refuses calls without sending them until
// the reset. The final report waits those out too when ctx lasts long
// enough; else (as other reports at once) it returns the error, a
// contract.RetryAfterError when GitHub said how long to wait.
func (r *Reporter) call(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !ratelimit.IsFinal(ctx) || ctx.Err() != nil {
			return err
		}
		var abuse *gh.AbuseRateLimitError
		var primary *gh.RateLimitError
		var wait time.Duration
		told := true // GitHub said how long (else: our backoff)
		switch {
		case errors.As(err, &abuse) && abuse.RetryAfter != nil:
			wait = *abuse.RetryAfter
		case errors.As(err, &abuse):
			wait, told = r.cfg.Backoff, false
		case errors.As(err, &primary):
			wait = time.Until(primary.Rate.Reset.Time)
		default:
			return err
		}
		wait = max(wait, 0) + 50*time.Millisecond
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// The wait cannot end in time: say so now rather than at the
			// deadline.
			err = fmt.Errorf("rate limited for %s, longer than the report may wait: %w", wait.Round(time.Millisecond), err)
			if told {
				return &contract.RetryAfterError{After: wait, Err: err}
			}
			return err
		}
		r.log.Warn("github: rate limited, waiting to deliver the final report", "wait", wait)
		start := time.Now()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			err := fmt.Errorf("waiting for the rate limit to reset: %w", ctx.Err())
			if told {
				// Whoever retries the report knows how long is left.
				return &contract.RetryAfterError{After: max(wait-time.Since(start), time.Second), Err: err}
			}
			return err
		case <-t.C:
		}
	}
}

func isStatus(err error, code int) bool {
	var er *gh.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

var _ contract.Reporter = (*Reporter)(nil)
