package forge

import (
	"context"

	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
)

// ReviewSummary is what a review did with a run's findings, for the run's
// comment: counts new, still present and gone since the last run, and the
// findings not commented on inline.
type ReviewSummary = review.Summary

// Reviewer posts a run's findings on the lines its pull or merge request
// changed. Each forge's Report calls it in the final phase, before it
// writes the run's comment (which shows the summary), so a final report
// the outbox retries retries the review too: findings already commented
// on (their fingerprint marker) are not commented again.
type Reviewer interface {
	// Review posts r.Results' findings as one review of r.Event's pull or
	// merge request when r.Workflow.Report.Review is set, skipping those
	// an earlier run commented on and marking those no longer found (see
	// package providers/internal/review). nil, nil when there is nothing
	// to review: not the final phase, no report.review, no pull request.
	// Without credentials it fails with ErrNoCredentials.
	Review(ctx context.Context, r *contract.RunReport) (*ReviewSummary, error)
}

// Wants reports whether r is one a Reviewer reviews: the final report of
// a workflow with report.review about a pull or merge request.
func Wants(r *contract.RunReport) bool {
	return r != nil && r.Phase == contract.PhaseFinal && r.Workflow != nil && r.Workflow.Report.Review != nil &&
		r.Event != nil && r.Event.PullRequest != nil && r.Event.PullRequest.Number > 0
}

// Review of a forge that is not configured posts nothing.
func (n notConfigured) Review(context.Context, *contract.RunReport) (*ReviewSummary, error) {
	return nil, n.err()
}
