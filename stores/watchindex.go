package stores

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The list indexes (the run index, runindex.go; the deliveries index,
// deliveryindex.go) live on disk, each in a bbolt file of the index
// directory (Options.IndexDir), fed by a watch of their bucket: a
// process holds in memory the pages it reads, not the records. The file
// keeps the revision it applied last; a process that starts again resumes
// the watch after it, applying only what changed meanwhile, and is ready
// as soon as the watch caught up. watchIndex is what both share: the
// file, the watch and its restarts, the batching of its changes (one
// write transaction per batch), readiness and read-after-write.
//
// The file is read again from the bucket (wiped first) when it cannot be
// trusted to resume: it is new, from another format (indexSchema), or of
// another bucket (the bucket was deleted and created again: its stream's
// creation time differs, or its last revision is below the file's). When
// the bucket's removals leave markers that expire (hookrun_runs,
// RunMarkerTTL), an index that stopped following for longer than half
// their life may have missed removals: it resumes as always, is ready once
// caught up, and then reconciles with the bucket in the background
// (reconcile: every key the bucket holds, headers only; the records it
// does not hold are dropped).

// indexFillPercent is how full bbolt leaves the pages it splits: the
// lists grow at their newest end (run ids and receipt times are ordered
// by time), so a split page is not written again; bbolt's default
// (half) would leave every page half empty.
const indexFillPercent = 0.95

// indexSchema is the layout of the index files; a file of another layout
// is rebuilt.
const indexSchema = 1

// Keys of the meta bucket.
var (
	bucketMeta    = []byte("meta")
	metaSchema    = []byte("schema")
	metaRev       = []byte("rev")    // the newest revision applied
	metaGen       = []byte("gen")    // the generation of the current full read
	metaFollowed  = []byte("at")     // unix nanos when the index last followed the bucket
	metaStream    = []byte("stream") // the bucket's stream's creation time, unix nanos
	metaCount     = []byte("n")      // records indexed
	metaReconcile = []byte("recon")  // the generation of a reconciliation under way
	metaBoot      = []byte("boot")   // the boot the file was last opened in
	metaClean     = []byte("clean")  // 1: the file was closed (and synced) since
	indexDictName = []byte("names")  // "n" + name → uint32
)

// indexHooks is what an index does with its bucket's changes.
type indexHooks struct {
	buckets [][]byte
	// apply files one change (gen: the current generation); it returns
	// the change of the record count (+1 added, -1 removed, 0) and whether
	// it wrote anything.
	apply func(tx *bolt.Tx, c *indexChange, gen uint64) (count int, wrote bool, _ error)
	// stamp marks the record of key as seen by the reconciliation of
	// generation gen (nothing when the index does not hold it).
	stamp func(tx *bolt.Tx, key string, gen uint64) error
	// sweep drops what the reconciliation of generation gen did not see
	// and returns how many; nil when nothing can go unseen (no
	// reconciliation).
	sweep func(tx *bolt.Tx, gen uint64) (int, error)
	// tick is called about once a minute while following (nil: nothing
	// to do); it returns the change of the record count.
	tick func(tx *bolt.Tx, now time.Time) (int, error)
}

// watchIndex is an index file fed by a watch (see above).
type watchIndex struct {
	name      string // "run index": messages
	js        jetstream.JetStream
	stream    string        // the bucket's stream
	prefix    string        // the subject prefix of its keys
	keys      string        // the keys watched (a subject filter)
	dir       string        // the index directory; "" a temporary one, removed at close
	file      string        // the file's name in dir
	markerTTL time.Duration // how long removal markers live; 0: they do not expire
	hooks     indexHooks
	log       interface{ Warn(msg string, args ...any) }
	names     *indexNames

	startOnce sync.Once
	started   atomic.Bool
	readyOnce sync.Once
	ready     chan struct{} // closed once the first watch caught up
	done      chan struct{} // closed when run returned and the file is closed
	// retryMin and retryMax bound the wait before a watch is set up
	// again (watchRetryMin, watchRetryMax; tests shorten them).
	retryMin, retryMax time.Duration
	// stallEvery is how often a following watch checks that it still
	// follows (indexStallEvery; tests shorten it).
	stallEvery time.Duration
	// follows counts the consumers follow set up; the one numbered deafen
	// drops what it receives, as one whose server stopped sending would
	// (tests of the stall check).
	follows, deafen atomic.Int64

	db       atomic.Pointer[bolt.DB] // set once opened
	commitMu sync.Mutex              // one commit at a time (the count it carries)
	tempDir  string                  // a temporary dir to remove at close

	mu         sync.RWMutex
	applied    uint64        // the newest revision applied
	count      int           // records indexed
	gen        uint64        // generation of the current (or last) full read
	followedAt time.Time     // when the index last followed the bucket
	changed    chan struct{} // closed and replaced whenever applied moves
	// stopWatch stops the current watch (nil while down); downErr why
	// the watch is down (nil while up) and downSince since when.
	stopWatch func()
	downErr   error
	downSince time.Time
	holdUntil time.Time // StopWatch's hold

	// applies counts the changes applied (tests: a restart applies only
	// what changed while the process was away); reconciled the
	// reconciliations ended.
	applies, reconciled atomic.Int64
	// writes counts the commits written (tests: a change the index keeps
	// nothing of writes nothing).
	writes atomic.Int64
}

func newWatchIndex(name, file, dir string, js jetstream.JetStream, bucket, keys string, markerTTL time.Duration, log interface{ Warn(string, ...any) }, hooks indexHooks) *watchIndex {
	return &watchIndex{
		name: name, file: file, dir: dir, js: js, stream: "KV_" + bucket, prefix: "$KV." + bucket + ".", keys: keys,
		markerTTL: markerTTL, log: log, hooks: hooks,
		names:      &indexNames{},
		ready:      make(chan struct{}),
		done:       make(chan struct{}),
		retryMin:   watchRetryMin,
		retryMax:   watchRetryMax,
		stallEvery: indexStallEvery,
		changed:    make(chan struct{}),
	}
}

// Restarts of the watch: when it ends (the connection closed, the
// subscription dropped) or cannot be set up, run sets it up again after
// a backoff (watchRetryMin doubling up to watchRetryMax, each wait drawn
// between half and all of it), and Health reports the index down until
// the new watch caught up. It resumes after the revision applied last;
// see above for when it reads the bucket again instead.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 30 * time.Second
)

