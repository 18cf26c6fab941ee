package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Runs is what the UI reads run records through (stores.RunStore).
type Runs interface {
	ingress.RunLister
}

// Logs is what the UI reads a finished run's output through
// (stores.LogStore); live output comes from Deps.Stream.
type Logs interface {
	Read(ctx context.Context, runID string) ([]stores.LogLine, error)
}

// Canceller asks a run to stop: the same one as POST
// /api/v1/runs/:id/cancel.
type Canceller interface {
	Cancel(ctx context.Context, runID string) error
}

// Rerunner starts a new run of the same workflow and event as run id,
// linked to it, and returns the new run's id.
type Rerunner interface {
	Rerun(ctx context.Context, id string) (newID string, err error)
}

// Deps are what the pages read and act through.
type Deps struct {
	Runs   Runs
	Logs   Logs
	Stream *ingress.LogStream // the live log, shared with the API
	Cancel Canceller
	Rerun  Rerunner // nil: no re-run button
	// Deliveries lists, shows and replays the stored deliveries
	// (deliveries.go); nil: no deliveries pages.
	Deliveries Deliveries
	// Sessions is where logins live (stores.SessionStore); required.
	Sessions SessionStore
	// Links is how each forge lays out its pages (forge.Registry's Links,
	// with each forge's web origin), for the links to a run's forge; nil:
	// links only from the URLs events carry.
	Links func(workflows.Forge) forge.Links
	// Workflows are the loaded workflows, for the shape of a run's graph
	// (each step's depends, the handlers); nil: the graph draws the run's
	// steps without edges.
	Workflows WorkflowSource
	Logger    *slog.Logger
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Register mounts the UI's routes (see the package doc) on srv, and POST
// /api/v1/sessions/revoke on its API, which must be registered first
// (ingress.Server.RegisterAPI with the same token). A config without a
// token registers nothing: the UI needs the API token to log in.
func Register(srv *ingress.Server, cfg Config, d Deps) error {
	if cfg.Token == "" {
		return nil
	}
	u, err := newUI(cfg, d)
	if err != nil {
		return err
	}
	u.guard = srv.Guard()
	if err := srv.APIRoute(http.MethodPost, "/sessions/revoke", u.revokeAll); err != nil {
		return fmt.Errorf("registering ui: %w", err)
	}
	u.mount(srv.Route)
	return nil
}

// ui serves the pages.
type ui struct {
	cfg   Config
	d     Deps
	sess  *sessions
	guard *ingress.AuthGuard // the server's limit on wrong tokens, shared with the API
	pages map[string]*template.Template
}

// links are forge name's Links.
func (u *ui) links(name workflows.Forge) forge.Links {
	if u.d.Links == nil {
		return forge.Links{}
	}
	return u.d.Links(name)
}

func newUI(cfg Config, d Deps) (*ui, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating ui config: %w", err)
	}
	if d.Runs == nil || d.Logs == nil || d.Stream == nil || d.Cancel == nil || d.Sessions == nil {
		return nil, errors.New("creating ui: runs, logs, stream, canceller and sessions are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	u := &ui{cfg: cfg, d: d, sess: newSessions(cfg.Token, cfg.SessionTTL, cfg.Now, d.Sessions)}
	pages, err := parsePages(u.duration)
	if err != nil {
		return nil, err
	}
	u.pages = pages
	return u, nil
}

// parsePages parses each page with the layout and the blocks it may use.
func parsePages(duration func(start, end *time.Time) string) (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"duration":     duration,
		"clock":        clock,
		"short":        short,
		"terminal":     func(s workflows.Status) bool { return s.Terminal() },
		"statusCSS":    statusCSS,
		"add":          func(a, b int) int { return a + b },
		"outcomeCSS":   outcomeCSS,
		"deliveryPath": deliveryPath,
	}
	pages := map[string]*template.Template{}
	for _, p := range []string{"login", "runs", "run", "error", "deliveries", "delivery"} {
		t, err := template.New(p).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/summary.html",
			"templates/graph.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing ui template %s: %w", p, err)
		}
		pages[p] = t
	}
	return pages, nil
}

