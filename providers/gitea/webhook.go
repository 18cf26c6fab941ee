package gitea

import (
	"net/http"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/hookbody"
	"github.com/hookrun/hookrun/workflows"
)

// Webhook header names. Gitea and Forgejo also send the headers of the
// forge their API is modeled on; their own are the ones read.
const (
	headerEvent     = "X-Gitea-Event"
	headerDelivery  = "X-Gitea-Delivery"
	headerSignature = "X-Gitea-Signature"
)

// hookSpec: Gitea signs its deliveries; it has no ping (its test delivery
// is a push); total_commits says whether a push's commits are all listed.
var hookSpec = forge.HookSpec{Name: Name, EventHeader: headerEvent, PushTotal: "total_commits",
	EventNames: []string{hookbody.EventPullRequest, hookbody.EventIssueComment, hookbody.EventIssues, hookbody.EventPush, gtReviewApproved, gtReviewRejected, gtReviewComment},
	Parse:      normalizeGitea}

// DeliveryID is X-Gitea-Delivery.
func (f *Forge) DeliveryID(h http.Header, _ []byte) (string, error) {
	return f.Hook.HeaderDeliveryID(h, headerDelivery)
}

// Verify checks X-Gitea-Signature (Gitea's and Forgejo's: the hex
// HMAC-SHA256 of body, without a "sha256=" prefix) against each
// secret (forge.VerifyHMAC).
func (f *Forge) Verify(h http.Header, body []byte) error {
	return f.Hook.VerifySignature(h.Get(headerSignature), body)
}

// Normalize maps a Gitea delivery onto an Event (forge.Webhooks) without
// reading or writing the label memory: a label_updated is labeled with
// LabelActionUnknown until RecallLabels tells which label changed.
func (f *Forge) Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return Normalize(eventName, body, deliveryID)
}

// Normalize turns one Gitea (or Forgejo) webhook body into an Event
// (normalizeGitea): Forge gitea, DeliveryID deliveryID, Raw the body (not
// copied). A label_updated is labeled with LabelActionUnknown: which label
// changed takes the labels seen before (Forge.RecallLabels).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	ev, err := normalizeGitea(eventName, body)
	if err == nil {
		labelChange(ev, nil, false)
	}
	return forge.Delivered(Name, ev, err, deliveryID, body)
}

// giteaActions maps Gitea's actions onto hookrun's names (workflows.Actions) where
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

// normalizeGitea maps a Gitea or Forgejo payload (payload.go) onto an
// Event (without Forge, DeliveryID and Raw, which Normalize sets).
//
//   - pull_request: actions through giteaActions (label_updated is labeled
//     here: Gitea sends the labels after the change, not which one was
//     added or removed; Forge.RecallLabels then tells which from the labels
//     seen before); head, refs, Fork (head.repo != base.repo) as hookbody
//     maps them; Author is the pull request's author.
//   - issue_comment on a pull request: the delivery's top-level
//     pull_request gives head SHA, refs and Fork, so such a comment needs
//     no pinning; without it (an older server) Fork is true and the head is
//     pinned as for any comment without a head. Author is the commenter.
//   - pull_request_approved, pull_request_rejected, pull_request_comment
//     (a review, or a comment on a line of the diff): comment events on
//     the pull request, action created, with the review's text as the
//     comment's body (it has no id); Author is the sender, the reviewer.
//   - issues: the issue's author.
//   - push: COLLABORATOR, as on the other forges.
//
// Gitea payloads carry no author_association: every event but a push is
// NONE until ingress asks the API for Author's permission (decide/trust.go).
func normalizeGitea(eventName string, body []byte) (*workflows.Event, error) {
	payload, err := projections.Decode(Name, eventName, body)
	if err != nil {
		return nil, err
	}
	if err := giteaLacks(eventName, payload); err != nil {
		return nil, forge.Malformed(Name, eventName, err)
	}
	var ev *workflows.Event
	switch p := payload.(type) {
	case *gtPullRequestEvent:
		if eventName == hookbody.EventPullRequest {
			ev, err = giteaPullRequest(p)
		} else {
			ev, err = giteaReview(eventName, p)
		}
	case *gtIssueCommentEvent:
		ev, err = giteaIssueComment(p)
	case *gtIssuesEvent:
		ev, err = giteaIssues(p)
	case *hookbody.PushEvent:
		return hookbody.PushOf(Name, p)
	}
	if err != nil {
		return nil, err
	}
	ev.Action = giteaAction(ev.Action)
	return ev, nil
}

