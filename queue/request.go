package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// WireVersion is the RunRequest format this build writes and reads.
const WireVersion = 1

// RunRequest is what ingress puts on HOOKRUN_RUNS for a runner to execute:
// one workflow for one event.
type RunRequest struct {
	V              int             `json:"v"`               // WireVersion
	ID             string          `json:"id"`              // run id (ULID)
	Workflow       string          `json:"workflow"`        // workflow name
	WorkflowDigest string          `json:"workflow_digest"` // content digest of the workflow file that matched
	Event          workflows.Event `json:"event"`           // the normalized event, Raw included
	Attempt        int             `json:"attempt"`         // 1 for a fresh run; higher for a manual re-run
	CreatedAt      time.Time       `json:"created_at"`      // when ingress accepted the event
	// Refused, when set, says why this run must not execute although its
	// event matched and was authorized (ingress could not pin the head of
	// the commented pull request): the runner fails the run with this
	// message at claim, reports it, and neither prepares a workspace nor
	// executes a step. Optional and omitted when empty, so the wire format
	// of every other request is unchanged; a runner older than the field
	// would ignore it, so upgrade runners before ingress.
	Refused string `json:"refused,omitempty"`
	// Params are values for the workflow's params given with a run started
	// through the API (POST /api/v1/workflows/{name}/runs). Untrusted text:
	// the runner sets them as environment variables, never as shell source.
	// Optional and omitted when empty, like Refused.
	Params map[string]string `json:"params,omitempty"`
}

// decodeRunRequest parses a message body and checks its version.
func decodeRunRequest(data []byte) (*RunRequest, error) {
	var r RunRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding run request: %w", err)
	}
	if r.V != WireVersion {
		return nil, fmt.Errorf("decoding run request: unknown wire version %d", r.V)
	}
	if r.ID == "" || !validToken(r.Workflow) {
		return nil, errors.New("decoding run request: missing id or workflow")
	}
	return &r, nil
}

// NewRunID returns a new ULID: unique, and sortable by creation time.
func NewRunID() string {
	return newULID(time.Now())
}

// DeliveryKey identifies one workflow run of one webhook delivery; it is the
// Nats-Msg-Id of the run request.
func DeliveryKey(forge workflows.Forge, delivery, workflow string) string {
	return string(forge) + ":" + delivery + ":" + workflow
}

var kvSafe = regexp.MustCompile(`^[-_=a-zA-Z0-9]+$`)

// deliveryKVKey maps a delivery key to a hookrun_deliveries key: readable
// when its parts are KV-safe, else a hash.
func deliveryKVKey(forge workflows.Forge, delivery, workflow string) string {
	if kvSafe.MatchString(string(forge)) && kvSafe.MatchString(delivery) && kvSafe.MatchString(workflow) && len(delivery) <= 128 {
		return string(forge) + "." + delivery + "." + workflow
	}
	sum := sha256.Sum256([]byte(DeliveryKey(forge, delivery, workflow)))
	return "h." + hex.EncodeToString(sum[:])
}

// PublishResult is the outcome of Publish.
type PublishResult struct {
	RunID     string // the run this delivery maps to
	Duplicate bool   // the delivery was seen before; RunID is the earlier run
}

