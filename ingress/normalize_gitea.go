package ingress

import (
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
		if eventName == ghPullRequest {
			ev, err = giteaPullRequest(p)
		} else {
			ev, err = giteaReview(eventName, p)
		}
	case *gtIssueCommentEvent:
		ev, err = giteaIssueComment(p)
	case *gtIssuesEvent:
		ev, err = giteaIssues(p)
	case *ghPushEvent:
		if p.Repo == nil {
			return nil, malformed(workflows.Gitea, eventName, errNoRepository)
		}
		return githubPush(p)
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
		return nil, malformed(workflows.Gitea, ghPullRequest, errNoPullRequest)
	case p.Repo == nil:
		return nil, malformed(workflows.Gitea, ghPullRequest, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation, ev.Author = associationNone, pr.User.Login
	ev.PullRequest = githubPull(&pr.ghPull, p.Repo)
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.Number
	}
	ev.Labels = githubLabels(pr.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.label(), p.target(nil, nil), pr.UpdatedAt.String()
	return ev, nil
}

func giteaReview(eventName string, p *gtPullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	switch {
	case pr == nil:
		return nil, malformed(workflows.Gitea, eventName, errNoPullRequest)
	case p.Review == nil:
		return nil, malformed(workflows.Gitea, eventName, errNoReview)
	case p.Repo == nil:
		return nil, malformed(workflows.Gitea, eventName, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindComment
	ev.Action = "created" // Gitea says "reviewed"; a review is never edited in place
	ev.AuthorAssociation, ev.Author = associationNone, p.Sender.Login
	ev.PullRequest = githubPull(&pr.ghPull, p.Repo)
	ev.Comment = &workflows.Comment{Body: p.Review.Content, URL: pr.HTMLURL}
	ev.Labels = githubLabels(pr.Labels)
	ev.UpdatedAt = pr.UpdatedAt.String() // a review delivery has no time of its own
	return ev, nil
}

func giteaIssueComment(p *gtIssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.Issue, p.Comment
	switch {
	case issue == nil:
		return nil, malformed(workflows.Gitea, ghIssueComment, errNoIssue)
	case comment == nil:
		return nil, malformed(workflows.Gitea, ghIssueComment, errNoComment)
	case p.Repo == nil:
		return nil, malformed(workflows.Gitea, ghIssueComment, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation, ev.Author = associationNone, comment.User.Login
	ev.Comment = &workflows.Comment{ID: comment.ID, Body: comment.Body, URL: comment.HTMLURL}
	ev.UpdatedAt = comment.UpdatedAt.String()
	switch {
	case p.PullRequest != nil:
		ev.PullRequest = githubPull(&p.PullRequest.ghPull, p.Repo)
		if ev.PullRequest.Number == 0 {
			ev.PullRequest.Number = issue.Number
		}
	case p.IsPull || issue.PullRequestLinks != nil:
		ev.PullRequest = &workflows.PullRequest{Number: issue.Number, Title: issue.Title, URL: issue.HTMLURL,
			Fork: true} // unknown from this payload: assume the untrusted case
	default:
		ev.Issue = githubIssueOf(&issue.ghIssue)
	}
	ev.Labels = githubLabels(issue.Labels)
	return ev, nil
}

func giteaIssues(p *gtIssuesEvent) (*workflows.Event, error) {
	issue := p.Issue
	switch {
	case issue == nil:
		return nil, malformed(workflows.Gitea, ghIssues, errNoIssue)
	case p.Repo == nil:
		return nil, malformed(workflows.Gitea, ghIssues, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation, ev.Author = associationNone, issue.User.Login
	ev.Issue = githubIssueOf(&issue.ghIssue)
	ev.Labels = githubLabels(issue.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.label(), p.target(nil, nil), issue.UpdatedAt.String()
	return ev, nil
}
