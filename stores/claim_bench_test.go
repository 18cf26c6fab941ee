package stores

import (
	"context"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// BenchmarkClaimPath measures the record transitions of one run on the
// runner's side against the embedded server: Claim (a read, and the
// record's creation), one Heartbeat and Finish, each a compare-and-set
// write starting from the record the transition before wrote.
func BenchmarkClaimPath(b *testing.B) { benchClaimPath(b, false, false) }

// BenchmarkClaimPathRead is BenchmarkClaimPath with each transition
// reading the record first, as each did until the store remembered the
// records of its unfinished runs (recentRecords), and as a transition
// does whose write conflicts: the difference is what that saves per run
// (issue 28).
func BenchmarkClaimPathRead(b *testing.B) { benchClaimPath(b, false, true) }

// BenchmarkClaimPathWatched is BenchmarkClaimPath with a watch of the
// record while the run executes (a consumer created on the server and
// deleted at the end), which a runner's heartbeat kept of every run until
// runners heard cancel requests on their own subject (queue.CancelNotices): the
// difference is what that saves per run (issue 28).
func BenchmarkClaimPathWatched(b *testing.B) { benchClaimPath(b, true, false) }

func benchClaimPath(b *testing.B, watch, read bool) {
	q := openTest(b, queue.Config{})
	ctx := context.Background()
	rs := q.Runs()
	b.ResetTimer()
	for b.Loop() {
		req := testRequest("bench")
		req.ID = queue.NewRunID()
		now := time.Now()
		if _, err := rs.Claim(ctx, req, ClaimSpec{Claimant: "bench", Now: now, StaleAfter: time.Minute}); err != nil {
			b.Fatal(err)
		}
		stop := func() {}
		if watch {
			wctx, cancel := context.WithCancel(ctx)
			ch, err := rs.Watch(wctx, req.ID)
			if err != nil {
				b.Fatal(err)
			}
			stop = func() {
				cancel()
				for range ch { // closed once the watch is stopped
				}
			}
		}
		if read {
			rs.recent.forget(req.ID)
		}
		if _, err := rs.Heartbeat(ctx, req.ID, HeartbeatSpec{Claimant: "bench", Attempt: 1, Now: now}); err != nil {
			b.Fatal(err)
		}
		if read {
			rs.recent.forget(req.ID)
		}
		if err := rs.Finish(ctx, req.ID, FinishSpec{Claimant: "bench", Attempt: 1, Now: now, Status: workflows.StatusSucceeded, FinishedAt: now}); err != nil {
			b.Fatal(err)
		}
		stop()
	}
}
