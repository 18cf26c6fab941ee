package stores

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// openIndexes opens q's stores with their index files in dir and waits
// for both indexes to catch up.
func openIndexes(t *testing.T, q *queue.Queue, dir string) *testQueue {
	t.Helper()
	s := withStores(t, q, Options{IndexDir: dir})
	ctx := testCtx(t, 30*time.Second)
	s.Received().StartIndex()
	if err := s.Runs().StartIndex().Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Received().index.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// caughtUp waits until x applied the last revision of its bucket.
func caughtUp(t *testing.T, x *watchIndex) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	_, last, err := x.bucketOrigin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.waitApplied(ctx, last); err != nil {
		t.Fatal(err)
	}
}

// putDeliveries writes n index keys of hookrun_received as indexed does
// (and returns their ids, newest last).
func putDeliveries(t *testing.T, s *testQueue, from, n int) []string {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	var ids []string
	for i := from; i < from+n; i++ {
		sum := DeliverySummary{Forge: workflows.Forge("github"), ID: fmt.Sprintf("d-%d", i), Event: "push", Kind: "push",
			Repo: []string{"o/a", "o/b"}[i%2], Outcome: OutcomeRan, ReceivedAt: time.Now().UTC(), Runs: 1}
		data, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Received().kv.Put(ctx, indexKey(&sum), data); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sum.ID)
	}
	return ids
}

// The index files outlive the process: stores opened again on the same
// index directory resume their watches after the revision they applied
// last, applying only what changed while they were closed (runs written
// and removed, deliveries indexed), and list everything. A bucket made
// again (deleted and created) is not the one indexed: its index is
// rebuilt from it.
func TestIndexesResumeAfterARestart(t *testing.T) {
	t.Parallel()
	const n, m = 40, 7
	q := queuetest.Open(t, queue.Config{})
	dir := t.TempDir()

	s := openIndexes(t, q, dir)
	recs := seedRecords(t, s, n, specRecord)
	dels := putDeliveries(t, s, 0, n)
	ctx := testCtx(t, 30*time.Second)
	caughtUp(t, s.Runs().index.watchIndex)
	if got, _, err := s.Runs().List(ctx, ListFilter{}); err != nil || len(got) != n {
		t.Fatalf("before the restart: %d runs listed, %v; want %d", len(got), err, n)
	}
	caughtUp(t, s.Received().index.watchIndex)
	if err := s.Stores.Close(); err != nil {
		t.Fatal(err)
	}

	// While closed: m runs and m deliveries more, one run removed.
	recs = append(recs, seedRecords(t, s, m, specRecord)...)
	dels = append(dels, putDeliveries(t, s, n, m)...)
	if err := s.Runs().kv.Delete(ctx, recs[0].ID); err != nil {
		t.Fatal(err)
	}
	recs = recs[1:]

	s = openIndexes(t, q, dir)
	if got := s.Runs().index.applies.Load(); got != m+1 {
		t.Errorf("the run index applied %d changes at its restart, want the %d made while it was closed", got, m+1)
	}
	if got := s.Received().index.applies.Load(); got != m {
		t.Errorf("the deliveries index applied %d changes at its restart, want the %d made while it was closed", got, m)
	}
	var want []string
	for _, r := range slices.Backward(recs) {
		want = append(want, r.ID)
	}
	var got []string
	for f := (ListFilter{Limit: 9}); ; {
		page, next, err := s.Runs().List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		if next == "" {
			break
		}
		f.Cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("after the restart: %d runs listed, want %d", len(got), len(want))
	}
	rows, _, err := s.Received().List(ctx, DeliveryFilter{Repo: "o/b"})
	var gotDels, wantDels []string
	for _, r := range rows {
		gotDels = append(gotDels, r.ID)
	}
	for i, id := range slices.Backward(dels) {
		if i%2 == 1 {
			wantDels = append(wantDels, id)
		}
	}
	if err != nil || !slices.Equal(gotDels, wantDels) {
		t.Errorf("after the restart: deliveries of o/b %v, %v; want %v", gotDels, err, wantDels)
	}
	if err := s.Stores.Close(); err != nil {
		t.Fatal(err)
	}

	// Stopped for longer than the removals' markers live: a record purged
	// meanwhile (no marker, as once its marker expired) is dropped by the
	// reconciliation that follows the resumed watch.
	st, err := q.Shared().JetStream.Stream(ctx, "KV_"+BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(kvSubject(recs[0].ID))); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, runIndexFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return putU64(tx.Bucket(bucketMeta), metaFollowed, uint64(time.Now().Add(-RunMarkerTTL).UnixNano()))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s = openIndexes(t, q, dir)
	x := s.Runs().index
	if x.applies.Load() != 0 {
		t.Errorf("the run index applied %d changes after a long stop with none, want 0", x.applies.Load())
	}
	for deadline := time.Now().Add(10 * time.Second); x.reconciled.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if ids, err := x.ids(ctx); err != nil || len(ids) != len(recs)-1 || ids[recs[0].ID] || x.Len() != len(recs)-1 {
		t.Fatalf("after the reconciliation: %d runs (Len %d), the purged one %v, %v; want %d", len(ids), x.Len(), ids[recs[0].ID], err, len(recs)-1)
	}
	if err := s.Stores.Close(); err != nil {
		t.Fatal(err)
	}

	// The runs bucket made again, with other records.
	if err := q.Shared().JetStream.DeleteKeyValue(ctx, BucketRuns); err != nil {
		t.Fatal(err)
	}
	s = withStores(t, q, Options{IndexDir: t.TempDir()}) // creates the bucket again
	fresh := seedRecords(t, s, 3, specRecord)
	if err := s.Stores.Close(); err != nil {
		t.Fatal(err)
	}
	s = openIndexes(t, q, dir)
	if x := s.Runs().index; x.Len() != len(fresh) || x.applies.Load() != int64(len(fresh)) {
		t.Fatalf("the index of a bucket made again holds %d runs (applied %d), want its %d", x.Len(), x.applies.Load(), len(fresh))
	}
	if got, _, err := s.Runs().List(ctx, ListFilter{}); err != nil || len(got) != len(fresh) || got[0].ID != fresh[2].ID {
		t.Fatalf("list of a bucket made again: %d, %v", len(got), err)
	}

	// A file that does not open (torn, overwritten) is rebuilt.
	if err := s.Stores.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runIndexFile), []byte("not a bbolt file"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openIndexes(t, q, dir)
	if x := s.Runs().index; x.Len() != len(fresh) || x.applies.Load() != int64(len(fresh)) {
		t.Fatalf("a rebuilt index file holds %d runs (applied %d), want %d", x.Len(), x.applies.Load(), len(fresh))
	}
}

