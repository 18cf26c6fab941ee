package ingress

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// RunLister gets and lists run records (stores.RunStore): what the API,
// re-runs and the web UI all read them through.
type RunLister interface {
	Get(ctx context.Context, id string) (*stores.RunRecord, uint64, error)
	List(ctx context.Context, f stores.ListFilter) ([]*stores.RunRecord, string, error)
}

// RunReader is what the API reads run records through (stores.RunStore).
type RunReader interface {
	RunLister
	Watch(ctx context.Context, id string) (<-chan *stores.RunRecord, error)
}

// LogReader is what the API reads step output through (stores.LogStore).
type LogReader interface {
	Read(ctx context.Context, runID string) ([]stores.LogLine, error)
	Follow(ctx context.Context, runID string) (<-chan stores.LogLine, error)
}

// Canceller asks a run to stop (the runner in `serve`, the run store in
// `ingress`: the run's claimant sees the request in the record).
type Canceller interface {
	Cancel(ctx context.Context, runID string) error
}

// APIConfig protects /api/v1.
type APIConfig struct {
	// Token is the bearer token every /api/v1 request must carry. Empty
	// disables the API: its routes are not registered.
	Token string
	// FollowGrace is how long ?follow=1 keeps streaming after the run ended,
	// so that its last lines arrive. Default DefaultFollowGrace.
	FollowGrace time.Duration
}

// RegisterAPI adds the /api/v1 routes (DESIGN.md §6) to the server:
// GET /api/v1/runs (?workflow=&repo=&status=&pr=&limit=&cursor=: a page,
// newest first, and the cursor of the next), GET /api/v1/runs/:id,
// GET /api/v1/runs/:id/logs (text; ?follow=1 streams Server-Sent Events until
// the run ends), POST /api/v1/runs/:id/cancel, and POST
// /api/v1/workflows/:name/runs, which queues a run of a loaded workflow
// ({"params": {"NAME": "value"}}: values for its params, untrusted text that
// reaches steps only as environment variables); POST
// /api/v1/runs/:id/rerun (a new run of the same workflow, loaded now, on
// the same event, linked both ways and reusing the sticky comment) and
// POST /api/v1/deliveries/:id/replay (?forge=NAME, default Config.DefaultForge; a stored
// delivery matched again against the workflows loaded now, noted on it);
// GET /api/v1/deliveries and /api/v1/deliveries/:id (deliveries.go). The bearer
// token is an operator's: a re-run through the API is not subject to the
// workflow's `authorize` policy (the /retry comment is).
func (s *Server) RegisterAPI(cfg APIConfig, runs RunReader, logs LogReader, c Canceller) {
	if cfg.Token == "" {
		s.logger.Warn("api.token is empty: the /api/v1 routes are disabled")
		return
	}
	a := &api{cfg: cfg, srv: s, runs: runs, logs: logs, cancel: c, tokenSum: sha256.Sum256([]byte(cfg.Token)),
		stream: NewLogStream(runs, logs, cfg.FollowGrace)}
	g := s.echo.Group("/api/v1", a.auth)
	s.apiGroup = g
	g.GET("/runs", a.list)
	g.GET("/runs/:id", a.get)
	g.GET("/runs/:id/logs", a.logsHandler)
	g.POST("/runs/:id/cancel", a.cancelHandler)
	g.POST("/runs/:id/rerun", a.rerunHandler)
	g.GET("/deliveries", a.listDeliveries)
	g.GET("/deliveries/:id", a.getDelivery)
	g.POST("/deliveries/:id/replay", a.replayHandler)
	g.POST("/workflows/:name/runs", a.startRun)
}

type api struct {
	cfg      APIConfig
	srv      *Server // the workflows and the publisher
	runs     RunReader
	logs     LogReader
	cancel   Canceller
	tokenSum [32]byte
	stream   *LogStream
}

