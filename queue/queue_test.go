package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{})
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

	got := make(chan *Delivery, 1)
	c, err := q.Consume(ctx, ConsumerConfig{AckWait: time.Second}, func(ctx context.Context, d *Delivery) error {
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

func TestConcurrentCAS(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	rec := &RunRecord{ID: NewRunID(), Workflow: "w", Status: workflows.StatusQueued, CreatedAt: time.Now()}
	rev, err := rs.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Create(ctx, rec); !errors.Is(err, ErrConflict) {
		t.Fatalf("second Create: %v, want ErrConflict", err)
	}

	const n = 16
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		wins      int
		conflicts int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := *rec
			r.Attempt = i + 1
			_, err := rs.Update(ctx, &r, rev)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrConflict):
				conflicts++
			default:
				t.Errorf("update: %v", err)
			}
			if err == nil {
				return
			}
			mu.Unlock()
			// The loser re-reads and retries until it wins.
			for {
				cur, crev, err := rs.Get(ctx, rec.ID)
				if err != nil {
					t.Errorf("get: %v", err)
					break
				}
				cur.Steps = append(cur.Steps, workflows.StepState{ID: "s", Status: workflows.StatusSucceeded})
				if _, err := rs.Update(ctx, cur, crev); err == nil {
					break
				} else if !errors.Is(err, ErrConflict) {
					t.Errorf("retry update: %v", err)
					break
				}
			}
			mu.Lock()
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || conflicts != n-1 {
		t.Fatalf("wins = %d, conflicts = %d; want 1 and %d", wins, conflicts, n-1)
	}
	final, _, err := rs.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Steps) != n-1 {
		t.Fatalf("final record has %d retried appends, want %d (every loser succeeded once)", len(final.Steps), n-1)
	}
}

func TestReadyAndClose(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 20*time.Second)
	q, err := Open(ctx, Config{DataDir: t.TempDir(), Logger: testLogger(t), RequestKey: testRequestKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if _, err := q.Publish(ctx, testRequest("closing")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	cause := make(chan error, 1)
	if _, err := q.Consume(ctx, ConsumerConfig{AckWait: 5 * time.Second}, func(ctx context.Context, d *Delivery) error {
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
	if err := <-cause; !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("handler cause %v, want ErrShuttingDown", err)
	}
	if err := q.Ready(ctx); err == nil {
		t.Fatal("Ready after Close succeeded")
	}
	if err := q.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := q.Consume(ctx, ConsumerConfig{}, func(context.Context, *Delivery) error { return nil }); err == nil {
		t.Fatal("Consume after Close succeeded")
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	t.Parallel()
	if _, err := Open(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "data dir is required") {
		t.Fatalf("Open without data dir: %v", err)
	}
	// Nothing listens there: connecting fails within the setup timeout.
	ctx := testCtx(t, 10*time.Second)
	if _, err := Open(ctx, Config{URL: "nats://127.0.0.1:1", SetupTimeout: time.Second}); err == nil {
		t.Fatal("Open of an unreachable URL succeeded")
	}
}
