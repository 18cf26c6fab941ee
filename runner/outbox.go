package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// OutboxStore is what the outbox needs of the hookrun_outbox bucket.
// *stores.OutboxStore satisfies it.
type OutboxStore interface {
	Put(ctx context.Context, e *stores.OutboxEntry) error
	Update(ctx context.Context, e *stores.OutboxEntry) error
	Delete(ctx context.Context, key string, rev uint64) error
	List(ctx context.Context) ([]*stores.OutboxEntry, error)
}

var _ OutboxStore = (*stores.OutboxStore)(nil)

// The engine keeps a final report it could not deliver in time here.
var _ engine.ReportKeeper = (*Outbox)(nil)

// outboxKindFinal is the report kind of a run's final comment and status.
const outboxKindFinal = "final"

// OutboxConfig configures an Outbox. Every duration is configurable so that
// tests run in seconds.
type OutboxConfig struct {
	// Poll is how often the store is looked at for due reports. Default 5s.
	Poll time.Duration
	// AttemptTimeout bounds one delivery attempt. Default 30s.
	AttemptTimeout time.Duration
	// Backoff is the wait after a failed attempt whose error does not say
	// how long to wait (a contract.RetryAfterError does); it doubles with
	// every failed attempt up to MaxBackoff. Default 30s.
	Backoff time.Duration
	// MaxBackoff caps one backoff wait. Default 10m.
	MaxBackoff time.Duration
	// MaxAge is how long a report is tried before it is given up (logged
	// and counted in hookrun_report_outbox_given_up_total). Default 24h.
	MaxAge time.Duration
	// Runs, when set, is asked before a report is delivered whether a newer
	// run of the same workflow has since reported on the same sticky
	// comment and commit status: such a report is not sent rather than
	// overwrite the newer run's, but its actions are still applied (the
	// reporter's contract.ActionApplier) or refused; once a report is
	// delivered, its run's record is told what became of its actions
	// (*stores.RunStore satisfies it).
	Runs OutboxRuns
	// Logger is the operator log. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// OutboxRuns lists run records, and records in one what a delivery of
// its final report did of its actions. *stores.RunStore satisfies it.
type OutboxRuns interface {
	List(ctx context.Context, f stores.ListFilter) ([]*stores.RunRecord, string, error)
	RecordActions(ctx context.Context, id string, attempt int, out *workflows.ActionsOutcome) error
}

var _ OutboxRuns = (*stores.RunStore)(nil)

func (c *OutboxConfig) setDefaults() {
	c.Poll = cmp.Or(c.Poll, 5*time.Second)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, 30*time.Second)
	c.Backoff = cmp.Or(c.Backoff, 30*time.Second)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, 10*time.Minute)
	c.MaxAge = cmp.Or(c.MaxAge, 24*time.Hour)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Now == nil {
		c.Now = time.Now
	}
}

// WithDefaults is c with its defaults filled in (internal/app compares).
func (c OutboxConfig) WithDefaults() OutboxConfig { c.setDefaults(); return c }

// Validate reports a configuration the outbox cannot work with.
func (c *OutboxConfig) Validate() error {
	if c.Poll <= 0 || c.AttemptTimeout <= 0 || c.Backoff <= 0 || c.MaxAge <= 0 {
		return errors.New("validating outbox config: poll, attempt timeout, backoff and max age must be positive")
	}
	if c.MaxBackoff < c.Backoff {
		return fmt.Errorf("validating outbox config: max backoff (%s) is shorter than backoff (%s)", c.MaxBackoff, c.Backoff)
	}
	return nil
}

// Outbox delivers the final reports the engine could not deliver in time
// (the forge did not answer, or asked to wait longer than the report's
// timeout): each is kept in the store, keyed by run and report kind (a
// newer report of a run supersedes an older one), and tried again, after
// the forge's Retry-After or a doubling backoff, until it is delivered or
// MaxAge old. The store is shared by every runner and survives restarts: a
// runner started later picks up what another left; an entry is taken by
// compare-and-set, so one runner tries it at a time.
type Outbox struct {
	cfg   OutboxConfig
	store OutboxStore
	rep   contract.Reporter
	log   *slog.Logger

	kept, delivered, givenUp prometheus.Counter

	mu   sync.Mutex
	stop context.CancelFunc // nil until Start
	done chan struct{}
}

