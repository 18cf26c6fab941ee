package stores

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// RunIndex answers RunStore.List without reading the bucket: a summary of
// every run record (id, workflow, repo, status, pull request, created
// and finished times) in an index file on disk (watchindex.go: fed by a
// KV watch of hookrun_runs, puts and deletes from any process, resumed
// after the revision it applied last when the process starts again).
//
// Every record is filed in each of the 7 lists of the combinations of
// three filter fields (workflow, repo, status: each either its value or
// "any"; "any" for all three is the summaries' own bucket, in id order),
// in its pull request's lists (its number, and its repository and
// number), and, once finished, in the finish-time list (retention's
// expired); each list is a bucket of ids (names as interned ids). A page
// of a list is then a seek for the cursor and a walk of the page, so the
// work of a List is bounded by its page, and for a pull request by that
// pull request's runs (RunIndex.visited counts it). Sizes and times:
// docs/performance.md ("Lists at 1,000,000").
//
// Consistency: RunStore remembers the revision of its own last write, and
// List waits until the index applied it, so a record this process just
// wrote appears in its next list. Records written by other processes
// appear as soon as the watch delivers them (milliseconds).
type RunIndex struct {
	*watchIndex

	// visited counts the entries queries have looked at (tests assert
	// that it is bounded by the page, whatever the number of records).
	visited atomic.Int64
}

// The run index's buckets.
var (
	bucketRunSummaries = []byte("runs")  // id → runSummary
	bucketRunLists     = []byte("lists") // a bucket per list (see below)
)

// runIndexFile is the run index's file in the index directory.
const runIndexFile = "runs.db"

// runSummary is what the index keeps of one record: names as interned ids.
type runSummary struct {
	gen      uint64 // the full read that saw it last
	workflow uint32
	repo     uint32
	status   uint32
	number   int64 // pull/merge request or issue number; 0: none
	created  int64 // unix nanos
	finished int64 // unix nanos; 0 while unfinished (or not terminal)
}

const runSummarySize = 8 + 4 + 4 + 4 + 8 + 8 + 8

func (s *runSummary) encode() []byte {
	b := make([]byte, runSummarySize)
	binary.BigEndian.PutUint64(b[0:], s.gen)
	binary.BigEndian.PutUint32(b[8:], s.workflow)
	binary.BigEndian.PutUint32(b[12:], s.repo)
	binary.BigEndian.PutUint32(b[16:], s.status)
	binary.BigEndian.PutUint64(b[20:], uint64(s.number))
	binary.BigEndian.PutUint64(b[28:], uint64(s.created))
	binary.BigEndian.PutUint64(b[36:], uint64(s.finished))
	return b
}

func decodeRunSummary(b []byte) (runSummary, bool) {
	if len(b) != runSummarySize {
		return runSummary{}, false
	}
	return runSummary{
		gen:      binary.BigEndian.Uint64(b[0:]),
		workflow: binary.BigEndian.Uint32(b[8:]),
		repo:     binary.BigEndian.Uint32(b[12:]),
		status:   binary.BigEndian.Uint32(b[16:]),
		number:   int64(binary.BigEndian.Uint64(b[20:])),
		created:  int64(binary.BigEndian.Uint64(b[28:])),
		finished: int64(binary.BigEndian.Uint64(b[36:])),
	}, true
}

// A list is a bucket nested in the lists bucket, named by its first byte
// (which fields it matches exactly) and those fields' ids; it holds the
// ids of its records, so that a new run is appended at its end (run ids
// are ordered by time). The pull request lists are two buckets, by
// number and by repository and number, whose keys begin with those; the
// finished records are one, by finish time.
const (
	maskWorkflow uint8 = 1 << iota
	maskRepo
	maskStatus
	maskNumber
	// maskFields are the combinations of the fields every record is
	// filed under; a pull request's runs are filed apart (maskNumber).
	maskFields = maskWorkflow | maskRepo | maskStatus
	// listFinished names the finished records' list, by finish time.
	listFinished uint8 = 0x80
)

