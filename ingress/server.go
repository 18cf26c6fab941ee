package ingress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Publisher persists run requests. *queue.Queue and *stores.Publisher
// satisfy it.
type Publisher interface {
	// Publish returns once the request is persisted (PubAck), or with an
	// error. A request whose forge:delivery:workflow was already published
	// returns the existing run id with Duplicate set.
	Publish(ctx context.Context, req *queue.RunRequest) (queue.PublishResult, error)
	// PublishDelivery persists the runs of one delivery, all or nothing:
	// on an error none of them remains, or (an unknown outcome) a retry
	// of the same delivery completes them under the same run ids.
	PublishDelivery(ctx context.Context, reqs []*queue.RunRequest) ([]queue.PublishResult, error)
	// Ready reports whether the queue can take messages now.
	Ready(ctx context.Context) error
}

// IndexHealth is what the run records (*stores.RunStore) tell /readyz of
// the index the API's lists read: nil while it follows the bucket.
type IndexHealth interface{ IndexHealth() error }

var _ IndexHealth = (*stores.RunStore)(nil)

// WorkflowSource gives the server the workflows to match deliveries
// against. It is called once per delivery, so it must be cheap and safe for
// concurrent use. *workflows.WorkflowSet satisfies it.
type WorkflowSource interface {
	Workflows() []*workflows.Workflow
}

// Deps are what a Server reads and writes, given to New (as runner.Deps):
// what the server can do follows from what is given. Publisher and
// Workflows are required; a nil optional field turns off what needs it.
// *stores.Publisher and the stores beside it satisfy them.
type Deps struct {
	// Publisher persists run requests.
	Publisher Publisher
	// Workflows are the workflows deliveries are matched against.
	Workflows WorkflowSource
	// Acceptor stores each accepted delivery with its runs, all or
	// nothing (*stores.Publisher). nil: the runs are published without their
	// delivery, which no replay can then find.
	Acceptor DeliveryAcceptor
	// Deliveries are the stored deliveries (*stores.ReceivedStore): what
	// POST /api/v1/deliveries/{id}/replay matches again and where re-runs
	// read their event's payload back, and where the deliveries not
	// matched against the workflows are stored (unmatched.go). nil: no
	// replays (404), re-runs without the payload, nothing unmatched kept.
	Deliveries Deliveries
	// Runs are the run records re-runs read and link (*stores.RunStore).
	// nil: no /retry, and the API's re-runs fail.
	Runs RunRecords
	// Heads remembers pull request heads from pull_request events
	// (*stores.HeadStore). nil: a comment's head comes from its forge's
	// API alone.
	Heads decide.HeadStore
	// Index is the run index's health /readyz reports (*stores.RunStore).
	// nil: /readyz does not check it.
	Index IndexHealth
	// Seen tells whether a late schedule tick started its run before
	// (*queue.Queue). nil: every late tick is dropped, a redelivered one
	// too (its run exists already; it is logged as late, not duplicate).
	Seen DeliverySeer
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Server is the ingress HTTP server: webhook routes, health and metrics on
// one echo instance, to which RegisterAPI adds the /api/v1 routes.
type Server struct {
	cfg     Config
	pub     Publisher
	src     WorkflowSource
	dec     *decide.Decider // which runs an event starts (package decide)
	persist *persister      // how a delivery's runs are persisted (persist.go)
	logger  *slog.Logger
	echo    *echo.Echo
	metrics *metrics
	tracer  trace.Tracer // nil: tracing off (tracing.go)
	guard   *AuthGuard   // failed token checks per client address (guard.go)
	// apiGroup is /api/v1 behind the bearer token once RegisterAPI added it.
	apiGroup *echo.Group

	// The run records re-runs read, and the stored deliveries replays
	// read (Deps); nil: not given.
	records    RunRecords
	deliveries Deliveries
	index      IndexHealth    // nil: /readyz checks no run index
	seen       DeliverySeer   // nil: late ticks are not looked up
	refusals   refusalReplies // refused /retry replies per pull request (refusal.go)

	slackSecrets [][]byte
	// knownEvents bound the metrics' event label: each registered forge's
	// Webhooks.Events.
	knownEvents map[string]bool

	now func() time.Time

	closing atomic.Bool
	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	serveCh chan error
}

// New builds a server that publishes the runs of the workflows deps give.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Publisher == nil {
		return nil, errors.New("creating ingress server: no publisher")
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating ingress config: %w", err)
	}
	// The workflows are the decider's to check.
	deps.Logger = cmp.Or(deps.Logger, slog.New(slog.DiscardHandler))
	if deps.Now == nil {
		deps.Now = time.Now
	}
	dec, err := decide.New(cfg.decision(), decide.Deps{Workflows: deps.Workflows, Forges: cfg.Forges, Heads: deps.Heads,
		Runs: deps.Runs, Deliveries: deps.Deliveries, Logger: deps.Logger, Now: deps.Now})
	if err != nil {
		return nil, fmt.Errorf("creating ingress server: %w", err)
	}
	s := &Server{cfg: cfg, pub: deps.Publisher, src: deps.Workflows, dec: dec, logger: deps.Logger,
		metrics: newMetrics(deps.Logger, cfg.Collectors...), now: deps.Now, records: deps.Runs, deliveries: deps.Deliveries, index: deps.Index, seen: deps.Seen,
		persist: &persister{pub: deps.Publisher, acceptor: deps.Acceptor, runs: deps.Runs, logger: deps.Logger}}
	s.persist.latency = s.metrics.publish
	if cfg.Tracer != nil {
		s.tracer = newTracer(cfg.Tracer)
		s.persist.tracer = s.tracer
	}
	s.slackSecrets = forge.Secrets(cfg.Slack.Secrets)
	s.knownEvents = knownEvents(cfg.Forges)
	s.guard = newAuthGuard(cfg.AuthLimit, deps.Logger, time.Now)
	s.echo = s.routes()
	return s, nil
}

