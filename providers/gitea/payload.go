package gitea

import (
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ghpayload"
)

// Gitea (and Forgejo, which sends the same) webhook bodies of type
// "gitea" are GitHub-shaped: the GitHub projections (github_payload.go)
// read them, with what Gitea adds that normalization needs: the logins
// of authors (Gitea sends no author_association; ingress asks its API),
// the full pull request of a comment delivery, and a review's verdict.
// Decoded with GitHub's lenient options.

// gtPull is a Gitea pull request: GitHub's fields and its author.
type gtPull struct {
	ghpayload.Pull
	User ghpayload.User `json:"user"`
}

// gtIssue is a Gitea issue: GitHub's fields and its author.
type gtIssue struct {
	ghpayload.Issue
	User ghpayload.User `json:"user"`
}

// gtComment is a Gitea comment: GitHub's fields and its author.
type gtComment struct {
	ghpayload.Comment
	User ghpayload.User `json:"user"`
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
	ghpayload.Common
	Number      int       `json:"number"`
	PullRequest *gtPull   `json:"pull_request"`
	Review      *gtReview `json:"review"`
	ghpayload.Target
}

// gtIssueCommentEvent is Gitea's IssueCommentPayload; a comment on a pull
// request carries the whole pull request beside the issue.
type gtIssueCommentEvent struct {
	ghpayload.Common
	Issue       *gtIssue   `json:"issue"`
	PullRequest *gtPull    `json:"pull_request"`
	Comment     *gtComment `json:"comment"`
	IsPull      bool       `json:"is_pull"`
}

type gtIssuesEvent struct {
	ghpayload.Common
	Issue *gtIssue `json:"issue"`
	ghpayload.Target
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
	case ghpayload.EventPullRequest, gtReviewApproved, gtReviewRejected, gtReviewComment:
		p = new(gtPullRequestEvent)
	case ghpayload.EventIssueComment:
		p = new(gtIssueCommentEvent)
	case ghpayload.EventIssues:
		p = new(gtIssuesEvent)
	case ghpayload.EventPush:
		p = new(ghpayload.PushEvent)
	default:
		return nil, forge.Unhandled(Name, eventName)
	}
	return ghpayload.Decode(Name, eventName, body, p)
}
