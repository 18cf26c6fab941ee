package github

import (
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ghpayload"
	"github.com/hookrun/hookrun/workflows"
)

// GitHub event names (X-GitHub-Event) that ingress handles.
const (
	ghPing              = ghpayload.EventPing
	ghPullRequest       = ghpayload.EventPullRequest
	ghIssueComment      = ghpayload.EventIssueComment
	ghIssues            = ghpayload.EventIssues
	ghPullReviewComment = ghpayload.EventPullReviewComment
	ghPullReview        = ghpayload.EventPullReview
	ghPush              = ghpayload.EventPush
)

// normalizeGitHub decodes a GitHub payload (github_payload.go) and maps it onto an
// Event (without Forge, DeliveryID and Raw, which Normalize sets).
//
// Authorization inputs:
//   - pull_request: the pull request author's author_association (the code a
//     run would check out is theirs); Fork is head.repo != base.repo, or a
//     deleted head repository.
//   - issue_comment: the comment's author_association. GitHub's issue_comment
//     payload does not say where a pull request's head lives, so a comment on
//     a pull request is conservatively marked Fork = true; with the default
//     `allow_forks: false` only a trusted commenter triggers. HeadSHA is
//     empty here; the server pins it once a workflow matched (trust.go).
//   - pull_request_review_comment (a comment on a line of the diff) and
//     pull_request_review (a review's summary): comment events on the pull
//     request, with the commenter's or reviewer's author_association; their
//     payload carries the whole pull request, so head, refs and Fork come
//     from it as for pull_request (no pinning needed). A review comment has
//     the file and line (Comment.Path, Comment.Line: the diff's line, else
//     the original line of an outdated comment). A review's submitted,
//     edited and dismissed are created, edited and deleted.
//   - issues: the issue author's author_association.
//   - push: COLLABORATOR (pushing needs write access to the repository).
//     A push that deletes its branch (deleted: true, or after all zeros)
//     is Push.Deleted.
func normalizeGitHub(eventName string, body []byte) (*workflows.Event, error) {
	payload, err := decodeGitHub(eventName, body)
	if err != nil {
		return nil, err
	}
	switch p := payload.(type) {
	case *ghpayload.PullRequestEvent:
		return githubPullRequest(p)
	case *ghpayload.IssueCommentEvent:
		return githubIssueComment(p)
	case *ghpayload.ReviewCommentEvent:
		return githubReviewComment(p)
	case *ghpayload.ReviewEvent:
		return githubReview(p)
	case *ghpayload.IssuesEvent:
		return githubIssues(p)
	case *ghpayload.PushEvent:
		return ghpayload.PushOf(Name, p)
	}
	return nil, forge.Unhandled(Name, eventName)
}

