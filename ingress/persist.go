package ingress

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// Persisting a delivery's runs: every path that starts runs (a webhook
// delivery, a replay, a re-run, a chat command, an API start) ends here. The runs of one
// delivery are persisted all or nothing, with the delivery itself when an
// acceptor stores deliveries; each re-run is then linked to the run it
// re-runs. Each is measured here (publish latency) and, with tracing on,
// is a "publish" span whose context the queue writes into every run
// message.

// DeliveryAcceptor persists a delivery and its runs, all or nothing
// (*stores.Publisher): the delivery is stored for replays.
type DeliveryAcceptor interface {
	AcceptDelivery(ctx context.Context, d *stores.Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error)
}

// RerunLinker notes a re-run on the run it re-runs (*stores.RunStore).
type RerunLinker interface {
	LinkRerun(ctx context.Context, id, rerun string) error
}

// persister persists the runs of one delivery.
type persister struct {
	pub      Publisher
	acceptor DeliveryAcceptor // nil: deliveries are not stored
	runs     RerunLinker      // nil: re-runs are not linked back
	logger   *slog.Logger
	tracer   trace.Tracer        // nil: tracing off
	latency  prometheus.Observer // the time to persist a delivery's runs
}

// accept persists a delivery, all or nothing: its runs, and the delivery
// itself (stored for replays) when there is an acceptor. d nil stores only
// the runs.
func (p *persister) accept(ctx context.Context, d *stores.Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	if p.acceptor == nil || d == nil {
		if len(reqs) == 0 {
			return nil, nil
		}
		return p.publishAll(ctx, reqs)
	}
	return p.measured(ctx, len(reqs), func(ctx context.Context) ([]queue.PublishResult, error) {
		results, err := p.acceptor.AcceptDelivery(ctx, d, reqs)
		if err != nil {
			return nil, fmt.Errorf("persisting the delivery and its %d runs: %w", len(reqs), err)
		}
		return p.persisted(ctx, reqs, results)
	})
}

// publishAll publishes the runs of one delivery, all or nothing, and
// returns their results in request order.
func (p *persister) publishAll(ctx context.Context, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	return p.measured(ctx, len(reqs), func(ctx context.Context) ([]queue.PublishResult, error) {
		results, err := p.pub.PublishDelivery(ctx, reqs)
		if err != nil {
			return nil, fmt.Errorf("publishing the delivery's %d runs: %w", len(reqs), err)
		}
		return p.persisted(ctx, reqs, results)
	})
}