// indexStallEvery: a following watch asks the bucket this often for the
// newest revision of its keys, and ends (to be set up again) when the
// newest revision of the last check is still not applied. The ordered
// consumer under it recovers by itself from a dropped connection or a
// lost consumer when it notices (missed heartbeats); this check is for a
// consumer that went silent without its client noticing, which once left
// an ingress listing the runs of before a NATS node was killed.
const indexStallEvery = 10 * time.Second

// Batching: a write transaction applies what the watch delivers within
// indexFollowWait of the first change (while loading, within
// indexLoadWait), up to indexBatchMax changes. A bbolt commit costs far
// more than a change filed in it (it copies and writes every page the
// transaction touched): committing each change as it came was a third of
// hookrun serve's CPU under a burst of deliveries; a list waits at most
// indexFollowWait longer for its own process's write. While following,
// about once per indexTickEvery the index notes that it follows
// (metaFollowed), runs its tick and lets the kernel take back the file's
// pages it mapped (releaseMapped).
const (
	indexBatchMax   = 2048
	indexFollowWait = 25 * time.Millisecond
	indexLoadWait   = 500 * time.Millisecond
	indexTickEvery  = time.Minute
)

// start opens the file and sets up the watch (once; later calls do
// nothing) on ctx, which ends it. It does not wait for them: Wait does.
func (x *watchIndex) start(ctx context.Context) {
	x.startOnce.Do(func() {
		x.started.Store(true)
		go x.run(ctx)
	})
}

// close waits for a started index to stop (its ctx ended) and closes the
// file.
func (x *watchIndex) close() {
	if x.started.Load() {
		<-x.done
	}
}

