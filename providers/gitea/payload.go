package gitea

import (
	"github.com/hookrun/hookrun/providers/internal/hookbody"
)

// Gitea (and Forgejo, which sends the same) webhook bodies of type
// "gitea" have the shape providers/internal/hookbody's projections read,
// with what Gitea adds that normalization needs: the logins of authors
// (Gitea sends no author_association; ingress asks its API), the full pull
// request of a comment delivery, and a review's verdict. Decoded with
// hookbody's lenient options.

// gtPull is a Gitea pull request: the shared fields and its author.
type gtPull struct {
	hookbody.Pull
	User hookbody.User `json:"user"`
}

// gtIssue is a Gitea issue: the shared fields and its author.
type gtIssue struct {
	hookbody.Issue
	User hookbody.User `json:"user"`
}

// gtComment is a Gitea comment: the shared fields and its author.
type gtComment struct {
	hookbody.Comment
	User hookbody.User `json:"user"`
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
	hookbody.Common
	Number      int       `json:"number"`
	PullRequest *gtPull   `json:"pull_request"`
	Review      *gtReview `json:"review"`
	hookbody.Target
}

// gtIssueCommentEvent is Gitea's IssueCommentPayload; a comment on a pull
// request carries the whole pull request beside the issue.
type gtIssueCommentEvent struct {
	hookbody.Common
	Issue       *gtIssue   `json:"issue"`
	PullRequest *gtPull    `json:"pull_request"`
	Comment     *gtComment `json:"comment"`
	IsPull      bool       `json:"is_pull"`
}

type gtIssuesEvent struct {
	hookbody.Common
	Issue *gtIssue `json:"issue"`
	hookbody.Target
}

// Gitea event names (X-Gitea-Event) that ingress handles beside the shared
// pull_request, issue_comment, issues and push.
const (
	gtReviewApproved = "pull_request_approved"
	gtReviewRejected = "pull_request_rejected"
	gtReviewComment  = "pull_request_comment" // a comment on a line of the diff
)

// projections are what each Gitea event the forge handles decodes into;
// another event is unhandled.
var projections = hookbody.Projections{
	hookbody.EventPullRequest:  hookbody.New[gtPullRequestEvent],
	gtReviewApproved:           hookbody.New[gtPullRequestEvent],
	gtReviewRejected:           hookbody.New[gtPullRequestEvent],
	gtReviewComment:            hookbody.New[gtPullRequestEvent],
	hookbody.EventIssueComment: hookbody.New[gtIssueCommentEvent],
	hookbody.EventIssues:       hookbody.New[gtIssuesEvent],
	hookbody.EventPush:         hookbody.New[hookbody.PushEvent],
}
