package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// RunIndex answers RunStore.List without reading the bucket: an in-memory
// summary of every run record (id, workflow, repo, status, pull request,
// created and finished times), loaded once from hookrun_runs by a KV watch
// and kept current by the same watch (puts and deletes, from any process).
//
// Every record is filed under each of the 8 combinations of three filter
// fields (workflow, repo, status: each either its value or "any"), one
// id-sorted list per combination, and under its pull request (its number,
// and its repository and number); a page of a list is then a binary
// search for the cursor and a slice, so the work of a List is bounded by
// its page, and for a pull request by that pull request's runs
// (RunIndex.visited counts it).
// Memory: docs/performance.md ("run index").
//
// Consistency: RunStore remembers the revision of its own last write, and
// List waits until the index applied it, so a record this process just
// wrote appears in its next list. Records written by other processes
// appear as soon as the watch delivers them (milliseconds).
type RunIndex struct {
	kv  jetstream.KeyValue
	log interface {
		Warn(msg string, args ...any)
	}

	startOnce sync.Once
	ready     chan struct{} // closed once the initial load is applied
	loadErr   error         // why the watch could not be set up (set before ready closes)

	mu      sync.RWMutex
	byID    map[string]*indexEntry
	lists   map[comboKey][]*indexEntry // each sorted by id, ascending
	intern  map[string]string          // workflow and repo names, shared
	applied uint64                     // the newest revision applied
	changed chan struct{}              // closed and replaced whenever applied moves

	// visited counts the entries queries have looked at (tests assert
	// that it is bounded by the page, whatever the number of records).
	visited atomic.Int64
}

// indexEntry is the summary of one record.
type indexEntry struct {
	id       string
	workflow string
	repo     string
	status   workflows.Status
	number   int       // pull/merge request or issue number; 0: none
	created  time.Time // CreatedAt
	finished time.Time // FinishedAt; zero while unfinished
}

// comboKey names one id list: the fields whose bit is set in mask are
// matched exactly, the others are "any".
type comboKey struct {
	mask     uint8
	workflow string
	repo     string
	status   workflows.Status
	number   int
}

const (
	maskWorkflow uint8 = 1 << iota
	maskRepo
	maskStatus
	maskNumber
	// maskFields are the combinations of the fields every record is
	// filed under; a pull request's runs are filed apart (prKeys).
	maskFields = maskWorkflow | maskRepo | maskStatus
	maskAll    = maskFields | maskNumber
)

// prKeys are the lists of e's pull request: by number alone and by
// repository and number (none for a run without one).
func (e *indexEntry) prKeys() []comboKey {
	if e.number == 0 {
		return nil
	}
	return []comboKey{{mask: maskNumber, number: e.number}, {mask: maskNumber | maskRepo, repo: e.repo, number: e.number}}
}

// keys are every list e is filed under: 8 + 2.
func (e *indexEntry) keys() []comboKey {
	ks := make([]comboKey, 0, maskFields+3)
	for mask := range maskFields + 1 {
		ks = append(ks, e.key(mask))
	}
	return append(ks, e.prKeys()...)
}

func (e *indexEntry) key(mask uint8) comboKey {
	k := comboKey{mask: mask}
	if mask&maskWorkflow != 0 {
		k.workflow = e.workflow
	}
	if mask&maskRepo != 0 {
		k.repo = e.repo
	}
	if mask&maskStatus != 0 {
		k.status = e.status
	}
	if mask&maskNumber != 0 {
		k.number = e.number
	}
	return k
}

// filterKey is the list a filter without a pull request selects.
func filterKey(f ListFilter) comboKey {
	var k comboKey
	if f.Workflow != "" {
		k.mask |= maskWorkflow
		k.workflow = f.Workflow
	}
	if f.Repo != "" {
		k.mask |= maskRepo
		k.repo = f.Repo
	}
	if f.Status != "" {
		k.mask |= maskStatus
		k.status = f.Status
	}
	return k
}

func newRunIndex(kv jetstream.KeyValue, log interface{ Warn(string, ...any) }) *RunIndex {
	return &RunIndex{
		kv:      kv,
		log:     log,
		ready:   make(chan struct{}),
		byID:    map[string]*indexEntry{},
		lists:   map[comboKey][]*indexEntry{},
		intern:  map[string]string{},
		changed: make(chan struct{}),
	}
}

// start sets up the watch (once; later calls do nothing) on ctx, which
// ends it. It does not wait for the initial load: Wait does.
func (x *RunIndex) start(ctx context.Context) {
	x.startOnce.Do(func() { go x.run(ctx) })
}

// run loads the bucket and applies every change until ctx ends.
func (x *RunIndex) run(ctx context.Context) {
	w, err := x.kv.WatchAll(ctx)
	if err != nil {
		x.loadErr = fmt.Errorf("watching run records for the index: %w", err)
		close(x.ready)
		return
	}
	defer func() { _ = w.Stop() }()
	loaded := false
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				if !loaded {
					x.loadErr = errors.New("watching run records for the index: watcher closed")
					close(x.ready)
				} else if ctx.Err() == nil {
					x.log.Warn("run index: the watch of hookrun_runs ended; lists no longer see changes")
				}
				return
			}
			if e == nil {
				if !loaded {
					loaded = true
					close(x.ready)
				}
				continue
			}
			x.apply(e)
		}
	}
}

// Wait blocks until the initial load is applied (or ctx ends).
func (x *RunIndex) Wait(ctx context.Context) error {
	select {
	case <-x.ready:
		return x.loadErr
	case <-ctx.Done():
		return fmt.Errorf("waiting for the run index to load: %w", ctx.Err())
	}
}