// run opens the file, then keeps a watch of the bucket applying every
// change until ctx ends, setting it up again after a backoff whenever it
// ends; then it closes the file.
func (x *watchIndex) run(ctx context.Context) {
	defer close(x.done)
	defer x.closeFile()
	wait := x.retryMin
	for {
		var (
			healthy bool
			err     error
		)
		if x.db.Load() == nil {
			err = x.openFile()
		}
		if err == nil {
			healthy, err = x.watch(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		if healthy {
			wait = x.retryMin // it ran: the next failure starts the backoff over
		}
		d := wait/2 + rand.N(wait/2+1)
		if hold := time.Until(x.setDown(err)); hold > d {
			d = hold
		}
		x.log.Warn(x.name+": the watch is down; restarting", "err", err, "in", d)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		wait = min(2*wait, x.retryMax)
	}
}

// openFile opens (or creates) the index file and reads its state.
func (x *watchIndex) openFile() error {
	dir := x.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "hookrun-index-*"); err != nil {
			return fmt.Errorf("opening the %s: %w", x.name, err)
		}
		x.tempDir = dir
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("opening the %s: %w", x.name, err)
	}
	path := filepath.Join(dir, x.file)
	opts := &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil && !errors.Is(err, bolterrors.ErrTimeout) && !errors.Is(err, os.ErrPermission) {
		// Not another process's (the lock) nor unreadable: a file that
		// does not open is rebuilt from the bucket.
		x.log.Warn(x.name+": the index file does not open; rebuilding it", "file", path, "err", err)
		if rerr := os.Remove(path); rerr == nil {
			db, err = bolt.Open(path, 0o600, opts)
		}
	}
	if err != nil {
		return fmt.Errorf("opening the %s at %s: %w", x.name, path, err)
	}
	if err := x.loadState(db); err != nil {
		_ = db.Close()
		return err
	}
	x.db.Store(db)
	return nil
}

// bootID names the running kernel's boot ("" where it cannot be read):
// a file opened in this boot has every write the process made, synced or
// not, in the page cache.
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// loadState reads the meta bucket and the names, wiping a file of
// another layout, or one whose unsynced writes a crash of the machine
// may have lost.
//
// The index is derived from its bucket, so its commits are not synced
// (bbolt's NoSync): an fsync per commit was most of what following the
// bucket cost a run. A process that dies loses nothing (its writes are in
// the page cache); only the machine's crash can tear the file. So the
// file notes the boot it was opened in, and whether it was closed (the
// close syncs); opened in another boot without having been closed, it is
// rebuilt from the bucket. Where the boot cannot be told, every commit is
// synced as bbolt does by default.
func (x *watchIndex) loadState(db *bolt.DB) error {
	boot := bootID()
	err := db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		// Only a file whose commits went unsynced (it noted a boot) can be
		// torn; where this boot cannot be told, such a file is suspect.
		var stored []byte
		if m != nil {
			stored = m.Get(metaBoot)
		}
		torn := len(stored) > 0 && getU64(m, metaClean) != 1 && (boot == "" || string(stored) != boot)
		if torn {
			x.log.Warn(x.name + ": the index file was not closed before the machine restarted; rebuilding it from the bucket")
		}
		if m == nil || getU64(m, metaSchema) != indexSchema || torn {
			if err := x.wipe(tx); err != nil {
				return err
			}
		}
		m = tx.Bucket(bucketMeta)
		if err := errors.Join(m.Put(metaBoot, []byte(boot)), putU64(m, metaClean, 0)); err != nil {
			return fmt.Errorf("writing index meta: %w", err)
		}
		x.mu.Lock()
		x.applied, x.gen, x.count = getU64(m, metaRev), getU64(m, metaGen), int(getU64(m, metaCount))
		x.followedAt = time.Unix(0, int64(getU64(m, metaFollowed)))
		x.mu.Unlock()
		return x.names.load(tx)
	})
	// This commit, the boot noted and the file marked open, is synced;
	// the commits after it are not.
	db.NoSync = boot != ""
	return err
}

// wipe empties the file: every bucket made again, the state zero.
func (x *watchIndex) wipe(tx *bolt.Tx) error {
	for _, b := range append([][]byte{bucketMeta, indexDictName}, x.hooks.buckets...) {
		if tx.Bucket(b) != nil {
			if err := tx.DeleteBucket(b); err != nil {
				return fmt.Errorf("wiping the %s: %w", x.name, err)
			}
		}
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("wiping the %s: %w", x.name, err)
		}
	}
	if err := putU64(tx.Bucket(bucketMeta), metaSchema, indexSchema); err != nil {
		return err
	}
	x.mu.Lock()
	x.applied, x.gen, x.count, x.followedAt = 0, 0, 0, time.Time{}
	x.mu.Unlock()
	return x.names.load(tx)
}

