package stores

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// On three nodes at R3, a claimant's transitions made right after its
// claim, through a client of each node, never find the claim lost: the
// bucket's reads are direct gets, which a follower that has not applied
// the claim answers with the queued record (or none); byClaimant reads
// such a record, or a missing one, again before it reports a loss.
// Without that, about a fifth of the reads right after a write were stale
// and the heartbeat reported ErrClaimLost with the record queued.
func TestClaimantTransitionsRightAfterTheClaim(t *testing.T) {
	const perNode = 60
	nodes, _ := startCluster(t)
	ctx := testCtx(t, 90*time.Second)
	for ni, n := range nodes {
		node := fmt.Sprintf("n%d", ni+1)
		q := openTest(t, queue.Config{URL: n.ClientURL(), PasswordFile: n.PasswordFile(), Replicas: 3})
		rs := q.Runs()
		for i := range perNode {
			req := testRequest("raw")
			req.ID = queue.NewRunID()
			if _, err := rs.Create(ctx, rs.queued(req, "")); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			res, err := rs.Claim(ctx, req, ClaimSpec{Claimant: "me", Now: now, StaleAfter: time.Minute})
			if err != nil || res.Outcome != Claimed {
				t.Fatalf("%s: claim %d: %+v, %v", node, i, res, err)
			}
			if _, err := rs.Heartbeat(ctx, req.ID, HeartbeatSpec{Claimant: "me", Attempt: res.Record.Attempt, Now: now.Add(time.Millisecond)}); err != nil {
				t.Fatalf("%s: heartbeat right after claim %d: %v", node, i, err)
			}
			if err := rs.Finish(ctx, req.ID, FinishSpec{Claimant: "me", Attempt: res.Record.Attempt, Now: now, Status: workflows.StatusSucceeded, FinishedAt: now}); err != nil {
				t.Fatalf("%s: finish right after the heartbeat %d: %v", node, i, err)
			}
			// A loss that is real is still reported, with the record.
			err = rs.Release(ctx, req.ID, "me", res.Record.Attempt, "")
			if !errors.Is(err, ErrClaimLost) || !lostWith(err, workflows.StatusSucceeded) {
				t.Fatalf("%s: release of a finished run %d: %v, want ErrClaimLost with the succeeded record", node, i, err)
			}
			rec, _, err := rs.Get(ctx, req.ID)
			for j := 0; (err != nil || rec.Status != workflows.StatusSucceeded) && j < 100; j++ {
				time.Sleep(5 * time.Millisecond) // a direct get may lag; the record must settle succeeded
				rec, _, err = rs.Get(ctx, req.ID)
			}
			if err != nil || rec.Status != workflows.StatusSucceeded || rec.Claimant != "me" {
				t.Fatalf("%s: record %d after the refused release: %+v, %v", node, i, rec, err)
			}
		}
	}
}

// lostWith: err carries the record that showed the claim lost, in status.
func lostWith(err error, status workflows.Status) bool {
	var lost *ClaimLostError
	return errors.As(err, &lost) && lost.Record.Status == status
}