type router func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc)

func (u *ui) mount(route router) {
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServer(http.FS(static)))
	route(http.MethodGet, "/static/*", echo.WrapHandler(files), u.headers)
	route(http.MethodGet, "/login", u.loginForm, u.headers)
	route(http.MethodPost, "/login", u.login, u.headers)
	route(http.MethodPost, "/logout", u.logout, u.headers, u.auth, u.csrf)
	route(http.MethodGet, "/", u.runs, u.headers, u.auth)
	route(http.MethodGet, "/runs/:id", u.run, u.headers, u.auth)
	route(http.MethodGet, "/runs/:id/summary", u.summary, u.headers, u.auth)
	route(http.MethodGet, "/runs/:id/logs/stream", u.stream, u.headers, u.auth)
	route(http.MethodPost, "/runs/:id/cancel", u.cancel, u.headers, u.auth, u.csrf)
	route(http.MethodPost, "/runs/:id/rerun", u.rerun, u.headers, u.auth, u.csrf)
	if u.d.Deliveries != nil {
		route(http.MethodGet, "/deliveries", u.deliveries, u.headers, u.auth)
		route(http.MethodGet, "/deliveries/:forge/:id", u.delivery, u.headers, u.auth)
		route(http.MethodPost, "/deliveries/:forge/:id/replay", u.replay, u.headers, u.auth, u.csrf)
	}
}

// csp allows this server's own script and style only, and no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (u *ui) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(c.Path(), "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

// sessionKey is where auth leaves the session id in the echo context.
const sessionKey = "ui.session"

// auth lets requests with a valid session cookie through; others are sent
// to /login (with the page they asked for as next, a path, never a
// token) or, for the stream and the summary that scripts fetch, answered
// 401.
func (u *ui) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ck, err := c.Cookie(cookieName); err == nil {
			id, ok, err := u.sess.check(c.Request().Context(), ck.Value)
			if err != nil {
				u.d.Logger.Warn("ui: checking a session", "err", err)
				return c.String(http.StatusServiceUnavailable, "The queue is unavailable; try again in a moment.")
			}
			if ok {
				c.Set(sessionKey, id)
				return next(c)
			}
		}
		r := c.Request()
		if r.Method != http.MethodGet || strings.HasSuffix(c.Path(), "/stream") || strings.HasSuffix(c.Path(), "/summary") {
			return c.String(http.StatusUnauthorized, "login required")
		}
		return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
	}
}

// csrf checks the form token of a POST against the session.
func (u *ui) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, _ := c.Get(sessionKey).(string)
		c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxFormBody)
		if !u.sess.csrfOK(id, c.FormValue("csrf")) {
			return u.fail(c, http.StatusForbidden, "The form expired or did not come from this page. Go back, reload and try again.")
		}
		return next(c)
	}
}

// maxFormBody caps the body of the UI's form posts.
const maxFormBody = 64 << 10

// page is what every page's layout reads.
type page struct {
	Title    string
	CSRF     string // "" when logged out
	LoggedIn bool
	// Deliveries: the deliveries pages exist (Deps.Deliveries).
	Deliveries bool
}

func (u *ui) base(c echo.Context, title string) page {
	id, ok := c.Get(sessionKey).(string)
	p := page{Title: title, LoggedIn: ok, Deliveries: u.d.Deliveries != nil}
	if ok {
		p.CSRF = u.sess.csrf(id)
	}
	return p
}

func (u *ui) render(c echo.Context, code int, name, tmpl string, data any) error {
	var b bytes.Buffer
	if err := u.pages[name].ExecuteTemplate(&b, tmpl, data); err != nil {
		u.d.Logger.Error("rendering ui page", "page", name, "err", err)
		return c.String(http.StatusInternalServerError, "internal error")
	}
	return c.HTMLBlob(code, b.Bytes())
}

