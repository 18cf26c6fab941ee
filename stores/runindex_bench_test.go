package stores

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// benchRecord is one of the benchmark's records: 20 workflows, 50
// repositories, 4 runs per pull request, statuses mixed, a realistic event.
func benchRecord(i int) *RunRecord {
	statuses := []workflows.Status{workflows.StatusSucceeded, workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusCancelled, workflows.StatusPartiallySucceeded}
	fin := time.Now().UTC()
	repo := fmt.Sprintf("org/repo-%d", (i/4)%50) // a pull request's runs share its repository
	return &RunRecord{
		Workflow: fmt.Sprintf("wf-%d", i%20), Repo: repo, Status: statuses[i%5], Attempt: 1,
		CreatedAt: fin.Add(-time.Minute), FinishedAt: &fin, ConcurrencyGroup: fmt.Sprintf("pr:wf:%s#%d", repo, i/4),
		HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
		Event: workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPullRequest, Action: "synchronize", Repo: repo,
			DeliveryID: fmt.Sprintf("d0e1f2a3-%08d-11ee-8c99-0242ac120002", i), Sender: "octocat",
			CloneURL: "https://github.com/" + repo + ".git",
			PullRequest: &workflows.PullRequest{Number: i / 4, Title: "Refactor the widget pipeline", HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
				HeadRef: "feature", BaseRef: "main"}},
		Steps: []workflows.StepState{{ID: "build", Status: workflows.StatusSucceeded}, {ID: "test", Status: workflows.StatusSucceeded}},
	}
}

// startRuns times the start path of n cancel_in_progress runs (what a
// runner does between taking a message and its first step that depends on
// the store: Claim, then StartNewest in the run's group) and returns the
// durations.
func startRuns(b *testing.B, q *testQueue, n int) []time.Duration {
	ctx := testCtx(b, time.Minute)
	out := make([]time.Duration, n)
	for i := range n {
		req := testRequest("start")
		req.ID = queue.NewRunID()
		group := fmt.Sprintf("pr:start:o/a#%d", i%10)
		began := time.Now()
		res, err := q.Runs().Claim(ctx, req, ClaimSpec{Claimant: "bench", Now: time.Now(), StaleAfter: time.Minute, Group: group})
		if err != nil || res.Outcome != Claimed {
			b.Fatalf("claim: %v %v", res.Outcome, err)
		}
		if _, newer, err := q.Groups().StartNewest(ctx, group, req.ID, time.Now()); err != nil || newer != "" {
			b.Fatalf("start: %q %v", newer, err)
		}
		out[i] = time.Since(began)
		if err := q.Groups().LeaveNewest(ctx, group, req.ID); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

func quantile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}
