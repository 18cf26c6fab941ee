package hookbody

import (
	"errors"
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Event names (the event header's values, the same in every forge that
// sends these bodies) of the payloads.
const (
	EventPing              = "ping"
	EventPullRequest       = "pull_request"
	EventIssueComment      = "issue_comment"
	EventIssues            = "issues"
	EventPullReviewComment = "pull_request_review_comment"
	EventPullReview        = "pull_request_review"
	EventPush              = "push"
)

// What a payload lacks, wrapped with forge.ErrMalformedPayload.
var (
	ErrNoPullRequest = errors.New("payload has no pull_request")
	ErrNoIssue       = errors.New("payload has no issue")
	ErrNoComment     = errors.New("payload has no comment")
	ErrNoRepository  = errors.New("payload has no repository")
	ErrNoReview      = errors.New("payload has no review")
)

// Base is the event every handled payload starts from: action,
// installation, repository, sender.
func Base(c *Common) *workflows.Event {
	return &workflows.Event{
		Action:         c.Action,
		InstallationID: c.Installation.ID,
		Repo:           c.Repo.FullName,
		CloneURL:       c.Repo.CloneURL,
		Sender:         c.Sender.Login,
	}
}

// PullOf maps a payload's pull request; repo is the payload's
// repository, the base when the pull request does not name it.
func PullOf(pr *Pull, repo *Repository) *workflows.PullRequest {
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

// IssueOf maps a payload's issue.
func IssueOf(issue *Issue) *workflows.Issue {
	return &workflows.Issue{Number: issue.Number, Title: issue.Title, URL: issue.HTMLURL}
}

// PullOfIssue is the pull request an issue comment's issue is, as far as
// the issue tells: whether it comes from a fork it does not say, so it is
// taken for one (the untrusted case).
func PullOfIssue(issue *Issue) *workflows.PullRequest {
	return &workflows.PullRequest{Number: issue.Number, Title: issue.Title, URL: issue.HTMLURL, Fork: true}
}

// Labels is the label names, nil for none (goldens omit the field).
func Labels(ls []*Label) []string {
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

// PushOf maps a push of forge name: COLLABORATOR (pushing needs write
// access), Push.Deleted for a deletion (deleted, or an all-zero after).
func PushOf(name workflows.Forge, p *PushEvent) (*workflows.Event, error) {
	repo := p.Repo
	if repo == nil {
		return nil, forge.Malformed(name, EventPush, ErrNoRepository)
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
		AuthorAssociation: forge.AssociationPusher,
		Push: &workflows.Push{
			Ref:     ref,
			Branch:  BranchOf(ref),
			Before:  p.Before,
			After:   p.After,
			Deleted: p.Deleted || ZeroSHA(p.After),
		},
	}, nil
}

// ZeroSHA reports whether sha is the all-zero object id (SHA-1 or SHA-256)
// the forges send as the after of a push that deletes a branch or tag.
func ZeroSHA(sha string) bool {
	return sha != "" && strings.Trim(sha, "0") == ""
}

// BranchOf is the short branch name of a full ref, "" for anything that is
// not a branch (tags).
func BranchOf(ref string) string {
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return b
	}
	return ""
}
