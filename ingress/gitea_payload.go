package ingress

import "github.com/hookrun/hookrun/workflows"

// Gitea (and Forgejo, which sends the same) webhook bodies of type
// "gitea" are GitHub-shaped: the GitHub projections (github_payload.go)
// read them, with what Gitea adds that normalization needs: the logins
// of authors (Gitea sends no author_association; ingress asks its API),
// the full pull request of a comment delivery, and a review's verdict.
// Decoded with GitHub's lenient options.

// gtPull is a Gitea pull request: GitHub's fields and its author.
type gtPull struct {
	ghPull
	User ghUser `json:"user"`
}

// gtIssue is a Gitea issue: GitHub's fields and its author.
type gtIssue struct {
	ghIssue
	User ghUser `json:"user"`
}

// gtComment is a Gitea comment: GitHub's fields and its author.
type gtComment struct {
	ghComment
	User ghUser `json:"user"`
}

// gtReview is what a review delivery says of the review: its type
// (pull_request_review_approved, _rejected, _comment) and its text. It
// carries no id and no author (the sender is the reviewer).
type gtReview struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// gtPullRequestEvent is Gitea's PullRequestPayload: pull_request events
// and, with Review set, the review events.
type gtPullRequestEvent struct {
	ghCommon
	Number      int       `json:"number"`
	PullRequest *gtPull   `json:"pull_request"`
	Review      *gtReview `json:"review"`
	ghTarget
}

// gtIssueCommentEvent is Gitea's IssueCommentPayload; a comment on a pull
// request carries the whole pull request beside the issue.
type gtIssueCommentEvent struct {
	ghCommon
	Issue       *gtIssue   `json:"issue"`
	PullRequest *gtPull    `json:"pull_request"`
	Comment     *gtComment `json:"comment"`
	IsPull      bool       `json:"is_pull"`
}

type gtIssuesEvent struct {
	ghCommon
	Issue *gtIssue `json:"issue"`
	ghTarget
}

// Gitea event names (X-Gitea-Event) that ingress handles beside GitHub's
// pull_request, issue_comment, issues and push.
const (
	gtReviewApproved = "pull_request_approved"
	gtReviewRejected = "pull_request_rejected"
	gtReviewComment  = "pull_request_comment" // a comment on a line of the diff
)

// decodeGitea decodes a Gitea webhook body into its event's projection, or
// returns an error wrapping ErrUnhandledEvent.
func decodeGitea(eventName string, body []byte) (any, error) {
	var p any
	switch eventName {
	case ghPullRequest, gtReviewApproved, gtReviewRejected, gtReviewComment:
		p = new(gtPullRequestEvent)
	case ghIssueComment:
		p = new(gtIssueCommentEvent)
	case ghIssues:
		p = new(gtIssuesEvent)
	case ghPush:
		p = new(ghPushEvent)
	default:
		return nil, unhandled(workflows.Gitea, eventName)
	}
	return decodeProjection(workflows.Gitea, eventName, body, p)
}
