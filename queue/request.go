package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
	// Body, when set, names the hookrun_bodies object that holds
	// Event.Raw, which was too large to travel inside the request (and is
	// then absent from it); the consumer reads it back before the handler
	// sees the request. Optional and omitted when empty; a runner older
	// than the field would run without the body, so upgrade runners
	// before ingress.
	Body string `json:"body,omitempty"`
	// BodyDigest is the SHA-256 ("sha256:<hex>") of the body Body names,
	// set with it: the consumer refuses a stored body that does not match
	// (the object store is as reachable as the stream; the request's
	// authenticator covers this digest, reqauth.go). Optional and omitted
	// when Body is empty.
	BodyDigest string `json:"body_digest,omitempty"`
	// Command tells apart the runs of one workflow that one delivery
	// started: a comment with several command lines runs the workflow once
	// per line, and the n-th line's run (n ≥ 1, counting from 0) has
	// Command n. Zero, and omitted, for every other run.
	Command int `json:"command,omitempty"`
	// RerunOf is the run this one re-runs (POST /api/v1/runs/{id}/rerun,
	// a /retry comment, ingress/rerun.go); CommentID is that run's sticky
	// comment, which the new record starts with so that the reporter
	// edits it. Origin is the stored delivery (hookrun_received) of the
	// event when Event.DeliveryID is a derived one (a re-run's or a
	// replay's). All optional and omitted when empty; they only reach the
	// record.
	RerunOf   string `json:"rerun_of,omitempty"`
	CommentID int64  `json:"comment_id,omitempty"`
	Origin    string `json:"origin,omitempty"`
	// Object, when set, is what the forge's object and its version are
	// (ingress's objectKey: a comment and its command line, a pull
	// request at a head and time, a push's ref and SHAs): PublishDelivery
	// then also dedupes the run by (forge, Object, Workflow) in
	// hookrun_deliveries beside its delivery key, so that the same event
	// under another delivery id maps to the run it started. Empty for
	// re-runs, replays, API runs and schedules, which dedupe by their
	// delivery id alone. Not part of the message.
	Object string `json:"-"`
}

