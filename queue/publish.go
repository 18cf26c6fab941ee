package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// Publishing a delivery's runs, all or nothing (AcceptDelivery): the
// requests get their keys, the bodies too large to travel inline are
// stored, the keys and the entry beside them are written in one round
// trip and settled, the queued records in a second, and the messages,
// the commit point, last; a failure known to leave nothing stored undoes
// what the call wrote.

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

// AcceptDelivery is PublishDelivery that also writes e, what the delivery
// keeps beside its runs (the stores package's received deliveries), in
// the same round trip as the keys and all or nothing with the runs: a
// failure that removes the runs' keys removes the entry this call wrote.
// reqs may be empty (a delivery no workflow takes is still stored, for a
// later replay); e nil writes nothing beside the runs.
func (q *Queue) AcceptDelivery(ctx context.Context, e *Entry, reqs []*RunRequest) ([]PublishResult, error) {
	if len(reqs) == 0 && e == nil {
		return nil, nil
	}
	recs, err := q.recordsOf("publishing runs")
	if err != nil {
		return nil, err
	}
	if len(reqs) > 0 && q.macs == nil {
		return nil, errors.New("publishing runs: no request key is configured (queue.Config.RequestKey)")
	}
	ws, err := q.runWrites(ctx, reqs)
	if err != nil {
		return nil, err
	}
	a := &accept{q: q, recs: recs, ws: ws}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.PublishTimeout)
	defer cancel()
	if err := a.storeBodies(ctx, e); err != nil {
		q.deleteBodies(ctx, a.bodies)
		return nil, err
	}
	if err := a.writeKeysAndRecords(ctx); err != nil {
		a.undo(ctx)
		return nil, err
	}
	if len(ws) == 0 {
		return []PublishResult{}, nil
	}
	a.rememberKeys()
	stored, err := q.publishMessages(ctx, ws)
	if err != nil {
		if !stored {
			a.undo(ctx)
		}
		return nil, err
	}
	results := make([]PublishResult, len(ws))
	for i, w := range ws {
		results[i] = PublishResult{RunID: w.req.ID, Duplicate: w.dup, SameObject: w.sameObject}
	}
	return results, nil
}