// NewOutbox returns an outbox over store that delivers with rep.
func NewOutbox(cfg OutboxConfig, store OutboxStore, rep contract.Reporter) (*Outbox, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil || rep == nil {
		return nil, errors.New("creating outbox: store and reporter are required")
	}
	return &Outbox{cfg: cfg, store: store, rep: rep, log: cfg.Logger,
		kept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrun_report_outbox_kept_total",
			Help: "Final reports that could not be delivered in time and were kept in the outbox.",
		}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrun_report_outbox_delivered_total",
			Help: "Final reports delivered from the outbox.",
		}),
		givenUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrun_report_outbox_given_up_total",
			Help: "Final reports given up after the outbox's max age (24h by default) without delivery.",
		}),
	}, nil
}

// Collectors are the outbox's metrics, for a Prometheus registry.
func (o *Outbox) Collectors() []prometheus.Collector {
	return []prometheus.Collector{o.kept, o.delivered, o.givenUp}
}

// outboxReport is a contract.RunReport as stored: the workflow by what the
// reporters read of it, the event without its raw payload.
type outboxReport struct {
	Phase    contract.Phase        `json:"phase"`
	RunID    string                `json:"run_id"`
	Attempt  int                   `json:"attempt"`
	Workflow string                `json:"workflow"`
	Report   workflows.Report      `json:"report"`
	Event    *workflows.Event      `json:"event"`
	HeadSHA  string                `json:"head_sha,omitempty"`
	Status   workflows.Status      `json:"status"`
	TimedOut bool                  `json:"timed_out,omitempty"`
	Steps    []workflows.StepState `json:"steps,omitempty"`
	Body     string                `json:"body,omitempty"`
	Error    string                `json:"error,omitempty"`
	Ref      contract.ReportRef    `json:"ref,omitzero"`
	Delivery *workflows.Delivery   `json:"delivery,omitempty"`
	// Results are the run's findings and the actions its steps asked for
	// (actions.json), so that a retried final report still posts its
	// review and applies them (findings cut to fit maxStoredReport).
	Results *contract.Results `json:"results,omitempty"`
	// Permissions are the workflow's: what of Results.Actions the
	// delivery may apply.
	Permissions *workflows.Permissions `json:"permissions,omitempty"`
}

// maxStoredReport bounds a stored report: the KV's message limit is
// 1 MiB. Findings past it are left out of the stored report (its Results
// say how many).
const maxStoredReport = 900 << 10

// maxStoredBody bounds the body kept (the forges' comment limits are far
// below it; the KV's message size is 1 MiB).
const maxStoredBody = 256 << 10

func encodeReport(r *contract.RunReport) ([]byte, error) {
	w := outboxReport{Phase: r.Phase, RunID: r.RunID, Attempt: r.Attempt, HeadSHA: r.HeadSHA, Status: r.Status, TimedOut: r.TimedOut,
		Steps: r.Steps, Body: r.Body, Error: r.Error, Ref: r.Ref, Delivery: r.Delivery}
	if r.Workflow != nil {
		w.Workflow, w.Report, w.Permissions = r.Workflow.Name, r.Workflow.Report, r.Workflow.Permissions
	}
	if r.Event != nil {
		ev := *r.Event
		ev.Raw = nil
		w.Event = &ev
	}
	if len(w.Body) > maxStoredBody {
		w.Body = w.Body[:maxStoredBody]
	}
	if r.Results == nil {
		return json.Marshal(w)
	}
	res := *r.Results
	all := len(res.Findings)
	for {
		w.Results = &res
		data, err := json.Marshal(w)
		if err != nil || len(data) <= maxStoredReport || len(res.Findings) == 0 {
			return data, err
		}
		// Too large: keep half as many findings, and say so.
		res.Findings = res.Findings[:len(res.Findings)/2]
		res.Dropped = maps.Clone(r.Results.Dropped)
		if res.Dropped == nil {
			res.Dropped = map[string]int{}
		}
		res.Dropped["over the outbox's size limit"] = all - len(res.Findings)
	}
}

func decodeReport(data []byte) (*contract.RunReport, error) {
	var w outboxReport
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	if w.Event == nil || w.Workflow == "" {
		return nil, errors.New("report without workflow or event")
	}
	return &contract.RunReport{Phase: w.Phase, RunID: w.RunID, Attempt: w.Attempt,
		Workflow: &workflows.Workflow{Name: w.Workflow, Report: w.Report, Permissions: w.Permissions}, Event: w.Event,
		HeadSHA: w.HeadSHA, Status: w.Status, TimedOut: w.TimedOut, Steps: w.Steps, Body: w.Body, Error: w.Error, Ref: w.Ref, Delivery: w.Delivery,
		Results: w.Results}, nil
}