// closeFile stores the index's state (the revision applied, when it
// last followed) and closes the file (removing a temporary directory).
func (x *watchIndex) closeFile() {
	db := x.db.Load()
	if db == nil {
		return
	}
	x.commitMu.Lock()
	x.mu.RLock()
	applied, count, at := x.applied, x.count, x.followedAt
	x.mu.RUnlock()
	db.NoSync = false // this last commit syncs the file, then says it is whole
	if err := db.Update(func(tx *bolt.Tx) error {
		return errors.Join(x.putState(tx, applied, count, at), putU64(tx.Bucket(bucketMeta), metaClean, 1))
	}); err != nil {
		x.log.Warn(x.name+": storing the index state", "err", err)
	}
	x.commitMu.Unlock()
	if err := db.Close(); err != nil {
		x.log.Warn(x.name+": closing the index file", "err", err)
	}
	if x.tempDir != "" {
		_ = os.RemoveAll(x.tempDir)
	}
}

// bucketOrigin is the creation time of the bucket's stream and its last
// revision.
func (x *watchIndex) bucketOrigin(ctx context.Context) (created time.Time, last uint64, _ error) {
	st, err := x.js.Stream(ctx, x.stream)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("reading the state of the %s's bucket: %w", x.name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("reading the state of the %s's bucket: %w", x.name, err)
	}
	return info.Created, info.State.LastSeq, nil
}

