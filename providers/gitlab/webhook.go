package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/hookbody"
	"github.com/hookrun/hookrun/workflows"
)

// Webhook header names.
const (
	headerEvent          = "X-Gitlab-Event"
	headerToken          = "X-Gitlab-Token"
	headerUUID           = "X-Gitlab-Event-UUID"
	headerIdempotencyKey = "Idempotency-Key"
)

// hookSpec: GitLab's deliveries carry a token, compared by digest in
// constant time (forge.VerifyToken); it has no ping (its test deliveries
// are ordinary events); total_commits_count says whether a push's commits
// are all listed.
var hookSpec = forge.HookSpec{Name: Name, EventHeader: headerEvent, Tokens: true, PushTotal: "total_commits_count",
	EventNames: []string{glMergeRequest, glNote, glIssue, glPush, glTagPush}, Parse: normalizeGitLab}

// DeliveryID is the dedupe key of a GitLab delivery (deliveryKey); it is
// missing only when X-Gitlab-Event is.
func (f *Forge) DeliveryID(h http.Header, body []byte) (string, error) {
	if h.Get(headerEvent) == "" {
		return "", forge.MissingHeader("missing " + headerEvent + " header")
	}
	return deliveryKey(h, body), nil
}

// deliveryKey is the dedupe key of a GitLab delivery: Idempotency-Key
// (stable across GitLab's retries), else X-Gitlab-Event-UUID, else a digest
// of the body.
func deliveryKey(h http.Header, body []byte) string {
	if k := strings.TrimSpace(h.Get(headerIdempotencyKey)); k != "" {
		return k
	}
	if k := strings.TrimSpace(h.Get(headerUUID)); k != "" {
		return k
	}
	sum := sha256.Sum256(body)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// Verify compares X-Gitlab-Token with each configured token
// (forge.VerifyToken).
func (f *Forge) Verify(h http.Header, _ []byte) error {
	return f.Hook.VerifyToken(h.Get(headerToken))
}

// Normalize turns one GitLab webhook body into an Event (normalizeGitLab):
// Forge gitlab, DeliveryID deliveryID, Raw the body (not copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return hookSpec.Normalize(eventName, body, deliveryID)
}

// pushFiles reads a push payload's commits (forge.HookSpec.PushFiles).
func pushFiles(body []byte) ([]string, bool) { return hookSpec.PushFiles(body) }

// GitLab event names (X-Gitlab-Event) that ingress handles. The
// "Confidential Issue Hook" and "Confidential Note Hook" variants are left
// unhandled on purpose: their text must not reach runners by default.
const (
	glMergeRequest = string(gl.EventTypeMergeRequest)
	glNote         = string(gl.EventTypeNote)
	glIssue        = string(gl.EventTypeIssue)
	glPush         = string(gl.EventTypePush)
	glTagPush      = string(gl.EventTypeTagPush)
)

// normalizeGitLab parses a GitLab payload with client-go and maps it onto an
// Event (without Forge, DeliveryID and Raw, which Normalize sets).
//
// GitLab payloads carry no author association, so merge
// request, note and issue events leave here with AuthorAssociation "NONE"
// and the numeric ids the association is looked up with: ProjectID (the
// project the hook belongs to, a merge request's target project) and
// AuthorID (the merge request's author, whose code a run checks out; the
// note's author; the issue's author). Once a workflow matches, the server
// replaces NONE with the member's role from the GitLab API (decide/trust.go). Push
// and tag push events get "COLLABORATOR", since pushing needs at least the
// Developer role. Fork is source_project_id != target_project_id.
func normalizeGitLab(eventName string, body []byte) (*workflows.Event, error) {
	switch eventName {
	case glMergeRequest, glNote, glIssue, glPush, glTagPush:
	default:
		return nil, forge.Unhandled(Name, eventName)
	}
	payload, err := gl.ParseWebhook(gl.EventType(eventName), body)
	if err != nil {
		return nil, forge.Malformed(Name, eventName, err)
	}
	switch p := payload.(type) {
	case *gl.MergeEvent:
		return gitlabMerge(p), nil
	case *gl.MergeCommentEvent:
		return gitlabMergeComment(p), nil
	case *gl.IssueCommentEvent:
		return gitlabIssueComment(p), nil
	case *gl.IssueEvent:
		return gitlabIssue(p), nil
	case *gl.PushEvent:
		return gitlabPush(p.Ref, p.Before, p.After, p.UserUsername, p.Project.PathWithNamespace, p.Project.GitHTTPURL, firstID(p.ProjectID, p.Project.ID)), nil
	case *gl.TagEvent:
		return gitlabPush(p.Ref, p.Before, p.After, p.UserUsername, p.Project.PathWithNamespace, p.Project.GitHTTPURL, firstID(p.ProjectID, p.Project.ID)), nil
	}
	// Notes on commits and snippets.
	return nil, forge.Unhandled(Name, eventName)
}

