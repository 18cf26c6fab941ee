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

// Text is s shown as text in a comment's Markdown (review.Escape, the one
// rule for it): no HTML (so no closing a hidden marker), no @mentions or
// references, no code spans, links or images, no line a forge's quick
// action.
func Text(s string) string { return review.Escape(s) }

// Reviewer posts a run's findings on the lines its pull or merge request
// changed. Each forge's Report calls it in the final phase, before it
// writes the run's comment (which shows the summary), so a final report
// the outbox retries retries the review too: findings already commented
// on (their marker: the workflow and the finding's fingerprint) are not
// commented again.
type Reviewer interface {
	// Review posts r.Results' findings as one review of r.Event's pull or
	// merge request when r.Workflow.Report.Review is set, skipping those
	// an earlier run of the workflow commented on and marking those of
	// the workflow's no longer found (see
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

// ReviewFirst runs rv's review of r when Wants(r), which a Report does
// before it writes the run's comment: the summary for the comment (with
// the review's error in it, if any) and that error.
func ReviewFirst(ctx context.Context, rv Reviewer, r *contract.RunReport) (*ReviewSummary, error) {
	if !Wants(r) {
		return nil, nil
	}
	s, err := rv.Review(ctx, r)
	if err != nil && s != nil {
		s.Error = err.Error()
	}
	return s, err
}

// Review of a forge that is not configured posts nothing.
func (n notConfigured) Review(context.Context, *contract.RunReport) (*ReviewSummary, error) {
	return nil, n.err()
}
