package ingress

import (
	"errors"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// GitHub event names (X-GitHub-Event) that ingress handles.
const (
	ghPing              = "ping"
	ghPullRequest       = "pull_request"
	ghIssueComment      = "issue_comment"
	ghIssues            = "issues"
	ghPullReviewComment = "pull_request_review_comment"
	ghPullReview        = "pull_request_review"
	ghPush              = "push"
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
	case *ghPullRequestEvent:
		return githubPullRequest(p)
	case *ghIssueCommentEvent:
		return githubIssueComment(p)
	case *ghReviewCommentEvent:
		return githubReviewComment(p)
	case *ghReviewEvent:
		return githubReview(p)
	case *ghIssuesEvent:
		return githubIssues(p)
	case *ghPushEvent:
		return githubPush(p)
	}
	return nil, unhandled(workflows.GitHub, eventName)
}

var (
	errNoPullRequest = errors.New("payload has no pull_request")
	errNoIssue       = errors.New("payload has no issue")
	errNoComment     = errors.New("payload has no comment")
	errNoRepository  = errors.New("payload has no repository")
	errNoReview      = errors.New("payload has no review")
)

func githubBase(c *ghCommon) *workflows.Event {
	return &workflows.Event{
		Action:         c.Action,
		InstallationID: c.Installation.ID,
		Repo:           c.Repo.FullName,
		CloneURL:       c.Repo.CloneURL,
		Sender:         c.Sender.Login,
	}
}