// runWrites defaults each request (a new run id, the wire version, the
// first attempt, now) and names its keys.
func (q *Queue) runWrites(ctx context.Context, reqs []*RunRequest) ([]*runWrite, error) {
	ws := make([]*runWrite, len(reqs))
	traceID := TraceID(ctx)
	for i, req := range reqs {
		if req.ID == "" {
			req.ID = NewRunID()
		}
		if !ValidToken(req.Workflow) {
			return nil, fmt.Errorf("publishing run %s: invalid workflow name %q", req.ID, req.Workflow)
		}
		if req.V == 0 {
			req.V = WireVersion
		}
		if req.Attempt == 0 {
			req.Attempt = 1
		}
		if req.CreatedAt.IsZero() {
			req.CreatedAt = q.cfg.Now().UTC()
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
	return ws, nil
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
func dropRecord(ctx context.Context, recs Records, r writtenRec) error {
	if r.rev == 0 {
		return fmt.Errorf("removing run record %s: its write's outcome is unknown", r.id)
	}
	recs.Dropped(r.id)
	if err := recs.KV().Delete(ctx, r.id, jetstream.LastRevision(r.rev)); err != nil {
		return fmt.Errorf("deleting run record %s: %w", r.id, err)
	}
	return nil
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

// accept is one AcceptDelivery: the writes of a delivery's runs and of
// its entry, each noting what it wrote for the rollback of a delivery
// that fails.
type accept struct {
	q      *Queue
	recs   Records     // the run records
	ws     []*runWrite // the runs
	ew     *entryWrite // the entry beside them; nil without one
	bodies []string    // the hookrun_bodies objects this call created
}

// undo removes, best effort, what a failed delivery wrote: the runs' keys
// and records (rollback), the entry, the bodies.
func (a *accept) undo(ctx context.Context) {
	for _, w := range a.ws {
		a.q.sentKeys.Delete(w.kvKey)
	}
	a.rollback(ctx)
	a.dropEntry(ctx, a.ew)
	a.q.deleteBodies(ctx, a.bodies)
}

// rememberKeys notes, for this process's consumer (Queue.sentKeys), the
// run id each delivery key this call created holds, now settled: before
// the messages go out, since one may be consumed before they all are; the
// rollback forgets them again. Nothing but the key's expiry changes it
// after this call.
func (a *accept) rememberKeys() {
	if !a.q.consuming() {
		return
	}
	for _, w := range a.ws {
		if !w.dup {
			a.q.sentKeys.Put(w.kvKey, w.req.ID)
		}
	}
}

// writeKeysAndRecords creates every run's delivery key and object key
// (one round trip), settles them (settleObjectKey), then creates the queued record of each run under the id
// its key holds (a second round trip; an earlier attempt's record stays).
// A record is written only once its key is known to hold its id, so no
// record can ever land for an id no key names. Every write that landed, or
// may land, is noted for the rollback. The entry ew, when there is one,
// travels with the keys.
func (a *accept) writeKeysAndRecords(ctx context.Context) error {
	if err := a.writeKeys(ctx); err != nil {
		return err
	}
	if err := a.q.inject(failKeys); err != nil {
		return err
	}
	return a.writeRecords(ctx)
}

// writeKeys creates and settles the runs' keys, and the entry beside them.
// The delivery keys are settled first; only a run whose delivery key this
// attempt created then claims its object key. Two copies of one delivery
// racing each other thus never claim the object key both: the copy that
// lost the delivery key leaves the object to the winner, which alone can
// find the same object under another delivery id.
func (a *accept) writeKeys(ctx context.Context) error {
	ws, ew := a.ws, a.ew
	a.startEntry(ew)
	keyWs := make([]*pendingWrite, len(ws))
	for i, w := range ws {
		keyWs[i] = a.q.createAsync(kvSubject(BucketDelivery, w.kvKey), []byte(w.req.ID))
	}
	var errs []error
	if err := a.settleEntry(ctx, ew); err != nil {
		errs = append(errs, err)
	}
	objWs := make([]*pendingWrite, len(ws))
	fresh := make([]string, len(ws))
	for i, w := range ws {
		keyWs[i].wait(ctx)
		id, dup, rev, err := a.settleDeliveryKey(ctx, keyWs[i], w.kvKey, w.req.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing run %s: recording delivery: %w", w.req.ID, err))
			continue
		}
		fresh[i] = w.req.ID
		w.keyRev, w.dup, w.req.ID = rev, dup, id
		if w.objKey != "" && !dup {
			objWs[i] = a.q.createAsync(kvSubject(BucketDelivery, w.objKey), []byte(w.req.ID))
		}
	}
	for i, w := range ws {
		if objWs[i] == nil {
			continue
		}
		objWs[i].wait(ctx)
		if err := a.settleObjectKey(ctx, objWs[i], w, fresh[i]); err != nil {
			errs = append(errs, fmt.Errorf("publishing run %s: recording its object: %w", w.req.ID, err))
		}
	}
	return errors.Join(errs...)
}

// writeRecords creates the queued record of each run under the id its
// key holds (an earlier attempt's record stays).
func (a *accept) writeRecords(ctx context.Context) error {
	recs, ws := a.recs, a.ws
	recWs := make([]*pendingWrite, len(ws))
	data := make([][]byte, len(ws))
	consuming := a.q.consuming() // else nothing here will claim these runs
	for i, w := range ws {
		rec, err := recs.Queued(w.req, w.traceID)
		if err != nil {
			return fmt.Errorf("publishing run %s: encoding record: %w", w.req.ID, err)
		}
		data[i] = rec
		recWs[i] = a.q.createAsync(kvSubject(recs.KV().Bucket(), w.req.ID), rec)
	}
	var errs []error
	for i, w := range ws {
		recWs[i].wait(ctx)
		if err := a.q.inject(failRecordAck); err != nil && recWs[i].err == nil {
			recWs[i].ack, recWs[i].err = nil, err
		}
		switch err := recWs[i].err; {
		case err == nil:
			w.recs = append(w.recs, writtenRec{w.req.ID, recWs[i].ack.Sequence})
			if !consuming {
				data[i] = nil
			}
			recs.Created(w.req.ID, data[i], recWs[i].ack.Sequence)
		case IsWrongLastSeq(err):
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
	return a.q.inject(failRecords)
}

// rollback removes, best effort, every key and record a failed publish
// wrote: records first, and a run's key only once its records are gone, so
// that what stays after a failure here (a key) makes the redelivery take
// the duplicate path and complete the run, never a queued record without
// a key that nothing would run. A run one of whose records was written
// with an unknown outcome keeps its key and records for the same reason.
func (a *accept) rollback(ctx context.Context) {
	recs, ws := a.recs, a.ws
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.q.cfg.PublishTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for _, r := range w.recs {
				if r.rev == 0 {
					a.q.log.Warn("a record of a failed publish may land yet; its delivery key stays for the redelivery", "run", r.id)
					return
				}
			}
			for _, r := range w.recs {
				if err := dropRecord(ctx, recs, r); err != nil {
					a.q.log.Warn("removing the record of a failed publish", "run", r.id, "err", err)
					return
				}
			}
			w.recs = nil
			if w.objRev != 0 {
				if err := a.q.delKV.Delete(ctx, w.objKey, jetstream.LastRevision(w.objRev)); err != nil {
					a.q.log.Warn("removing the object key of a failed publish", "run", w.req.ID, "err", err)
					return
				}
				w.objRev = 0
			}
			if w.keyRev != 0 {
				if err := a.q.delKV.Delete(ctx, w.kvKey, jetstream.LastRevision(w.keyRev)); err != nil {
					a.q.log.Warn("removing the delivery key of a failed publish", "run", w.req.ID, "err", err)
					return
				}
				w.keyRev = 0
			}
		})
	}
	wg.Wait()
}

// settleDeliveryKey interprets the create-only write of the delivery key.
// It returns the run id the delivery maps to, whether that is an earlier
// run's (dup), and the key's revision when this attempt wrote it. A
// refused create (the key exists, or holds a delete marker, or the outcome
// was lost) is settled by jetstream's own Create, which handles markers,
// and a read.
func (a *accept) settleDeliveryKey(ctx context.Context, w *pendingWrite, kvKey, id string) (runID string, dup bool, rev uint64, _ error) {
	if w.err == nil {
		return id, false, w.ack.Sequence, nil
	}
	rev, err := a.q.delKV.Create(ctx, kvKey, []byte(id))
	if err == nil {
		return id, false, rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return "", false, 0, err
	}
	// A replica that serves the read may lag the one that refused the
	// create by a moment.
	e, gerr := a.q.delKV.Get(ctx, kvKey)
	for i := 0; i < 5 && errors.Is(gerr, jetstream.ErrKeyNotFound) && ctx.Err() == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		e, gerr = a.q.delKV.Get(ctx, kvKey)
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
// made with the run id fresh by the attempt that created w's delivery key:
//   - the object key is new (or this attempt's own): a new run;
//   - it names another run: the same object came under another delivery
//     id; the run is that one (w.dup, w.sameObject), and the delivery key
//     this attempt created is made to name it, so that a redelivery of this
//     delivery and the consumer's reconcile agree.
func (a *accept) settleObjectKey(ctx context.Context, pw *pendingWrite, w *runWrite, fresh string) error {
	id, dup, rev, err := a.settleDeliveryKey(ctx, pw, w.objKey, fresh)
	if err != nil {
		return err
	}
	if !dup {
		w.objRev = rev
		return nil
	}
	nrev, err := a.q.delKV.Update(ctx, w.kvKey, []byte(id), w.keyRev)
	if err != nil {
		return fmt.Errorf("pointing the delivery at run %s of the same object: %w", id, err)
	}
	w.keyRev, w.dup, w.sameObject, w.req.ID = nrev, true, true, id
	return nil
}

// storeBodies stores the bodies too large to travel inline, the entry's
// and the runs', and encodes the entry; the objects it created are noted
// for the rollback.
func (a *accept) storeBodies(ctx context.Context, e *Entry) error {
	if e != nil {
		ew, created, err := a.newEntryWrite(ctx, e)
		if created != "" {
			a.bodies = append(a.bodies, created)
		}
		if err != nil {
			return err
		}
		a.ew = ew
	}
	created, err := a.q.storeBodies(ctx, a.ws)
	a.bodies = append(a.bodies, created...)
	if err != nil {
		return err
	}
	return a.q.inject(failBody)
}

// Entry is what a delivery keeps beside its runs (the stores package's
// received deliveries): a KV entry that AcceptDelivery writes create-only
// in the same round trip as the delivery's keys and removes with them when
// the delivery fails. An entry stored before (a redelivery) keeps its
// first copy. A body too large for a KV value is stored once in
// hookrun_bodies under BodyName, the object its runs use, and named in
// the entry.
type Entry struct {
	KV       jetstream.KeyValue // the bucket
	Key      string             // the entry's key
	Forge    workflows.Forge    // the delivery's forge and id, which name its body
	Delivery string
	Raw      []byte // the body
	// Encode is the value to store, given the name of the body's object
	// ("" when the body travels inline in the value).
	Encode func(body string) ([]byte, error)
}

// entryWrite is what AcceptDelivery knows of the entry it writes.
type entryWrite struct {
	e    *Entry
	data []byte
	pw   *pendingWrite
	rev  uint64 // this attempt created it at rev (for the rollback)
}

// newEntryWrite encodes e, storing its body in hookrun_bodies first when
// it is too large to go inline (created names the object when this call
// stored it).
func (a *accept) newEntryWrite(ctx context.Context, e *Entry) (_ *entryWrite, created string, _ error) {
	body := ""
	if len(e.Raw) > a.q.inlineMax {
		body = BodyName(e.Forge, e.Delivery)
		info, err := a.q.bodies.GetInfo(ctx, body)
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, "", fmt.Errorf("storing delivery %s: reading body %s: %w", e.Delivery, body, err)
		}
		if err != nil || info.Size != uint64(len(e.Raw)) {
			if _, err := a.q.bodies.PutBytes(ctx, body, e.Raw); err != nil {
				return nil, body, fmt.Errorf("storing delivery %s: storing body of %d bytes: %w", e.Delivery, len(e.Raw), err)
			}
			created = body
		}
	}
	data, err := e.Encode(body)
	if err != nil {
		return nil, created, err
	}
	return &entryWrite{e: e, data: data}, created, nil
}

// startEntry sends the create-only write (it travels with the delivery keys).
func (a *accept) startEntry(w *entryWrite) {
	if w != nil {
		w.pw = a.q.createAsync(kvSubject(w.e.KV.Bucket(), w.e.Key), w.data)
	}
}

// settleEntry waits for the write. An entry stored before (a redelivery)
// keeps its first copy; a delete marker left by an earlier attempt's
// rollback is settled by KeyValue.Create.
func (a *accept) settleEntry(ctx context.Context, w *entryWrite) error {
	if w == nil {
		return nil
	}
	w.pw.wait(ctx)
	if w.pw.err == nil {
		w.rev = w.pw.ack.Sequence
		return nil
	}
	if !IsWrongLastSeq(w.pw.err) && !definitelyNotStored(w.pw.err) {
		return fmt.Errorf("storing delivery %s: %w", w.e.Delivery, w.pw.err)
	}
	rev, err := w.e.KV.Create(ctx, w.e.Key, w.data)
	switch {
	case err == nil:
		w.rev = rev
	case errors.Is(err, jetstream.ErrKeyExists):
	default:
		return fmt.Errorf("storing delivery %s: %w", w.e.Delivery, err)
	}
	return nil
}

// dropEntry removes, best effort, an entry this attempt wrote.
func (a *accept) dropEntry(ctx context.Context, w *entryWrite) {
	if w == nil || w.rev == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.q.cfg.PublishTimeout)
	defer cancel()
	if err := w.e.KV.Delete(ctx, w.e.Key, jetstream.LastRevision(w.rev)); err != nil {
		a.q.log.Warn("removing the stored delivery of a failed publish", "delivery", w.e.Delivery, "err", err)
		return
	}
	w.rev = 0
}

// Publish writes KV entries as plain JetStream messages on the bucket's
// subjects, so that they travel in the same round trip as the run's
// message (KeyValue.Create waits for each write). This relies on the
// bucket layout of the jetstream KV API: key k of bucket b is the last
// message on subject $KV.b.k, its revision is that message's stream
// sequence, and a create-only write expects the subject's last sequence
// to be 0. TestRawKVSubjects guards it.

// kvSubject is the subject a KV bucket stores key under.
func kvSubject(bucket, key string) string {
	return "$KV." + bucket + "." + key
}

// createAsync writes a key of a KV bucket only if it has never had a value:
// what KeyValue.Create does, without its wait. A key that exists, or that
// holds a delete marker, is refused (IsWrongLastSeq); KeyValue.Create then
// settles the marker case.
func (q *Queue) createAsync(subject string, value []byte) *pendingWrite {
	m := nats.NewMsg(subject)
	m.Data = value
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	return q.publishAsync(m)
}

// Message buffers are recycled once their publish is acknowledged (not
// after a failure, when the client may still hold one): a run request
// carries the whole webhook body, and the collector's share of ingest CPU
// was about a tenth. A buffer comes out empty, and none larger than
// maxPooledMsg is kept, so one huge body does not stay pinned.
// TestMsgPool guards both.
var msgPool sync.Pool // of *[]byte

const maxPooledMsg = 1 << 20

func getMsgBuf() []byte {
	if p, ok := msgPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

func putMsgBuf(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledMsg {
		return
	}
	msgPool.Put(&b)
}
