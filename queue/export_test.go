package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrun/hookrun/workflows"
)

// What the external tests (package queue_test, which open the stores
// beside the queue) reach inside the queue.

func (q *Queue) DelKV() jetstream.KeyValue                     { return q.delKV }
func (q *Queue) Bodies() jetstream.ObjectStore                 { return q.bodies }
func (q *Queue) SetBodies(b jetstream.ObjectStore)             { q.bodies = b }
func (q *Queue) JS() jetstream.JetStream                       { return q.js }
func (q *Queue) NC() *nats.Conn                                { return q.nc }
func (q *Queue) InlineMax() int                                { return q.inlineMax }
func (q *Queue) RunsStream() jetstream.Stream                  { return q.runsS }
func (q *Queue) Cfg() Config                                   { return q.cfg }
func (q *Queue) Srv() *server.Server                           { return q.srv }
func (q *Queue) FailAt() *func(string) error                   { return &q.failAt }
func (q *Queue) SignHeader(subject string, data []byte) string { return q.macs.header(subject, data) }

// PretendConsuming makes the queue remember what its publishes write, as
// a queue with an open consumer does, without consuming anything, until
// stop is called (before Close).
func (q *Queue) PretendConsuming() (stop func()) {
	c := new(Consumer)
	q.mu.Lock()
	q.consumers[c] = struct{}{}
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		delete(q.consumers, c)
		q.mu.Unlock()
	}
}

func (q *Queue) ReadState(ctx context.Context, durable string, outbox Counter) (queueState, error) {
	return q.readState(ctx, durable, outbox)
}

// WriteKeysAndRecords writes the delivery key and queued record of req
// as PublishDelivery does, without its message.
func (q *Queue) WriteKeysAndRecords(ctx context.Context, req *RunRequest) error {
	recs, err := q.recordsOf("writing keys and records")
	if err != nil {
		return err
	}
	ws := []*runWrite{{req: req, delivery: req.Event.DeliveryID,
		dkey:  DeliveryKey(req.Event.Forge, req.Event.DeliveryID, req.Workflow),
		kvKey: deliveryKVKey(req.Event.Forge, req.Event.DeliveryID, req.Workflow)}}
	return (&accept{q: q, recs: recs, ws: ws}).writeKeysAndRecords(ctx)
}

func (c *Config) SetDefaults()         { c.setDefaults() }
func (c *ConsumerConfig) SetDefaults() { c.setDefaults() }

// MACHeader is the authenticator of a run request under key.
func MACHeader(key []byte, subject string, data []byte) string {
	return newMacer(key).header(subject, data)
}

// ResetCollector makes the state collector c read afresh at its next scrape.
func ResetCollector(c prometheus.Collector) {
	s := c.(*stateCollector)
	s.mu.Lock()
	s.at = time.Time{}
	s.mu.Unlock()
}

// RetryAfter is the delay of a Retry error.
func RetryAfter(err error) (time.Duration, bool) {
	r, ok := err.(*retryError)
	if !ok {
		return 0, false
	}
	return r.after, true
}

// GoldenEvent is the event of the golden files.
func GoldenEvent() workflows.Event {
	return workflows.Event{
		Forge: workflows.Forge("github"), Kind: workflows.KindPullRequest, Action: "opened",
		DeliveryID: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		Repo:       "Codertocat/Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git",
		Sender: "Codertocat", AuthorAssociation: "OWNER",
		PullRequest: &workflows.PullRequest{Number: 2, Title: "Update the README with new information.",
			HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "changes", BaseRef: "master"},
		Raw: json.RawMessage(`{"action":"opened","number":2}`),
	}
}

var (
	TestRequest      = testRequest
	DecodeRunRequest = decodeRunRequest
	EncodeRunRequest = encodeRunRequest
	DeliveryKVKey    = deliveryKVKey
	ObjectKVKey      = objectKVKey
	SplitHostPort    = splitHostPort
)

const (
	RunsSubjectPrefix = runsSubjectPrefix
	StateMaxAge       = stateMaxAge
	FailBody          = failBody
	FailKeys          = failKeys
	FailRecordAck     = failRecordAck
	FailRecords       = failRecords
	FailMessages      = failMessages
	FailAck           = failAck
)