func githubPullRequest(p *ghpayload.PullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	if pr == nil {
		return nil, forge.Malformed(Name, ghPullRequest, ghpayload.ErrNoPullRequest)
	}
	if p.Repo == nil {
		return nil, forge.Malformed(Name, ghPullRequest, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation = pr.AuthorAssociation
	ev.PullRequest = ghpayload.PullOf(pr, p.Repo)
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.Number
	}
	ev.Labels = ghpayload.Labels(pr.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(p.RequestedReviewer, p.RequestedTeam), pr.UpdatedAt.String()
	return ev, nil
}

func githubReviewComment(p *ghpayload.ReviewCommentEvent) (*workflows.Event, error) {
	pr, comment := p.PullRequest, p.Comment
	switch {
	case pr == nil:
		return nil, forge.Malformed(Name, ghPullReviewComment, ghpayload.ErrNoPullRequest)
	case comment == nil:
		return nil, forge.Malformed(Name, ghPullReviewComment, ghpayload.ErrNoComment)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghPullReviewComment, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation = comment.AuthorAssociation
	ev.PullRequest = ghpayload.PullOf(pr, p.Repo)
	line := comment.Line
	if line == 0 {
		line = comment.OriginalLine
	}
	ev.Comment = &workflows.Comment{ID: comment.ID, Body: comment.Body, URL: comment.HTMLURL, Path: comment.Path, Line: line}
	ev.Labels = ghpayload.Labels(pr.Labels)
	ev.UpdatedAt = comment.UpdatedAt.String()
	return ev, nil
}

// reviewActions maps pull_request_review actions onto comment actions.
var reviewActions = map[string]string{"submitted": "created", "edited": "edited", "dismissed": "deleted"}

func githubReview(p *ghpayload.ReviewEvent) (*workflows.Event, error) {
	pr, review := p.PullRequest, p.Review
	switch {
	case pr == nil:
		return nil, forge.Malformed(Name, ghPullReview, ghpayload.ErrNoPullRequest)
	case review == nil:
		return nil, forge.Malformed(Name, ghPullReview, ghpayload.ErrNoReview)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghPullReview, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindComment
	if a, ok := reviewActions[p.Action]; ok {
		ev.Action = a
	}
	ev.AuthorAssociation = review.AuthorAssociation
	ev.PullRequest = ghpayload.PullOf(pr, p.Repo)
	ev.Comment = &workflows.Comment{ID: review.ID, Body: review.Body, URL: review.HTMLURL}
	ev.Labels = ghpayload.Labels(pr.Labels)
	ev.UpdatedAt = review.SubmittedAt.String()
	return ev, nil
}

func githubIssueComment(p *ghpayload.IssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.Issue, p.Comment
	switch {
	case issue == nil:
		return nil, forge.Malformed(Name, ghIssueComment, ghpayload.ErrNoIssue)
	case comment == nil:
		return nil, forge.Malformed(Name, ghIssueComment, ghpayload.ErrNoComment)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghIssueComment, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation = comment.AuthorAssociation
	ev.Comment = &workflows.Comment{
		ID:   comment.ID,
		Body: comment.Body,
		URL:  comment.HTMLURL,
	}
	ev.UpdatedAt = comment.UpdatedAt.String()
	if issue.PullRequestLinks != nil {
		ev.PullRequest = &workflows.PullRequest{
			Number: issue.Number,
			Title:  issue.Title,
			URL:    issue.HTMLURL,
			Fork:   true, // unknown from this payload: assume the untrusted case
		}
	} else {
		ev.Issue = ghpayload.IssueOf(issue)
	}
	ev.Labels = ghpayload.Labels(issue.Labels)
	return ev, nil
}

func githubIssues(p *ghpayload.IssuesEvent) (*workflows.Event, error) {
	issue := p.Issue
	switch {
	case issue == nil:
		return nil, forge.Malformed(Name, ghIssues, ghpayload.ErrNoIssue)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghIssues, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation = issue.AuthorAssociation
	ev.Issue = ghpayload.IssueOf(issue)
	ev.Labels = ghpayload.Labels(issue.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(nil, nil), issue.UpdatedAt.String()
	return ev, nil
}

// decodeGitHub decodes a GitHub webhook body into its event's projection:
// one of the *ghpayload...Event types, or an error wrapping ErrUnhandledEvent.
func decodeGitHub(eventName string, body []byte) (any, error) {
	var p any
	switch eventName {
	case ghPullRequest:
		p = new(ghpayload.PullRequestEvent)
	case ghIssueComment:
		p = new(ghpayload.IssueCommentEvent)
	case ghPullReviewComment:
		p = new(ghpayload.ReviewCommentEvent)
	case ghPullReview:
		p = new(ghpayload.ReviewEvent)
	case ghIssues:
		p = new(ghpayload.IssuesEvent)
	case ghPush:
		p = new(ghpayload.PushEvent)
	default:
		return nil, forge.Unhandled(Name, eventName)
	}
	return ghpayload.Decode(Name, eventName, body, p)
}
