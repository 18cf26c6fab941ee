package decide

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Re-runs a forge asks for (workflows.KindRerequest: the Re-run button of
// a check run or a check suite). They re-run failed runs as a
// /retry comment does (retry.go): of each workflow, the latest run on the
// head commit, if it failed; a check run's rerequest only the run it
// names (its external_id), a check suite's every one. Each is authorized
// by the workflow's `authorize` policy for the requester, whose role the
// forge's API tells (trust.go), on the re-run's own pull request (whether
// its code comes from a fork). No trigger takes a rerequest, so matching
// decides nothing for it.

// rerequestLabel names a rerequest where an answer lists what it skipped.
const rerequestLabel = "re-run request"

// maxHeadScan bounds the runs of a repository read to find those of a
// head commit no pull request is known for (a push, a fork's branch): its
// latest runs.
const maxHeadScan = 1000

// Reruns are the re-runs a delivery asks for: a forge's rerequest's
// (Rerequest), else a /retry comment's (Retry).
func (d *Decider) Reruns(ctx context.Context, ev *workflows.Event) (Decision, error) {
	if ev.Kind != workflows.KindRerequest {
		return d.Retry(ctx, ev)
	}
	return d.Rerequest(ctx, ev)
}

// Rerequest answers a forge's request to re-run (workflows.KindRerequest):
// of each workflow, the latest run on the head commit if it failed (a
// check run's only the run it names), authorized as rerunFailed says.
func (d *Decider) Rerequest(ctx context.Context, ev *workflows.Event) (Decision, error) {
	rq := ev.Rerequest
	switch {
	case rq == nil || rq.HeadSHA == "":
		return Decision{Skipped: []Skip{{rerequestLabel, "the request names no commit"}}}, nil
	case d.deps.Runs == nil:
		return Decision{Skipped: []Skip{{rerequestLabel, "this server keeps no run records to re-run"}}}, nil
	}
	recs, err := d.headRuns(ctx, ev.Forge, ev.Repo, rq)
	if err != nil {
		return Decision{}, err
	}
	failed := failedRuns(recs, ev.DeliveryID)
	if rq.RunID != "" {
		failed = slices.DeleteFunc(failed, func(r *stores.RunRecord) bool { return r.ID != rq.RunID })
	}
	if len(failed) == 0 {
		why := fmt.Sprintf("no failed run on %s of %s to re-run", rq.HeadSHA, ev.Repo)
		if rq.RunID != "" {
			why = fmt.Sprintf("run %s is not the latest run of its workflow on %s of %s, or did not fail", rq.RunID, rq.HeadSHA, ev.Repo)
		}
		return Decision{Skipped: []Skip{{rerequestLabel, why}}}, nil
	}
	return d.rerunFailed(ctx, ev, failed, rerequestLabel)
}

// headRuns are the runs of repo on forge whose head is rq.HeadSHA, newest
// first: read by pull request where the forge lists one (the run index
// has those by number), else among the repository's latest maxHeadScan
// runs.
func (d *Decider) headRuns(ctx context.Context, forge workflows.Forge, repo string, rq *workflows.Rerequest) ([]*stores.RunRecord, error) {
	var recs []*stores.RunRecord
	if len(rq.PullRequests) == 0 {
		page, _, err := d.deps.Runs.List(ctx, stores.ListFilter{Repo: repo, Limit: maxHeadScan})
		if err != nil {
			return nil, fmt.Errorf("listing the runs of %s: %w", repo, err)
		}
		recs = page
	}
	for _, n := range rq.PullRequests {
		rs, err := d.pullRequestRuns(ctx, forge, repo, n)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
	}
	recs = slices.DeleteFunc(recs, func(r *stores.RunRecord) bool { return r.Event.Forge != forge || runHead(r) != rq.HeadSHA })
	slices.SortStableFunc(recs, func(a, b *stores.RunRecord) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return slices.CompactFunc(recs, func(a, b *stores.RunRecord) bool { return a.ID == b.ID }), nil
}

// runHead is the commit a run checked out and reported on: the one it
// resolved, else its event's.
func runHead(r *stores.RunRecord) string {
	if r.HeadSHA != "" {
		return r.HeadSHA
	}
	return r.Event.HeadSHA()
}