// Ready reports whether the initial load is applied.
func (x *RunIndex) Ready() bool {
	select {
	case <-x.ready:
		return x.loadErr == nil
	default:
		return false
	}
}

// waitApplied blocks until the index applied revision rev (or ctx ends).
func (x *RunIndex) waitApplied(ctx context.Context, rev uint64) error {
	for {
		x.mu.RLock()
		applied, ch := x.applied, x.changed
		x.mu.RUnlock()
		if applied >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the run index to apply revision %d (at %d): %w", rev, applied, ctx.Err())
		}
	}
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

func (x *RunIndex) internStr(s string) string {
	if v, ok := x.intern[s]; ok {
		return v
	}
	s = strings.Clone(s)
	x.intern[s] = s
	return s
}

// apply files one change of the bucket.
func (x *RunIndex) apply(e jetstream.KeyValueEntry) {
	var (
		next *indexEntry
		f    indexFields
	)
	if e.Operation() == jetstream.KeyValuePut {
		if err := json.Unmarshal(e.Value(), &f); err != nil {
			x.log.Warn("run index: skipping a record that does not decode", "key", e.Key(), "err", err)
		} else {
			next = &indexEntry{id: e.Key(), status: f.Status, created: f.CreatedAt}
			if f.Event.PullRequest != nil {
				next.number = f.Event.PullRequest.Number
			} else if f.Event.Issue != nil {
				next.number = f.Event.Issue.Number
			}
			if f.FinishedAt != nil {
				next.finished = *f.FinishedAt
			}
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if next != nil {
		next.workflow = x.internStr(f.Workflow)
		next.repo = x.internStr(f.Repo)
	}
	prev := x.byID[e.Key()]
	switch {
	case prev != nil && next != nil && prev.key(maskAll) == next.key(maskAll):
		*prev = *next // filed under the same lists: refresh the rest
	default:
		if prev != nil {
			x.unfile(prev)
			delete(x.byID, prev.id)
		}
		if next != nil {
			x.file(next)
			x.byID[next.id] = next
		}
	}
	if rev := e.Revision(); rev > x.applied {
		x.applied = rev
		close(x.changed)
		x.changed = make(chan struct{})
	}
}

func compareEntry(a *indexEntry, id string) int { return strings.Compare(a.id, id) }

// file adds e to its lists.
func (x *RunIndex) file(e *indexEntry) {
	for _, k := range e.keys() {
		l := x.lists[k]
		if n := len(l); n == 0 || l[n-1].id < e.id {
			x.lists[k] = append(l, e) // the common case: the newest run
			continue
		}
		i, _ := slices.BinarySearchFunc(l, e.id, compareEntry)
		x.lists[k] = slices.Insert(l, i, e)
	}
}

// unfile removes e from its lists; an emptied list is dropped.
func (x *RunIndex) unfile(e *indexEntry) {
	for _, k := range e.keys() {
		l := x.lists[k]
		i, found := slices.BinarySearchFunc(l, e.id, compareEntry)
		if !found {
			continue
		}
		if len(l) == 1 {
			delete(x.lists, k)
			continue
		}
		x.lists[k] = slices.Delete(l, i, i+1)
	}
}

// page returns the ids of the records matching f, newest first, older
// than cursor (an id; "" starts at the newest), at most limit of them (0:
// all), and the id to continue after ("" when none are left). Without a
// pull request in f it is a slice of f's list: the page and nothing else
// is looked at. With one, the pull request's list (its runs, in its
// repository when f names one) is walked for the other fields.
func (x *RunIndex) page(f ListFilter, cursor string, limit int) (ids []string, next string) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if f.PR != 0 {
		return x.prPage(f, cursor, limit)
	}
	l := x.lists[filterKey(f)]
	end := len(l)
	if cursor != "" {
		end, _ = slices.BinarySearchFunc(l, cursor, compareEntry)
	}
	start := 0
	if limit > 0 {
		start = max(0, end-limit)
	}
	x.visited.Add(int64(end - start))
	ids = make([]string, 0, end-start)
	for i := end - 1; i >= start; i-- {
		ids = append(ids, l[i].id)
	}
	if start > 0 && len(ids) > 0 {
		next = ids[len(ids)-1]
	}
	return ids, next
}

// prPage is page for a filter with a pull request.
func (x *RunIndex) prPage(f ListFilter, cursor string, limit int) (ids []string, next string) {
	k := comboKey{mask: maskNumber, number: f.PR}
	if f.Repo != "" {
		k.mask, k.repo = k.mask|maskRepo, f.Repo
	}
	l := x.lists[k]
	end := len(l)
	if cursor != "" {
		end, _ = slices.BinarySearchFunc(l, cursor, compareEntry)
	}
	n := 0
	for i := end - 1; i >= 0; i-- {
		e := l[i]
		n++
		if (f.Workflow != "" && e.workflow != f.Workflow) || (f.Status != "" && e.status != f.Status) {
			continue
		}
		if limit > 0 && len(ids) == limit {
			next = ids[len(ids)-1] // one more matches: there is a next page
			break
		}
		ids = append(ids, e.id)
	}
	x.visited.Add(int64(n))
	return ids, next
}

// expired returns the ids of the finished records that finished before
// cutoff, oldest first, at most limit of them: a pass over the index in
// memory, never over the bucket.
func (x *RunIndex) expired(cutoff time.Time, limit int) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var ids []string
	for _, e := range x.lists[comboKey{}] {
		if !e.finished.IsZero() && e.status.Terminal() && e.finished.Before(cutoff) {
			ids = append(ids, e.id)
			if len(ids) == limit {
				break
			}
		}
	}
	return ids
}

// Len is the number of records indexed.
func (x *RunIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byID)
}
