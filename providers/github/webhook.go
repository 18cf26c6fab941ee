package github

import (
	"net/http"
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/hookbody"
	"github.com/hookrun/hookrun/workflows"
)

// Webhook header names.
const (
	headerEvent     = "X-GitHub-Event"
	headerDelivery  = "X-GitHub-Delivery"
	headerSignature = "X-Hub-Signature-256"
)

// hookSpec: GitHub signs its deliveries and pings; its push payloads do
// not count their commits.
var hookSpec = forge.HookSpec{Name: Name, EventHeader: headerEvent, PingEvent: ghPing,
	EventNames: []string{ghPing, ghPullRequest, ghIssueComment, ghIssues, ghPush}, Parse: normalizeGitHub}

// DeliveryID is X-GitHub-Delivery.
func (f *Forge) DeliveryID(h http.Header, _ []byte) (string, error) {
	return f.Hook.HeaderDeliveryID(h, headerDelivery)
}

// Verify checks X-Hub-Signature-256 ("sha256=<hex>") against the
// HMAC-SHA256 of body under each secret (forge.VerifyHMAC). Only SHA-256
// signatures are accepted; the legacy SHA-1 X-Hub-Signature is ignored.
func (f *Forge) Verify(h http.Header, body []byte) error {
	return f.Hook.VerifySignature(signatureHex(h.Get(headerSignature)), body)
}

// signatureHex is the hex signature of an X-Hub-Signature-256 header; ""
// (which matches nothing) without its "sha256=" prefix.
func signatureHex(header string) string {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ""
	}
	return hexSig
}

// Normalize turns one GitHub webhook body into an Event (normalizeGitHub):
// Forge github, DeliveryID deliveryID, Raw the body (not copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return hookSpec.Normalize(eventName, body, deliveryID)
}

// GitHub event names (X-GitHub-Event) that ingress handles.
const (
	ghPing              = hookbody.EventPing
	ghPullRequest       = hookbody.EventPullRequest
	ghIssueComment      = hookbody.EventIssueComment
	ghIssues            = hookbody.EventIssues
	ghPullReviewComment = hookbody.EventPullReviewComment
	ghPullReview        = hookbody.EventPullReview
	ghPush              = hookbody.EventPush
	ghCheckRun          = "check_run"   // rerequested only (rerequest.go)
	ghCheckSuite        = "check_suite" // rerequested only
)

// normalizeGitHub decodes a GitHub payload (hookbody) and maps it onto an
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
//     empty here; the server pins it once a workflow matched (decide/trust.go).
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
//   - check_run and check_suite rerequested (rerequest.go): KindRerequest,
//     the sender's role looked up by Author.
func normalizeGitHub(eventName string, body []byte) (*workflows.Event, error) {
	payload, err := projections.Decode(Name, eventName, body)
	if err != nil {
		return nil, err
	}
	// What each kind's payload must have is hookbody's (Lacks).
	if l, ok := payload.(interface{ Lacks() error }); ok {
		if err := l.Lacks(); err != nil {
			return nil, forge.Malformed(Name, eventName, err)
		}
	}
	switch p := payload.(type) {
	case *hookbody.PullRequestEvent:
		return githubPullRequest(p)
	case *hookbody.IssueCommentEvent:
		return githubIssueComment(p)
	case *hookbody.ReviewCommentEvent:
		return githubReviewComment(p)
	case *hookbody.ReviewEvent:
		return githubReview(p)
	case *hookbody.IssuesEvent:
		return githubIssues(p)
	case *hookbody.PushEvent:
		return hookbody.PushOf(Name, p)
	case *checkRunEvent:
		return githubCheckRun(p)
	case *checkSuiteEvent:
		return githubCheckSuite(p)
	}
	return nil, forge.Unhandled(Name, eventName)
}

