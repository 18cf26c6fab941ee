package queue

import (
	"context"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// BenchmarkClaimPath measures the record transitions of one run on the
// runner's side against the embedded server: Claim (creating the record),
// one Heartbeat and Finish, each a read and a compare-and-set write.
func BenchmarkClaimPath(b *testing.B) {
	q := openTest(b, Config{})
	ctx := context.Background()
	rs := q.Runs()
	b.ResetTimer()
	for b.Loop() {
		req := testRequest("bench")
		req.ID = NewRunID()
		now := time.Now()
		if _, err := rs.Claim(ctx, req, ClaimSpec{Claimant: "bench", Now: now, StaleAfter: time.Minute}); err != nil {
			b.Fatal(err)
		}
		if _, err := rs.Heartbeat(ctx, req.ID, HeartbeatSpec{Claimant: "bench", Now: now}); err != nil {
			b.Fatal(err)
		}
		if err := rs.Finish(ctx, req.ID, FinishSpec{Claimant: "bench", Now: now, Status: workflows.StatusSucceeded, FinishedAt: now}); err != nil {
			b.Fatal(err)
		}
	}
}