// plan decides how the next watch starts: after the revision applied
// (resume) or, for a new index, from the start. An index that stopped
// following for longer than half the markers' life (or whose last
// reconciliation did not finish) gets a new generation to reconcile with
// once caught up (reconcile).
func (x *watchIndex) plan(ctx context.Context) (from uint64, reconcileGen uint64, _ error) {
	db := x.db.Load()
	created, last, err := x.bucketOrigin(ctx)
	if err != nil {
		return 0, 0, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		stored := getU64(m, metaStream)
		x.mu.RLock()
		applied, followed, count := x.applied, x.followedAt, x.count
		x.mu.RUnlock()
		if (applied > 0 || count > 0) && (stored != uint64(created.UnixNano()) || last < applied) {
			x.log.Warn(x.name+": the bucket is not the one indexed (created again?); rebuilding the index", "indexed_revision", applied, "bucket_last_revision", last)
			if err := x.wipe(tx); err != nil {
				return err
			}
			m = tx.Bucket(bucketMeta)
			applied, count = 0, 0
		}
		if err := putU64(m, metaStream, uint64(created.UnixNano())); err != nil {
			return err
		}
		if applied == 0 && count == 0 {
			return nil // a new index: read everything, nothing to reconcile
		}
		from = applied + 1
		if x.hooks.sweep != nil && x.markerTTL > 0 && (time.Since(followed) >= x.markerTTL/2 || getU64(m, metaReconcile) != 0) {
			x.mu.Lock()
			x.gen++
			reconcileGen = x.gen
			x.mu.Unlock()
			return errors.Join(putU64(m, metaGen, reconcileGen), putU64(m, metaReconcile, reconcileGen))
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("planning the %s's watch: %w", x.name, err)
	}
	return from, reconcileGen, nil
}

// reconcile drops the records a removal whose marker expired left behind:
// it reads every key the bucket holds (headers only), stamps each record
// it still holds with generation gen (the watch stamps what it applies
// from then on), and then drops the records of older generations
// (indexHooks.sweep). The index serves meanwhile: a record gone from the
// bucket is left out of a page by the read of its records.
func (x *watchIndex) reconcile(ctx context.Context, gen uint64) {
	defer x.reconciled.Add(1)
	keys, stop, err := x.follow(ctx, 0, true)
	if err != nil {
		x.log.Warn(x.name+": reconciling with the bucket; the next start tries again", "err", err)
		return
	}
	defer stop()
	db := x.db.Load()
	batch := make([]string, 0, indexBatchMax)
	stamp := func() error {
		x.commitMu.Lock()
		defer x.commitMu.Unlock()
		err := db.Update(func(tx *bolt.Tx) error {
			for _, k := range batch {
				if err := x.hooks.stamp(tx, k, gen); err != nil {
					return err
				}
			}
			return nil
		})
		batch = batch[:0]
		return err
	}
	for c := range keys {
		if c != nil {
			if c.put {
				batch = append(batch, c.key)
			}
			if len(batch) < indexBatchMax {
				continue
			}
		}
		if err := stamp(); err != nil {
			x.log.Warn(x.name+": reconciling with the bucket; the next start tries again", "err", err)
			return
		}
		if c != nil {
			continue
		}
		// Caught up: what was not stamped is gone from the bucket.
		x.commitMu.Lock()
		err := db.Update(func(tx *bolt.Tx) error {
			n, err := x.hooks.sweep(tx, gen)
			if err != nil {
				return err
			}
			x.mu.Lock()
			x.count -= n
			count := x.count
			x.mu.Unlock()
			m := tx.Bucket(bucketMeta)
			if getU64(m, metaReconcile) == gen {
				if err := m.Delete(metaReconcile); err != nil {
					return err
				}
			}
			return putU64(m, metaCount, uint64(count))
		})
		x.commitMu.Unlock()
		if err != nil {
			x.log.Warn(x.name+": reconciling with the bucket; the next start tries again", "err", err)
		}
		x.releaseMapped()
		return
	}
	if ctx.Err() == nil {
		x.log.Warn(x.name + ": reconciling with the bucket: the read ended; the next start tries again")
	}
}

// indexChange is one change of a watched key.
type indexChange struct {
	key   string
	value []byte
	rev   uint64
	put   bool // false: deleted or purged
}

// indexPull is how many changes the watch's consumer asks the server for
// at once: the most a watch holds in memory beside the batch (KV's own
// watch, a push consumer, buffers up to 64 MiB of a bucket in the client
// while the index writes).
const indexPull = 256

// follow starts an ordered consumer of the watched keys, from revision
// from (0: the last revision of every key), and sends their changes on
// the channel it returns, nil once it caught up with what the bucket held
// when it started; the channel is closed when the consumer ends (stop, or
// an error). stop ends it. headersOnly leaves the values out.
func (x *watchIndex) follow(ctx context.Context, from uint64, headersOnly bool) (<-chan *indexChange, func(), error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{x.prefix + x.keys}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly: headersOnly}
	if from > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := x.js.OrderedConsumer(ctx, x.stream, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("watching the %s's bucket: %w", x.name, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(indexPull))
	if err != nil {
		return nil, nil, fmt.Errorf("watching the %s's bucket: %w", x.name, err)
	}
	pending := uint64(0)
	if info := cons.CachedInfo(); info != nil {
		pending = info.NumPending
	}
	out := make(chan *indexChange, indexPull)
	n := x.follows.Add(1)
	go func() {
		defer close(out)
		send := func(c *indexChange) bool {
			select {
			case out <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if pending == 0 && !send(nil) {
			return
		}
		for {
			m, err := it.Next()
			if err != nil {
				return
			}
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			if x.deafen.Load() == n {
				continue
			}
			op := m.Headers().Get("KV-Operation")
			c := &indexChange{key: strings.TrimPrefix(m.Subject(), x.prefix), value: m.Data(), rev: meta.Sequence.Stream, put: op != "DEL" && op != "PURGE"}
			if !send(c) {
				return
			}
			if pending > 0 && meta.NumPending == 0 {
				pending = 0
				if !send(nil) {
					return
				}
			}
		}
	}()
	return out, it.Stop, nil
}

// watch sets up one watch and applies its changes until it ends; healthy
// tells whether it caught up before it did.
func (x *watchIndex) watch(ctx context.Context) (healthy bool, _ error) {
	from, reconcileGen, err := x.plan(ctx)
	if err != nil {
		return false, err
	}
	updates, stop, err := x.follow(ctx, from, false)
	if err != nil {
		return false, err
	}
	defer stop()
	x.mu.Lock()
	x.stopWatch = stop
	x.mu.Unlock()
	tick := time.NewTicker(indexTickEvery)
	defer tick.Stop()
	stall := time.NewTicker(x.stallEvery)
	defer stall.Stop()
	var check stallCheck // what the last stall check read
	batch := make([]*indexChange, 0, 256)
	for {
		var (
			e  *indexChange
			ok bool
		)
		select {
		case <-ctx.Done():
			return healthy, nil
		case <-stall.C:
			if healthy {
				if check, err = x.stalled(ctx, check); err != nil {
					return healthy, err
				}
			}
			continue
		case <-tick.C:
			if healthy {
				if err := x.commit(nil, true); err != nil {
					return healthy, err
				}
				x.releaseMapped()
			}
			continue
		case e, ok = <-updates:
		}
		// A batch fills for up to indexFollowWait (loading,
		// indexLoadWait) or indexBatchMax changes.
		wait := indexFollowWait
		if !healthy {
			wait = indexLoadWait
		}
		var caughtUp, closed bool
		batch, caughtUp, closed = fill(ctx, updates, e, ok, batch[:0], wait)
		if ctx.Err() != nil {
			return healthy, nil
		}
		if closed {
			if err := x.commit(batch, false); err != nil {
				return healthy, err
			}
			return healthy, fmt.Errorf("watching the %s's bucket: the watch ended", x.name)
		}
		if healthy {
			if err := x.commit(batch, false); err != nil {
				return healthy, err
			}
		} else if err := x.loadBatch(batch); err != nil {
			return healthy, err
		}
		if caughtUp && !healthy {
			x.caughtUp()
			healthy = true
			x.releaseMapped()
			if reconcileGen > 0 {
				go x.reconcile(ctx, reconcileGen)
			}
		}
	}
}

// fill collects a batch that starts with the change e (ok false: the
// watch's channel is closed): the changes that come within wait, at most
// indexBatchMax, up to the end of the catch-up (a nil change: caughtUp).
// closed tells that the channel closed; it returns early when ctx ends.
func fill(ctx context.Context, updates <-chan *indexChange, e *indexChange, ok bool, batch []*indexChange, wait time.Duration) (
	_ []*indexChange, caughtUp, closed bool) {
	more := time.After(wait)
	for {
		if !ok {
			return batch, false, true
		}
		if e == nil {
			return batch, true, false
		}
		batch = append(batch, e)
		if len(batch) == indexBatchMax {
			return batch, false, false
		}
		select {
		case e, ok = <-updates:
		case <-more:
			return batch, false, false
		case <-ctx.Done():
			return batch, false, false
		}
	}
}

// stallCheck is what a stall check read, for the next one.
type stallCheck struct {
	owed    uint64 // the newest revision of the watched keys
	lastSeq uint64 // the stream's last sequence, read before owed; 0 unknown
}

// stalled is the stall check (indexStallEvery) of a following watch: an
// error when last.owed, the newest revision of the watched keys at the
// last check, is still not applied; else what the next check compares.
//
// The newest revision of a wildcard filter costs the server a walk of
// every subject of the stream (39.5 ms of CPU at 1,000,000 keys,
// docs/performance.md "Lists at 1,000,000"), the stream's last sequence
// nothing. So the check reads the last sequence first and asks for the
// newest revision only when the stream took a message since the last
// check: while it took none, no revision newer than last.owed can exist,
// and last.owed is applied already. A check that could not read the newest
// revision (or found none) asks again the next time. Both reads together
// take at most half the check's interval.
func (x *watchIndex) stalled(ctx context.Context, last stallCheck) (stallCheck, error) {
	if applied := x.appliedRevision(); last.owed > applied {
		return stallCheck{}, fmt.Errorf("watching the %s's bucket: stalled: revision %d was in the bucket %s ago and is not applied (applied %d)",
			x.name, last.owed, x.stallEvery, applied)
	}
	ctx, cancel := context.WithTimeout(ctx, x.stallEvery/2)
	defer cancel()
	seq := x.lastSequence(ctx)
	if seq != 0 && seq == last.lastSeq && last.owed != 0 {
		return last, nil
	}
	return stallCheck{owed: x.newestRevision(ctx), lastSeq: seq}, nil
}

// lastSequence is the last sequence of the watched bucket's stream, from
// its leader (STREAM.INFO); 0 when it cannot be read.
func (x *watchIndex) lastSequence(ctx context.Context) uint64 {
	s, err := x.js.Stream(ctx, x.stream)
	if err != nil {
		return 0
	}
	return s.CachedInfo().State.LastSeq
}

// appliedRevision is the newest revision applied.
func (x *watchIndex) appliedRevision() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.applied
}

// newestRevision is the revision of the newest change of the watched keys
// in the bucket; 0 when it cannot be read (the stall check then waits for
// the next time). It asks the stream's leader (STREAM.MSG.GET), not a
// direct get, which any replica answers: a replica that lags as the
// watch's consumer does would answer its own stale revision.
func (x *watchIndex) newestRevision(ctx context.Context) uint64 {
	ctx, cancel := context.WithTimeout(ctx, x.stallEvery/2)
	defer cancel()
	req, err := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{x.prefix + x.keys})
	if err != nil {
		return 0
	}
	m, err := x.js.Conn().RequestWithContext(ctx, jsAPIPrefix+"STREAM.MSG.GET."+x.stream, req)
	if err != nil {
		return 0
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
	}
	if json.Unmarshal(m.Data, &resp) != nil || resp.Message == nil {
		return 0
	}
	return resp.Message.Seq
}

// jsAPIPrefix is the JetStream API's subject prefix of jetstream.New
// (no domain), as the queue opens it.
const jsAPIPrefix = "$JS.API."

// loadMu lets one index of the process load at a time: a load's batches
// are its memory (their transaction's nodes, the garbage they leave), and
// two at once would hold both.
var loadMu sync.Mutex

// loadBatch commits a batch of a load (commit), then gives back the pages
// it mapped (releaseMapped) and the heap it left (debug.FreeOSMemory: a
// collection, then the free memory back to the OS; a load allocates and
// drops its pages' nodes quickly, and the runtime would otherwise keep
// what it grew to). Once loaded, a process keeps what it reads.
func (x *watchIndex) loadBatch(batch []*indexChange) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if err := x.commit(batch, false); err != nil {
		return err
	}
	x.releaseMapped()
	debug.FreeOSMemory()
	return nil
}