// gitlabMergeAction maps a merge request hook's action to hookrun's name
// where they mean the same. update becomes synchronize only when commits
// changed (oldrev is set), edited otherwise.
func gitlabMergeAction(action, oldrev string) (normalized string, merged bool) {
	switch action {
	case "open":
		return "opened", false
	case "reopen":
		return "reopened", false
	case "close":
		return "closed", false
	case "merge":
		return "closed", true
	case "update":
		if oldrev != "" {
			return "synchronize", false
		}
		return "edited", false
	}
	// approved, unapproved, approval, unapproval and anything newer pass
	// through as GitLab names them.
	return action, false
}

func gitlabMerge(p *gl.MergeEvent) *workflows.Event {
	oa := p.ObjectAttributes
	action, merged := gitlabMergeAction(oa.Action, oa.OldRev)
	return &workflows.Event{
		Kind:              workflows.KindPullRequest,
		Action:            action,
		Repo:              p.Project.PathWithNamespace,
		CloneURL:          p.Project.GitHTTPURL,
		Sender:            gitlabUser(p.User),
		AuthorAssociation: forge.AssociationNone,
		ProjectID:         firstID(p.Project.ID, oa.TargetProjectID),
		AuthorID:          oa.AuthorID,
		PullRequest: &workflows.PullRequest{
			Number:  int(oa.IID),
			Title:   oa.Title,
			URL:     oa.URL,
			HeadSHA: oa.LastCommit.ID,
			HeadRef: oa.SourceBranch,
			BaseRef: oa.TargetBranch,
			Fork:    oa.SourceProjectID != oa.TargetProjectID,
			Draft:   oa.Draft || oa.WorkInProgress,
			Merged:  merged || oa.State == "merged",
		},
		Labels:    gitlabLabels(p.Labels, oa.Labels),
		UpdatedAt: oa.UpdatedAt,
	}
}

// gitlabNoteAction maps a note's action (create, update; absent on older
// GitLab versions) to hookrun's comment action names.
func gitlabNoteAction(a gl.CommentEventAction) string {
	switch a {
	case "update":
		return "edited"
	case "", "create":
		return "created"
	}
	return string(a)
}

func gitlabMergeComment(p *gl.MergeCommentEvent) *workflows.Event {
	mr, oa := p.MergeRequest, p.ObjectAttributes
	return &workflows.Event{
		Kind:              workflows.KindComment,
		Action:            gitlabNoteAction(oa.Action),
		Repo:              p.Project.PathWithNamespace,
		CloneURL:          p.Project.GitHTTPURL,
		Sender:            gitlabUser(p.User),
		AuthorAssociation: forge.AssociationNone,
		ProjectID:         firstID(p.ProjectID, p.Project.ID, oa.ProjectID),
		AuthorID:          firstID(oa.AuthorID, gitlabUserID(p.User)),
		PullRequest: &workflows.PullRequest{
			Number:  int(mr.IID),
			Title:   mr.Title,
			URL:     mr.URL,
			HeadSHA: mr.LastCommit.ID,
			HeadRef: mr.SourceBranch,
			BaseRef: mr.TargetBranch,
			Fork:    mr.SourceProjectID != mr.TargetProjectID,
			Draft:   mr.WorkInProgress,
			Merged:  mr.State == "merged",
		},
		Comment:   gitlabDiffNote(&workflows.Comment{ID: oa.ID, Body: oa.Note, URL: oa.URL}, oa.Position),
		Labels:    gitlabLabels(mr.Labels),
		UpdatedAt: oa.UpdatedAt,
	}
}

