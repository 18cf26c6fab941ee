package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// openRemote connects a second Queue to q's embedded server over loopback,
// as another runner process would.
func openRemote(t *testing.T, q *testQueue) *testQueue {
	t.Helper()
	if q.ClientURL() == "" {
		t.Fatal("server does not listen")
	}
	return openTest(t, queue.Config{URL: q.ClientURL(), PasswordFile: q.PasswordFile()})
}

// waitStatus polls a run record until it has the wanted status.
func waitStatus(t *testing.T, q *testQueue, id string, want workflows.Status, d time.Duration) *stores.RunRecord {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rec, _, err := q.Runs().Get(context.Background(), id)
		if err == nil && rec.Status == want {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %v (err %v), want %s", id, rec, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitEmpty polls until HOOKRUN_RUNS holds no messages.
func waitEmpty(t *testing.T, q *testQueue, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for streamMsgs(t, q) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stream still has %d messages", streamMsgs(t, q))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDeadConsumerRedelivered(t *testing.T) {
	t.Parallel()
	const ackWait = time.Second
	srv := openTest(t, queue.Config{Listen: "127.0.0.1:0"})
	ctx := testCtx(t, 30*time.Second)
	res, err := srv.Publish(ctx, testRequest("dead"))
	if err != nil {
		t.Fatal(err)
	}

	// Runner 1 receives the run, then its process "dies": the connection
	// goes away without an ack.
	r1 := openRemote(t, srv)
	got1 := make(chan time.Time, 1)
	release := make(chan struct{})
	defer close(release)
	if _, err := r1.Consume(ctx, queue.ConsumerConfig{AckWait: ackWait}, func(ctx context.Context, d *queue.Delivery) error {
		got1 <- time.Now()
		<-release
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var first time.Time
	select {
	case first = <-got1:
	case <-ctx.Done():
		t.Fatal("runner 1 got nothing")
	}
	r1.NC().Close()

	// Runner 2 gets it after AckWait.
	r2 := openRemote(t, srv)
	got2 := make(chan *queue.Delivery, 1)
	if _, err := r2.Consume(ctx, queue.ConsumerConfig{AckWait: ackWait}, func(ctx context.Context, d *queue.Delivery) error {
		got2 <- d
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got2:
		if d.Request.ID != res.RunID || d.NumDelivered != 2 {
			t.Fatalf("redelivery = %+v, want run %s delivery 2", d, res.RunID)
		}
		if after := time.Since(first); after < ackWait-100*time.Millisecond {
			t.Fatalf("redelivered after %s, before AckWait %s", after, ackWait)
		}
	case <-ctx.Done():
		t.Fatal("not redelivered")
	}
	waitEmpty(t, srv, 5*time.Second)
}

func TestHeartbeatPreventsRedelivery(t *testing.T) {
	t.Parallel()
	// Six heartbeats per AckWait: a redelivery needs 2.5 s without one
	// reaching the server. With 1.5 s and the default AckWait/3 (1 s
	// without one) a loaded machine running make test's packages side by
	// side under -race redelivered once.
	const ackWait, heartbeat = 3 * time.Second, 500 * time.Millisecond
	srv := openTest(t, queue.Config{Listen: "127.0.0.1:0"})
	ctx := testCtx(t, 30*time.Second)
	if _, err := srv.Publish(ctx, testRequest("slow")); err != nil {
		t.Fatal(err)
	}
	var deliveries atomic.Int32
	done := make(chan struct{})
	h := func(ctx context.Context, d *queue.Delivery) error {
		if deliveries.Add(1) == 1 {
			defer close(done)
			time.Sleep(3*ackWait + 700*time.Millisecond)
		}
		return nil
	}
	// Two runners compete on the durable; only heartbeats keep the second
	// from getting the run while the first works on it.
	for _, q := range []*testQueue{srv, openRemote(t, srv)} {
		c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: ackWait, Heartbeat: heartbeat, Concurrency: 2, FetchWait: 200 * time.Millisecond}, h)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close(ctx) }()
	}
	<-done
	time.Sleep(ackWait + 500*time.Millisecond) // a lost ack would redeliver by now
	if n := deliveries.Load(); n != 1 {
		t.Fatalf("delivered %d times, want 1", n)
	}
	waitEmpty(t, srv, 2*time.Second)
}

func TestHandlerResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		results    []error // per delivery; nil after the list ends
		maxDeliver int
		wantCalls  int
		wantStatus workflows.Status
		wantError  string
	}{
		{name: "ack", results: nil, wantCalls: 1, wantStatus: workflows.StatusQueued},
		{name: "retry then ack", results: []error{errors.New("docker down")}, wantCalls: 2, wantStatus: workflows.StatusQueued},
		{name: "retry with delay", results: []error{queue.Retry(errors.New("busy"), 300*time.Millisecond)}, wantCalls: 2, wantStatus: workflows.StatusQueued},
		{name: "term", results: []error{queue.Term(errors.New("workflow digest unknown"))}, wantCalls: 1,
			wantStatus: workflows.StatusFailed, wantError: "workflow digest unknown"},
		{name: "exhausted", results: []error{errors.New("boom"), errors.New("boom"), errors.New("boom"), errors.New("boom")},
			maxDeliver: 3, wantCalls: 3, wantStatus: workflows.StatusFailed, wantError: "giving up after 3 deliveries: boom"},
		{name: "panic", results: []error{errPanic}, maxDeliver: 1, wantCalls: 1,
			wantStatus: workflows.StatusFailed, wantError: "giving up after 1 deliveries: handler panicked: kaboom"},
	}
	q := openTest(t, queue.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			res, err := q.Publish(ctx, testRequest("results"))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				calls []time.Time
			)
			finished := make(chan struct{})
			c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, MaxDeliver: tt.maxDeliver, Backoff: []time.Duration{20 * time.Millisecond}, FetchWait: 200 * time.Millisecond},
				func(ctx context.Context, d *queue.Delivery) error {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, time.Now())
					n := len(calls)
					if n == tt.wantCalls {
						defer close(finished)
					}
					if n > len(tt.results) {
						return nil
					}
					if tt.results[n-1] == errPanic {
						panic("kaboom")
					}
					return tt.results[n-1]
				})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close(ctx) }()
			select {
			case <-finished:
			case <-ctx.Done():
				t.Fatalf("handler called %d times, want %d", len(calls), tt.wantCalls)
			}
			waitEmpty(t, q, 5*time.Second)
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != tt.wantCalls {
				t.Fatalf("handler called %d times, want %d", len(calls), tt.wantCalls)
			}
			if len(tt.results) == 1 && isRetry(tt.results[0]) {
				after, _ := queue.RetryAfter(tt.results[0])
				if gap := calls[1].Sub(calls[0]); gap < after {
					t.Fatalf("redelivered after %s, want ≥ %s", gap, after)
				}
			}
			rec := waitStatus(t, q, res.RunID, tt.wantStatus, 5*time.Second)
			if rec.Error != tt.wantError {
				t.Fatalf("record error %q, want %q", rec.Error, tt.wantError)
			}
			if tt.wantStatus == workflows.StatusFailed && rec.FinishedAt == nil {
				t.Fatal("failed record without finished_at")
			}
		})
	}
}