// commit applies a batch of changes in one transaction, with the
// revision of its last one; tick also runs the hooks' tick. The index's
// applied revision moves once it is committed. A batch that changes
// nothing the index keeps (heartbeats, steps: most changes of a run's
// record) is not written: its revision is kept in memory and stored with
// the next write, the next tick or at close (a process that stops without
// applies those changes again, to the same effect).
func (x *watchIndex) commit(batch []*indexChange, tick bool) error {
	if len(batch) == 0 && !tick {
		return nil
	}
	x.commitMu.Lock()
	defer x.commitMu.Unlock()
	x.mu.RLock()
	gen, count, applied := x.gen, x.count, x.applied
	x.mu.RUnlock()
	now := time.Now()
	named := x.names.assigned.Load()
	err := x.db.Load().Update(func(tx *bolt.Tx) error {
		wrote := tick
		for _, e := range batch {
			d, w, err := x.hooks.apply(tx, e, gen)
			if err != nil {
				return err
			}
			count += d
			wrote = wrote || w
			applied = max(applied, e.rev)
		}
		if tick && x.hooks.tick != nil {
			d, err := x.hooks.tick(tx, now)
			if err != nil {
				return err
			}
			count += d
		}
		if !wrote && x.names.assigned.Load() == named {
			return errUnchanged // rolled back: nothing to write, nothing to sync
		}
		return x.putState(tx, applied, count, now)
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		x.reloadNames()
		return fmt.Errorf("applying changes to the %s: %w", x.name, err)
	}
	if err == nil {
		x.writes.Add(1)
	}
	x.applies.Add(int64(len(batch)))
	x.mu.Lock()
	defer x.mu.Unlock()
	x.count, x.followedAt = count, now
	if applied > x.applied {
		x.applied = applied
		close(x.changed)
		x.changed = make(chan struct{})
	}
	return nil
}

// errUnchanged rolls back a commit that wrote nothing.
var errUnchanged = errors.New("nothing to write")

// putState stores the index's state in tx's meta bucket.
func (x *watchIndex) putState(tx *bolt.Tx, applied uint64, count int, at time.Time) error {
	m := tx.Bucket(bucketMeta)
	return errors.Join(putU64(m, metaRev, applied), putU64(m, metaCount, uint64(count)), putU64(m, metaFollowed, uint64(at.UnixNano())))
}

// reloadNames reads the names again after a transaction that failed (the
// names it assigned are not stored).
func (x *watchIndex) reloadNames() {
	_ = x.db.Load().View(func(tx *bolt.Tx) error { return x.names.load(tx) })
}

// caughtUp marks the index up: the watch applied what the bucket held.
func (x *watchIndex) caughtUp() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.downErr, x.downSince = nil, time.Time{}
	x.readyOnce.Do(func() { close(x.ready) })
}

