package stores

import (
	"context"

	"github.com/hookrun/hookrun/queue"
)

// Publisher is what ingress publishes through: the queue's publishing,
// with each accepted delivery stored beside its runs (AcceptDelivery) and
// the stores ingress reads beside it (run records, stored deliveries,
// heads).
type Publisher struct {
	q *queue.Queue
	s *Stores
}

// Publisher is the queue's publishing with these stores.
func (s *Stores) Publisher() *Publisher { return &Publisher{q: s.q, s: s} }

// Publish is the queue's Publish.
func (p *Publisher) Publish(ctx context.Context, req *queue.RunRequest) (queue.PublishResult, error) {
	return p.q.Publish(ctx, req)
}

// PublishDelivery is the queue's PublishDelivery.
func (p *Publisher) PublishDelivery(ctx context.Context, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	return p.q.PublishDelivery(ctx, reqs)
}

// Ready is the queue's Ready.
func (p *Publisher) Ready(ctx context.Context) error { return p.q.Ready(ctx) }

// AcceptDelivery is PublishDelivery that also stores the delivery d in
// hookrun_received (received.go), in the same round trip as the keys and
// all or nothing with the runs (queue.AcceptDelivery). reqs may be empty
// (a delivery no workflow takes is still stored, for a later replay); d
// nil stores nothing beside the runs. A delivery stored before (a
// redelivery) keeps its first copy. Each accepted copy is then indexed for
// the deliveries list (received.go); an index that fails is logged, the
// delivery is accepted.
func (p *Publisher) AcceptDelivery(ctx context.Context, d *Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	if d == nil {
		return p.q.AcceptDelivery(ctx, nil, reqs)
	}
	results, err := p.q.AcceptDelivery(ctx, p.s.received.entry(d), reqs)
	if err != nil {
		return nil, err
	}
	if err := p.s.received.indexed(ctx, d, results); err != nil {
		p.s.opts.Logger.Warn("a delivery is stored but not listed", "forge", d.Forge, "delivery", d.ID, "err", err)
	}
	return results, nil
}

// Runs is the run record store.
func (p *Publisher) Runs() *RunStore { return p.s.runs }

// Received is the store of accepted deliveries.
func (p *Publisher) Received() *ReceivedStore { return p.s.received }

// Heads is the store of pull request heads ingress has seen.
func (p *Publisher) Heads() *HeadStore { return p.s.heads }