// routes is the server's echo instance with the webhook, health and
// metrics routes.
func (s *Server) routes() *echo.Echo {
	trusted, _ := ParseTrustedProxies(s.cfg.TrustedProxies) // checked by Validate
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = ipExtractor(trusted)
	e.HTTPErrorHandler = s.errorHandler
	for _, name := range s.cfg.Forges.Names() {
		e.POST(HookPath(name), s.handleForge(s.cfg.Forges.Get(name)))
	}
	e.POST("/hooks/slack", s.handleSlack)
	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", echo.WrapHandler(s.metrics.handler))
	return e
}

// Route adds a route to the server's echo instance, behind the middleware
// m: the web UI (ingress/ui) mounts its pages on the server this way, beside
// the webhooks and the API.
func (s *Server) Route(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	s.echo.Add(method, path, h, m...)
}

// Guard is the limit on failed token checks per client address that the
// API's bearer check uses; the web UI's login form shares it.
func (s *Server) Guard() *AuthGuard { return s.guard }

// Handler is the server's http.Handler (the echo instance).
func (s *Server) Handler() http.Handler { return s.echo }

// Start binds cfg.Listen and serves in the background; it returns once the
// listener is open (ctx bounds only the bind). Stop with Shutdown.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("starting ingress server: already started")
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
	}
	// The goroutine keeps its own reference: Shutdown clears s.serveCh
	// before Serve returns, and a send on the nil field would block forever.
	serveCh := make(chan error, 1)
	s.serveCh = serveCh
	srv := s.srv
	go func() { serveCh <- srv.Serve(ln) }()
	attrs := []any{"addr", ln.Addr().String()}
	for _, name := range s.cfg.Forges.Names() {
		attrs = append(attrs, string(name), s.cfg.Forges.Get(name).HookEnabled())
	}
	s.logger.Info("ingress listening", append(attrs, "slack", s.cfg.Slack.Enabled)...)
	return nil
}

// Addr is the bound address after Start, nil before.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections and waits for in-flight deliveries
// (and their publishes) to finish or ctx to end. /readyz answers 503 from the moment it is called.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	srv, serveCh := s.srv, s.serveCh
	s.serveCh = nil // a second Shutdown returns at once
	s.mu.Unlock()
	if srv == nil || serveCh == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if serr := <-serveCh; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("shutting down ingress server: %w", err)
	}
	return nil
}

