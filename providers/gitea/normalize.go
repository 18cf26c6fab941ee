package gitea

import (
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ghpayload"
	"github.com/hookrun/hookrun/workflows"
)

// giteaActions maps Gitea's actions onto hookrun's (GitHub's) names where
// they differ; every other action is kept as Gitea sends it (opened,
// closed, reopened, edited, assigned, review_requested, ...).
var giteaActions = map[string]string{
	"synchronized":  "synchronize",
	"label_updated": "labeled",
	"label_cleared": "unlabeled",
}

func giteaAction(a string) string {
	if m, ok := giteaActions[a]; ok {
		return m
	}
	return a
}

// normalizeGitea maps a Gitea or Forgejo payload (gitea_payload.go) onto an
// Event (without Forge, DeliveryID and Raw, which Normalize sets).
//
//   - pull_request: actions through giteaActions (label_updated is labeled
//     with the pull request's labels after the change: Gitea does not say
//     which one was added); head, refs, Fork (head.repo != base.repo) as
//     for GitHub; Author is the pull request's author.
//   - issue_comment on a pull request: the delivery's top-level
//     pull_request gives head SHA, refs and Fork, so such a comment needs
//     no pinning; without it (an older server) Fork is true and the head is
//     pinned as for GitHub. Author is the commenter.
//   - pull_request_approved, pull_request_rejected, pull_request_comment
//     (a review, or a comment on a line of the diff): comment events on
//     the pull request, action created, with the review's text as the
//     comment's body (it has no id); Author is the sender, the reviewer.
//   - issues: the issue's author.
//   - push: COLLABORATOR, as on the other forges.
//
// Gitea payloads carry no author_association: every event but a push is
// NONE until ingress asks the API for Author's permission (trust.go).
func normalizeGitea(eventName string, body []byte) (*workflows.Event, error) {
	payload, err := decodeGitea(eventName, body)
	if err != nil {
		return nil, err
	}
	var ev *workflows.Event
	switch p := payload.(type) {
	case *gtPullRequestEvent:
		if eventName == ghpayload.EventPullRequest {
			ev, err = giteaPullRequest(p)
		} else {
			ev, err = giteaReview(eventName, p)
		}
	case *gtIssueCommentEvent:
		ev, err = giteaIssueComment(p)
	case *gtIssuesEvent:
		ev, err = giteaIssues(p)
	case *ghpayload.PushEvent:
		if p.Repo == nil {
			return nil, forge.Malformed(Name, eventName, ghpayload.ErrNoRepository)
		}
		return ghpayload.PushOf(Name, p)
	}
	if err != nil {
		return nil, err
	}
	ev.Action = giteaAction(ev.Action)
	return ev, nil
}

func giteaPullRequest(p *gtPullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	switch {
	case pr == nil:
		return nil, forge.Malformed(Name, ghpayload.EventPullRequest, ghpayload.ErrNoPullRequest)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghpayload.EventPullRequest, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, pr.User.Login
	ev.PullRequest = ghpayload.PullOf(&pr.Pull, p.Repo)
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.Number
	}
	ev.Labels = ghpayload.Labels(pr.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(nil, nil), pr.UpdatedAt.String()
	return ev, nil
}

func giteaReview(eventName string, p *gtPullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	switch {
	case pr == nil:
		return nil, forge.Malformed(Name, eventName, ghpayload.ErrNoPullRequest)
	case p.Review == nil:
		return nil, forge.Malformed(Name, eventName, ghpayload.ErrNoReview)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, eventName, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.Action = "created" // Gitea says "reviewed"; a review is never edited in place
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, p.Sender.Login
	ev.PullRequest = ghpayload.PullOf(&pr.Pull, p.Repo)
	ev.Comment = &workflows.Comment{Body: p.Review.Content, URL: pr.HTMLURL}
	ev.Labels = ghpayload.Labels(pr.Labels)
	ev.UpdatedAt = pr.UpdatedAt.String() // a review delivery has no time of its own
	return ev, nil
}

func giteaIssueComment(p *gtIssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.Issue, p.Comment
	switch {
	case issue == nil:
		return nil, forge.Malformed(Name, ghpayload.EventIssueComment, ghpayload.ErrNoIssue)
	case comment == nil:
		return nil, forge.Malformed(Name, ghpayload.EventIssueComment, ghpayload.ErrNoComment)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghpayload.EventIssueComment, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, comment.User.Login
	ev.Comment = &workflows.Comment{ID: comment.ID, Body: comment.Body, URL: comment.HTMLURL}
	ev.UpdatedAt = comment.UpdatedAt.String()
	switch {
	case p.PullRequest != nil:
		ev.PullRequest = ghpayload.PullOf(&p.PullRequest.Pull, p.Repo)
		if ev.PullRequest.Number == 0 {
			ev.PullRequest.Number = issue.Number
		}
	case p.IsPull || issue.PullRequestLinks != nil:
		ev.PullRequest = &workflows.PullRequest{Number: issue.Number, Title: issue.Title, URL: issue.HTMLURL,
			Fork: true} // unknown from this payload: assume the untrusted case
	default:
		ev.Issue = ghpayload.IssueOf(&issue.Issue)
	}
	ev.Labels = ghpayload.Labels(issue.Labels)
	return ev, nil
}

func giteaIssues(p *gtIssuesEvent) (*workflows.Event, error) {
	issue := p.Issue
	switch {
	case issue == nil:
		return nil, forge.Malformed(Name, ghpayload.EventIssues, ghpayload.ErrNoIssue)
	case p.Repo == nil:
		return nil, forge.Malformed(Name, ghpayload.EventIssues, ghpayload.ErrNoRepository)
	}
	ev := ghpayload.Base(&p.Common)
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, issue.User.Login
	ev.Issue = ghpayload.IssueOf(&issue.Issue)
	ev.Labels = ghpayload.Labels(issue.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(nil, nil), issue.UpdatedAt.String()
	return ev, nil
}
