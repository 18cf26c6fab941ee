package runner_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// TestRunReadsNothingItsProcessWrote: in one process (hookrun serve) a run
// published, consumed, claimed, refreshed by its heartbeats and finished
// sends the server no read of its delivery key or its record: each step
// starts from what the one before wrote (queue's sentKeys, the stores'
// recentRecords), and the record still ends as the run did.
func TestRunReadsNothingItsProcessWrote(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"slow": `
name: slow
steps:
  - {id: wait, run: 'sleep 0.7'}
  - {id: after, run: 'echo done'}
`}, nil, nil)
	reads := queuetest.DirectGets(t, f.q.Queue, "hookrun_deliveries", "hookrun_runs")
	nc, err := f.q.Connect("count-writes")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var writes atomic.Int64 // the record's writes (not the watches' deliveries of them)
	if _, err := nc.Subscribe("$KV.hookrun_runs.>", func(m *nats.Msg) {
		if !strings.HasPrefix(m.Reply, "$JS.ACK.") {
			writes.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	f.start()
	id := f.publish("slow", nil)
	// Wait without reading the record: until the run's message is acked.
	deadline := time.Now().Add(20 * time.Second)
	for f.calls.Load() == 0 || f.streamMsgs() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run's message was not acked in 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := reads(); r["hookrun_deliveries"] != 0 || r["hookrun_runs"] != 0 {
		t.Errorf("the run read its delivery key %d times and its record %d times, want 0 and 0", r["hookrun_deliveries"], r["hookrun_runs"])
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Queued, claimed, refreshed at least once (0.7 s at 200 ms), finished.
	if w := writes.Load(); w < 4 {
		t.Errorf("the record was written %d times, want at least 4 (a heartbeat among them)", w)
	}
	rec, _, err := f.q.Runs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != workflows.StatusSucceeded || len(rec.Steps) != 2 || rec.Attempt != 1 {
		t.Errorf("record: status %s, %d steps, attempt %d; want succeeded, 2 steps, attempt 1", rec.Status, len(rec.Steps), rec.Attempt)
	}
}