// Keep stores r, whose delivery failed with cause, to be tried again: after
// cause's Retry-After, else after Backoff.
func (o *Outbox) Keep(ctx context.Context, r *contract.RunReport, cause error) error {
	data, err := encodeReport(r)
	if err != nil {
		return fmt.Errorf("encoding report of run %s for the outbox: %w", r.RunID, err)
	}
	now := o.cfg.Now().UTC()
	e := &stores.OutboxEntry{Key: stores.OutboxKey(r.RunID, outboxKindFinal), RunID: r.RunID, Report: data,
		CreatedAt: now, NextAt: now.Add(o.wait(cause, 1)), Attempts: 1}
	if cause != nil {
		e.LastError = cause.Error() // already redacted by the engine
	}
	if err := o.store.Put(ctx, e); err != nil {
		return fmt.Errorf("keeping report of run %s in the outbox: %w", r.RunID, err)
	}
	o.kept.Inc()
	o.log.Info("final report kept in the outbox for a later delivery", "run", r.RunID, "retry_at", e.NextAt)
	return nil
}

// wait is how long to wait after the attempts-th failed attempt.
func (o *Outbox) wait(cause error, attempts int) time.Duration {
	if d, ok := contract.RetryAfter(cause); ok {
		return d
	}
	d := o.cfg.Backoff
	for i := 1; i < attempts && d < o.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.cfg.MaxBackoff)
}

// Start tries due reports every Poll until Close.
func (o *Outbox) Start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stop != nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	o.stop, o.done = stop, make(chan struct{})
	go func() {
		defer close(o.done)
		t := time.NewTicker(o.cfg.Poll)
		defer t.Stop()
		for {
			o.Flush(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the loop Start started, ending an attempt in flight; what was
// not delivered stays in the store for the next runner.
func (o *Outbox) Close() error {
	o.mu.Lock()
	stop, done := o.stop, o.done
	o.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	return nil
}

// Flush tries every due report once.
func (o *Outbox) Flush(ctx context.Context) {
	list, err := o.store.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("listing the report outbox", "err", err)
		}
		return
	}
	for _, e := range list {
		if ctx.Err() != nil {
			return
		}
		if now := o.cfg.Now(); !e.NextAt.After(now) {
			o.try(ctx, e)
		}
	}
}

// try delivers e once: it takes e (NextAt moved past the attempt, so that
// other runners leave it alone), sends it, then deletes it or schedules the
// next attempt; it gives e up when it is MaxAge old.
func (o *Outbox) try(ctx context.Context, e *stores.OutboxEntry) {
	log := o.log.With("run", e.RunID, "key", e.Key, "attempts", e.Attempts)
	if age := o.cfg.Now().Sub(e.CreatedAt); age >= o.cfg.MaxAge {
		o.giveUp(ctx, e, log, fmt.Sprintf("not delivered in %s", o.cfg.MaxAge))
		return
	}
	rep, err := decodeReport(e.Report)
	if err != nil {
		o.giveUp(ctx, e, log, "decoding it: "+err.Error())
		return
	}
	newer := o.supersededBy(ctx, rep)
	if newer != "" && !rep.AsksActions() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cfg.AttemptTimeout)
		defer cancel()
		if err := o.store.Delete(sctx, e.Key, e.Revision); err == nil {
			log.Info("dropping an undelivered final report: a newer run reported on its comment and status", "newer", newer)
		}
		return
	}
	e.Attempts++
	e.NextAt = o.cfg.Now().UTC().Add(o.cfg.AttemptTimeout + o.cfg.Poll)
	if err := o.store.Update(ctx, e); err != nil {
		if !errors.Is(err, stores.ErrConflict) {
			log.Warn("taking a report from the outbox", "err", err)
		}
		return // another runner has it, or a newer report replaced it
	}
	actx, cancel := context.WithTimeout(ctx, o.cfg.AttemptTimeout) // Close ends it: the entry stays for the next runner
	err = o.deliver(actx, rep, newer)
	cancel()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cfg.AttemptTimeout)
	defer cancel()
	if err == nil {
		o.recordActions(sctx, rep, log) // before the entry goes: a crash in between delivers again, idempotently
		if err := o.store.Delete(sctx, e.Key, e.Revision); err != nil && !errors.Is(err, stores.ErrConflict) {
			log.Warn("removing a delivered report from the outbox", "err", err)
		}
		if newer != "" { // (one without actions was dropped above)
			log.Info("applied the actions of an undelivered final report, and dropped its comment and status: a newer run reported on them", "newer", newer)
			return
		}
		o.delivered.Inc()
		log.Info("final report delivered from the outbox", "age", o.cfg.Now().Sub(e.CreatedAt).Round(time.Millisecond))
		return
	}
	if errors.Is(err, contract.ErrRefused) {
		o.giveUp(ctx, e, log, "refused: "+err.Error())
		return
	}
	e.LastError = err.Error()
	now := o.cfg.Now().UTC()
	e.NextAt = now.Add(o.wait(err, e.Attempts))
	if last := e.CreatedAt.Add(o.cfg.MaxAge); e.NextAt.After(last) {
		e.NextAt = last // then given up, not tried again
	}
	log.Warn("final report still not delivered; retrying later", "err", err, "retry_at", e.NextAt)
	if err := o.store.Update(sctx, e); err != nil && !errors.Is(err, stores.ErrConflict) {
		log.Warn("rescheduling a report in the outbox", "err", err)
	}
}

