package ingress

import (
	"errors"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/workflows"
)

// GitHub event names (X-GitHub-Event) that ingress handles.
const (
	ghPing         = "ping"
	ghPullRequest  = "pull_request"
	ghIssueComment = "issue_comment"
	ghIssues       = "issues"
	ghPush         = "push"
)

// normalizeGitHub parses a GitHub payload with go-github and maps it onto an
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
//     empty; the runner resolves it at checkout.
//   - issues: the issue author's author_association.
//   - push: COLLABORATOR (pushing needs write access to the repository).
func normalizeGitHub(eventName string, body []byte) (*workflows.Event, error) {
	switch eventName {
	case ghPullRequest, ghIssueComment, ghIssues, ghPush:
	default:
		return nil, unhandled(workflows.GitHub, eventName)
	}
	payload, err := github.ParseWebHook(eventName, body)
	if err != nil {
		return nil, malformed(workflows.GitHub, eventName, err)
	}
	switch p := payload.(type) {
	case *github.PullRequestEvent:
		return githubPullRequest(p)
	case *github.IssueCommentEvent:
		return githubIssueComment(p)
	case *github.IssuesEvent:
		return githubIssues(p)
	case *github.PushEvent:
		return githubPush(p)
	}
	return nil, unhandled(workflows.GitHub, eventName)
}

var (
	errNoPullRequest = errors.New("payload has no pull_request")
	errNoIssue       = errors.New("payload has no issue")
	errNoComment     = errors.New("payload has no comment")
	errNoRepository  = errors.New("payload has no repository")
)

func githubBase(action string, repo *github.Repository, sender *github.User, inst *github.Installation) *workflows.Event {
	return &workflows.Event{
		Action:         action,
		InstallationID: inst.GetID(),
		Repo:           repo.GetFullName(),
		CloneURL:       repo.GetCloneURL(),
		Sender:         sender.GetLogin(),
	}
}

func githubPullRequest(p *github.PullRequestEvent) (*workflows.Event, error) {
	pr := p.GetPullRequest()
	if pr == nil {
		return nil, malformed(workflows.GitHub, ghPullRequest, errNoPullRequest)
	}
	if p.GetRepo() == nil {
		return nil, malformed(workflows.GitHub, ghPullRequest, errNoRepository)
	}
	ev := githubBase(p.GetAction(), p.GetRepo(), p.GetSender(), p.GetInstallation())
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation = pr.GetAuthorAssociation()
	head, base := pr.GetHead(), pr.GetBase()
	headRepo := head.GetRepo().GetFullName()
	baseRepo := base.GetRepo().GetFullName()
	if baseRepo == "" {
		baseRepo = p.GetRepo().GetFullName()
	}
	ev.PullRequest = &workflows.PullRequest{
		Number:  pr.GetNumber(),
		Title:   pr.GetTitle(),
		URL:     pr.GetHTMLURL(),
		HeadSHA: head.GetSHA(),
		HeadRef: head.GetRef(),
		BaseRef: base.GetRef(),
		Fork:    head.GetRepo() == nil || !strings.EqualFold(headRepo, baseRepo),
		Draft:   pr.GetDraft(),
		Merged:  pr.GetMerged(),
	}
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.GetNumber()
	}
	ev.Labels = githubLabels(pr.Labels)
	return ev, nil
}

func githubIssueComment(p *github.IssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.GetIssue(), p.GetComment()
	switch {
	case issue == nil:
		return nil, malformed(workflows.GitHub, ghIssueComment, errNoIssue)
	case comment == nil:
		return nil, malformed(workflows.GitHub, ghIssueComment, errNoComment)
	case p.GetRepo() == nil:
		return nil, malformed(workflows.GitHub, ghIssueComment, errNoRepository)
	}
	ev := githubBase(p.GetAction(), p.GetRepo(), p.GetSender(), p.GetInstallation())
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation = comment.GetAuthorAssociation()
	ev.Comment = &workflows.Comment{
		ID:   comment.GetID(),
		Body: comment.GetBody(),
		URL:  comment.GetHTMLURL(),
	}
	if issue.IsPullRequest() {
		ev.PullRequest = &workflows.PullRequest{
			Number: issue.GetNumber(),
			Title:  issue.GetTitle(),
			URL:    issue.GetHTMLURL(),
			Fork:   true, // unknown from this payload: assume the untrusted case
		}
	} else {
		ev.Issue = githubIssueOf(issue)
	}
	ev.Labels = githubLabels(issue.Labels)
	return ev, nil
}

func githubIssues(p *github.IssuesEvent) (*workflows.Event, error) {
	issue := p.GetIssue()
	switch {
	case issue == nil:
		return nil, malformed(workflows.GitHub, ghIssues, errNoIssue)
	case p.GetRepo() == nil:
		return nil, malformed(workflows.GitHub, ghIssues, errNoRepository)
	}
	ev := githubBase(p.GetAction(), p.GetRepo(), p.GetSender(), p.GetInstallation())
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation = issue.GetAuthorAssociation()
	ev.Issue = githubIssueOf(issue)
	ev.Labels = githubLabels(issue.Labels)
	return ev, nil
}

func githubIssueOf(issue *github.Issue) *workflows.Issue {
	return &workflows.Issue{Number: issue.GetNumber(), Title: issue.GetTitle(), URL: issue.GetHTMLURL()}
}

// githubLabels is the label names, nil for none (goldens omit the field).
func githubLabels(ls []*github.Label) []string {
	var names []string
	for _, l := range ls {
		names = append(names, l.GetName())
	}
	return names
}

func githubPush(p *github.PushEvent) (*workflows.Event, error) {
	repo := p.GetRepo()
	if repo == nil {
		return nil, malformed(workflows.GitHub, ghPush, errNoRepository)
	}
	sender := p.GetSender().GetLogin()
	if sender == "" {
		sender = p.GetPusher().GetLogin()
	}
	if sender == "" {
		sender = p.GetPusher().GetName()
	}
	ref := p.GetRef()
	return &workflows.Event{
		Kind:              workflows.KindPush,
		Action:            "pushed",
		InstallationID:    p.GetInstallation().GetID(),
		Repo:              repo.GetFullName(),
		CloneURL:          repo.GetCloneURL(),
		Sender:            sender,
		AuthorAssociation: associationPusher,
		Push: &workflows.Push{
			Ref:    ref,
			Branch: branchOf(ref),
			Before: p.GetBefore(),
			After:  p.GetAfter(),
		},
	}, nil
}

// branchOf is the short branch name of a full ref, "" for anything that is
// not a branch (tags).
func branchOf(ref string) string {
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return b
	}
	return ""
}
