package queue_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// slowBodies answers body reads after a delay.
type slowBodies struct {
	jetstream.ObjectStore
	delay time.Duration
}

func (s slowBodies) GetBytes(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) ([]byte, error) {
	time.Sleep(s.delay)
	return s.ObjectStore.GetBytes(ctx, name, opts...)
}

// The heartbeat covers the steps before the handler: a body read that
// takes longer than AckWait (a replica that answers late) is not
// redelivered meanwhile.
func TestHeartbeatCoversBodyRead(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{InlineBodyMax: 1024})
	q.SetBodies(slowBodies{ObjectStore: q.Bodies(), delay: 2500 * time.Millisecond})
	ctx := testCtx(t, 30*time.Second)
	req := testRequest("slowbody")
	req.Event.Raw = append([]byte(`{"pad":"`), append(bytes.Repeat([]byte("x"), 4096), `"}`...)...)
	if _, err := q.Publish(ctx, req); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []uint64
	)
	done := make(chan struct{}, 4)
	c, err := q.Consume(ctx, queue.ConsumerConfig{Durable: "slowbody", Concurrency: 2, AckWait: time.Second, FetchWait: 200 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
		mu.Lock()
		seen = append(seen, d.NumDelivered)
		mu.Unlock()
		if len(d.Request.Event.Raw) < 4096 {
			t.Errorf("handler got a %d-byte body", len(d.Request.Event.Raw))
		}
		done <- struct{}{}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("run not handled")
	}
	time.Sleep(3 * time.Second) // a redelivery's body read would end by now
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != 1 {
		t.Fatalf("deliveries handled %v, want [1]", seen)
	}
}