// deliver sends rep, or, when the newer run names a run whose reports
// replace rep's comment and status, applies only rep's actions (the
// reporter's contract.ActionApplier, which keeps the runs' order), or
// refuses them when the reporter cannot act without reporting.
func (o *Outbox) deliver(ctx context.Context, rep *contract.RunReport, newer string) error {
	if newer == "" {
		_, err := o.rep.Report(ctx, rep)
		return err
	}
	a, ok := o.rep.(contract.ActionApplier)
	if !ok {
		rep.Acted = contract.RefuseActions(rep, "run "+newer+" reports in this run's place, and this reporter cannot act without reporting")
		return nil
	}
	return a.ApplyActions(ctx, rep)
}

// recordActions tells the run record what the delivery of rep did of its
// actions (rep.Acted, set by the reporter): the record kept what the
// run's own, failed attempt saw.
func (o *Outbox) recordActions(ctx context.Context, rep *contract.RunReport, log *slog.Logger) {
	if o.cfg.Runs == nil || rep.Acted == nil {
		return
	}
	if err := o.cfg.Runs.RecordActions(ctx, rep.RunID, rep.Attempt, rep.Acted); err != nil {
		log.Warn("the run record keeps what the run's own delivery did of its actions", "err", err)
	}
}

// giveUp removes e for good, counted and logged.
func (o *Outbox) giveUp(ctx context.Context, e *stores.OutboxEntry, log *slog.Logger, why string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cfg.AttemptTimeout)
	defer cancel()
	if err := o.store.Delete(sctx, e.Key, e.Revision); err != nil {
		if !errors.Is(err, stores.ErrConflict) {
			log.Warn("removing a given-up report from the outbox", "err", err)
		}
		return // changed meanwhile: a newer report, or another runner's
	}
	// Logged before it is counted: whoever sees the count finds the line.
	log.Error("giving up a final report: the pull request's comment and status keep their last state",
		"reason", why, "last_error", e.LastError, "created_at", e.CreatedAt)
	o.givenUp.Inc()
}

// supersededBy returns the id of a newer run of rep's workflow on the same
// pull request or issue that has started (so it reported) and whose reports
// replace everything rep would write: the sticky comment (a `new` comment
// is the run's own) and the commit status on the same head. "" when there
// is none, or when it cannot be told.
func (o *Outbox) supersededBy(ctx context.Context, rep *contract.RunReport) string {
	if o.cfg.Runs == nil || rep.Event == nil || rep.Workflow == nil {
		return ""
	}
	ev := rep.Event
	if ev.Chat != nil {
		return "" // its own response_url: nothing newer writes there
	}
	mode := rep.Workflow.Report.Comment
	comment := mode != workflows.CommentNone && ev.Number() > 0
	if comment && mode != "" && mode != workflows.CommentSticky {
		return "" // its own comment: nothing newer writes it
	}
	sha := firstNonEmpty(rep.HeadSHA, ev.HeadSHA())
	status := rep.Workflow.Report.Status && sha != ""
	if !comment && !status {
		return ""
	}
	lctx, cancel := context.WithTimeout(ctx, o.cfg.AttemptTimeout)
	defer cancel()
	// Newest first, page by page, down to rep's own run: only the runs
	// newer than it are read.
	f := stores.ListFilter{Repo: ev.Repo, Workflow: rep.Workflow.Name, PR: ev.Number(), Limit: 100}
	for {
		list, next, err := o.cfg.Runs.List(lctx, f)
		if err != nil {
			o.log.Warn("listing runs to tell whether an undelivered report is superseded", "run", rep.RunID, "err", err)
			return ""
		}
		for _, r := range list {
			if r.ID <= rep.RunID {
				return "" // older (ULIDs sort by time): none newer is left
			}
			if r.Status == workflows.StatusQueued || r.Event.Forge != ev.Forge || r.Event.Number() != ev.Number() {
				continue // not started, or elsewhere
			}
			if status && firstNonEmpty(r.HeadSHA, r.Event.HeadSHA()) != sha {
				continue // its status is on another commit: ours still counts
			}
			return r.ID
		}
		if next == "" {
			return ""
		}
		f.Cursor = next
	}
}