// giteaLacks is the first part payload (decoded for eventName) must have
// and lacks, nil for none: every kind needs its repository.
func giteaLacks(eventName string, payload any) error {
	need := func(missing bool, err error) hookbody.Need { return hookbody.Need{Missing: missing, Err: err} }
	switch p := payload.(type) {
	case *gtPullRequestEvent:
		review := eventName != hookbody.EventPullRequest
		return hookbody.FirstLacking(need(p.PullRequest == nil, hookbody.ErrNoPullRequest),
			need(review && p.Review == nil, hookbody.ErrNoReview), need(p.Repo == nil, hookbody.ErrNoRepository))
	case *gtIssueCommentEvent:
		return hookbody.FirstLacking(need(p.Issue == nil, hookbody.ErrNoIssue),
			need(p.Comment == nil, hookbody.ErrNoComment), need(p.Repo == nil, hookbody.ErrNoRepository))
	case *gtIssuesEvent:
		return hookbody.FirstLacking(need(p.Issue == nil, hookbody.ErrNoIssue), need(p.Repo == nil, hookbody.ErrNoRepository))
	case *hookbody.PushEvent:
		return hookbody.FirstLacking(need(p.Repo == nil, hookbody.ErrNoRepository))
	}
	return nil
}

func giteaPullRequest(p *gtPullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, pr.User.Login
	ev.PullRequest = hookbody.PullOf(&pr.Pull, p.Repo)
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.Number
	}
	ev.Labels = hookbody.Labels(pr.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(nil, nil), pr.UpdatedAt.String()
	return ev, nil
}

func giteaReview(eventName string, p *gtPullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.Action = "created" // Gitea says "reviewed"; a review is never edited in place
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, p.Sender.Login
	ev.PullRequest = hookbody.PullOf(&pr.Pull, p.Repo)
	ev.Comment = &workflows.Comment{Body: p.Review.Content, URL: pr.HTMLURL}
	ev.Labels = hookbody.Labels(pr.Labels)
	ev.UpdatedAt = pr.UpdatedAt.String() // a review delivery has no time of its own
	return ev, nil
}

func giteaIssueComment(p *gtIssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.Issue, p.Comment
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, comment.User.Login
	ev.Comment = &workflows.Comment{ID: comment.ID, Body: comment.Body, URL: comment.HTMLURL}
	ev.UpdatedAt = comment.UpdatedAt.String()
	switch {
	case p.PullRequest != nil:
		ev.PullRequest = hookbody.PullOf(&p.PullRequest.Pull, p.Repo)
		if ev.PullRequest.Number == 0 {
			ev.PullRequest.Number = issue.Number
		}
	case p.IsPull || issue.PullRequestLinks != nil:
		ev.PullRequest = hookbody.PullOfIssue(&issue.Issue)
	default:
		ev.Issue = hookbody.IssueOf(&issue.Issue)
	}
	ev.Labels = hookbody.Labels(issue.Labels)
	return ev, nil
}

func giteaIssues(p *gtIssuesEvent) (*workflows.Event, error) {
	issue := p.Issue
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation, ev.Author = forge.AssociationNone, issue.User.Login
	ev.Issue = hookbody.IssueOf(&issue.Issue)
	ev.Labels = hookbody.Labels(issue.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(nil, nil), issue.UpdatedAt.String()
	return ev, nil
}