// listName is the name of the list of mask (its fields only; the pull
// request lists are named by their mask alone).
func listName(mask uint8, workflow, repo, status uint32) []byte {
	b := make([]byte, 1, 1+4+4+4)
	b[0] = mask
	if mask&maskNumber != 0 {
		return b
	}
	if mask&maskWorkflow != 0 {
		b = binary.BigEndian.AppendUint32(b, workflow)
	}
	if mask&maskRepo != 0 {
		b = binary.BigEndian.AppendUint32(b, repo)
	}
	if mask&maskStatus != 0 {
		b = binary.BigEndian.AppendUint32(b, status)
	}
	return b
}

// prPrefix is the beginning of the keys of a pull request's runs in its
// list (listName(mask)): its number, after its repository for maskRepo.
func prPrefix(mask uint8, repo uint32, number int64) []byte {
	var b []byte
	if mask&maskRepo != 0 {
		b = binary.BigEndian.AppendUint32(b, repo)
	}
	return binary.BigEndian.AppendUint64(b, uint64(number))
}

// listEntry is one key of a record in a list.
type listEntry struct {
	list, key, value []byte
}

// entries are the list keys of id's record s.
func (s *runSummary) entries(id string) []listEntry {
	out := make([]listEntry, 0, maskFields+3)
	for mask := uint8(1); mask <= maskFields; mask++ {
		out = append(out, listEntry{list: listName(mask, s.workflow, s.repo, s.status), key: []byte(id)})
	}
	if s.number != 0 {
		v := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, s.workflow), s.status)
		for _, mask := range []uint8{maskNumber, maskNumber | maskRepo} {
			out = append(out, listEntry{list: []byte{mask}, key: append(prPrefix(mask, s.repo, s.number), id...), value: v})
		}
	}
	if s.finished != 0 {
		out = append(out, listEntry{list: []byte{listFinished}, key: append(binary.BigEndian.AppendUint64(nil, uint64(s.finished)), id...)})
	}
	return out
}

// file adds (or removes) a record's list keys.
func file(lists *bolt.Bucket, entries []listEntry, add bool) error {
	for _, e := range entries {
		if !add {
			if b := lists.Bucket(e.list); b != nil {
				if err := b.Delete(e.key); err != nil {
					return err
				}
			}
			continue
		}
		b, err := lists.CreateBucketIfNotExists(e.list)
		if err != nil {
			return err
		}
		b.FillPercent = indexFillPercent
		if err := b.Put(e.key, e.value); err != nil {
			return err
		}
	}
	return nil
}

// sameLists: a and b are filed under the same keys.
func (s *runSummary) sameLists(o *runSummary) bool {
	return s.workflow == o.workflow && s.repo == o.repo && s.status == o.status && s.number == o.number && s.finished == o.finished
}

func newRunIndex(js jetstream.JetStream, dir string, log interface{ Warn(string, ...any) }) *RunIndex {
	x := &RunIndex{}
	x.watchIndex = newWatchIndex("run index", runIndexFile, dir, js, BucketRuns, ">", RunMarkerTTL, log, indexHooks{
		buckets: [][]byte{bucketRunSummaries, bucketRunLists},
		apply:   x.apply,
		stamp:   x.stamp,
		sweep:   x.sweep,
	})
	return x
}