var errPanic = errors.New("panic")

// A run whose every runner died never reaches a handler result; the
// max-deliveries advisory still fails it.
func TestMaxDeliveriesAdvisory(t *testing.T) {
	t.Parallel()
	const ackWait = 500 * time.Millisecond
	cfg := queue.ConsumerConfig{AckWait: ackWait, MaxDeliver: 2}
	srv := openTest(t, queue.Config{Listen: "127.0.0.1:0"})
	ctx := testCtx(t, 30*time.Second)
	res, err := srv.Publish(ctx, testRequest("doomed"))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	for i := range cfg.MaxDeliver {
		r := openRemote(t, srv)
		got := make(chan struct{}, 1)
		if _, err := r.Consume(ctx, cfg, func(ctx context.Context, d *queue.Delivery) error {
			got <- struct{}{}
			<-release
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("runner %d got nothing", i+1)
		}
		r.NC().Close() // dies without an answer
	}
	var calls atomic.Int32
	c, err := srv.Consume(ctx, cfg, func(ctx context.Context, d *queue.Delivery) error {
		calls.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	rec := waitStatus(t, srv, res.RunID, workflows.StatusFailed, 10*time.Second)
	if !strings.HasPrefix(rec.Error, "giving up after 2 deliveries") {
		t.Fatalf("record error %q", rec.Error)
	}
	waitEmpty(t, srv, 5*time.Second)
	if n := calls.Load(); n != 0 {
		t.Fatalf("exhausted run reached a handler %d times", n)
	}
}

func TestUndecodableTermed(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	for _, body := range []string{`{not json`, `{"v":99,"id":"01J","workflow":"x"}`} {
		if _, err := q.JS().PublishMsg(ctx, signedMsg(q, queue.RunsSubjectPrefix+"junk", []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int32
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		calls.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	waitEmpty(t, q, 5*time.Second)
	if n := calls.Load(); n != 0 {
		t.Fatalf("handler called %d times for undecodable messages", n)
	}
}

func TestCloseHandsRunBack(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	res, err := q.Publish(ctx, testRequest("handback"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	cause := make(chan error, 1)
	c1, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 30 * time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	grace, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := c1.Close(grace); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(<-cause, queue.ErrShuttingDown) {
		t.Fatal("handler did not see ErrShuttingDown")
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("Close took %s", took)
	}

	// Nak'ed without delay: the next runner gets it long before AckWait (30s).
	got := make(chan *queue.Delivery, 1)
	c2, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 30 * time.Second}, func(ctx context.Context, d *queue.Delivery) error {
		got <- d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c2.Close(ctx) }()
	select {
	case d := <-got:
		if d.Request.ID != res.RunID || d.NumDelivered != 2 {
			t.Fatalf("got %+v", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run not handed back")
	}
}

func isRetry(err error) bool { _, ok := queue.RetryAfter(err); return ok }

// A message that reaches a pull after the consumer stopped fetching is
// handed back once, after the pull has ended: it is not redelivered to the
// same pull, which would spend a delivery each time (toward MaxDeliver)
// for as many messages as the pull asked for.
func TestStoppedFetchSpendsOneDelivery(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	fetching, stop := context.WithCancel(ctx)
	var called atomic.Int32
	cfg := queue.ConsumerConfig{Durable: "stopped", Concurrency: 3, MaxDeliver: 5, FetchWait: 2 * time.Second}
	c1, err := q.Consume(fetching, cfg, func(ctx context.Context, d *queue.Delivery) error {
		called.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the pull for three is waiting at the server
	stop()
	res, err := q.Publish(ctx, testRequest("late"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := called.Load(); n != 0 {
		t.Fatalf("a stopped consumer handled %d deliveries", n)
	}
	got := make(chan *queue.Delivery, 1)
	c2, err := q.Consume(ctx, cfg, func(ctx context.Context, d *queue.Delivery) error {
		got <- d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c2.Close(ctx) }()
	select {
	case d := <-got:
		if d.Request.ID != res.RunID || d.NumDelivered != 2 {
			t.Fatalf("next consumer got run %s at delivery %d, want %s at delivery 2", d.Request.ID, d.NumDelivered, res.RunID)
		}
	case <-ctx.Done():
		t.Fatal("the late message was not handed back")
	}
}

// A run its handler hands back by choice (HandBack: another runner holds
// it) is delivered again after the delay, as a Retry is, and logged as
// handed back with why, not as a run that failed; a Retry still is.
func TestHandBackIsNotLoggedAsAFailure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		err     error
		wantMsg string
		level   string
	}{
		{"hand back", queue.HandBack(errors.New("run is running on runner-b"), 200*time.Millisecond), "run handed back; it is delivered again later", "INFO"},
		{"retry", queue.Retry(errors.New("docker down"), 200*time.Millisecond), "run failed, will retry", "WARN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			q := openTest(t, queue.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			ctx := testCtx(t, 20*time.Second)
			if _, err := q.Publish(ctx, testRequest("handback")); err != nil {
				t.Fatal(err)
			}
			var calls []time.Time
			var mu sync.Mutex
			done := make(chan struct{})
			cons, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, FetchWait: 100 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, time.Now())
				if len(calls) == 1 {
					return c.err
				}
				close(done)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cons.Close(ctx) }()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("the message was not delivered again")
			}
			mu.Lock()
			gap := calls[1].Sub(calls[0])
			mu.Unlock()
			if gap < 200*time.Millisecond {
				t.Errorf("delivered again after %s, want at least the 200ms asked for", gap)
			}
			var found bool
			for _, line := range strings.Split(logs.String(), "\n") {
				var l struct{ Level, Msg, Why, Err string }
				if json.Unmarshal([]byte(line), &l) != nil {
					continue
				}
				if l.Msg == c.wantMsg && l.Level == c.level && strings.Contains(l.Why+l.Err, c.err.Error()) {
					found = true
				}
				if c.name == "hand back" && strings.Contains(l.Msg, "failed") {
					t.Errorf("a hand-back logged as %q", line)
				}
			}
			if !found {
				t.Errorf("no %s line %q with %q in the logs:\n%s", c.level, c.wantMsg, c.err, logs.String())
			}
		})
	}
}
