package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// A queue without a key neither publishes nor consumes run requests.
func TestNoRequestKeyRefused(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{RequestKey: []byte{}})
	ctx := testCtx(t, 10*time.Second)
	if _, err := q.Publish(ctx, testRequest("nokey")); err == nil || !strings.Contains(err.Error(), "no request key") {
		t.Fatalf("Publish without a key: %v", err)
	}
	if _, err := q.Consume(ctx, queue.ConsumerConfig{}, func(context.Context, *queue.Delivery) error { return nil }); err == nil || !strings.Contains(err.Error(), "no request key") {
		t.Fatalf("Consume without a key: %v", err)
	}
	if _, err := queue.Open(ctx, queue.Config{DataDir: t.TempDir(), RequestKey: []byte("short")}); err == nil || !strings.Contains(err.Error(), "request key must be at least 32 bytes") {
		t.Fatalf("Open with a short key: %v", err)
	}
}

// refusalCounter is a ConsumerObserver that counts refusals.
type refusalCounter struct{ n atomic.Int32 }

func (*refusalCounter) Delivered(string, uint64) {}
func (*refusalCounter) GaveUp(string)            {}
func (r *refusalCounter) Unauthenticated()       { r.n.Add(1) }

// Messages published straight on hookrun.runs.* without a valid
// authenticator never reach the handler and never touch a record: not the
// record of a real run whose id they carry, nor one of their own. The
// real run, published after them, is handled once, its record intact.
func TestConsumerRefusesUnauthenticated(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	legit := testRequest("deploy")
	legit.ID = queue.NewRunID()
	// The real run's key and record, as Publish writes them before its
	// message; its message comes last.
	legit.V, legit.Attempt, legit.CreatedAt = queue.WireVersion, 1, time.Now().UTC()
	if err := q.WriteKeysAndRecords(ctx, legit); err != nil {
		t.Fatal(err)
	}

	forged := *legit
	forged.Event.Sender, forged.Event.AuthorAssociation = "mallory", "NONE"
	data, err := json.Marshal(&forged)
	if err != nil {
		t.Fatal(err)
	}
	fresh := forged
	fresh.ID = queue.NewRunID()
	freshData, _ := json.Marshal(&fresh)
	legitData, _ := json.Marshal(legit)
	subj := queue.RunsSubjectPrefix + "deploy"
	otherKey := []byte(strings.Repeat("x", queue.MinRequestKey))
	msgs := map[string]*nats.Msg{
		"no authenticator": {Subject: subj, Data: data},
		"another key":      {Subject: subj, Data: data, Header: nats.Header{queue.HeaderMAC: []string{queue.MACHeader(otherKey, subj, data)}}},
		// The real request's authenticator on the changed request.
		"changed request": {Subject: subj, Data: data, Header: nats.Header{queue.HeaderMAC: []string{q.SignHeader(subj, legitData)}}},
		// The real request under another subject.
		"other subject":       {Subject: queue.RunsSubjectPrefix + "review", Data: legitData, Header: nats.Header{queue.HeaderMAC: []string{q.SignHeader(subj, legitData)}}},
		"fresh id, no header": {Subject: subj, Data: freshData},
	}
	for name, m := range msgs {
		if _, err := q.JS().PublishMsg(ctx, m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := q.JS().PublishMsg(ctx, signedMsg(q, subj, legitData)); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		handled []string
	)
	obs := &refusalCounter{}
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 2 * time.Second, Observer: obs}, func(ctx context.Context, d *queue.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, d.Request.ID+" "+d.Request.Event.Sender)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	waitEmpty(t, q, 10*time.Second)
	time.Sleep(200 * time.Millisecond) // the last handler returns
	mu.Lock()
	defer mu.Unlock()
	if want := legit.ID + " octocat"; len(handled) != 1 || handled[0] != want {
		t.Fatalf("handled %q, want only the real run %q", handled, want)
	}
	if n := obs.n.Load(); n != int32(len(msgs)) {
		t.Errorf("%d refusals counted, want %d", n, len(msgs))
	}
	rec, _, err := q.Runs().Get(ctx, legit.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusQueued || rec.Error != "" || rec.Event.Sender != "octocat" {
		t.Errorf("the real run's record is %s %q (sender %s); want it queued, untouched", rec.Status, rec.Error, rec.Event.Sender)
	}
	if _, _, err := q.Runs().Get(ctx, fresh.ID); !errors.Is(err, stores.ErrNotFound) {
		t.Errorf("a record for the forged run id: %v, want ErrNotFound", err)
	}
}

// A large body changed in the object store after ingress stored it fails
// its run (the authenticated request carries the body's digest); the
// handler never sees it.
func TestBodyChangedInStoreRefused(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{InlineBodyMax: 1024})
	ctx := testCtx(t, 30*time.Second)
	req := testRequest("bigbody")
	req.Event.Raw = bigBody(4096)
	res, err := q.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := q.Bodies().List(ctx)
	if err != nil || len(objs) != 1 {
		t.Fatalf("stored bodies: %d, %v; want 1", len(objs), err)
	}
	if _, err := q.Bodies().PutBytes(ctx, objs[0].Name, bigBody(4096)[:4095]); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 2 * time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		calls.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	rec := waitStatus(t, q, res.RunID, workflows.StatusFailed, 10*time.Second)
	if !strings.Contains(rec.Error, queue.ErrBodyMismatch.Error()) {
		t.Errorf("record error %q, want it to name the mismatch", rec.Error)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler called %d times with a changed body", n)
	}
}