// dedupeName is the workflow part of the request's delivery key: the
// workflow name, with the command's place after a "~" (which no workflow
// name has) for a comment's second command line and later.
func (r *RunRequest) dedupeName() string {
	if r.Command == 0 {
		return r.Workflow
	}
	return r.Workflow + "~" + strconv.Itoa(r.Command)
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

// ObjectKey identifies one workflow run of one forge object (RunRequest.Object);
// it is the Nats-Msg-Id of such a run's request, so that JetStream's
// duplicate window drops the message of a re-sent event too.
func ObjectKey(forge workflows.Forge, object, workflow string) string {
	return string(forge) + ":" + objectKVKey(forge, object, workflow) + ":" + workflow
}

// objectKVKey is the hookrun_deliveries key of a run's object: "o." and a
// digest (objects hold untrusted text). Delivery keys start with a forge
// name or "h.", so the two never meet.
func objectKVKey(forge workflows.Forge, object, workflow string) string {
	h := sha256.New()
	h.Write([]byte(forge))
	h.Write([]byte{0})
	h.Write([]byte(workflow))
	h.Write([]byte{0})
	h.Write([]byte(object))
	var sum [sha256.Size]byte
	return "o." + hex.EncodeToString(h.Sum(sum[:0]))
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
	// SameObject: the run is another delivery's of the same object
	// (RunRequest.Object), not this delivery's own (Duplicate is set too).
	SameObject bool
}

// Publish makes one run request durable: PublishDelivery of a delivery
// with one run.
func (q *Queue) Publish(ctx context.Context, req *RunRequest) (PublishResult, error) {
	res, err := q.PublishDelivery(ctx, []*RunRequest{req})
	if err != nil {
		return PublishResult{}, err
	}
	return res[0], nil
}

// PublishDelivery makes the run requests of one webhook delivery durable,
// all or nothing, and returns their results in order. Each request's
// delivery key is created in hookrun_deliveries (create-only), then its
// queued record under the run id the key holds; then the messages go onto
// HOOKRUN_RUNS with Nats-Msg-Id = DeliveryKey, as one atomic batch when
// there are several (a single message is atomic by itself). The messages
// are the commit point and the last write: a runner can only see a run
// whose key and record exist, and a publish that fails before or at the
// commit, known not stored, removes every key and record it wrote, so the
// caller's 503 leaves nothing and the forge's redelivery starts afresh.
//
// A commit whose outcome is unknown (a timeout: the batch may be stored
// and its runs may start) leaves keys and records: the redelivery finds
// the keys and takes the duplicate path, which maps each run to its
// earlier id, creates a missing record and publishes again under the same
// Nats-Msg-Id, completing the delivery with the same run ids. A delivery
// seen before maps to its existing run ids (each req.ID is set to its run's)
// with Duplicate set. A message that lands under another id than its
// delivery key names (after the duplicate window, or after a key's
// expiry) is reconciled with the key by the consumer (Queue.reconcile).
//
// An empty req.ID gets NewRunID(); an empty Event.DeliveryID uses the run
// id (no dedupe across calls); V, Attempt and CreatedAt are defaulted.
func (q *Queue) PublishDelivery(ctx context.Context, reqs []*RunRequest) ([]PublishResult, error) {
	return q.AcceptDelivery(ctx, nil, reqs)
}

// AcceptDelivery is PublishDelivery that also stores the delivery d itself
// in hookrun_received (received.go), in the same round trip as the keys
// and all or nothing with the runs: a failure that removes the runs'
// keys removes the stored delivery this call wrote. reqs may be empty (a
// delivery no workflow takes is still stored, for a later replay); d nil
// stores nothing beside the runs. A delivery stored before (a redelivery)
// keeps its first copy.
func (q *Queue) AcceptDelivery(ctx context.Context, d *Received, reqs []*RunRequest) ([]PublishResult, error) {
	if len(reqs) == 0 && d == nil {
		return nil, nil
	}
	if len(reqs) > 0 && q.macs == nil {
		return nil, errors.New("publishing runs: no request key is configured (queue.Config.RequestKey)")
	}
	ws := make([]*runWrite, len(reqs))
	traceID := traceIDOf(ctx)
	for i, req := range reqs {
		if req.ID == "" {
			req.ID = NewRunID()
		}
		if !validToken(req.Workflow) {
			return nil, fmt.Errorf("publishing run %s: invalid workflow name %q", req.ID, req.Workflow)
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
		ws[i] = &runWrite{req: req, traceID: traceID, delivery: delivery, dkey: DeliveryKey(req.Event.Forge, delivery, req.dedupeName()),
			kvKey: deliveryKVKey(req.Event.Forge, delivery, req.dedupeName())}
		if req.Object != "" {
			ws[i].objKey = objectKVKey(req.Event.Forge, req.Object, req.Workflow)
			ws[i].dkey = ObjectKey(req.Event.Forge, req.Object, req.Workflow)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.PublishTimeout)
	defer cancel()

	var (
		rw     *receivedWrite
		bodies []string
		err    error
	)
	if d != nil {
		var created string
		rw, created, err = q.newReceivedWrite(ctx, d)
		if created != "" {
			bodies = append(bodies, created)
		}
	}
	if err == nil {
		var more []string
		more, err = q.storeBodies(ctx, ws)
		bodies = append(bodies, more...)
	}
	if err == nil {
		err = q.inject(failBody)
	}
	if err != nil {
		q.deleteBodies(ctx, bodies)
		return nil, err
	}
	if err := q.writeKeysAndRecords(ctx, ws, rw); err != nil {
		q.rollback(ctx, ws)
		q.dropReceived(ctx, rw)
		q.deleteBodies(ctx, bodies)
		return nil, err
	}
	if len(ws) == 0 {
		return []PublishResult{}, nil
	}
	stored, err := q.publishMessages(ctx, ws)
	if err != nil {
		if !stored {
			q.rollback(ctx, ws)
			q.dropReceived(ctx, rw)
			q.deleteBodies(ctx, bodies)
		}
		return nil, err
	}
	results := make([]PublishResult, len(ws))
	for i, w := range ws {
		results[i] = PublishResult{RunID: w.req.ID, Duplicate: w.dup, SameObject: w.sameObject}
	}
	return results, nil
}

// runWrite is what PublishDelivery knows of one run of the delivery.
type runWrite struct {
	req         *RunRequest
	traceID     string // the trace of the caller's span, for the record; "" without one
	delivery    string // the delivery id (the run id when the event has none)
	dkey, kvKey string
	dup         bool         // the key was an earlier attempt's; req.ID is now its run id
	objKey      string       // the object key (RunRequest.Object), "" without one
	objRev      uint64       // the object key's revision when this attempt created it
	sameObject  bool         // dup through the object key: another delivery's run
	body        string       // the hookrun_bodies object of a body too large to travel inline
	bodyDigest  string       // RunRequest.BodyDigest of body
	keyRev      uint64       // the delivery key's revision when this attempt created it
	recs        []writtenRec // records this attempt created
}

// writtenRec is a record a publish created, which its rollback removes.
type writtenRec struct {
	id  string
	rev uint64 // 0: the write's outcome is unknown
}

// dropRecord removes a record a publish wrote, at its revision.
func (q *Queue) dropRecord(ctx context.Context, r writtenRec) error {
	if r.rev == 0 {
		return fmt.Errorf("removing run record %s: its write's outcome is unknown", r.id)
	}
	return q.runs.delete(ctx, r.id, r.rev)
}

// writeKeysAndRecords creates every run's delivery key and object key
// (one round trip), settles them (settleObjectKey), then creates the queued record of each run under the id
// its key holds (a second round trip; an earlier attempt's record stays).
// A record is written only once its key is known to hold its id, so no
// record can ever land for an id no key names. Every write that landed, or
// may land, is noted for the rollback. The stored delivery rw, when there
// is one, travels with the keys.
func (q *Queue) writeKeysAndRecords(ctx context.Context, ws []*runWrite, rw *receivedWrite) error {
	q.startReceived(rw)
	keyWs := make([]*pendingWrite, len(ws))
	objWs := make([]*pendingWrite, len(ws))
	for i, w := range ws {
		keyWs[i] = q.createAsync(kvSubject(BucketDelivery, w.kvKey), []byte(w.req.ID))
		if w.objKey != "" {
			objWs[i] = q.createAsync(kvSubject(BucketDelivery, w.objKey), []byte(w.req.ID))
		}
	}
	var errs []error
	if err := q.settleReceived(ctx, rw); err != nil {
		errs = append(errs, err)
	}
	for i, w := range ws {
		keyWs[i].wait(ctx)
		id, dup, rev, err := q.settleDeliveryKey(ctx, keyWs[i], w.kvKey, w.req.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing run %s: recording delivery: %w", w.req.ID, err))
			continue
		}
		fresh := w.req.ID
		w.keyRev, w.dup, w.req.ID = rev, dup, id
		if objWs[i] != nil {
			objWs[i].wait(ctx)
			if err := q.settleObjectKey(ctx, objWs[i], w, fresh); err != nil {
				errs = append(errs, fmt.Errorf("publishing run %s: recording its object: %w", w.req.ID, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := q.inject(failKeys); err != nil {
		return err
	}

	recWs := make([]*pendingWrite, len(ws))
	for i, w := range ws {
		rec, err := encodeRecord(q.runs.queued(w.req, w.traceID))
		if err != nil {
			return fmt.Errorf("publishing run %s: encoding record: %w", w.req.ID, err)
		}
		recWs[i] = q.createAsync(kvSubject(BucketRuns, w.req.ID), rec)
	}
	for i, w := range ws {
		recWs[i].wait(ctx)
		if err := q.inject(failRecordAck); err != nil && recWs[i].err == nil {
			recWs[i].ack, recWs[i].err = nil, err
		}
		switch err := recWs[i].err; {
		case err == nil:
			w.recs = append(w.recs, writtenRec{w.req.ID, recWs[i].ack.Sequence})
			q.runs.wrote(recWs[i].ack.Sequence)
		case isWrongLastSeq(err):
			// An earlier attempt of the delivery (or a caller's retry
			// under the same run id) created it.
		default:
			if !definitelyNotStored(err) {
				// It may land yet, even after a rollback looked for it
				// (a write replayed on reconnect, a proposal committed
				// late): the rollback leaves this run's key, so that the
				// redelivery completes the run under this id.
				w.recs = append(w.recs, writtenRec{w.req.ID, 0})
			}
			errs = append(errs, fmt.Errorf("publishing run %s: creating record: %w", w.req.ID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return q.inject(failRecords)
}

// publishMessages puts the messages of ws on HOOKRUN_RUNS, as one atomic
// batch when there are several. stored says whether, after an error,
// some of them may be stored (the outcome is unknown): then nothing may
// be rolled back.
func (q *Queue) publishMessages(ctx context.Context, ws []*runWrite) (stored bool, _ error) {
	msgs := make([]*nats.Msg, len(ws))
	for i, w := range ws {
		req := w.req
		if w.body != "" {
			r := *w.req
			r.Event.Raw, r.Body, r.BodyDigest = nil, w.body, w.bodyDigest
			req = &r
		}
		data, err := appendRunRequest(getMsgBuf(), req)
		if err != nil {
			return false, fmt.Errorf("publishing run %s: encoding: %w", w.req.ID, err)
		}
		m := nats.NewMsg(runsSubjectPrefix + w.req.Workflow)
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, w.dkey)
		m.Header.Set(HeaderMAC, q.macs.header(m.Subject, data))
		injectTrace(ctx, m.Header)
		msgs[i] = m
	}
	var pw *pendingWrite
	if err := q.inject(failMessages); err != nil {
		pw = &pendingWrite{err: notStoredError{err}}
	} else if len(msgs) == 1 {
		pw = q.publishAsync(msgs[0], jetstream.WithExpectStream(StreamRuns))
		pw.wait(ctx)
	} else {
		// A stream takes at most 50 atomic batches in flight and abandons
		// the others as incomplete: this process keeps its own below that.
		select {
		case q.batchSlots <- struct{}{}:
			pw = q.publishBatch(msgs)
			pw.wait(ctx)
			<-q.batchSlots
		case <-ctx.Done():
			pw = &pendingWrite{err: notStoredError{fmt.Errorf("waiting to publish a batch: %w", ctx.Err())}}
		}
	}
	if pw.err == nil {
		pw.err = q.inject(failAck)
	}
	switch {
	case pw.err == nil:
	case isBatchDuplicate(pw.err):
		// Some message of the batch is stored already, within the
		// duplicate window: an earlier attempt of this delivery committed
		// (its outcome was unknown to it) or a concurrent one did. One by
		// one, each message is then stored or found a duplicate.
		pws := make([]*pendingWrite, len(msgs))
		for i, m := range msgs {
			for _, h := range []string{headerBatchID, headerBatchSeq, headerBatchCommit} {
				m.Header.Del(h)
			}
			pws[i] = q.publishAsync(m, jetstream.WithExpectStream(StreamRuns))
		}
		var errs []error
		for i, p := range pws {
			p.wait(ctx)
			if p.err != nil {
				errs = append(errs, fmt.Errorf("publishing run %s: %w", ws[i].req.ID, p.err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return true, err
		}
	case definitelyNotStored(pw.err):
		return false, fmt.Errorf("publishing %s: %w", runsOf(ws), pw.err)
	default:
		q.log.Warn("outcome of a delivery's run messages unknown; its keys and records stay for the redelivery to complete", "runs", runsOf(ws), "err", pw.err)
		return true, fmt.Errorf("publishing %s: %w", runsOf(ws), pw.err)
	}
	// Acknowledged: the client holds the messages no more.
	for _, m := range msgs {
		putMsgBuf(m.Data)
	}
	return true, nil
}

// Headers of JetStream's atomic batch publish (nats-server 2.12+).
const (
	headerBatchID     = "Nats-Batch-Id"
	headerBatchSeq    = "Nats-Batch-Sequence"
	headerBatchCommit = "Nats-Batch-Commit"
)

// jsErrCodeBatchDuplicate: an atomic batch was refused, whole, because one
// of its Nats-Msg-Ids is stored already (nats-server's
// JSAtomicPublishContainsDuplicateMessageErr).
const jsErrCodeBatchDuplicate jetstream.ErrorCode = 10201

func isBatchDuplicate(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeBatchDuplicate
}

// publishBatch sends msgs as one atomic batch: every message but the last
// without a reply (the stream stages it), the last with the commit header
// and the batch's only acknowledgement. The stream stores all of them or
// none.
func (q *Queue) publishBatch(msgs []*nats.Msg) *pendingWrite {
	id := NewRunID()
	for i, m := range msgs {
		m.Header.Set(headerBatchID, id)
		m.Header.Set(headerBatchSeq, strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := q.nc.PublishMsg(m); err != nil {
				// The stream abandons the incomplete batch.
				return &pendingWrite{err: notStoredError{fmt.Errorf("staging batch message %d: %w", i+1, err)}}
			}
			continue
		}
		m.Header.Set(headerBatchCommit, "1")
	}
	return q.publishAsync(msgs[len(msgs)-1], jetstream.WithExpectStream(StreamRuns))
}

// rollback removes, best effort, every key and record a failed publish
// wrote: records first, and a run's key only once its records are gone, so
// that what stays after a failure here (a key) makes the redelivery take
// the duplicate path and complete the run, never a queued record without
// a key that nothing would run. A run one of whose records was written
// with an unknown outcome keeps its key and records for the same reason.
func (q *Queue) rollback(ctx context.Context, ws []*runWrite) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.PublishTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for _, r := range w.recs {
				if r.rev == 0 {
					q.log.Warn("a record of a failed publish may land yet; its delivery key stays for the redelivery", "run", r.id)
					return
				}
			}
			for _, r := range w.recs {
				if err := q.dropRecord(ctx, r); err != nil {
					q.log.Warn("removing the record of a failed publish", "run", r.id, "err", err)
					return
				}
			}
			w.recs = nil
			if w.objRev != 0 {
				if err := q.delKV.Delete(ctx, w.objKey, jetstream.LastRevision(w.objRev)); err != nil {
					q.log.Warn("removing the object key of a failed publish", "run", w.req.ID, "err", err)
					return
				}
				w.objRev = 0
			}
			if w.keyRev != 0 {
				if err := q.delKV.Delete(ctx, w.kvKey, jetstream.LastRevision(w.keyRev)); err != nil {
					q.log.Warn("removing the delivery key of a failed publish", "run", w.req.ID, "err", err)
					return
				}
				w.keyRev = 0
			}
		})
	}
	wg.Wait()
}

// runsOf names the runs of a delivery for errors and logs.
func runsOf(ws []*runWrite) string {
	if len(ws) == 1 {
		return "run " + ws[0].req.ID
	}
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.req.ID
	}
	return "runs " + strings.Join(ids, ", ")
}

// Points of PublishDelivery where a test can inject a failure (Queue.failAt).
const (
	failBody      = "body"       // large bodies stored
	failKeys      = "keys"       // keys written and settled
	failRecordAck = "record-ack" // a record written, its acknowledgement lost (outcome unknown)
	failRecords   = "records"    // records written
	failMessages  = "messages"   // instead of sending the messages: refused, known not stored
	failAck       = "ack"        // after the messages were acknowledged: as if the answer was lost
)

// inject returns the failure a test set for point, if any.
func (q *Queue) inject(point string) error {
	if q.failAt == nil {
		return nil
	}
	return q.failAt(point)
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

// settleObjectKey interprets the create-only write of w's object key,
// made with the run id fresh, once its delivery key is settled:
//   - the delivery was seen before (w.dup): its run stands; an object key
//     this attempt created (the first delivery's had expired, or it had
//     none) is made to name that run;
//   - the object key is new (or this attempt's own): a new run;
//   - it names another run: the same object came under another delivery
//     id; the run is that one (w.dup, w.sameObject), and the delivery key
//     this attempt created is made to name it, so that a redelivery of this
//     delivery and the consumer's reconcile agree.
func (q *Queue) settleObjectKey(ctx context.Context, pw *pendingWrite, w *runWrite, fresh string) error {
	id, dup, rev, err := q.settleDeliveryKey(ctx, pw, w.objKey, fresh)
	if err != nil {
		return err
	}
	switch {
	case w.dup:
		if !dup && id != w.req.ID {
			if _, err := q.delKV.Update(ctx, w.objKey, []byte(w.req.ID), rev); err != nil {
				q.log.Warn("pointing an object key at the run of its delivery", "run", w.req.ID, "err", err)
			}
		}
	case !dup:
		w.objRev = rev
	default:
		nrev, err := q.delKV.Update(ctx, w.kvKey, []byte(id), w.keyRev)
		if err != nil {
			return fmt.Errorf("pointing the delivery at run %s of the same object: %w", id, err)
		}
		w.keyRev, w.dup, w.sameObject, w.req.ID = nrev, true, true, id
	}
	return nil
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
	var notStored notStoredError
	return errors.As(err, &notStored) || errors.As(err, &apiErr) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}
