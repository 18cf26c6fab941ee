package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// Every delivery ingress accepts for a repository it serves is stored in
// hookrun_received, keyed by forge and delivery id, for Config.ReceivedTTL:
// the forge's event name and the body exactly as received, so that
// POST /api/v1/deliveries/{id}/replay can match it again against the
// workflows loaded then, and a re-run finds the payload of its event
// (a run record keeps its event without Raw). It is written in the same
// round trip as the delivery's keys (AcceptDelivery), before the 202, and
// removed again with them when the delivery fails. A body too large for a
// KV value is stored once in hookrun_bodies under the name its runs use,
// and referenced.

// Received is one stored delivery.
type Received struct {
	Forge      workflows.Forge `json:"forge"`
	ID         string          `json:"id"`    // the delivery id (X-GitHub-Delivery, the GitLab dedupe key)
	Event      string          `json:"event"` // the forge's event name (X-GitHub-Event, X-Gitlab-Event)
	ReceivedAt time.Time       `json:"received_at"`
	// Body names the hookrun_bodies object holding Raw when it was too
	// large to store inline.
	Body string `json:"body,omitempty"`
	// Raw is the body exactly as received.
	Raw []byte `json:"-"`
}

// ReplayDelivery is the delivery id of the n-th replay of delivery id: a
// new id, so that the 72 h delivery keys of the original do not dedupe it.
func ReplayDelivery(id string, n int) string { return id + ":replay:" + strconv.Itoa(n) }

// RerunDelivery is the delivery id of a re-run: of run runID through the
// API, or (trigger set) of the runs a /retry comment delivery asked for,
// which its redeliveries then dedupe. origin is the stored delivery of the
// re-run's event.
func RerunDelivery(origin, runID, trigger string) string {
	if trigger != "" {
		return origin + ":retry:" + trigger
	}
	return origin + ":rerun:" + runID
}

// receivedKey is the hookrun_received key of a delivery: readable when its
// parts are KV-safe, else a hash (as deliveryKVKey).
func receivedKey(forge workflows.Forge, id string) string {
	if kvSafe.MatchString(string(forge)) && kvSafe.MatchString(id) && len(id) <= 128 {
		return string(forge) + "." + id
	}
	sum := sha256.Sum256([]byte(string(forge) + ":" + id))
	return "h." + hex.EncodeToString(sum[:])
}

// replayCounterKey holds the number of the last replay of a delivery
// (received keys start with a forge name or "h.").
func replayCounterKey(forge workflows.Forge, id string) string { return "n." + receivedKey(forge, id) }

// receivedBodyName is the hookrun_bodies object of a delivery's body: the
// name its runs' PublishDelivery uses, so that the body is stored once.
func receivedBodyName(forge workflows.Forge, id string) string {
	return bodyName(&runWrite{req: &RunRequest{Event: workflows.Event{Forge: forge}}, delivery: id})
}

// encodeReceived is the stored form: the JSON header, a newline, the body
// (no re-encoding of a 28 KB payload on the ingest path).
func encodeReceived(d *Received, inline bool) ([]byte, error) {
	h, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encoding received delivery %s: %w", d.ID, err)
	}
	if !inline {
		return append(h, '\n'), nil
	}
	out := make([]byte, 0, len(h)+1+len(d.Raw))
	out = append(append(append(out, h...), '\n'), d.Raw...)
	return out, nil
}

func decodeReceived(data []byte) (*Received, error) {
	h, raw, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return nil, errors.New("decoding received delivery: no header")
	}
	var d Received
	if err := json.Unmarshal(h, &d); err != nil {
		return nil, fmt.Errorf("decoding received delivery: %w", err)
	}
	if d.Body == "" {
		d.Raw = raw
	}
	return &d, nil
}

// ErrNotReceived: no delivery with that id is stored (never accepted, or
// older than Config.ReceivedTTL).
var ErrNotReceived = errors.New("delivery not stored")

// ReceivedStore reads the stored deliveries.
type ReceivedStore struct {
	kv     jetstream.KeyValue
	bodies jetstream.ObjectStore
	ttl    time.Duration
}

// TTL is how long a delivery stays stored.
func (s *ReceivedStore) TTL() time.Duration { return s.ttl }

