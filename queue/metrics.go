package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the queue's scrape-time gauges.
const (
	// stateMaxAge is how long one reading of the queue's state serves
	// scrapes: several scrapers (or a fast one) cost one round trip.
	stateMaxAge = 5 * time.Second
	// stateTimeout bounds one reading; a scrape never waits longer.
	stateTimeout = 2 * time.Second
)

// Collector is the queue's state as gauges, read from JetStream when
// scraped (at most once per five seconds, within two; a reading that
// fails leaves the gauges out of that scrape):
//
//   - hookrun_queue_pending_runs: run requests no runner has been handed
//     yet (the durable consumer's pending count; the stream's messages
//     before any runner created the consumer);
//   - hookrun_queue_ack_pending_runs: runs handed to a runner and not yet
//     acknowledged (executing, waiting for their group, or lost with a
//     runner until AckWait);
//   - hookrun_report_outbox_reports: final reports waiting in the outbox.
//
// durable is the runners' consumer (ConsumerConfig.Durable; "" for the
// default), outbox the store of reports (stores.OutboxStore). Every
// process sharing the queue reports the same values.
func (q *Queue) Collector(durable string, outbox Counter) prometheus.Collector {
	if durable == "" {
		durable = DefaultDurable
	}
	return &stateCollector{q: q, durable: durable, outbox: outbox,
		pending:    prometheus.NewDesc("hookrun_queue_pending_runs", "Run requests on HOOKRUN_RUNS not yet delivered to a runner.", nil, nil),
		ackPending: prometheus.NewDesc("hookrun_queue_ack_pending_runs", "Run requests delivered to a runner and not yet acknowledged.", nil, nil),
		outboxDesc: prometheus.NewDesc("hookrun_report_outbox_reports", "Final reports waiting in the outbox (hookrun_outbox) to be delivered.", nil, nil),
	}
}

// Counter counts the entries of a store.
type Counter interface {
	Count(ctx context.Context) (int, error)
}

type stateCollector struct {
	q       *Queue
	durable string
	outbox  Counter

	pending, ackPending, outboxDesc *prometheus.Desc

	mu   sync.Mutex
	at   time.Time  // when last read; zero: never
	last queueState // valid when at is set
	ok   bool       // the last reading succeeded
}

// queueState is one reading.
type queueState struct {
	pending, ackPending, outbox float64
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.ackPending
	ch <- c.outboxDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.read()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, s.pending)
	ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, s.ackPending)
	ch <- prometheus.MustNewConstMetric(c.outboxDesc, prometheus.GaugeValue, s.outbox)
}

// read returns the cached reading while it is fresh, else reads again
// (one reader at a time: concurrent scrapes share its result).
func (c *stateCollector) read() (queueState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < stateMaxAge {
		return c.last, c.ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	s, err := c.q.readState(ctx, c.durable, c.outbox)
	if err != nil {
		c.q.log.Debug("reading queue state for metrics", "err", err)
	}
	c.at, c.last, c.ok = time.Now(), s, err == nil
	return s, c.ok
}

// readState reads the consumer's counts (the stream's when there is no
// consumer yet) and counts the outbox's entries.
func (q *Queue) readState(ctx context.Context, durable string, outbox Counter) (queueState, error) {
	var s queueState
	cons, err := q.runsS.Consumer(ctx, durable)
	switch {
	case err == nil:
		info := cons.CachedInfo()
		s.pending, s.ackPending = float64(info.NumPending), float64(info.NumAckPending)
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		info, err := q.runsS.Info(ctx)
		if err != nil {
			return s, err
		}
		s.pending = float64(info.State.Msgs)
	default:
		return s, err
	}
	n, err := outbox.Count(ctx)
	if err != nil {
		return s, err
	}
	s.outbox = float64(n)
	return s, nil
}