type errorPage struct {
	page
	Message string
}

func (u *ui) fail(c echo.Context, code int, msg string) error {
	return u.render(c, code, "error", "layout", errorPage{u.base(c, http.StatusText(code)), msg})
}

// runFailure answers an error reading run id.
func (u *ui) runFailure(c echo.Context, id string, err error) error {
	if errors.Is(err, stores.ErrNotFound) {
		return u.fail(c, http.StatusNotFound, "There is no run "+id+".")
	}
	u.d.Logger.Warn("ui: reading run", "run", id, "err", err)
	return u.fail(c, http.StatusServiceUnavailable, "The queue is unavailable; try again in a moment.")
}

// --- login ---

type loginPage struct {
	page
	Next  string
	Error string
}

func (u *ui) loginForm(c echo.Context) error {
	return u.render(c, http.StatusOK, "login", "layout", loginPage{page: page{Title: "Log in"}, Next: localPath(c.QueryParam("next"))})
}

// login checks the token through the server's AuthGuard (the API's limit
// on wrong tokens per client address): past it, 429 with Retry-After.
func (u *ui) login(c echo.Context) error {
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxFormBody)
	next := localPath(c.FormValue("next"))
	token := c.FormValue("token")
	ok, wait := u.guard.Check(c, func() bool { return u.sess.tokenOK(token) })
	if wait > 0 {
		ingress.SetRetryAfter(c, wait)
		return u.render(c, http.StatusTooManyRequests, "login", "layout", loginPage{page: page{Title: "Log in"}, Next: next,
			Error: fmt.Sprintf("Too many wrong tokens from this address: try again in %s.", wait.Round(time.Second))})
	}
	if !ok {
		u.d.Logger.Info("ui: login refused", "remote", c.RealIP())
		return u.render(c, http.StatusUnauthorized, "login", "layout",
			loginPage{page: page{Title: "Log in"}, Next: next, Error: "That is not the API token."})
	}
	v, exp, err := u.sess.issue(c.Request().Context())
	if err != nil {
		u.d.Logger.Warn("ui: storing a session", "err", err)
		return u.render(c, http.StatusServiceUnavailable, "login", "layout",
			loginPage{page: page{Title: "Log in"}, Next: next, Error: "The queue is unavailable; try again in a moment."})
	}
	u.d.Logger.Info("ui: logged in", "remote", c.RealIP())
	c.SetCookie(cookie(v, exp, c.Scheme() == "https"))
	return c.Redirect(http.StatusSeeOther, next)
}

// logout deletes the session from the store, so that its cookie, wherever
// a copy of it is, no longer opens a page; then clears the cookie.
func (u *ui) logout(c echo.Context) error {
	id, _ := c.Get(sessionKey).(string)
	if err := u.sess.store.Delete(c.Request().Context(), id); err != nil {
		u.d.Logger.Warn("ui: deleting a session", "err", err)
		return u.fail(c, http.StatusServiceUnavailable, "The session could not be ended: the queue is unavailable. Try again in a moment.")
	}
	c.SetCookie(cookie("", time.Time{}, c.Scheme() == "https"))
	return c.Redirect(http.StatusSeeOther, "/login")
}

// revokeAll answers POST /api/v1/sessions/revoke (behind the API token):
// every session ends, the token stays.
func (u *ui) revokeAll(c echo.Context) error {
	n, err := u.sess.store.DeleteAll(c.Request().Context())
	if err != nil {
		u.d.Logger.Error("ui: revoking every session", "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "revoking sessions: queue unavailable"})
	}
	u.d.Logger.Info("ui: every session revoked", "sessions", n, "remote", c.RealIP())
	return c.JSON(http.StatusOK, map[string]int{"revoked": n})
}

// localPath is next when a browser resolves it to a path on this server,
// else "/": the login never redirects elsewhere. As browsers do, it first
// removes TAB, CR and LF anywhere; then it wants one leading "/" not
// followed by "/" or "\" (either makes "//host", another origin), no "\"
// at all (browsers read it as "/"), and no scheme or host. A leading
// space or control character is refused, not trimmed: browsers trim it,
// and what follows could be "//host".
func localPath(next string) string {
	next = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, next)
	if len(next) == 0 || next[0] != '/' || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	if p, err := url.Parse(next); err != nil || p.Scheme != "" || p.Host != "" || p.Opaque != "" {
		return "/"
	}
	return next
}