// setDown records why the watch is down (the first failure's time
// stays); it returns the time before which StopWatch holds it down.
func (x *watchIndex) setDown(err error) (holdUntil time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.downErr == nil {
		x.downSince = time.Now()
	}
	x.downErr, x.stopWatch = err, nil
	return x.holdUntil
}

// Health is nil while the index follows the bucket, else why not: it is
// loading, or its watch is down (and being restarted) since a time.
// /readyz answers 503 with it. An index that was not started is nil: the
// process does not serve lists.
func (x *watchIndex) Health() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	switch {
	case !x.started.Load():
		return nil
	case x.downErr != nil:
		return fmt.Errorf("%s: watch down since %s, restarting: %w", x.name, x.downSince.UTC().Format(time.RFC3339), x.downErr)
	case !x.Ready():
		return fmt.Errorf("%s: loading", x.name)
	}
	return nil
}

// StopWatch ends the current watch as a dropped subscription would and
// keeps it down for at least hold before run sets it up again: a drill
// (tests stop it to see /readyz fail and the index catch up).
func (x *watchIndex) StopWatch(hold time.Duration) error {
	x.mu.Lock()
	stop := x.stopWatch
	x.holdUntil = time.Now().Add(hold)
	x.mu.Unlock()
	if stop == nil {
		return fmt.Errorf("stopping the %s's watch: not watching", x.name)
	}
	stop()
	return nil
}

