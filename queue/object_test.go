package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// withObject copies reqs as another delivery of the same object would
// arrive: fresh run ids, another delivery id, the same Object.
func withObject(reqs []*RunRequest, delivery, object string) []*RunRequest {
	out := redeliver(reqs)
	for _, r := range out {
		r.Event.DeliveryID, r.Object = delivery, object
	}
	return out
}

// The runs of an object dedupe across delivery ids: a second delivery of
// the same object maps to the first one's runs (SameObject), stores no
// message, and its delivery key names those runs, so that its own
// redelivery is a plain duplicate. A failed publish removes the object
// keys it wrote: the next delivery of that object runs.
func TestObjectDedupeAcrossDeliveries(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{})
	ctx := testCtx(t, 30*time.Second)
	h := &handled{}
	c, err := q.Consume(ctx, ConsumerConfig{AckWait: time.Second, FetchWait: 100 * time.Millisecond}, h.handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	first := withObject(deliveryRequests(3), "obj-d1", "object-1")
	res, err := q.PublishDelivery(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	assertDelivered(t, q, first, res, h)

	for _, tc := range []struct {
		delivery         string
		wantSameObject   bool
		wantDeliveryKeys bool
	}{
		{"obj-d2", true, true},  // another delivery id: the object's runs
		{"obj-d2", false, true}, // its redelivery: its own delivery key
		{"obj-d1", false, true}, // the first's redelivery
	} {
		again, err := q.PublishDelivery(ctx, withObject(first, tc.delivery, "object-1"))
		if err != nil {
			t.Fatalf("%s: %v", tc.delivery, err)
		}
		for i, r := range again {
			if r.RunID != res[i].RunID || !r.Duplicate || r.SameObject != tc.wantSameObject {
				t.Fatalf("%s: result %d = %+v; want run %s, duplicate, same object %v", tc.delivery, i, r, res[i].RunID, tc.wantSameObject)
			}
			e, err := q.delKV.Get(ctx, deliveryKVKey(first[i].Event.Forge, tc.delivery, first[i].Workflow))
			if err != nil || string(e.Value()) != r.RunID {
				t.Fatalf("%s: delivery key of %s: %v; want run %s", tc.delivery, first[i].Workflow, err, r.RunID)
			}
		}
	}
	if n := streamMsgs(t, q) + uint64(len(h.seen())); len(h.seen()) != 3 || n > 3 {
		t.Fatalf("handler saw %v, %d messages left; want each of the 3 runs once", h.seen(), streamMsgs(t, q))
	}

	// A failed publish leaves no object key behind.
	injected := errors.New("injected failure")
	q.failAt = func(p string) error {
		if p == failRecords {
			return injected
		}
		return nil
	}
	failed := withObject(first, "obj-d3", "object-2")
	if _, err := q.PublishDelivery(ctx, failed); !errors.Is(err, injected) {
		t.Fatalf("failed delivery: %v", err)
	}
	q.failAt = nil
	for _, r := range failed {
		if _, err := q.delKV.Get(ctx, objectKVKey(r.Event.Forge, "object-2", r.Workflow)); !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			t.Fatalf("object key of %s after a failed delivery: %v; want none", r.Workflow, err)
		}
	}
	next, err := q.PublishDelivery(ctx, withObject(first, "obj-d4", "object-2"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range next {
		if r.Duplicate || r.RunID == res[i].RunID {
			t.Fatalf("a new object after a failed delivery: result %d = %+v; want a fresh run", i, r)
		}
	}
}