// response is the body of a webhook answer.
type response struct {
	Delivery  string        `json:"delivery"`
	Runs      []runRef      `json:"runs"`
	Skipped   []decide.Skip `json:"skipped,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Ignored   string        `json:"ignored,omitempty"`   // why the delivery was not acted on at all
	Duplicate bool          `json:"duplicate,omitempty"` // every run already existed: a redelivery
	Drift     []Drift       `json:"drift,omitempty"`     // fields of an unexpected type, read as absent (no workflow needed them)
}

type runRef struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	RerunOf  string `json:"rerun_of,omitempty"` // a /retry's re-run: the run it re-runs
}

// runRefs are the answer's runs of reqs, persisted as results; duplicate:
// every one of them already existed (a redelivery).
func runRefs(reqs []*queue.RunRequest, results []queue.PublishResult) (refs []runRef, duplicate bool) {
	refs, duplicate = make([]runRef, 0, len(results)), true
	for i, r := range results {
		refs = append(refs, runRef{ID: r.RunID, Workflow: reqs[i].Workflow, RerunOf: reqs[i].RerunOf})
		duplicate = duplicate && r.Duplicate
	}
	return refs, duplicate
}

// rerunNames lists run ids for a log line.
func rerunNames(reqs []*queue.RunRequest) string {
	var ids []string
	for _, r := range reqs {
		if r.RerunOf != "" {
			ids = append(ids, r.RerunOf)
		}
	}
	return strings.Join(ids, ",")
}

type errorBody struct {
	Error string `json:"error"`
}

var (
	errUnauthorized = errorBody{"unauthorized"}
	errTooLarge     = errorBody{"payload too large"}
	errUnavailable  = errorBody{"queue unavailable"}
)

// errorHandler answers echo's own errors (404, 405, ...) as JSON.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, "internal error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		msg = strings.ToLower(http.StatusText(code))
	} else {
		s.logger.Error("handling request", "path", c.Path(), "err", err)
	}
	_ = c.JSON(code, errorBody{msg})
}

func (s *Server) handleHealthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(c echo.Context) error {
	if s.closing.Load() {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.pub.Ready(ctx); err != nil {
		s.logger.Warn("readiness check failed", "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "queue unavailable"})
	}
	if s.index != nil {
		if err := s.index.IndexHealth(); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "run index unavailable", "reason": err.Error()})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// readBody reads at most cap+1 bytes so that an oversized body is detected
// without reading all of it.
func (s *Server) readBody(c echo.Context, limit int64) ([]byte, bool, error) {
	r := c.Request()
	if r.ContentLength > limit {
		return nil, true, nil
	}
	if r.ContentLength >= 0 {
		// net/http delivers exactly Content-Length bytes (or an error):
		// one buffer of the right size instead of io.ReadAll's doublings,
		// which cost a tenth of the handler for 28 KB bodies.
		body := getBody(int(r.ContentLength))
		if _, err := io.ReadFull(r.Body, body); err != nil {
			putBody(body)
			return nil, false, err
		}
		return body, false, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		return nil, true, nil
	}
	return body, false, nil
}

func (s *Server) count(forge workflows.Forge, event, outcome string) {
	s.metrics.deliveries.WithLabelValues(string(forge), s.eventLabel(event), outcome).Inc()
}

// receive is what every forge's handler does first: a disabled forge is 404,
// the body is read under the cap (413 past it). ok false: the answer has
// been written and answered is the handler's result.
func (s *Server) receive(c echo.Context, forge workflows.Forge, enabled bool, event string) (body []byte, ok bool, answered error) {
	if !enabled {
		return nil, false, c.JSON(http.StatusNotFound, errorBody{"not found"})
	}
	body, tooLarge, err := s.readBody(c, s.cfg.MaxBodyBytes)
	switch {
	case tooLarge:
		s.count(forge, event, outcomeTooLarge)
		return nil, false, c.JSON(http.StatusRequestEntityTooLarge, errTooLarge)
	case err != nil:
		s.count(forge, event, outcomeMalformed)
		return nil, false, c.JSON(http.StatusBadRequest, errorBody{"reading body failed"})
	}
	return body, true, nil
}

// HookPath is the webhook route of the forge named name: /hooks/<name>.
func HookPath(name workflows.Forge) string { return "/hooks/" + string(name) }

// webhookForge reports whether f is a registered forge, whose webhook
// route exists (it answers 404 while its webhooks are disabled).
func (s *Server) webhookForge(f workflows.Forge) bool { return s.cfg.Forges.Has(f) }

// badForge is the 400's text for a forge that is not registered.
func (s *Server) badForge(f workflows.Forge) string {
	names := make([]string, 0, len(s.cfg.Forges.Names()))
	for _, n := range s.cfg.Forges.Names() {
		names = append(names, string(n))
	}
	return fmt.Sprintf("forge must be %s, got %q", strings.Join(names, " or "), f)
}

// handleForge is the webhook handler of one forge: read the body under the
// cap, verify it, name the delivery and dispatch it. What differs between
// forges (headers, signature or token, payload) is the forge's
// (providers/forge.Webhooks); the answers are the same for all.
func (s *Server) handleForge(f forge.Forge) echo.HandlerFunc {
	name := f.Name()
	return func(c echo.Context) error {
		req := c.Request()
		event := f.EventName(req.Header)
		if s.tracer != nil {
			defer s.traceReceive(c, name, event)()
		}
		body, ok, answered := s.receive(c, name, f.HookEnabled(), event)
		if !ok {
			return answered
		}
		defer putBody(body)
		verr := f.Verify(req.Header, body)
		verified := verr == nil
		if errors.Is(verr, forge.ErrNoSecret) && s.cfg.InsecureNoVerify {
			s.logger.Warn("accepting an unverified "+string(name)+" delivery (--insecure-no-verify)", "remote", c.RealIP())
		} else if !endVerify(s.startVerify(c), verr == nil) {
			s.logger.Debug(string(name)+" delivery refused", "remote", c.RealIP(), "reason", verr.Error())
			s.count(name, "", outcomeUnauthorized)
			return c.JSON(http.StatusUnauthorized, errUnauthorized)
		}
		delivery, err := f.DeliveryID(req.Header, body)
		if event == "" || err != nil || delivery == "" {
			s.count(name, event, outcomeMalformed)
			msg := "missing header"
			if errors.Is(err, forge.ErrMissingHeader) {
				msg = err.Error()
			}
			return c.JSON(http.StatusBadRequest, errorBody{msg})
		}
		received := &stores.Received{Forge: name, ID: delivery, Event: event, ReceivedAt: s.now().UTC(), Raw: body}
		if f.Ping(event) {
			s.count(name, event, outcomePing)
			s.keepUnmatched(c, received, nil, verified, unmatched{reason: "a ping: the forge checks the webhook"})
			return c.JSON(http.StatusOK, map[string]string{"delivery": delivery, "pong": "hookrun"})
		}
		return s.dispatch(c, received, verified)
	}
}

// dispatch normalizes a delivery (verified: its signature or token was
// checked), has the decider match and authorize it against every
// workflow, persists the runs and answers. A delivery it does not match
// against the workflows is stored as unmatched (unmatched.go) when
// verified, and answered as before.
func (s *Server) dispatch(c echo.Context, received *stores.Received, verified bool) error {
	forge, event, delivery := received.Forge, received.Event, received.ID
	log := s.deliveryLogger(c, delivery)
	ev, drift, err := normalizeTolerant(s.cfg.Forges.Get(forge), event, received.Raw, delivery)
	switch {
	case errors.Is(err, ErrUnhandledEvent):
		s.count(forge, event, outcomeUnhandled)
		reason := fmt.Sprintf("event %s is not handled", event)
		s.keepUnmatched(c, received, nil, verified, unmatched{reason: reason})
		return c.JSON(http.StatusAccepted, response{Delivery: delivery, Runs: []runRef{}, Reason: reason})
	case err != nil:
		log.Debug("delivery refused: malformed payload", "forge", forge, "event", event, "delivery", delivery, "err", err)
		s.count(forge, event, outcomeMalformed)
		s.keepUnmatched(c, received, nil, verified, unmatched{refused: true, reason: err.Error()})
		return c.JSON(http.StatusBadRequest, errorBody{"malformed payload"})
	case !s.dec.Allowed(ev.Repo):
		// Before anything else reads or writes state: such a delivery
		// leaves the log line, the counter and its stored summary.
		s.count(forge, event, outcomeNotAllowed)
		log.Info("delivery ignored: repository not allowed", "forge", forge, "event", event, "delivery", delivery, "repo", ev.Repo)
		s.keepUnmatched(c, received, ev, verified, unmatched{refused: true, reason: ignoredNotAllowed})
		return c.JSON(http.StatusAccepted, response{Delivery: delivery, Runs: []runRef{}, Ignored: ignoredNotAllowed})
	case len(drift) > 0:
		return s.drifted(c, received, ev, drift, verified)
	}
	s.recallLabels(c.Request().Context(), received, ev)
	return s.decideAndAccept(c, log, received, ev)
}

// decideAndAccept decides what a normalized delivery runs, persists the
// runs with the delivery and answers.
func (s *Server) decideAndAccept(c echo.Context, log *slog.Logger, received *stores.Received, ev *workflows.Event) error {
	forge, event, delivery := received.Forge, received.Event, received.ID
	// The head of a pull_request event is remembered whatever matches, for
	// the comments that may follow (package decide); the answer waits for it.
	headWritten := s.dec.RememberHead(c.Request().Context(), ev)
	dec, err := s.dec.Event(c.Request().Context(), ev)
	if err != nil {
		headWritten()
		log.Error("finding the runs a retry asks for", "forge", forge, "event", event, "delivery", delivery, "err", err)
		s.count(forge, event, outcomeUnavailable)
		return c.JSON(http.StatusServiceUnavailable, errUnavailable)
	}
	// The client going away must not abandon a publish half-way: a run is
	// persisted or not, and the forge redelivers either way. The delivery
	// itself is stored with its runs (for replays), also when it has none.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), s.cfg.PublishTimeout)
	defer cancel()
	describe(received, c.Request().Header, ev, dec)
	results, err := s.persist.accept(ctx, received, dec.Runs)
	headWritten()
	if err != nil {
		log.Error("publishing runs", "forge", forge, "event", event, "delivery", delivery, "err", err)
		s.count(forge, event, outcomeUnavailable)
		return c.JSON(http.StatusServiceUnavailable, errUnavailable)
	}
	if ev.Kind == workflows.KindComment {
		s.answerRefusedRetry(ev, dec.RerunSkipped)
	}
	return s.answerAccepted(c, log, received, dec, results)
}

// answerAccepted answers a delivery whose runs (results) are persisted.
func (s *Server) answerAccepted(c echo.Context, log *slog.Logger, received *stores.Received, dec decide.Decision, results []queue.PublishResult) error {
	forge, event, delivery := received.Forge, received.Event, received.ID
	resp := response{Delivery: delivery, Runs: []runRef{}, Skipped: dec.Skipped}
	if len(dec.Runs) == 0 {
		resp.Reason = dec.Reason()
		s.count(forge, event, outcomeNoRun)
		s.logger.Info("delivery accepted without runs", "forge", forge, "event", event, "delivery", delivery, "reason", resp.Reason)
		return c.JSON(http.StatusAccepted, resp)
	}
	resp.Runs, resp.Duplicate = runRefs(dec.Runs, results)
	for i, r := range results {
		if !r.Duplicate {
			s.metrics.runs.WithLabelValues(string(forge), dec.Runs[i].Workflow).Inc()
		}
	}
	s.count(forge, event, outcomeAccepted)
	log.Info("delivery accepted", "forge", forge, "event", event, "delivery", delivery,
		"runs", len(resp.Runs), "duplicate", resp.Duplicate, "reruns_of", rerunNames(dec.Runs))
	return c.JSON(http.StatusAccepted, resp)
}

// drifted answers a delivery of an allowed repository some of whose
// fields had another JSON type than the forge documents, read as absent
// (normalize.go): if no workflow listens to events of its kind, nothing
// needs those fields and the delivery is accepted without runs; if one
// does, its matching or its run may need what the fields should have
// said, so the answer is 400 naming them (the forge shows it in its
// delivery log). Neither the pull request's head nor a run is written
// either way; the delivery is stored as unmatched (skipped or refused)
// when verified.
func (s *Server) drifted(c echo.Context, received *stores.Received, ev *workflows.Event, drift []Drift, verified bool) error {
	forge, event, delivery := received.Forge, received.Event, received.ID
	fields, wanted, refusal := s.driftRefusal(ev, drift)
	if refusal != "" {
		s.count(forge, event, outcomeMalformed)
		s.logger.Warn("delivery refused: a workflow that takes it may need fields of an unexpected type", "forge", forge, "event", event,
			"delivery", delivery, "fields", fields, "workflows", wanted, "drift", drift)
		s.keepUnmatched(c, received, ev, verified, unmatched{refused: true, reason: refusal})
		return c.JSON(http.StatusBadRequest, errorBody{refusal})
	}
	s.count(forge, event, outcomeNoRun)
	s.logger.Info("delivery accepted without runs; some fields had an unexpected type", "forge", forge, "event", event, "delivery", delivery, "fields", fields)
	reason := "no workflow takes " + string(ev.Kind) + " events (fields " + strings.Join(fields, ", ") + " had an unexpected type and were read as absent)"
	s.keepUnmatched(c, received, ev, verified, unmatched{reason: reason})
	return c.JSON(http.StatusAccepted, response{Delivery: delivery, Runs: []runRef{}, Drift: drift, Reason: reason})
}

// driftRefusal is what refuses a drifted event (the 400's message, a
// replay's error): "" when no workflow listens to events of its kind,
// else the fields and the workflows that may need them.
func (s *Server) driftRefusal(ev *workflows.Event, drift []Drift) (fields, wanted []string, refusal string) {
	fields = make([]string, len(drift))
	for i, d := range drift {
		fields[i] = d.Field
	}
	for _, w := range s.src.Workflows() {
		if w.Listens(ev.Kind) {
			wanted = append(wanted, w.Name)
		}
	}
	if len(wanted) == 0 || len(drift) == 0 {
		return fields, nil, ""
	}
	return fields, wanted, fmt.Sprintf("malformed payload: field %s has an unexpected type (%s); workflow %s takes this event and may need it",
		strings.Join(fields, ", "), drift[0].Error, strings.Join(wanted, ", "))
}

// ignoredNotAllowed is the "ignored" answer to a delivery for a repository
// outside Config.AllowRepos.
const ignoredNotAllowed = "repository not allowed"

var (
	_ Publisher      = (*queue.Queue)(nil)
	_ Publisher      = (*stores.Publisher)(nil)
	_ WorkflowSource = (*workflows.WorkflowSet)(nil)
)

// Request bodies are recycled: a delivery's body is garbage once its
// handler has answered (the run request on the stream is a copy), and at
// thousands of 28 KB deliveries a second the collector's share of ingress
// CPU was about a tenth.
var bodyPool sync.Pool // of *[]byte

// maxPooledBody bounds what the pool keeps: rare big bodies are left to the
// collector rather than held.
const maxPooledBody = 1 << 20

// getBody returns a buffer of length n, recycled when one is big enough.
func getBody(n int) []byte {
	if n <= maxPooledBody {
		if p, ok := bodyPool.Get().(*[]byte); ok {
			if cap(*p) >= n {
				return (*p)[:n]
			}
		}
	}
	return make([]byte, n)
}

// putBody recycles a body; nothing may use it afterwards.
func putBody(b []byte) {
	if b == nil || cap(b) > maxPooledBody {
		return
	}
	bodyPool.Put(&b)
}