// auth checks the bearer token in constant time (digests, so that the
// token's length leaks nothing either), through the server's AuthGuard: an
// address past its failed checks is answered 429 with Retry-After.
func (a *api) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ok, wait := a.srv.guard.Check(c, func() bool {
			h := c.Request().Header.Get("Authorization")
			token, ok := strings.CutPrefix(h, "Bearer ")
			sum := sha256.Sum256([]byte(token))
			return ok && subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
		})
		switch {
		case wait > 0:
			SetRetryAfter(c, wait)
			return c.JSON(http.StatusTooManyRequests, map[string]string{"error": "too many wrong tokens from this address; retry later"})
		case !ok:
			a.srv.logger.Debug("API token refused", "remote", c.RealIP(), "path", c.Path())
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="hookrun"`)
			return c.JSON(http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		}
		return next(c)
	}
}

// APIRoute adds a route under /api/v1, behind the API's bearer token (and
// its limit on wrong ones): the web UI mounts POST
// /api/v1/sessions/revoke this way. It fails when the API is not
// registered (RegisterAPI without a token, or not yet called).
func (s *Server) APIRoute(method, path string, h echo.HandlerFunc) error {
	if s.apiGroup == nil {
		return fmt.Errorf("adding API route %s %s: the API is not registered", method, path)
	}
	s.apiGroup.Add(method, path, h)
	return nil
}

// List limits of GET /api/v1/runs.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// listParams are the query parameters GET /api/v1/runs accepts.
var listParams = map[string]bool{"workflow": true, "repo": true, "status": true, "pr": true, "limit": true, "cursor": true}

// listFilter reads the query of GET /api/v1/runs; an error is the 400's message.
func listFilter(c echo.Context) (stores.ListFilter, error) {
	q := c.QueryParams()
	for k := range q {
		if !listParams[k] {
			return stores.ListFilter{}, fmt.Errorf("unknown parameter %q (want workflow, repo, status, pr, limit, cursor)", k)
		}
	}
	f := stores.ListFilter{
		Repo:     q.Get("repo"),
		Workflow: q.Get("workflow"),
		Status:   workflows.Status(q.Get("status")),
		Cursor:   q.Get("cursor"),
		Limit:    defaultListLimit,
	}
	if f.Status != "" && !slices.Contains(runStatuses, f.Status) {
		return f, fmt.Errorf("status must be one of %s, got %q", statusNames(), f.Status)
	}
	if p := q.Get("pr"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return f, fmt.Errorf("pr must be a pull/merge request (or issue) number, got %q", p)
		}
		f.PR = n
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListLimit {
			return f, fmt.Errorf("limit must be between 1 and %d", maxListLimit)
		}
		f.Limit = n
	}
	return f, nil
}

// runStatuses are the statuses a run record can have (DESIGN.md §6).
var runStatuses = []workflows.Status{workflows.StatusQueued, workflows.StatusRunning, workflows.StatusSucceeded,
	workflows.StatusPartiallySucceeded, workflows.StatusFailed, workflows.StatusCancelled}

func statusNames() string {
	out := make([]string, len(runStatuses))
	for i, s := range runStatuses {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// list answers GET /api/v1/runs: {"runs": [...newest first...],
// "next_cursor": "..."} ("" when no more), from the run index.
func (a *api) list(c echo.Context) error {
	f, err := listFilter(c)
	if err != nil {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	recs, next, err := a.runs.List(c.Request().Context(), f)
	if errors.Is(err, stores.ErrBadCursor) {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "cursor is not one a previous page returned"})
	}
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "listing runs: queue unavailable"})
	}
	if recs == nil {
		recs = []*stores.RunRecord{}
	}
	return c.JSON(http.StatusOK, map[string]any{"runs": recs, "next_cursor": next})
}

func (a *api) get(c echo.Context) error {
	rec, _, err := a.runs.Get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return runError(c, err)
	}
	return c.JSON(http.StatusOK, rec)
}

func runError(c echo.Context, err error) error {
	if errors.Is(err, stores.ErrNotFound) {
		return c.JSON(http.StatusNotFound, map[string]string{"error": "no such run"})
	}
	return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "queue unavailable"})
}

func (a *api) cancelHandler(c echo.Context) error {
	id := c.Param("id")
	if _, _, err := a.runs.Get(c.Request().Context(), id); err != nil {
		return runError(c, err)
	}
	if err := a.cancel.Cancel(c.Request().Context(), id); err != nil {
		if errors.Is(err, stores.ErrNotFound) {
			return runError(c, err)
		}
		return c.JSON(http.StatusConflict, map[string]string{"error": err.Error()})
	}
	return c.JSON(http.StatusAccepted, map[string]string{"id": id, "status": "cancel requested"})
}

func (a *api) logsHandler(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if _, _, err := a.runs.Get(ctx, id); err != nil {
		return runError(c, err)
	}
	if c.QueryParam("follow") != "" && c.QueryParam("follow") != "0" {
		return a.stream.follow(c, id)
	}
	lines, err := a.logs.Read(ctx, id)
	if err != nil {
		return runError(c, err)
	}
	var b strings.Builder
	for _, l := range lines {
		writeTextLine(&b, l)
	}
	return c.String(http.StatusOK, b.String())
}

func writeTextLine(b *strings.Builder, l stores.LogLine) {
	fmt.Fprintf(b, "[%s] ", l.StepID)
	if l.Stream != stores.StreamStdout {
		fmt.Fprintf(b, "(%s) ", l.Stream)
	}
	b.WriteString(l.Text)
	b.WriteByte('\n')
}

// maxStartBody caps the body of POST /api/v1/workflows/:name/runs.
const maxStartBody = 1 << 20

// startRequest is the body of POST /api/v1/workflows/:name/runs.
type startRequest struct {
	Params map[string]string `json:"params"` // values for the workflow's params; strings only
	// Repo is the repository the run is for (owner/name, or a project
	// path with groups), one of allow_repos; Forge its forge (default
	// Config.DefaultForge).
	// The run has no pull request: nothing to comment on.
	Repo  string          `json:"repo"`
	Forge workflows.Forge `json:"forge"`
}

// startRun queues a run of a loaded workflow with the params given, for a
// repository of allow_repos. The workflow's params must declare every name
// given.
func (a *api) startRun(c echo.Context) error {
	name := c.Param("name")
	wf := a.srv.dec.Workflow(name)
	if wf == nil {
		return c.JSON(http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no workflow %q is loaded", name)})
	}
	var body startRequest
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, maxStartBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "decoding body: " + err.Error() + ` (want {"params": {"NAME": "value"}}, values as strings)`})
	}
	if _, err := wf.SetParams(body.Params); err != nil {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	if body.Forge == "" {
		body.Forge = a.srv.cfg.DefaultForge
	}
	if !a.srv.webhookForge(body.Forge) {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": a.srv.badForge(body.Forge)})
	}
	if body.Repo == "" || !a.srv.dec.Allowed(body.Repo) {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("repo %q is not one of this server's allow_repos", body.Repo)})
	}
	req := decide.Start(wf, body.Forge, body.Repo, body.Params)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), a.srv.cfg.PublishTimeout)
	defer cancel()
	res, err := a.srv.persist.publish(ctx, req)
	if err != nil {
		a.srv.logger.Error("publishing an API run", "workflow", wf.Name, "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "queueing run: queue unavailable"})
	}
	a.srv.logger.Info("run queued through the API", "workflow", wf.Name, "run", res.RunID)
	return c.JSON(http.StatusAccepted, map[string]string{"run": res.RunID, "workflow": wf.Name})
}

// rerunAnswer is the body of POST /api/v1/runs/:id/rerun.
type rerunAnswer struct {
	Run      string `json:"run"`
	Workflow string `json:"workflow"`
	RerunOf  string `json:"rerun_of"`
	// WorkflowChanged: the workflow loaded now has another digest than
	// the one the original run ran (the re-run runs the one loaded now).
	WorkflowChanged bool `json:"workflow_changed,omitempty"`
}

// rerunHandler re-runs a finished run (Server.rerun).
func (a *api) rerunHandler(c echo.Context) error {
	ans, err := a.srv.rerun(c.Request().Context(), c.Param("id"))
	switch {
	case errors.Is(err, stores.ErrNotFound):
		return runError(c, err)
	case errors.Is(err, decide.ErrNotFinished), errors.Is(err, decide.ErrWorkflowGone):
		return c.JSON(http.StatusConflict, map[string]string{"error": err.Error()})
	case errors.Is(err, decide.ErrRepoNotAllowed):
		return c.JSON(http.StatusForbidden, map[string]string{"error": err.Error()})
	case err != nil:
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "re-running: queue unavailable"})
	}
	return c.JSON(http.StatusAccepted, ans)
}

// replayHandler replays a stored delivery (Server.replay).
func (a *api) replayHandler(c echo.Context) error {
	forge := workflows.Forge(c.QueryParam("forge"))
	if forge == "" {
		forge = a.srv.cfg.DefaultForge
	}
	if !a.srv.webhookForge(forge) {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": a.srv.badForge(forge)})
	}
	id := c.Param("id")
	ans, err := a.srv.replayNoted(c.Request().Context(), forge, id)
	switch {
	case errors.Is(err, stores.ErrNotReceived):
		return c.JSON(http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no stored %s delivery %q (deliveries are kept for %s)", forge, id, a.srv.receivedTTL())})
	case errors.Is(err, ErrUnhandledEvent) || errors.Is(err, ErrMalformedPayload) || errors.Is(err, errNotReplayable):
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
	case err != nil:
		a.srv.logger.Error("replaying a delivery", "forge", forge, "delivery", id, "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "replaying: queue unavailable"})
	}
	if len(ans.Runs) == 0 {
		return c.JSON(http.StatusOK, ans)
	}
	return c.JSON(http.StatusAccepted, ans)
}