// indexFields is what the index decodes of a stored record.
type indexFields struct {
	ID       string           `json:"id"`
	Workflow string           `json:"workflow"`
	Repo     string           `json:"repo"`
	Status   workflows.Status `json:"status"`
	Event    struct {
		PullRequest *struct {
			Number int `json:"number"`
		} `json:"pull_request"`
		Issue *struct {
			Number int `json:"number"`
		} `json:"issue"`
	} `json:"event"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// summarize is the summary of a stored record, its names interned in tx;
// nil for a record that does not decode (logged).
func (x *RunIndex) summarize(tx *bolt.Tx, key string, value []byte, gen uint64) (*runSummary, error) {
	var f indexFields
	if err := queue.DecodeJSON(value, &f); err != nil {
		x.log.Warn("run index: skipping a record that does not decode", "key", key, "err", err)
		return nil, nil
	}
	s := &runSummary{gen: gen, created: f.CreatedAt.UnixNano()}
	var err error
	if s.workflow, err = x.names.intern(tx, f.Workflow); err != nil {
		return nil, err
	}
	if s.repo, err = x.names.intern(tx, f.Repo); err != nil {
		return nil, err
	}
	if s.status, err = x.names.intern(tx, string(f.Status)); err != nil {
		return nil, err
	}
	if f.Event.PullRequest != nil {
		s.number = int64(f.Event.PullRequest.Number)
	} else if f.Event.Issue != nil {
		s.number = int64(f.Event.Issue.Number)
	}
	if f.FinishedAt != nil && f.Status.Terminal() {
		s.finished = f.FinishedAt.UnixNano()
	}
	return s, nil
}

// apply files one change of the bucket.
func (x *RunIndex) apply(tx *bolt.Tx, e *indexChange, gen uint64) (count int, wrote bool, _ error) {
	id := e.key
	var next *runSummary
	if e.put {
		s, err := x.summarize(tx, id, e.value, gen)
		if err != nil {
			return 0, false, err
		}
		next = s
	}
	sums, lists := tx.Bucket(bucketRunSummaries), tx.Bucket(bucketRunLists)
	sums.FillPercent = indexFillPercent
	prev, had := decodeRunSummary(sums.Get([]byte(id)))
	switch {
	case had && next != nil && prev == *next:
		return 0, false, nil // a heartbeat, a step: nothing the index keeps changed
	case had && next != nil && prev.sameLists(next):
		return 0, true, sums.Put([]byte(id), next.encode()) // filed under the same lists: refresh the rest
	case had:
		if err := file(lists, prev.entries(id), false); err != nil {
			return 0, false, err
		}
		if next == nil {
			return -1, true, sums.Delete([]byte(id))
		}
	case next == nil:
		return 0, false, nil
	}
	if err := file(lists, next.entries(id), true); err != nil {
		return 0, false, err
	}
	if err := sums.Put([]byte(id), next.encode()); err != nil {
		return 0, false, err
	}
	if had {
		return 0, true, nil
	}
	return 1, true, nil
}

// stamp marks id's record as seen by the reconciliation of generation gen.
func (x *RunIndex) stamp(tx *bolt.Tx, id string, gen uint64) error {
	sums := tx.Bucket(bucketRunSummaries)
	s, ok := decodeRunSummary(sums.Get([]byte(id)))
	if !ok || s.gen >= gen {
		return nil
	}
	s.gen = gen
	return sums.Put([]byte(id), s.encode())
}

// sweep drops the records the reconciliation of generation gen did not
// see.
func (x *RunIndex) sweep(tx *bolt.Tx, gen uint64) (int, error) {
	sums, lists := tx.Bucket(bucketRunSummaries), tx.Bucket(bucketRunLists)
	var gone []string
	err := sums.ForEach(func(k, v []byte) error {
		if s, ok := decodeRunSummary(v); !ok || s.gen < gen {
			gone = append(gone, string(k))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range gone {
		s, _ := decodeRunSummary(sums.Get([]byte(id)))
		if err := file(lists, s.entries(id), false); err != nil {
			return 0, err
		}
		if err := sums.Delete([]byte(id)); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}

// filterList is the list a filter selects and the prefix of its keys
// there: nil list for the summaries (every record); false when a name in
// f is in no record.
func (x *RunIndex) filterList(f ListFilter) (list, prefix []byte, ok bool) {
	ids := map[string]uint32{}
	for _, name := range []string{f.Workflow, f.Repo, string(f.Status)} {
		if name == "" {
			continue
		}
		id, known := x.names.lookup(name)
		if !known {
			return nil, nil, false
		}
		ids[name] = id
	}
	if f.PR != 0 {
		mask := maskNumber
		if f.Repo != "" {
			mask |= maskRepo
		}
		return []byte{mask}, prPrefix(mask, ids[f.Repo], int64(f.PR)), true
	}
	var mask uint8
	if f.Workflow != "" {
		mask |= maskWorkflow
	}
	if f.Repo != "" {
		mask |= maskRepo
	}
	if f.Status != "" {
		mask |= maskStatus
	}
	if mask == 0 {
		return nil, nil, true
	}
	return listName(mask, ids[f.Workflow], ids[f.Repo], ids[string(f.Status)]), nil, true
}

// page returns the ids of the records matching f, newest first, older
// than cursor (an id; "" starts at the newest), at most limit of them (0:
// all), and the id to continue after ("" when none are left). Without a
// pull request in f it is a walk of f's list: the page and nothing else
// is looked at. With one, the pull request's list (its runs, in its
// repository when f names one) is walked for the other fields.
func (x *RunIndex) page(f ListFilter, cursor string, limit int) (ids []string, next string, _ error) {
	list, prefix, ok := x.filterList(f)
	if !ok {
		return nil, "", nil
	}
	var wantWorkflow, wantStatus uint32
	if f.PR != 0 {
		wantWorkflow, _ = x.names.lookup(f.Workflow)
		wantStatus, _ = x.names.lookup(string(f.Status))
	}
	err := x.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRunSummaries)
		if list != nil {
			if b = tx.Bucket(bucketRunLists).Bucket(list); b == nil {
				return nil
			}
		}
		n := 0
		walkBack(b.Cursor(), prefix, []byte(cursor), func(k, v []byte) bool {
			if f.PR == 0 && limit > 0 && len(ids) == limit {
				next = ids[len(ids)-1] // one more is listed: there is a next page
				return false
			}
			n++
			if f.PR != 0 && len(v) == 8 &&
				((f.Workflow != "" && binary.BigEndian.Uint32(v) != wantWorkflow) || (f.Status != "" && binary.BigEndian.Uint32(v[4:]) != wantStatus)) {
				return true
			}
			if f.PR != 0 && limit > 0 && len(ids) == limit {
				next = ids[len(ids)-1] // one more matches: there is a next page
				return false
			}
			ids = append(ids, string(k))
			return true
		})
		x.visited.Add(int64(n))
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return ids, next, nil
}

// walkBack calls fn with the keys that begin with prefix and sort below
// prefix+before (empty before: all of them), last first, the prefix cut
// off, until fn returns false.
func walkBack(c *bolt.Cursor, prefix, before []byte, fn func(k, v []byte) bool) {
	seek := append(bytes.Clone(prefix), before...)
	if len(before) == 0 {
		seek = append(seek, 0xff) // past every key of the prefix (ids and positions are shorter)
		for range 16 {
			seek = append(seek, 0xff)
		}
	}
	k, _ := c.Seek(seek)
	var v []byte
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		if !fn(k[len(prefix):], v) {
			return
		}
	}
}

// expired returns the ids of the finished records that finished before
// cutoff, oldest first, at most limit of them (0: all): a walk of the
// finish-time list, never of the bucket.
func (x *RunIndex) expired(cutoff time.Time, limit int) ([]string, error) {
	var ids []string
	end := binary.BigEndian.AppendUint64(nil, uint64(cutoff.UnixNano()))
	err := x.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRunLists).Bucket([]byte{listFinished})
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0; k, _ = c.Next() {
			ids = append(ids, string(k[8:]))
			if len(ids) == limit {
				break
			}
		}
		return nil
	})
	return ids, err
}

// ids is every id indexed (tests).
func (x *RunIndex) ids(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	err := x.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRunSummaries).ForEach(func(k, _ []byte) error {
			out[string(k)] = true
			return ctx.Err()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the run index: %w", err)
	}
	return out, nil
}
