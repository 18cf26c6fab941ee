package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestRawKVSubjects guards what createAsync and kvSubject assume of the
// jetstream KV API: an entry written raw is the KV entry of that key, at
// the revision its ack names; an entry written through the API is the last
// message on kvSubject; a raw create-only write is refused like
// KeyValue.Create; and in a bucket with a TTL a raw entry expires like any
// other, after which the key can be created again.
func TestRawKVSubjects(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{DuplicateWindow: 100 * time.Millisecond, DeliveryTTL: time.Second})
	ctx := testCtx(t, 30*time.Second)
	// A bucket as hookrun keeps every one (the stores' hookrun_runs among them).
	const rawBucket = "hookrun_raw_test"
	kv, err := CreateBucket(ctx, q.Shared(), jetstream.KeyValueConfig{Bucket: rawBucket})
	if err != nil {
		t.Fatal(err)
	}
	create := func(bucket, key, value string) *pendingWrite {
		t.Helper()
		w := q.createAsync(kvSubject(bucket, key), []byte(value))
		w.wait(ctx)
		return w
	}

	// Raw write → KV read, same revision.
	w := create(rawBucket, "raw-1", "one")
	if w.err != nil {
		t.Fatalf("raw create: %v", w.err)
	}
	e, err := kv.Get(ctx, "raw-1")
	if err != nil {
		t.Fatalf("reading a raw write through the KV API: %v (does kvSubject still match the bucket's layout?)", err)
	}
	if string(e.Value()) != "one" || e.Revision() != w.ack.Sequence || e.Operation() != jetstream.KeyValuePut {
		t.Fatalf("KV entry %q rev %d op %v, want \"one\" rev %d put", e.Value(), e.Revision(), e.Operation(), w.ack.Sequence)
	}

	// KV write → last message on kvSubject, same revision.
	rev, err := kv.Put(ctx, "api-1", []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := q.js.Stream(ctx, st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(ctx, kvSubject(rawBucket, "api-1"))
	if err != nil || string(m.Data) != "two" || m.Sequence != rev {
		t.Fatalf("last message on %s: %v, %v; want \"two\" at %d", kvSubject(rawBucket, "api-1"), m, err, rev)
	}

	// Create-only: a second raw create is refused and changes nothing;
	// the API agrees that the key exists; compare-and-set on the raw
	// revision works.
	if w := create(rawBucket, "raw-1", "again"); !IsWrongLastSeq(w.err) {
		t.Fatalf("second raw create: %v, want a wrong-last-sequence refusal", w.err)
	}
	if _, err := kv.Create(ctx, "raw-1", []byte("api")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("KV Create of a raw-created key: %v, want ErrKeyExists", err)
	}
	if _, err := kv.Update(ctx, "raw-1", []byte("three"), w.ack.Sequence); err != nil {
		t.Fatalf("KV Update at the raw write's revision: %v", err)
	}

	// A delete marker refuses a raw create (settleDeliveryKey then uses
	// KeyValue.Create, which handles markers).
	if err := kv.Delete(ctx, "api-1"); err != nil {
		t.Fatal(err)
	}
	if w := create(rawBucket, "api-1", "four"); !IsWrongLastSeq(w.err) {
		t.Fatalf("raw create over a delete marker: %v, want a wrong-last-sequence refusal", w.err)
	}

	// TTL: a raw entry of hookrun_deliveries expires with the bucket's TTL,
	// and the key can be created raw again.
	if w := create(BucketDelivery, "ttl-1", "run-a"); w.err != nil {
		t.Fatalf("raw create in %s: %v", BucketDelivery, w.err)
	}
	if e, err := q.delKV.Get(ctx, "ttl-1"); err != nil || string(e.Value()) != "run-a" {
		t.Fatalf("delivery key: %v, %v", e, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := q.delKV.Get(ctx, "ttl-1")
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery key still there past its TTL: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := create(BucketDelivery, "ttl-1", "run-b"); w.err != nil {
		t.Fatalf("raw create of an expired key: %v", w.err)
	}
	if e, err := q.delKV.Get(ctx, "ttl-1"); err != nil || string(e.Value()) != "run-b" {
		t.Fatalf("recreated delivery key: %v, %v", e, err)
	}
}

// TestMsgPool guards the pool's invariants: a buffer comes out empty, and
// none above maxPooledMsg (nor an empty one) is kept.
func TestMsgPool(t *testing.T) {
	for range 8 {
		small := append(make([]byte, 0, 4096), "left over"...)
		putMsgBuf(small)
		putMsgBuf(make([]byte, 0, maxPooledMsg+1))
	}
	reused := false
	for range 16 {
		b := getMsgBuf()
		if len(b) != 0 {
			t.Fatalf("getMsgBuf returned %d bytes of an earlier message", len(b))
		}
		if cap(b) > maxPooledMsg {
			t.Fatalf("getMsgBuf returned a %d-byte buffer: larger than maxPooledMsg (%d) must not be pooled", cap(b), maxPooledMsg)
		}
		reused = reused || cap(b) == 4096
	}
	if !reused {
		t.Log("no buffer came back (sync.Pool may drop them)")
	}
}