// measured runs persist within a "publish" span (with tracing on) and
// observes its time when there are runs (a delivery stored alone is not a
// publish).
func (p *persister) measured(ctx context.Context, runs int, persist func(context.Context) ([]queue.PublishResult, error)) ([]queue.PublishResult, error) {
	if runs > 0 && p.latency != nil {
		defer func(start time.Time) { p.latency.Observe(time.Since(start).Seconds()) }(time.Now())
	}
	if p.tracer == nil {
		return persist(ctx)
	}
	ctx, span := p.tracer.Start(ctx, "publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.AttrRuns.Int(runs)))
	defer span.End()
	results, err := persist(ctx)
	if err != nil {
		span.SetStatus(codes.Error, "publishing failed")
		return nil, err
	}
	dups, ids := 0, make([]string, len(results))
	for i, r := range results {
		ids[i] = r.RunID
		if r.Duplicate {
			dups++
		}
	}
	span.SetAttributes(attribute.StringSlice("hookrun.run.ids", ids), attribute.Int("hookrun.runs.duplicate", dups))
	return results, nil
}

// persisted checks what the queue returned for reqs and links the re-runs
// among them.
func (p *persister) persisted(ctx context.Context, reqs []*queue.RunRequest, results []queue.PublishResult) ([]queue.PublishResult, error) {
	if err := checkResults(reqs, results); err != nil {
		return nil, err
	}
	p.linkReruns(ctx, reqs, results)
	return results, nil
}

// publish persists one run that belongs to no delivery (an API start).
func (p *persister) publish(ctx context.Context, req *queue.RunRequest) (queue.PublishResult, error) {
	results, err := p.measured(ctx, 1, func(ctx context.Context) ([]queue.PublishResult, error) {
		res, err := p.pub.Publish(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("publishing run of workflow %s: %w", req.Workflow, err)
		}
		return []queue.PublishResult{res}, nil
	})
	if err != nil {
		return queue.PublishResult{}, err
	}
	return results[0], nil
}

// checkResults checks what the queue returned for a delivery's runs.
func checkResults(reqs []*queue.RunRequest, results []queue.PublishResult) error {
	if len(results) != len(reqs) {
		return fmt.Errorf("publishing the delivery's %d runs: the queue returned %d results", len(reqs), len(results))
	}
	for i, r := range results {
		if r.RunID == "" {
			return fmt.Errorf("publishing run of workflow %s: queue returned no run id", reqs[i].Workflow)
		}
	}
	return nil
}

// linkReruns notes each re-run on the run it re-runs (the other direction
// of its record's rerun_of). A failure is logged: the re-run is queued.
func (p *persister) linkReruns(ctx context.Context, reqs []*queue.RunRequest, results []queue.PublishResult) {
	if p.runs == nil {
		return
	}
	for i, r := range reqs {
		if r.RerunOf == "" || results[i].SameObject {
			// Another delivery's run of the same /retry: linked by it.
			continue
		}
		if err := p.runs.LinkRerun(ctx, r.RerunOf, results[i].RunID); err != nil {
			p.logger.Error("linking a re-run to its run", "run", r.RerunOf, "rerun", results[i].RunID, "err", err)
		}
	}
}

var (
	_ DeliveryAcceptor = (*stores.Publisher)(nil)
	_ RerunLinker      = (*stores.RunStore)(nil)
)

// describe notes on d, before it is stored, what ingress decided of it:
// the event's kind and repository, the headers that say what was sent,
// each workflow considered and the runs queued (dec.Runs; dec.Skipped
// and dec.Refused for the others).
func describe(d *stores.Received, h http.Header, ev *workflows.Event, dec decide.Decision) {
	d.Kind, d.Repo, d.Headers = string(ev.Kind), ev.Repo, tellingHeaders(h)
	for _, r := range dec.Runs {
		d.Runs = append(d.Runs, stores.ReceivedRun{ID: r.ID, Workflow: r.Workflow, RerunOf: r.RerunOf, Refused: r.Refused})
		if !slices.ContainsFunc(d.Workflows, func(c stores.Considered) bool { return c.Workflow == r.Workflow }) {
			d.Workflows = append(d.Workflows, stores.Considered{Workflow: r.Workflow, Matched: true, Ran: true})
		}
	}
	for _, k := range dec.Skipped {
		d.Workflows = append(d.Workflows, stores.Considered{Workflow: k.Workflow, Reason: k.Reason,
			Matched: k.Workflow != "" && slices.Contains(dec.Refused, k.Workflow)})
	}
}

// maxHeaderValue bounds each header value a stored delivery keeps.
const maxHeaderValue = 256

// tellingHeaders are the request headers that say what was sent: the
// content's type and length, the user agent and the X- headers (the
// forge's event, delivery, hook, instance), never one whose name says it
// carries a secret (a token, a signature, a key, authorization, a cookie).
func tellingHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for name, vs := range h {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "x-") && lower != "user-agent" && lower != "content-type" && lower != "content-length" {
			continue
		}
		if slices.ContainsFunc(secretHeaderWords, func(w string) bool { return strings.Contains(lower, w) }) {
			continue
		}
		v := strings.Join(vs, ", ")
		if len(v) > maxHeaderValue {
			v = v[:maxHeaderValue] + "…"
		}
		out[name] = v
	}
	return out
}

// secretHeaderWords mark a header that may carry a secret.
var secretHeaderWords = []string{"token", "signature", "secret", "key", "auth", "cookie", "password"}
