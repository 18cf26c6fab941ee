package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

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