// --- runs list ---

// filter is what the runs list shows: ListFilter's fields and the PR
// number, a page of Limit runs older than Cursor (a run id).
type filter struct {
	Workflow, Repo string
	Status         workflows.Status
	PR             int
	Cursor         string
	Limit          int
}

// listRuns is the one place the UI lists runs: a page of runs matching f,
// newest first, and the cursor of the next page ("" on the last), from the
// run index (stores.RunStore.List) as GET /api/v1/runs pages them.
func listRuns(ctx context.Context, runs Runs, f filter) ([]*stores.RunRecord, string, error) {
	recs, next, err := runs.List(ctx, stores.ListFilter{Repo: f.Repo, Workflow: f.Workflow, Status: f.Status, PR: f.PR, Cursor: f.Cursor, Limit: f.Limit})
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", err)
	}
	return recs, next, nil
}

type runsPage struct {
	page
	Filter   filter
	PR       string // as typed
	Statuses []workflows.Status
	Runs     []runRow
	Next     string // URL of the next page, "" on the last
	Error    string
}

type runRow struct {
	*stores.RunRecord
	Links links
}

// statuses are the run states the filter offers.
var statuses = []workflows.Status{workflows.StatusQueued, workflows.StatusRunning, workflows.StatusSucceeded,
	workflows.StatusPartiallySucceeded, workflows.StatusFailed, workflows.StatusSkipped, workflows.StatusCancelled}

func (u *ui) runs(c echo.Context) error {
	f := filter{Workflow: strings.TrimSpace(c.QueryParam("workflow")), Repo: strings.TrimSpace(c.QueryParam("repo")),
		Status: workflows.Status(c.QueryParam("status")), Cursor: c.QueryParam("cursor"), Limit: u.cfg.PageSize}
	p := runsPage{page: u.base(c, "Runs"), Statuses: statuses, PR: strings.TrimSpace(c.QueryParam("pr"))}
	code := http.StatusOK
	if p.PR != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p.PR, "#"))
		if err != nil || n < 1 {
			p.Error, code = "The PR filter takes a number.", http.StatusBadRequest
		}
		f.PR = n
	}
	p.Filter = f
	if p.Error == "" {
		recs, next, err := listRuns(c.Request().Context(), u.d.Runs, f)
		if err != nil {
			u.d.Logger.Warn("ui: listing runs", "err", err)
			p.Error, code = "The queue is unavailable; try again in a moment.", http.StatusServiceUnavailable
		}
		for _, r := range recs {
			p.Runs = append(p.Runs, runRow{r, linksFor(r, u.links(r.Event.Forge))})
		}
		p.Next = nextPage(c, "/", next)
	}
	return u.render(c, code, "runs", "layout", p)
}

// --- one run ---

type runPage struct {
	page
	Run      *stores.RunRecord
	Links    links
	Steps    []stepRow
	Graph    *runGraph        // nil: no steps to draw
	Logs     []stores.LogLine // a finished run's output; a live one streams
	Live     bool
	CanRerun bool
}

type stepRow struct {
	workflows.StepState
	Duration string
}

