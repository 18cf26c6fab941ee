package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

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

// runHeaders returns the headers of the last run message of a workflow.
func runHeaders(t *testing.T, q *testQueue, workflow string) nats.Header {
	t.Helper()
	m, err := q.RunsStream().GetLastMsgForSubject(testCtx(t, 10*time.Second), queue.RunsSubjectPrefix+workflow)
	if err != nil {
		t.Fatalf("reading the run message of %s: %v", workflow, err)
	}
	return m.Header
}

// TestPublishCarriesTheTraceContext: a delivery published within a span
// has the span's W3C trace context in every run message's headers and
// its trace id in every record; the consumer hands the handler a context
// whose remote parent is that span. Without a span there is no header and
// no trace id.
func TestPublishCarriesTheTraceContext(t *testing.T) {
	q := openTest(t, queue.Config{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, span := tp.Tracer("test").Start(testCtx(t, 30*time.Second), "publish")
	reqs := []*queue.RunRequest{testRequest("one"), testRequest("two")}
	reqs[1].Event.DeliveryID = reqs[0].Event.DeliveryID
	if _, err := q.PublishDelivery(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	span.End()
	sc := span.SpanContext()
	for _, r := range reqs {
		rec, _, err := q.Runs().Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.TraceID != sc.TraceID().String() {
			t.Errorf("record %s trace_id = %q, want %s", r.ID, rec.TraceID, sc.TraceID())
		}
	}
	for _, w := range []string{"one", "two"} {
		tp0 := runHeaders(t, q, w).Get("traceparent")
		if !strings.Contains(tp0, sc.TraceID().String()) || !strings.Contains(tp0, sc.SpanID().String()) {
			t.Fatalf("traceparent header of %s %q, want trace %s span %s", w, tp0, sc.TraceID(), sc.SpanID())
		}
	}

	got := make(chan trace.SpanContext, 2)
	c, err := q.Consume(ctx, queue.ConsumerConfig{Durable: "trace-test", FetchWait: 100 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
		got <- trace.SpanContextFromContext(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for range reqs {
		select {
		case h := <-got:
			if !h.IsRemote() || h.TraceID() != sc.TraceID() || h.SpanID() != sc.SpanID() {
				t.Errorf("handler's span context %+v, want the publish span as remote parent", h)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery")
		}
	}

	// The consumer must stop before "three" is published: on the
	// work-queue stream it would take (and remove) that message before
	// runHeaders reads it.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Without a span: no header, no trace id.
	plain := testRequest("three")
	if _, err := q.PublishDelivery(testCtx(t, 10*time.Second), []*queue.RunRequest{plain}); err != nil {
		t.Fatal(err)
	}
	rec, _, err := q.Runs().Get(ctx, plain.ID)
	if err != nil || rec.TraceID != "" {
		t.Fatalf("record without a span: trace_id %q, err %v; want none", rec.TraceID, err)
	}
	if h := runHeaders(t, q, "three").Get("traceparent"); h != "" {
		t.Errorf("a run published without a span has traceparent %q", h)
	}
}

// TestStateCollector: the queue's gauges follow the stream and the outbox
// (pending runs before and after a consumer exists, reports kept), read
// at most once per queue.StateMaxAge.
func TestStateCollector(t *testing.T) {
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	col := q.Collector("state-test", q.Outbox())
	if _, err := q.ReadState(ctx, "state-test", q.Outbox()); err != nil {
		t.Fatalf("reading the queue's state: %v", err)
	}
	gauges := func(fresh bool) string {
		if fresh {
			queue.ResetCollector(col) // no caching between the test's readings
		}
		if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
			t.Fatalf("lint: %v %v", probs, err)
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(col)
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, f := range fams {
			fmt.Fprintf(&b, "%s=%g ", f.GetName(), f.GetMetric()[0].GetGauge().GetValue())
		}
		return b.String()
	}
	if got, want := gauges(true), "hookrun_queue_ack_pending_runs=0 hookrun_queue_pending_runs=0 hookrun_report_outbox_reports=0 "; got != want {
		t.Fatalf("empty queue: %s, want %s", got, want)
	}
	for _, w := range []string{"a", "b"} {
		if _, err := q.Publish(ctx, testRequest(w)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Outbox().Put(ctx, &stores.OutboxEntry{Key: stores.OutboxKey("01J0000000000000000000000A", "final"), RunID: "01J0000000000000000000000A", Report: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, want := gauges(true), "hookrun_queue_ack_pending_runs=0 hookrun_queue_pending_runs=2 hookrun_report_outbox_reports=1 "; got != want {
		t.Fatalf("before any consumer: %s, want %s", got, want)
	}
	hold := make(chan struct{})
	started := make(chan struct{}, 2)
	c, err := q.Consume(ctx, queue.ConsumerConfig{Durable: "state-test", Concurrency: 1, FetchWait: 100 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
		started <- struct{}{}
		<-hold
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	defer close(hold) // before Close waits for the handler
	<-started
	if got, want := gauges(true), "hookrun_queue_ack_pending_runs=1 hookrun_queue_pending_runs=1 hookrun_report_outbox_reports=1 "; got != want {
		t.Fatalf("one run in a handler: %s, want %s", got, want)
	}

	// Cached: a reading within queue.StateMaxAge is served again.
	before := gauges(true)
	if err := q.Outbox().Put(ctx, &stores.OutboxEntry{Key: stores.OutboxKey("01J0000000000000000000000B", "final"), RunID: "01J0000000000000000000000B", Report: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if after := gauges(false); after != before {
		t.Errorf("a scrape within %s read again: %s → %s", queue.StateMaxAge, before, after)
	}
	if after := gauges(true); !strings.Contains(after, "hookrun_report_outbox_reports=2 ") {
		t.Errorf("a fresh reading: %s, want 2 reports in the outbox", after)
	}
}