func githubPullRequest(p *ghPullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	if pr == nil {
		return nil, malformed(workflows.GitHub, ghPullRequest, errNoPullRequest)
	}
	if p.Repo == nil {
		return nil, malformed(workflows.GitHub, ghPullRequest, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation = pr.AuthorAssociation
	ev.PullRequest = githubPull(pr, p.Repo)
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.Number
	}
	ev.Labels = githubLabels(pr.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.label(), p.target(p.RequestedReviewer, p.RequestedTeam), pr.UpdatedAt.String()
	return ev, nil
}

// githubPull maps a payload's pull request; repo is the payload's
// repository, the base when the pull request does not name it.
func githubPull(pr *ghPull, repo *ghRepository) *workflows.PullRequest {
	head, base := pr.Head, pr.Base
	var headRepo, baseRepo string
	if head.Repo != nil {
		headRepo = head.Repo.FullName
	}
	if base.Repo != nil {
		baseRepo = base.Repo.FullName
	}
	if baseRepo == "" {
		baseRepo = repo.FullName
	}
	return &workflows.PullRequest{
		Number:  pr.Number,
		Title:   pr.Title,
		URL:     pr.HTMLURL,
		HeadSHA: head.SHA,
		HeadRef: head.Ref,
		BaseRef: base.Ref,
		Fork:    head.Repo == nil || !strings.EqualFold(headRepo, baseRepo),
		Draft:   pr.Draft,
		Merged:  pr.Merged,
	}
}

func githubReviewComment(p *ghReviewCommentEvent) (*workflows.Event, error) {
	pr, comment := p.PullRequest, p.Comment
	switch {
	case pr == nil:
		return nil, malformed(workflows.GitHub, ghPullReviewComment, errNoPullRequest)
	case comment == nil:
		return nil, malformed(workflows.GitHub, ghPullReviewComment, errNoComment)
	case p.Repo == nil:
		return nil, malformed(workflows.GitHub, ghPullReviewComment, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation = comment.AuthorAssociation
	ev.PullRequest = githubPull(pr, p.Repo)
	line := comment.Line
	if line == 0 {
		line = comment.OriginalLine
	}
	ev.Comment = &workflows.Comment{ID: comment.ID, Body: comment.Body, URL: comment.HTMLURL, Path: comment.Path, Line: line}
	ev.Labels = githubLabels(pr.Labels)
	ev.UpdatedAt = comment.UpdatedAt.String()
	return ev, nil
}

// reviewActions maps pull_request_review actions onto comment actions.
var reviewActions = map[string]string{"submitted": "created", "edited": "edited", "dismissed": "deleted"}

func githubReview(p *ghReviewEvent) (*workflows.Event, error) {
	pr, review := p.PullRequest, p.Review
	switch {
	case pr == nil:
		return nil, malformed(workflows.GitHub, ghPullReview, errNoPullRequest)
	case review == nil:
		return nil, malformed(workflows.GitHub, ghPullReview, errNoReview)
	case p.Repo == nil:
		return nil, malformed(workflows.GitHub, ghPullReview, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindComment
	if a, ok := reviewActions[p.Action]; ok {
		ev.Action = a
	}
	ev.AuthorAssociation = review.AuthorAssociation
	ev.PullRequest = githubPull(pr, p.Repo)
	ev.Comment = &workflows.Comment{ID: review.ID, Body: review.Body, URL: review.HTMLURL}
	ev.Labels = githubLabels(pr.Labels)
	ev.UpdatedAt = review.SubmittedAt.String()
	return ev, nil
}

func githubIssueComment(p *ghIssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.Issue, p.Comment
	switch {
	case issue == nil:
		return nil, malformed(workflows.GitHub, ghIssueComment, errNoIssue)
	case comment == nil:
		return nil, malformed(workflows.GitHub, ghIssueComment, errNoComment)
	case p.Repo == nil:
		return nil, malformed(workflows.GitHub, ghIssueComment, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
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
		ev.Issue = githubIssueOf(issue)
	}
	ev.Labels = githubLabels(issue.Labels)
	return ev, nil
}

func githubIssues(p *ghIssuesEvent) (*workflows.Event, error) {
	issue := p.Issue
	switch {
	case issue == nil:
		return nil, malformed(workflows.GitHub, ghIssues, errNoIssue)
	case p.Repo == nil:
		return nil, malformed(workflows.GitHub, ghIssues, errNoRepository)
	}
	ev := githubBase(&p.ghCommon)
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation = issue.AuthorAssociation
	ev.Issue = githubIssueOf(issue)
	ev.Labels = githubLabels(issue.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.label(), p.target(nil, nil), issue.UpdatedAt.String()
	return ev, nil
}

func githubIssueOf(issue *ghIssue) *workflows.Issue {
	return &workflows.Issue{Number: issue.Number, Title: issue.Title, URL: issue.HTMLURL}
}

// githubLabels is the label names, nil for none (goldens omit the field).
func githubLabels(ls []*ghLabel) []string {
	var names []string
	for _, l := range ls {
		name := ""
		if l != nil {
			name = l.Name
		}
		names = append(names, name)
	}
	return names
}

func githubPush(p *ghPushEvent) (*workflows.Event, error) {
	repo := p.Repo
	if repo == nil {
		return nil, malformed(workflows.GitHub, ghPush, errNoRepository)
	}
	sender := p.Sender.Login
	if sender == "" {
		sender = p.Pusher.Login
	}
	if sender == "" {
		sender = p.Pusher.Name
	}
	ref := p.Ref
	return &workflows.Event{
		Kind:              workflows.KindPush,
		Action:            "pushed",
		InstallationID:    p.Installation.ID,
		Repo:              repo.FullName,
		CloneURL:          repo.CloneURL,
		Sender:            sender,
		AuthorAssociation: associationPusher,
		Push: &workflows.Push{
			Ref:     ref,
			Branch:  branchOf(ref),
			Before:  p.Before,
			After:   p.After,
			Deleted: p.Deleted || zeroSHA(p.After),
		},
	}, nil
}

// zeroSHA reports whether sha is the all-zero object id (SHA-1 or SHA-256)
// both forges send as the after of a push that deletes a branch or tag.
func zeroSHA(sha string) bool {
	return sha != "" && strings.Trim(sha, "0") == ""
}

// branchOf is the short branch name of a full ref, "" for anything that is
// not a branch (tags).
func branchOf(ref string) string {
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return b
	}
	return ""
}