// Deliveries older than the TTL leave the list, and the index drops them
// at its next tick (the bucket's entries expire without a marker).
func TestDeliveriesIndexDropsExpired(t *testing.T) {
	t.Parallel()
	s := openTestOpts(t, queue.Config{}, Options{ReceivedTTL: time.Hour})
	ctx := testCtx(t, 30*time.Second)
	for i, at := range []time.Time{time.Now().Add(-2 * time.Hour), time.Now()} {
		sum := DeliverySummary{Forge: workflows.Forge("github"), ID: fmt.Sprintf("d-%d", i), Event: "push", Kind: "push",
			Repo: "o/a", Outcome: OutcomeRan, ReceivedAt: at.UTC()}
		data, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Received().kv.Put(ctx, indexKey(&sum), data); err != nil {
			t.Fatal(err)
		}
	}
	s.Received().StartIndex()
	x := s.Received().index
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, x.watchIndex)
	for _, f := range []DeliveryFilter{{}, {Repo: "o/a"}} {
		rows, _, err := s.Received().List(ctx, f)
		if err != nil || len(rows) != 1 || rows[0].ID != "d-1" {
			t.Fatalf("list %+v: %+v, %v; want d-1 alone", f, rows, err)
		}
	}
	if x.Len() != 2 {
		t.Fatalf("index holds %d rows before its tick, want 2", x.Len())
	}
	if err := x.commit(nil, true); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 1 {
		t.Fatalf("index holds %d rows after its tick, want 1", x.Len())
	}
}

