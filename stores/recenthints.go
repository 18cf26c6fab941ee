package stores

import "sync"

// maxRecentRecords bounds recentRecords: about the runs one process has
// queued or is running at once (a record is 1–3 KB encoded). Past it an
// arbitrary entry makes room; a run whose entry went only pays the read.
const maxRecentRecords = 2048

// recentRecords remembers, per unfinished run, the record this process
// last wrote or read and its revision, so that the run's next transition
// (the claim after the publish, the heartbeats and the finish after the
// claim) starts from it instead of reading it again. It is a hint, never
// the truth: change writes from it only with a compare-and-set at its
// revision, and reads the record again when the write conflicts or when
// the hint would decide to write nothing (a decision the store must back).
// A run's entry goes when its record ends, is deleted, or is not found.
type recentRecords struct {
	mu sync.Mutex
	m  map[string]recentRecord
}

type recentRecord struct {
	data []byte // the encoded record, as stored at rev
	rev  uint64
}

// remember notes record id as data at rev; an ended record is forgotten
// instead (nothing transitions it further).
func (h *recentRecords) remember(id string, data []byte, rev uint64, ended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ended {
		delete(h.m, id)
		return
	}
	if h.m == nil {
		h.m = make(map[string]recentRecord)
	}
	if _, ok := h.m[id]; !ok && len(h.m) >= maxRecentRecords {
		for k := range h.m {
			delete(h.m, k)
			break
		}
	}
	h.m[id] = recentRecord{data: data, rev: rev}
}

// forget drops id's entry.
func (h *recentRecords) forget(id string) {
	h.mu.Lock()
	delete(h.m, id)
	h.mu.Unlock()
}

// lookup returns id's entry.
func (h *recentRecords) lookup(id string) (recentRecord, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.m[id]
	return r, ok
}

// len is how many runs have an entry (tests).
func (h *recentRecords) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