// gitlabDiffNote adds a diff note's place to its comment: the file and line
// in the new version, or in the old one for a note on a removed line.
func gitlabDiffNote(c *workflows.Comment, pos *gl.NotePosition) *workflows.Comment {
	if pos == nil {
		return c
	}
	c.Path, c.Line = pos.NewPath, int(pos.NewLine)
	if pos.NewLine == 0 && pos.OldLine != 0 {
		c.Path, c.Line = pos.OldPath, int(pos.OldLine)
	}
	if c.Path == "" {
		c.Path = pos.OldPath
	}
	return c
}

func gitlabIssueComment(p *gl.IssueCommentEvent) *workflows.Event {
	oa := p.ObjectAttributes
	sender, userID := "", int64(0)
	if p.User != nil {
		sender, userID = p.User.Username, p.User.ID
	}
	return &workflows.Event{
		Kind:              workflows.KindComment,
		Action:            gitlabNoteAction(oa.Action),
		Repo:              p.Project.PathWithNamespace,
		CloneURL:          p.Project.GitHTTPURL,
		Sender:            sender,
		AuthorAssociation: forge.AssociationNone,
		ProjectID:         firstID(p.ProjectID, oa.ProjectID),
		AuthorID:          firstID(oa.AuthorID, userID),
		Issue:             &workflows.Issue{Number: int(p.Issue.IID), Title: p.Issue.Title, URL: p.Issue.URL},
		Comment:           &workflows.Comment{ID: oa.ID, Body: oa.Note, URL: oa.URL},
		Labels:            gitlabLabels(p.Issue.Labels),
		UpdatedAt:         oa.UpdatedAt,
	}
}

// gitlabIssueAction maps an issue hook's action to hookrun's name.
func gitlabIssueAction(action string) string {
	switch action {
	case "open":
		return "opened"
	case "close":
		return "closed"
	case "reopen":
		return "reopened"
	case "update":
		return "edited"
	}
	return action
}

func gitlabIssue(p *gl.IssueEvent) *workflows.Event {
	oa := p.ObjectAttributes
	return &workflows.Event{
		Kind:              workflows.KindIssue,
		Action:            gitlabIssueAction(oa.Action),
		Repo:              p.Project.PathWithNamespace,
		CloneURL:          p.Project.GitHTTPURL,
		Sender:            gitlabUser(p.User),
		AuthorAssociation: forge.AssociationNone,
		ProjectID:         firstID(p.Project.ID, oa.ProjectID),
		AuthorID:          oa.AuthorID,
		Issue:             &workflows.Issue{Number: int(oa.IID), Title: oa.Title, URL: oa.URL},
		Labels:            gitlabLabels(p.Labels, oa.Labels),
		UpdatedAt:         oa.UpdatedAt,
	}
}

func gitlabPush(ref, before, after, user, repo, cloneURL string, projectID int64) *workflows.Event {
	return &workflows.Event{
		Kind:              workflows.KindPush,
		Action:            "pushed",
		Repo:              repo,
		CloneURL:          cloneURL,
		ProjectID:         projectID,
		Sender:            user,
		AuthorAssociation: forge.AssociationPusher,
		Push: &workflows.Push{
			Ref:     ref,
			Branch:  hookbody.BranchOf(ref),
			Before:  before,
			After:   after,
			Deleted: hookbody.ZeroSHA(after), // GitLab says a deletion only so
		},
	}
}

func gitlabUser(u *gl.EventUser) string {
	if u == nil {
		return ""
	}
	return u.Username
}

func gitlabUserID(u *gl.EventUser) int64 {
	if u == nil {
		return 0
	}
	return u.ID
}

// firstID is the first non-zero id.
func firstID(ids ...int64) int64 {
	for _, id := range ids {
		if id != 0 {
			return id
		}
	}
	return 0
}

// gitlabLabels returns the titles of the first non-empty label list.
func gitlabLabels(lists ...[]*gl.EventLabel) []string {
	for _, list := range lists {
		if len(list) == 0 {
			continue
		}
		out := make([]string, 0, len(list))
		for _, l := range list {
			if l != nil {
				out = append(out, l.Title)
			}
		}
		return out
	}
	return nil
}
