package queue

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A queue publishes and consumes only with its run records attached
// (stores.Open hands them over): without them a run would be published
// with no record, or consumed with nobody to fail it.
func TestPublishAndConsumeNeedRecords(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{})
	ctx := testCtx(t, 10*time.Second)
	if _, err := q.Publish(ctx, testRequest("no-records")); err == nil || !strings.Contains(err.Error(), "no run records are attached") {
		t.Fatalf("Publish without records: %v, want a refusal", err)
	}
	if _, err := q.Consume(ctx, ConsumerConfig{}, func(context.Context, *Delivery) error { return nil }); err == nil || !strings.Contains(err.Error(), "no run records are attached") {
		t.Fatalf("Consume without records: %v, want a refusal", err)
	}
	if n := streamLen(t, q); n != 0 {
		t.Fatalf("%d messages on %s after the refused publish, want none", n, StreamRuns)
	}
}

// streamLen is the number of messages in HOOKRUN_RUNS.
func streamLen(t *testing.T, q *Queue) uint64 {
	t.Helper()
	info, err := q.runsS.Info(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
