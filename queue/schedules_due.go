package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// When a tick was due, as hookrun knows it: the Nats-Schedule-Next of the
// tick of the same definition handled before it. nats-server counts an
// @every interval from the tick it fires on coming back from an outage
// longer than the interval, so that tick's own Nats-Schedule-Next says
// nothing of when it was due; the one before it does. Consume keeps it on
// hookrun.schedules.due.<id> in the schedule stream (one small message per
// schedule, the latest replacing the one before, no TTL; purged by Sync
// with the schedule's definition, and when the definition changes).
const scheduleDuePrefix = "hookrun.schedules.due."

// dueAttempts bounds the compare-and-set of a due record: only a tick
// handed out twice at once races with itself.
const dueAttempts = 5

// dueRecord is what hookrun remembers of a schedule: the last tick it
// handled (its stream sequence), that tick's Nats-Schedule-Next, and
// what that tick was judged by (a redelivery of it is judged the same).
type dueRecord struct {
	Digest string    `json:"digest"` // of the definition whose ticks these are
	Seq    uint64    `json:"seq"`
	Next   time.Time `json:"next,omitzero"`
	Before time.Time `json:"before,omitzero"`
}

// remember sets t.Expected from its schedule's due record and records
// t's Next in it, by compare-and-set: a tick newer than the record's is
// judged by the record's Next and replaces it; the record's own tick
// handed out again is judged as it was the first time; an older tick
// (handed out again after a newer one), or the first tick of a
// definition, by nothing (Expected zero). def is the tick's body, the
// schedule's definition as Sync wrote it.
func (s *Schedules) remember(ctx context.Context, t *Tick, def []byte) error {
	sum := sha256.Sum256(def)
	digest, subj := hex.EncodeToString(sum[:8]), scheduleDuePrefix+t.Schedule.ID
	for range dueAttempts {
		rec, last, err := s.dueRecord(ctx, subj, digest)
		if err != nil {
			return fmt.Errorf("reading when tick %s was due: %w", t.Key(), err)
		}
		switch {
		case rec.Seq == t.Seq:
			t.Expected = rec.Before
			return nil
		case rec.Seq > t.Seq:
			t.Expected = time.Time{}
			return nil
		}
		t.Expected = rec.Next
		data, err := json.Marshal(dueRecord{Digest: digest, Seq: t.Seq, Next: t.Next, Before: rec.Next})
		if err != nil {
			return err
		}
		msg := nats.NewMsg(subj)
		msg.Data = data
		_, err = s.q.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		if err == nil {
			return nil
		}
		if !IsWrongLastSeq(err) {
			return fmt.Errorf("recording when the tick after %s is due: %w", t.Key(), err)
		}
	}
	return fmt.Errorf("recording when the tick after %s is due: %d writes in a row found another", t.Key(), dueAttempts)
}

// dueRecord reads the due record on subj and its stream sequence (0: none);
// a record of another definition than digest's, or unreadable, is none.
func (s *Schedules) dueRecord(ctx context.Context, subj, digest string) (dueRecord, uint64, error) {
	m, err := s.s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return dueRecord{}, 0, nil
	}
	if err != nil {
		return dueRecord{}, 0, err
	}
	var rec dueRecord
	if json.Unmarshal(m.Data, &rec) != nil || rec.Digest != digest {
		rec = dueRecord{}
	}
	return rec, m.Sequence, nil
}

// forgetDue purges schedule id's due record: its definition changed or
// went, and what its ticks said is no longer when the next is due.
func (s *Schedules) forgetDue(ctx context.Context, id string) error {
	if err := s.s.Purge(ctx, jetstream.WithPurgeSubject(scheduleDuePrefix+id)); err != nil {
		return fmt.Errorf("forgetting when schedule %s is due: %w", id, err)
	}
	return nil
}
