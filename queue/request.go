package queue

import (
	"bytes"
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
	"github.com/oklog/ulid/v2"

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
	return ulid.Make().String()
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
// and creates the queued run record. A delivery seen before maps to its
// existing run id (req.ID is set to it) and Duplicate is true. On any error
// the caller answers 503; a retry of the same delivery completes the work
// under the same run id (the delivery key is removed only when the message
// is known not to be stored). Should a message land after its key was
// removed, the consumer reconciles it with the key a retry wrote (see
// Queue.reconcile).
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
		req.CreatedAt = time.Now().UTC()
	}
	delivery := req.Event.DeliveryID
	if delivery == "" {
		delivery = req.ID
	}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.PublishTimeout)
	defer cancel()

	dkey := DeliveryKey(req.Event.Forge, delivery, req.Workflow)
	kvKey := deliveryKVKey(req.Event.Forge, delivery, req.Workflow)
	dup := false
	rev, err := q.delKV.Create(ctx, kvKey, []byte(req.ID))
	switch {
	case err == nil:
	case errors.Is(err, jetstream.ErrKeyExists):
		// A replica that serves the read may lag the one that refused
		// the create by a moment.
		e, gerr := q.delKV.Get(ctx, kvKey)
		for i := 0; i < 5 && errors.Is(gerr, jetstream.ErrKeyNotFound) && ctx.Err() == nil; i++ {
			time.Sleep(20 * time.Millisecond)
			e, gerr = q.delKV.Get(ctx, kvKey)
		}
		if gerr != nil {
			return PublishResult{}, fmt.Errorf("publishing run for delivery %s: reading delivery: %w", dkey, gerr)
		}
		req.ID = string(e.Value())
		dup = true
	default:
		return PublishResult{}, fmt.Errorf("publishing run %s: recording delivery: %w", req.ID, err)
	}

	recRev, err := q.publishAndRecord(ctx, req, dkey)
	if err != nil {
		var nf notStoredError
		if !dup && errors.As(err, &nf) {
			// Best effort, with the revision we created: the message is
			// known not to be stored, so a retry starts afresh. When the
			// outcome is unknown (a timeout) the key stays: a retry then
			// takes the duplicate path, which republishes under the same
			// Nats-Msg-Id and creates the record if absent, completing
			// whatever this attempt left half-done with the same run id.
			dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.PublishTimeout)
			if derr := q.delKV.Delete(dctx, kvKey, jetstream.LastRevision(rev)); derr != nil {
				q.log.Warn("removing delivery key after failed publish", "run", req.ID, "err", derr)
			}
			// The queued record written beside the message would otherwise
			// stay queued forever: no message will ever run it.
			if recRev != 0 {
				if derr := q.runs.delete(dctx, req.ID, recRev); derr != nil {
					q.log.Warn("removing the record of a run that was not stored", "run", req.ID, "err", derr)
				}
			}
			dcancel()
		}
		return PublishResult{}, err
	}
	return PublishResult{RunID: req.ID, Duplicate: dup}, nil
}

// publishAndRecord puts req on the stream and creates its queued record,
// concurrently, and waits for both. recRev is the revision of the record it
// created (0 when it created none).
func (q *Queue) publishAndRecord(ctx context.Context, req *RunRequest, dkey string) (recRev uint64, _ error) {
	data, err := encodeRunRequest(req)
	if err != nil {
		return 0, fmt.Errorf("publishing run %s: encoding: %w", req.ID, err)
	}
	msg := nats.NewMsg(runsSubjectPrefix + req.Workflow)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, dkey)
	fut, err := q.js.PublishMsgAsync(msg, jetstream.WithExpectStream(StreamRuns))
	if err != nil {
		return 0, notStoredError{fmt.Errorf("publishing run %s: %w", req.ID, err)}
	}

	var recErr error
	recRev, err = q.runs.Create(ctx, newQueuedRecord(req))
	if err != nil && !errors.Is(err, ErrConflict) {
		recErr = fmt.Errorf("publishing run %s: creating record: %w", req.ID, err)
	}

	select {
	case <-fut.Ok():
	case err := <-fut.Err():
		err = fmt.Errorf("publishing run %s: %w", req.ID, err)
		if definitelyNotStored(err) {
			err = notStoredError{err}
		}
		return recRev, errors.Join(err, recErr)
	case <-ctx.Done():
		return recRev, errors.Join(fmt.Errorf("publishing run %s: waiting for ack: %w", req.ID, ctx.Err()), recErr)
	}
	return recRev, recErr
}

// encodeRunRequest is json.Marshal(req) without the cost of re-validating
// and compacting Event.Raw: encoding/json runs every json.RawMessage through
// its validator and compactor, which for a 25 KB webhook body was the
// largest single cost of a publish. Raw is spliced in as it is; it must be
// valid JSON, which it is when ingress parsed it (an invalid Raw falls back
// to json.Marshal, which reports it).
func encodeRunRequest(req *RunRequest) ([]byte, error) {
	raw := req.Event.Raw
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return json.Marshal(req)
	}
	r := *req
	r.Event.Raw = nil
	data, err := json.Marshal(&r)
	if err != nil {
		return nil, err
	}
	// data ends with the event object and then the fields after it; find
	// the event's closing brace by encoding the event alone.
	ev, err := json.Marshal(&r.Event)
	if err != nil {
		return nil, err
	}
	at := bytes.Index(data, append([]byte(`"event":`), ev...))
	if at < 0 {
		return json.Marshal(req)
	}
	end := at + len(`"event":`) + len(ev) - 1 // the event's closing brace
	out := make([]byte, 0, len(data)+len(raw)+8)
	out = append(out, data[:end]...)
	out = append(out, `,"raw":`...)
	out = append(out, raw...)
	out = append(out, data[end:]...)
	return out, nil
}

// newQueuedRecord is the record of a run that was just accepted.
func newQueuedRecord(req *RunRequest) *RunRecord {
	return &RunRecord{
		ID:             req.ID,
		Workflow:       req.Workflow,
		WorkflowDigest: req.WorkflowDigest,
		Repo:           req.Event.Repo,
		Status:         workflows.StatusQueued,
		Attempt:        req.Attempt,
		Event:          req.Event,
		HeadSHA:        req.Event.HeadSHA(),
		CreatedAt:      req.CreatedAt,
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