// A change of a run's record that the index keeps nothing of (a
// heartbeat, a step) is applied without a write to the index file; one
// that moves the run between lists is written.
func TestRunIndexWritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	rs := q.Runs()
	x := rs.StartIndex()
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &RunRecord{ID: queue.NewRunID(), Workflow: "w", Repo: "o/a", Status: workflows.StatusRunning, CreatedAt: time.Now()}
	if _, err := rs.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, _, err := rs.List(ctx, ListFilter{Status: workflows.StatusRunning}); err != nil || len(got) != 1 {
		t.Fatalf("List = %d, %v", len(got), err)
	}
	writes := x.writes.Load()
	for i := range 5 {
		if _, err := rs.Modify(ctx, rec.ID, func(r *RunRecord) bool { r.HeartbeatAt = time.Now().Add(time.Duration(i)); return true }); err != nil {
			t.Fatal(err)
		}
		if got, _, err := rs.List(ctx, ListFilter{Status: workflows.StatusRunning}); err != nil || len(got) != 1 {
			t.Fatalf("List after heartbeat %d = %d, %v", i, len(got), err)
		}
	}
	if n := x.writes.Load() - writes; n != 0 {
		t.Errorf("5 heartbeats wrote the index file %d times, want 0", n)
	}
	if _, err := rs.Modify(ctx, rec.ID, func(r *RunRecord) bool { r.Status = workflows.StatusFailed; return true }); err != nil {
		t.Fatal(err)
	}
	if got, _, err := rs.List(ctx, ListFilter{Status: workflows.StatusFailed}); err != nil || len(got) != 1 {
		t.Fatalf("List after the status change = %d, %v", len(got), err)
	}
	if n := x.writes.Load() - writes; n != 1 {
		t.Errorf("a status change wrote the index file %d times, want 1", n)
	}
}

// The index files' commits are not synced: a file the process closed, or
// one it left unclosed in the machine's same boot (its writes are in the
// page cache), resumes; one left unclosed before the machine restarted
// may be torn and is rebuilt from its bucket. Not parallel: it swaps the
// boot the indexes see.
func TestIndexFileAfterTheMachineRestarts(t *testing.T) {
	const n = 12
	boot := "boot-1"
	defer func(f func() string) { bootID = f }(bootID)
	bootID = func() string { return boot }
	q := queuetest.Open(t, queue.Config{})
	dir := t.TempDir()
	s := openIndexes(t, q, dir)
	seedRecords(t, s, n, specRecord)
	caughtUp(t, s.Runs().index.watchIndex)
	if db := s.Runs().index.db.Load(); !db.NoSync {
		t.Error("the run index syncs its commits")
	}
	if err := s.Stores.Close(); err != nil {
		t.Fatal(err)
	}
	// unclosed marks the file as a process that died would leave it.
	unclosed := func() {
		t.Helper()
		db, err := bolt.Open(filepath.Join(dir, runIndexFile), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error { return putU64(tx.Bucket(bucketMeta), metaClean, 0) }); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		unclosed bool
		boot     string
		applies  int64 // n: rebuilt
	}{
		{"closed, same boot", false, "boot-1", 0},
		{"closed, the machine restarted", false, "boot-2", 0},
		{"unclosed, same boot", true, "boot-2", 0},
		{"unclosed, the machine restarted", true, "boot-3", n},
		// where the boot cannot be read, commits are synced: only a file
		// left unsynced by an earlier boot is rebuilt
		{"unclosed, unsynced by a boot now unreadable", true, "", n},
		{"unclosed, synced", true, "", 0},
	} {
		if tc.unclosed {
			unclosed()
		}
		boot = tc.boot
		s = openIndexes(t, q, dir)
		x := s.Runs().index
		if got := x.applies.Load(); got != tc.applies || x.Len() != n {
			t.Errorf("%s: the run index applied %d changes and holds %d runs; want %d and %d", tc.name, got, x.Len(), tc.applies, n)
		}
		if err := s.Stores.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A stream of changes while the index follows is committed in batches
// that each span indexFollowWait, not a commit per change: 100 records
// written 2 ms apart take at most one commit per indexFollowWait of the
// time they took (plus the last), far fewer than 100.
func TestIndexBatchesWhatItFollows(t *testing.T) {
	t.Parallel()
	const n = 100
	q := queuetest.Open(t, queue.Config{})
	s := openIndexes(t, q, t.TempDir())
	x := s.Runs().index.watchIndex
	before := x.writes.Load()
	began := time.Now()
	for i := range n {
		seedRecords(t, s, 1, func(int) *RunRecord { return specRecord(i) })
		time.Sleep(2 * time.Millisecond)
	}
	caughtUp(t, x)
	took := time.Since(began)
	commits := x.writes.Load() - before
	if bound := int64(took/indexFollowWait) + 2; commits > bound || commits >= n/2 {
		t.Errorf("%d records written over %s took %d commits; want at most %d (one per %s)", n, took, commits, bound, indexFollowWait)
	}
	if got, _, err := s.Runs().List(t.Context(), ListFilter{Limit: 1000}); err != nil || len(got) != n {
		t.Errorf("listed %d, %v; want %d", len(got), err, n)
	}
}