// Publish makes req durable: it records the delivery in hookrun_deliveries
// (create-only), puts req on HOOKRUN_RUNS with Nats-Msg-Id = DeliveryKey
// and creates the queued run record: the key first, then the message and
// the record together (two round trips; see docs/performance.md). A
// delivery seen before maps to its existing run id (req.ID is set to it)
// and Duplicate is true. On any error the caller answers 503; a retry of
// the same delivery completes the work under the same run id (the delivery
// key is removed only when the message is known not to be stored). A
// message that lands under another id than its delivery key names (a
// failed attempt's, or a redelivery's after the duplicate window) is
// reconciled with the key by the consumer (see Queue.reconcile).
//
// An empty req.ID gets NewRunID(); an empty Event.DeliveryID uses the run
// id (no dedupe across calls); V, Attempt and CreatedAt are defaulted.
func (q *Queue) Publish(ctx context.Context, req *RunRequest) (PublishResult, error) {
	if req.ID == "" {
		req.ID = NewRunID()
	}
	if !validToken(req.Workflow) {
		return PublishResult{}, fmt.Errorf("publishing run %s: invalid workflow name %q", req.ID, req.Workflow)
	}
	if req.V == 0 {
		req.V = WireVersion
	}
	if req.Attempt == 0 {
		req.Attempt = 1
	}
	if req.CreatedAt.IsZero() {
		req.CreatedAt = q.runs.now()
	}
	delivery := req.Event.DeliveryID
	if delivery == "" {
		delivery = req.ID
	}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.PublishTimeout)
	defer cancel()

	dkey := DeliveryKey(req.Event.Forge, delivery, req.Workflow)
	kvKey := deliveryKVKey(req.Event.Forge, delivery, req.Workflow)
	// The delivery key first: only the attempt that creates it publishes
	// a message under its own run id, so the stream's run ids are the ones
	// the answers name.
	keyW := q.createAsync(kvSubject(BucketDelivery, kvKey), []byte(req.ID))
	keyW.wait(ctx)
	id, dup, keyRev, err := q.settleDeliveryKey(ctx, keyW, kvKey, req.ID)
	if err != nil {
		return PublishResult{}, fmt.Errorf("publishing run %s: recording delivery: %w", req.ID, err)
	}
	req.ID = id

	// Then the message and the queued record, together: one round trip.
	data, err := appendRunRequest(getMsgBuf(), req)
	if err != nil {
		return PublishResult{}, fmt.Errorf("publishing run %s: encoding: %w", req.ID, err)
	}
	rec, err := encodeRecord(q.runs.queued(req))
	if err != nil {
		return PublishResult{}, fmt.Errorf("publishing run %s: encoding record: %w", req.ID, err)
	}
	msg := nats.NewMsg(runsSubjectPrefix + req.Workflow)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, dkey)
	msgW := q.publishAsync(msg, jetstream.WithExpectStream(StreamRuns))
	recW := q.createAsync(kvSubject(BucketRuns, req.ID), rec)
	msgW.wait(ctx)
	recW.wait(ctx)
	if msgW.err == nil {
		// Acknowledged: the client holds the message no more.
		putMsgBuf(data)
	}
	recErr := recW.err
	if recErr != nil && isWrongLastSeq(recErr) {
		recErr = nil // an earlier attempt of this delivery created it
	}

	if dup {
		// Republished under the same Nats-Msg-Id, which completes
		// whatever an earlier, failed attempt of this delivery left
		// undone (its message, its record) with the same run id.
		if err := errors.Join(msgW.err, recErr); err != nil {
			return PublishResult{}, fmt.Errorf("publishing run %s: %w", req.ID, err)
		}
		return PublishResult{RunID: req.ID, Duplicate: true}, nil
	}

	if msgW.err != nil {
		err := fmt.Errorf("publishing run %s: %w", req.ID, msgW.err)
		if definitelyNotStored(msgW.err) {
			// Best effort, with the revisions written: the message is
			// known not to be stored, so a retry starts afresh. When the
			// outcome is unknown (a timeout) the key stays: a retry then
			// takes the duplicate path, which republishes under the same
			// Nats-Msg-Id and creates the record if absent, completing
			// whatever this attempt left half-done with the same run id.
			dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.PublishTimeout)
			if derr := q.delKV.Delete(dctx, kvKey, jetstream.LastRevision(keyRev)); derr != nil {
				q.log.Warn("removing delivery key after failed publish", "run", req.ID, "err", derr)
			}
			// The queued record would otherwise stay queued forever: no
			// message will ever run it.
			if recW.err == nil {
				if derr := q.runs.delete(dctx, req.ID, recW.ack.Sequence); derr != nil {
					q.log.Warn("removing the record of a run that was not stored", "run", req.ID, "err", derr)
				}
			}
			dcancel()
		}
		return PublishResult{}, err
	}
	if recErr != nil {
		// The message is stored; the consumer creates a missing record,
		// but the caller must not say 2xx on a write that failed.
		return PublishResult{}, fmt.Errorf("publishing run %s: creating record: %w", req.ID, recErr)
	}
	return PublishResult{RunID: req.ID}, nil
}

// settleDeliveryKey interprets the create-only write of the delivery key.
// It returns the run id the delivery maps to, whether that is an earlier
// run's (dup), and the key's revision when this attempt wrote it. A
// refused create (the key exists, or holds a delete marker, or the outcome
// was lost) is settled by jetstream's own Create, which handles markers,
// and a read.
func (q *Queue) settleDeliveryKey(ctx context.Context, w *pendingWrite, kvKey, id string) (runID string, dup bool, rev uint64, _ error) {
	if w.err == nil {
		return id, false, w.ack.Sequence, nil
	}
	rev, err := q.delKV.Create(ctx, kvKey, []byte(id))
	if err == nil {
		return id, false, rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return "", false, 0, err
	}
	// A replica that serves the read may lag the one that refused the
	// create by a moment.
	e, gerr := q.delKV.Get(ctx, kvKey)
	for i := 0; i < 5 && errors.Is(gerr, jetstream.ErrKeyNotFound) && ctx.Err() == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		e, gerr = q.delKV.Get(ctx, kvKey)
	}
	if gerr != nil {
		return "", false, 0, fmt.Errorf("reading delivery: %w", gerr)
	}
	existing := string(e.Value())
	if existing == id {
		// This attempt's own write landed although its answer was lost.
		return id, false, e.Revision(), nil
	}
	return existing, true, 0, nil
}

// pendingWrite is one asynchronous JetStream publish and, after wait, its
// outcome.
type pendingWrite struct {
	fut jetstream.PubAckFuture
	ack *jetstream.PubAck
	err error
}

func (q *Queue) publishAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) *pendingWrite {
	fut, err := q.js.PublishMsgAsync(msg, opts...)
	if err != nil {
		return &pendingWrite{err: notStoredError{err}}
	}
	return &pendingWrite{fut: fut}
}

// wait blocks until the write is acknowledged or refused, or ctx ends.
func (w *pendingWrite) wait(ctx context.Context) {
	if w.fut == nil || w.ack != nil || w.err != nil {
		return
	}
	select {
	case ack := <-w.fut.Ok():
		w.ack = ack
	case err := <-w.fut.Err():
		if definitelyNotStored(err) {
			err = notStoredError{err}
		}
		w.err = err
	case <-ctx.Done():
		w.err = fmt.Errorf("waiting for ack: %w", ctx.Err())
	}
}

// notStoredError marks a publish failure after which the message is known
// not to be in the stream.
type notStoredError struct{ err error }

func (e notStoredError) Error() string { return e.err.Error() }
func (e notStoredError) Unwrap() error { return e.err }

// definitelyNotStored: the stream refused the message or nobody served it
// (as opposed to a timeout, after which it may have been stored).
func definitelyNotStored(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}
