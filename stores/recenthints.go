package stores

import "github.com/hookrun/hookrun/internal/recent"

// recentRecords remembers, per unfinished run, the record this process
// last wrote or read and its revision, so that the run's next transition
// (the claim after the publish, the heartbeats and the finish after the
// claim) starts from it instead of reading it again. It is a hint, never
// the truth: change writes from it only with a compare-and-set at its
// revision, and reads the record again when the write conflicts or when
// the hint would decide to write nothing (a decision the store must back).
// A run's entry goes when its record ends, is deleted, or is not found;
// at most recent.DefaultMax runs are remembered (a record is 1–3 KB).
type recentRecords struct {
	m recent.Map[string, recentRecord]
}

type recentRecord struct {
	data []byte // the encoded record, as stored at rev
	rev  uint64
}

// remember notes record id as data at rev; an ended record is forgotten
// instead (nothing transitions it further).
func (h *recentRecords) remember(id string, data []byte, rev uint64, ended bool) {
	if ended {
		h.m.Delete(id)
		return
	}
	h.m.Put(id, recentRecord{data: data, rev: rev})
}

// forget drops id's entry.
func (h *recentRecords) forget(id string) { h.m.Delete(id) }

// lookup returns id's entry.
func (h *recentRecords) lookup(id string) (recentRecord, bool) { return h.m.Get(id) }

// len is how many runs have an entry (tests).
func (h *recentRecords) len() int { return h.m.Len() }