func githubPullRequest(p *hookbody.PullRequestEvent) (*workflows.Event, error) {
	pr := p.PullRequest
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindPullRequest
	ev.AuthorAssociation = pr.AuthorAssociation
	ev.PullRequest = hookbody.PullOf(pr, p.Repo)
	if ev.PullRequest.Number == 0 {
		ev.PullRequest.Number = p.Number
	}
	ev.Labels = hookbody.Labels(pr.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(p.RequestedReviewer, p.RequestedTeam), pr.UpdatedAt.String()
	return ev, nil
}

func githubReviewComment(p *hookbody.ReviewCommentEvent) (*workflows.Event, error) {
	comment := p.Comment
	line := comment.Line
	if line == 0 {
		line = comment.OriginalLine
	}
	return pullComment(&p.Common, p.PullRequest, comment.AuthorAssociation, comment.UpdatedAt,
		&workflows.Comment{ID: comment.ID, Body: comment.Body, URL: comment.HTMLURL, Path: comment.Path, Line: line}), nil
}

// reviewActions maps pull_request_review actions onto comment actions.
var reviewActions = map[string]string{"submitted": "created", "edited": "edited", "dismissed": "deleted"}

func githubReview(p *hookbody.ReviewEvent) (*workflows.Event, error) {
	review := p.Review
	ev := pullComment(&p.Common, p.PullRequest, review.AuthorAssociation, review.SubmittedAt,
		&workflows.Comment{ID: review.ID, Body: review.Body, URL: review.HTMLURL})
	if a, ok := reviewActions[p.Action]; ok {
		ev.Action = a
	}
	return ev, nil
}

// pullComment is the comment event of comment on pr (a review or a review
// comment), written by someone with the association assoc, changed last
// at updated.
func pullComment(c *hookbody.Common, pr *hookbody.Pull, assoc string, updated hookbody.Time, comment *workflows.Comment) *workflows.Event {
	ev := hookbody.Base(c)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation = assoc
	ev.PullRequest = hookbody.PullOf(pr, c.Repo)
	ev.Comment = comment
	ev.Labels = hookbody.Labels(pr.Labels)
	ev.UpdatedAt = updated.String()
	return ev
}

func githubIssueComment(p *hookbody.IssueCommentEvent) (*workflows.Event, error) {
	issue, comment := p.Issue, p.Comment
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindComment
	ev.AuthorAssociation = comment.AuthorAssociation
	ev.Comment = &workflows.Comment{
		ID:   comment.ID,
		Body: comment.Body,
		URL:  comment.HTMLURL,
	}
	ev.UpdatedAt = comment.UpdatedAt.String()
	if issue.PullRequestLinks != nil {
		ev.PullRequest = hookbody.PullOfIssue(issue)
	} else {
		ev.Issue = hookbody.IssueOf(issue)
	}
	ev.Labels = hookbody.Labels(issue.Labels)
	return ev, nil
}

func githubIssues(p *hookbody.IssuesEvent) (*workflows.Event, error) {
	issue := p.Issue
	ev := hookbody.Base(&p.Common)
	ev.Kind = workflows.KindIssue
	ev.AuthorAssociation = issue.AuthorAssociation
	ev.Issue = hookbody.IssueOf(issue)
	ev.Labels = hookbody.Labels(issue.Labels)
	ev.Label, ev.Target, ev.UpdatedAt = p.LabelName(), p.TargetName(nil, nil), issue.UpdatedAt.String()
	return ev, nil
}

// projections are what each GitHub event the forge handles decodes into:
// one of the hookbody...Event types; another event is unhandled.
var projections = hookbody.Projections{
	ghPullRequest:       hookbody.New[hookbody.PullRequestEvent],
	ghIssueComment:      hookbody.New[hookbody.IssueCommentEvent],
	ghPullReviewComment: hookbody.New[hookbody.ReviewCommentEvent],
	ghPullReview:        hookbody.New[hookbody.ReviewEvent],
	ghIssues:            hookbody.New[hookbody.IssuesEvent],
	ghPush:              hookbody.New[hookbody.PushEvent],
	ghCheckRun:          hookbody.New[checkRunEvent],
	ghCheckSuite:        hookbody.New[checkSuiteEvent],
}
