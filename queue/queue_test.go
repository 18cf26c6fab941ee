package queue_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	req := testRequest("pr-review")
	res, err := q.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || res.RunID == "" || res.RunID != req.ID {
		t.Fatalf("result = %+v, req.ID = %s", res, req.ID)
	}
	rec, _, err := q.Runs().Get(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusQueued || rec.Workflow != "pr-review" || rec.Repo != "octo/hello" || rec.Event.Raw != nil {
		t.Fatalf("record = %+v", rec)
	}

	got := make(chan *queue.Delivery, 1)
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		got <- d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.Request.ID != res.RunID || d.NumDelivered != 1 || string(d.Request.Event.Raw) != `{"action":"opened"}` {
			t.Fatalf("delivery = %+v", d)
		}
	case <-ctx.Done():
		t.Fatal("no delivery")
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, q); n != 0 {
		t.Fatalf("stream has %d messages after ack, want 0 (work queue)", n)
	}
}

func TestReadyAndClose(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 20*time.Second)
	raw, err := queue.Open(ctx, queue.Config{DataDir: t.TempDir(), Logger: testLogger(t), RequestKey: testRequestKey})
	if err != nil {
		t.Fatal(err)
	}
	q := withStores(t, raw)
	if err := q.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if _, err := q.Publish(ctx, testRequest("closing")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	cause := make(chan error, 1)
	if _, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 5 * time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	<-started
	// Closing the queue closes its consumers first, without grace.
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-cause; !errors.Is(err, queue.ErrShuttingDown) {
		t.Fatalf("handler cause %v, want ErrShuttingDown", err)
	}
	if err := q.Ready(ctx); err == nil {
		t.Fatal("Ready after Close succeeded")
	}
	if err := q.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := q.Consume(ctx, queue.ConsumerConfig{}, func(context.Context, *queue.Delivery) error { return nil }); err == nil {
		t.Fatal("Consume after Close succeeded")
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	t.Parallel()
	if _, err := queue.Open(context.Background(), queue.Config{}); err == nil || !strings.Contains(err.Error(), "data dir is required") {
		t.Fatalf("Open without data dir: %v", err)
	}
	// Nothing listens there: connecting fails within the setup timeout.
	ctx := testCtx(t, 10*time.Second)
	if _, err := queue.Open(ctx, queue.Config{URL: "nats://127.0.0.1:1", SetupTimeout: time.Second}); err == nil {
		t.Fatal("Open of an unreachable URL succeeded")
	}
}

// An embedded server whose port is taken says so at once, not after its
// start times out without a reason.
func TestOpenSaysItsPortIsTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, cfg := range []queue.Config{
		{DataDir: t.TempDir(), Listen: l.Addr().String()},
		{DataDir: t.TempDir(), Listen: "127.0.0.1:0", ClusterName: "c", ServerName: "n1", ClusterListen: l.Addr().String()},
	} {
		began := time.Now()
		_, err := queue.Open(testCtx(t, 20*time.Second), cfg)
		if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), l.Addr().String()) {
			t.Fatalf("Open on a taken port: %v", err)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("Open on a taken port took %s to fail", d)
		}
	}
}