// Get returns a stored delivery with its body; ErrNotReceived if there is
// none.
func (s *ReceivedStore) Get(ctx context.Context, forge workflows.Forge, id string) (*Received, error) {
	e, err := s.kv.Get(ctx, receivedKey(forge, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("reading delivery %s %s: %w", forge, id, ErrNotReceived)
	}
	if err != nil {
		return nil, fmt.Errorf("reading delivery %s %s: %w", forge, id, err)
	}
	d, err := decodeReceived(e.Value())
	if err != nil {
		return nil, fmt.Errorf("reading delivery %s %s: %w", forge, id, err)
	}
	if d.Body != "" {
		raw, err := s.bodies.GetBytes(ctx, d.Body)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("reading the body %s of delivery %s %s: %w", d.Body, forge, id, ErrNotReceived)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the body %s of delivery %s %s: %w", d.Body, forge, id, err)
		}
		d.Raw = raw
	}
	return d, nil
}

// NextReplay reserves the number of the next replay of a delivery (1 for
// the first), with compare-and-set: concurrent replays get distinct
// numbers.
func (s *ReceivedStore) NextReplay(ctx context.Context, forge workflows.Forge, id string) (int, error) {
	key := replayCounterKey(forge, id)
	for range casAttempts {
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			if _, err := s.kv.Create(ctx, key, []byte("1")); err == nil {
				return 1, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, err)
			}
		case err != nil:
			return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, err)
		default:
			n, _ := strconv.Atoi(string(e.Value()))
			n++
			if _, err := s.kv.Update(ctx, key, []byte(strconv.Itoa(n)), e.Revision()); err == nil {
				return n, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, err)
			}
		}
	}
	return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, ErrConflict)
}

// receivedWrite is what AcceptDelivery knows of the stored delivery.
type receivedWrite struct {
	d    *Received
	key  string
	data []byte
	pw   *pendingWrite
	rev  uint64 // this attempt created it at rev (for the rollback)
}

// newReceivedWrite encodes d, storing its body in hookrun_bodies first when
// it is too large to go inline (created names the object when this call
// stored it).
func (q *Queue) newReceivedWrite(ctx context.Context, d *Received) (_ *receivedWrite, created string, _ error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = q.runs.now()
	}
	inline := len(d.Raw) <= q.inlineMax
	if !inline {
		d.Body = receivedBodyName(d.Forge, d.ID)
		info, err := q.bodies.GetInfo(ctx, d.Body)
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, "", fmt.Errorf("storing delivery %s: reading body %s: %w", d.ID, d.Body, err)
		}
		if err != nil || info.Size != uint64(len(d.Raw)) {
			if _, err := q.bodies.PutBytes(ctx, d.Body, d.Raw); err != nil {
				return nil, d.Body, fmt.Errorf("storing delivery %s: storing body of %d bytes: %w", d.ID, len(d.Raw), err)
			}
			created = d.Body
		}
	}
	data, err := encodeReceived(d, inline)
	if err != nil {
		return nil, created, err
	}
	return &receivedWrite{d: d, key: receivedKey(d.Forge, d.ID), data: data}, created, nil
}

// start sends the create-only write (it travels with the delivery keys).
func (q *Queue) startReceived(w *receivedWrite) {
	if w != nil {
		w.pw = q.createAsync(kvSubject(BucketReceived, w.key), w.data)
	}
}

// settleReceived waits for the write. A delivery stored before (a
// redelivery) keeps its first copy; a delete marker left by an earlier
// attempt's rollback is settled by KeyValue.Create.
func (q *Queue) settleReceived(ctx context.Context, w *receivedWrite) error {
	if w == nil {
		return nil
	}
	w.pw.wait(ctx)
	if w.pw.err == nil {
		w.rev = w.pw.ack.Sequence
		return nil
	}
	if !isWrongLastSeq(w.pw.err) && !definitelyNotStored(w.pw.err) {
		return fmt.Errorf("storing delivery %s: %w", w.d.ID, w.pw.err)
	}
	rev, err := q.recvKV.Create(ctx, w.key, w.data)
	switch {
	case err == nil:
		w.rev = rev
	case errors.Is(err, jetstream.ErrKeyExists):
	default:
		return fmt.Errorf("storing delivery %s: %w", w.d.ID, err)
	}
	return nil
}

// dropReceived removes, best effort, a stored delivery this attempt wrote.
func (q *Queue) dropReceived(ctx context.Context, w *receivedWrite) {
	if w == nil || w.rev == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.PublishTimeout)
	defer cancel()
	if err := q.recvKV.Delete(ctx, w.key, jetstream.LastRevision(w.rev)); err != nil {
		q.log.Warn("removing the stored delivery of a failed publish", "delivery", w.d.ID, "err", err)
		return
	}
	w.rev = 0
}

// Received is the store of accepted deliveries.
func (q *Queue) Received() *ReceivedStore { return q.received }