// Wait blocks until the first watch caught up (or ctx ends).
func (x *watchIndex) Wait(ctx context.Context) error {
	select {
	case <-x.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the %s to load: %w", x.name, ctx.Err())
	}
}

// Ready reports whether the first watch caught up.
func (x *watchIndex) Ready() bool {
	select {
	case <-x.ready:
		return true
	default:
		return false
	}
}

// waitApplied blocks until the index applied revision rev (or ctx ends).
func (x *watchIndex) waitApplied(ctx context.Context, rev uint64) error {
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
			return fmt.Errorf("waiting for the %s to apply revision %d (at %d): %w", x.name, rev, applied, ctx.Err())
		}
	}
}

// Len is the number of records indexed.
func (x *watchIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.count
}

// view runs fn in a read transaction of a started, opened index.
func (x *watchIndex) view(fn func(tx *bolt.Tx) error) error {
	db := x.db.Load()
	if db == nil {
		return fmt.Errorf("reading the %s: not open", x.name)
	}
	return db.View(fn)
}

// indexNames interns the names keys hold (workflows, repositories,
// statuses, tokens) as 4-byte ids, kept in the names bucket and in memory
// (a few thousand at most).
type indexNames struct {
	mu  sync.RWMutex
	ids map[string]uint32
	// assigned counts the names intern assigned (a transaction that
	// assigned one is written).
	assigned atomic.Int64
}

// load reads every name of tx's names bucket.
func (n *indexNames) load(tx *bolt.Tx) error {
	ids := map[string]uint32{}
	b := tx.Bucket(indexDictName)
	if b != nil {
		err := b.ForEach(func(k, v []byte) error {
			if len(k) == 0 || len(v) != 4 {
				return nil
			}
			ids[string(k[1:])] = binary.BigEndian.Uint32(v)
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading index names: %w", err)
		}
	}
	n.mu.Lock()
	n.ids = ids
	n.mu.Unlock()
	return nil
}

// lookup is the id of name; false when no key holds it.
func (n *indexNames) lookup(name string) (uint32, bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	id, ok := n.ids[name]
	return id, ok
}

// intern is the id of name, assigned in tx when new.
func (n *indexNames) intern(tx *bolt.Tx, name string) (uint32, error) {
	if id, ok := n.lookup(name); ok {
		return id, nil
	}
	b := tx.Bucket(indexDictName)
	seq, err := b.NextSequence()
	if err != nil {
		return 0, fmt.Errorf("naming %q in the index: %w", name, err)
	}
	id := uint32(seq)
	var v [4]byte
	binary.BigEndian.PutUint32(v[:], id)
	if err := b.Put(append([]byte{'n'}, name...), v[:]); err != nil { // "n": a key for ""
		return 0, fmt.Errorf("naming %q in the index: %w", name, err)
	}
	n.mu.Lock()
	n.ids[name] = id
	n.mu.Unlock()
	n.assigned.Add(1)
	return id, nil
}

func getU64(b *bolt.Bucket, k []byte) uint64 {
	if b == nil {
		return 0
	}
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func putU64(b *bolt.Bucket, k []byte, v uint64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v)
	if err := b.Put(k, buf[:]); err != nil {
		return fmt.Errorf("writing index meta %s: %w", k, err)
	}
	return nil
}