func (u *ui) runData(c echo.Context) (*runPage, error) {
	id := c.Param("id")
	rec, _, err := u.d.Runs.Get(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	p := &runPage{page: u.base(c, "Run "+rec.ID), Run: rec, Links: linksFor(rec, u.links(rec.Event.Forge)),
		Live: !rec.Status.Terminal(), CanRerun: u.d.Rerun != nil && rec.Status.Terminal()}
	for _, s := range rec.Steps {
		p.Steps = append(p.Steps, stepRow{s, u.duration(s.StartedAt, s.FinishedAt)})
	}
	p.Graph = buildGraph(rec, u.workflow(rec.Workflow), u.duration)
	return p, nil
}

// workflow is the loaded workflow called name; nil when none is.
func (u *ui) workflow(name string) *workflows.Workflow {
	if u.d.Workflows == nil {
		return nil
	}
	for _, w := range u.d.Workflows.Workflows() {
		if w.Name == name {
			return w
		}
	}
	return nil
}

func (u *ui) run(c echo.Context) error {
	p, err := u.runData(c)
	if err != nil {
		return u.runFailure(c, c.Param("id"), err)
	}
	if !p.Live {
		if p.Logs, err = u.d.Logs.Read(c.Request().Context(), p.Run.ID); err != nil {
			return u.runFailure(c, p.Run.ID, err)
		}
	}
	return u.render(c, http.StatusOK, "run", "layout", p)
}

// summary is the run page's status and steps block alone; the page's
// script fetches it while the run is live.
func (u *ui) summary(c echo.Context) error {
	p, err := u.runData(c)
	if err != nil {
		if errors.Is(err, stores.ErrNotFound) {
			return c.String(http.StatusNotFound, "no such run")
		}
		return c.String(http.StatusServiceUnavailable, "queue unavailable")
	}
	return u.render(c, http.StatusOK, "run", "summary", p)
}

func (u *ui) stream(c echo.Context) error {
	return u.d.Stream.Serve(c, c.Param("id"))
}

func (u *ui) cancel(c echo.Context) error {
	id := c.Param("id")
	if _, _, err := u.d.Runs.Get(c.Request().Context(), id); err != nil {
		return u.runFailure(c, id, err)
	}
	if err := u.d.Cancel.Cancel(c.Request().Context(), id); err != nil {
		if errors.Is(err, stores.ErrNotFound) {
			return u.runFailure(c, id, err)
		}
		u.d.Logger.Info("ui: cancel refused", "run", id, "err", err)
		return u.fail(c, http.StatusConflict, "The run could not be cancelled: "+err.Error())
	}
	u.d.Logger.Info("ui: cancel requested", "run", id)
	return c.Redirect(http.StatusSeeOther, "/runs/"+id)
}

func (u *ui) rerun(c echo.Context) error {
	id := c.Param("id")
	if u.d.Rerun == nil {
		return u.fail(c, http.StatusNotFound, "Re-running is not available on this server.")
	}
	if _, _, err := u.d.Runs.Get(c.Request().Context(), id); err != nil {
		return u.runFailure(c, id, err)
	}
	nid, err := u.d.Rerun.Rerun(c.Request().Context(), id)
	if err != nil {
		u.d.Logger.Info("ui: re-run refused", "run", id, "err", err)
		return u.fail(c, http.StatusConflict, "The run could not be re-run: "+err.Error())
	}
	u.d.Logger.Info("ui: re-run", "run", id, "new", nid)
	return c.Redirect(http.StatusSeeOther, "/runs/"+url.PathEscape(nid))
}

// --- template helpers ---

// duration is how long from start to end (to now while end is nil); ""
// before start.
func (u *ui) duration(start, end *time.Time) string {
	if start == nil {
		return ""
	}
	e := u.cfg.Now()
	if end != nil {
		e = *end
	}
	d := e.Sub(*start)
	switch {
	case d < 0:
		return "0s"
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// clock is t in UTC to the second; "" for nil or zero.
func clock(t any) string {
	var v time.Time
	switch x := t.(type) {
	case time.Time:
		v = x
	case *time.Time:
		if x != nil {
			v = *x
		}
	}
	if v.IsZero() {
		return ""
	}
	return v.UTC().Format("2006-01-02 15:04:05Z")
}

// short is a commit SHA's first 8 characters.
func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// statusCSS is the CSS class of a state: its tone.
func statusCSS(s workflows.Status) string { return s.Present().Tone }
