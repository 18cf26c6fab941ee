package workflows

import (
	"encoding/json"
	"strconv"
)

// Forge names where an event came from.
type Forge string

// Known forges.
const (
	GitHub Forge = "github"
	GitLab Forge = "gitlab"
	// Gitea is a Gitea or Forgejo server (Codeberg runs Forgejo): both send
	// the same webhooks and answer the same API.
	Gitea Forge = "gitea"
)

// Kind is the normalized kind of an event. Forge-specific event names
// (GitHub "issue_comment", GitLab "Note Hook", ...) are mapped to one of these
// by ingress.
type Kind string

// Known event kinds.
const (
	KindPullRequest Kind = "pull_request" // a pull request (GitHub) or merge request (GitLab) changed
	KindComment     Kind = "comment"      // a comment on a pull/merge request or an issue
	KindIssue       Kind = "issue"        // an issue changed
	KindPush        Kind = "push"         // commits were pushed to a branch
	KindChat        Kind = "chat"         // a chat command (a Slack slash command) names a workflow's command
)

// Kinds lists every known kind, in documentation order.
var Kinds = []Kind{KindPullRequest, KindComment, KindIssue, KindPush, KindChat}

// Forges lists the forges a chat trigger's repository may live on, in
// documentation order.
var Forges = []Forge{GitHub, GitLab}

// Actions lists the normalized actions each kind may carry. GitLab actions are
// mapped to the GitHub names where they mean the same (open → opened,
// update → synchronize, reopen → reopened, close → closed, merge → closed with
// Merged set).
var Actions = map[Kind][]string{
	KindPullRequest: {"opened", "synchronize", "reopened", "closed", "edited", "labeled", "unlabeled",
		"ready_for_review", "converted_to_draft", "assigned", "unassigned", "review_requested",
		"review_request_removed", "locked", "unlocked", "approved", "unapproved", "merged"},
	KindComment: {"created", "edited", "deleted"},
	KindIssue: {"opened", "edited", "deleted", "closed", "reopened", "labeled", "unlabeled",
		"assigned", "unassigned", "transferred", "pinned", "unpinned", "locked", "unlocked", "milestoned", "demilestoned"},
	KindPush: {"pushed"},
	KindChat: {"command"},
}

// Event is a forge event after normalization. Forge payload types never travel
// past ingress; this is what matching, authorization, the queue and the runner
// see. Every field is plain data so that it can be serialized into a run
// request and used in `if:` expressions as `event.<Field>`.
type Event struct {
	// Forge is where the event came from, github | gitlab | gitea; for a chat
	// event, the forge of the repository the matched trigger's repo: names
	// (empty until a trigger matched).
	Forge          Forge  `json:"forge"`
	Kind           Kind   `json:"kind"`                      // pull_request | comment | issue | push | chat
	Action         string `json:"action"`                    // normalized action, e.g. opened, synchronize, created
	DeliveryID     string `json:"delivery_id"`               // X-GitHub-Delivery, or the GitLab dedupe key
	InstallationID int64  `json:"installation_id,omitempty"` // GitHub App installation, 0 otherwise

	Repo     string `json:"repo"`      // owner/name (GitHub) or group/.../project (GitLab)
	CloneURL string `json:"clone_url"` // HTTPS clone URL of the base repository

	Sender            string `json:"sender"`                       // login of whoever caused the event
	AuthorAssociation string `json:"author_association,omitempty"` // OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIMER, FIRST_TIME_CONTRIBUTOR, MANNEQUIN, NONE

	// ProjectID is GitLab's numeric id of the project the event belongs to
	// (a merge request's target project); 0 for GitHub. Ingress asks the
	// GitLab API for AuthorID's membership in it.
	ProjectID int64 `json:"project_id,omitempty"`
	// AuthorID is GitLab's numeric id of the user AuthorAssociation is
	// about: a merge request's author (the code is theirs), a note's
	// author, an issue's author; 0 for GitHub and for pushes.
	AuthorID int64 `json:"author_id,omitempty"`
	// Author is the login AuthorAssociation is about where the forge's
	// payload carries no association and ingress asks the API by login
	// (Gitea): a pull request's author (the code is theirs), a comment's
	// or review's author, an issue's author; "" otherwise.
	Author string `json:"author,omitempty"`

	PullRequest *PullRequest `json:"pull_request,omitempty"` // set for pull_request events and comments on pull/merge requests
	Issue       *Issue       `json:"issue,omitempty"`        // set for issue events and comments on issues
	Comment     *Comment     `json:"comment,omitempty"`      // set for comment events
	Push        *Push        `json:"push,omitempty"`         // set for push events
	Chat        *Chat        `json:"chat,omitempty"`         // set for chat events

	// Files are the files the pull request or push changes, for triggers
	// with paths: ingress looks them up (ChangedFilesLookup, the push
	// payload) only when a loaded workflow has such a trigger for the
	// event; nil otherwise.
	Files *ChangedFiles `json:"files,omitempty"`

	Labels []string `json:"labels,omitempty"` // labels of the pull/merge request or issue
	// Label is the label a labeled or unlabeled event added or removed
	// (GitHub, Gitea); "" otherwise.
	Label string `json:"label,omitempty"`
	// Target is who an assigned, unassigned, review_requested or
	// review_request_removed event was about (a login; "team:<slug>" for a
	// team), one event each (GitHub); "" otherwise.
	Target string `json:"target,omitempty"`
	// UpdatedAt is when the forge last changed the object the event is
	// about, as RFC 3339 in UTC where the forge's format parses (GitLab's
	// "2006-01-02 15:04:05 UTC" is kept as sent): the comment's for a
	// comment (a review's submission for a review), else the pull/merge
	// request's or the issue's; "" for pushes and where the forge sends
	// none. With the other fields it tells a new event about an object
	// from a re-sent one (ingress's object dedupe).
	UpdatedAt   string `json:"updated_at,omitempty"`
	CommandArgs string `json:"command_args,omitempty"` // filled per matched trigger: the rest of the command line

	// Raw is the payload exactly as received; steps see it through
	// HOOKRUN_EVENT_PATH. It is not part of golden files.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// PullRequest is a GitHub pull request or a GitLab merge request.
type PullRequest struct {
	Number  int    `json:"number"`             // PR number (GitHub) or MR iid (GitLab)
	Title   string `json:"title"`              // untrusted text
	URL     string `json:"url,omitempty"`      // web URL
	HeadSHA string `json:"head_sha,omitempty"` // for a comment, the head ingress pinned when it accepted the comment (see Head); empty only in a run request that is Refused
	HeadRef string `json:"head_ref,omitempty"` // source branch
	BaseRef string `json:"base_ref,omitempty"` // target branch
	Fork    bool   `json:"fork"`               // head lives in another repository
	Draft   bool   `json:"draft,omitempty"`
	Merged  bool   `json:"merged,omitempty"`
}

// Issue is an issue on either forge.
type Issue struct {
	Number int    `json:"number"` // issue number (GitHub) or iid (GitLab)
	Title  string `json:"title"`  // untrusted text
	URL    string `json:"url,omitempty"`
}

// Comment is a comment on a pull/merge request or an issue.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"` // untrusted text
	URL  string `json:"url,omitempty"`
	// Path and Line place a comment on a line of a pull/merge request's
	// diff (a GitHub review comment, a GitLab diff note): the file, as the
	// diff names it (untrusted text), and its line in the new version (the
	// old one for a comment on a removed line); empty and 0 otherwise.
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
}

// ChangedFiles is what ingress learnt of the files a pull request or push
// changes. The list itself stays in ingress (thousands of paths); a run
// carries only whether it was complete.
type ChangedFiles struct {
	Paths []string `json:"-"` // repository-relative, as the forge names them
	// Truncated: the forge lists no more (GitHub stops at 3,000 files of a
	// pull request): a trigger with paths matches, and the run's comment
	// says the list was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Unknown says why the files could not be learnt (the API failed or
	// is not configured): a trigger with paths matches rather than
	// silently skipping a check.
	Unknown string `json:"unknown,omitempty"`
}

// Push is a push to a branch or tag.
type Push struct {
	Ref    string `json:"ref"`    // full ref, refs/heads/main
	Branch string `json:"branch"` // short branch name, empty for tags
	Before string `json:"before"` // SHA before the push
	After  string `json:"after"`  // SHA after the push (the head to check out); all zeros when Deleted
	// Deleted says the push deleted the branch or tag: there is no commit
	// to check out or report on. Only a trigger with `deleted: true`
	// matches such a push.
	Deleted bool `json:"deleted,omitempty"`
}

// Chat is a chat command: who typed what where, and where the answer goes.
// Every field is untrusted text from the chat platform, signed by it.
type Chat struct {
	Platform    string `json:"platform"`     // "slack"
	TeamID      string `json:"team_id"`      // the Slack workspace
	UserID      string `json:"user_id"`      // U…; what authorize.slack_users lists
	UserName    string `json:"user_name"`    // display only: a user may rename themselves
	ChannelID   string `json:"channel_id"`   // C…, D… (direct message) or G…; what authorize.slack_channels lists
	ChannelName string `json:"channel_name"` // display only
	Command     string `json:"command"`      // the slash command, e.g. /hookrun
	Text        string `json:"text"`         // everything after the slash command, e.g. "deploy staging"
	// ResponseURL is where the run's result is posted: Slack's
	// https://hooks.slack.com/... URL for this command. Only a URL under
	// the server's allowed prefix is ever posted to (ResponseURLAllowed).
	ResponseURL string `json:"response_url"`
	TriggerID   string `json:"trigger_id,omitempty"`
}

// ChatSlack is Chat.Platform of a Slack slash command.
const ChatSlack = "slack"

// Number is the pull/merge request number, else the issue number, else 0.
func (e *Event) Number() int {
	switch {
	case e.PullRequest != nil:
		return e.PullRequest.Number
	case e.Issue != nil:
		return e.Issue.Number
	}
	return 0
}

// Title is the pull/merge request title, else the issue title.
func (e *Event) Title() string {
	switch {
	case e.PullRequest != nil:
		return e.PullRequest.Title
	case e.Issue != nil:
		return e.Issue.Title
	}
	return ""
}

// HeadSHA is the commit a run checks out and reports a status on: the pull
// request head, or the pushed SHA. It is empty for issues, for a push that
// deleted its branch, and for a comment on a pull request whose head
// ingress could not pin.
func (e *Event) HeadSHA() string {
	switch {
	case e.PullRequest != nil:
		return e.PullRequest.HeadSHA
	case e.Push != nil && !e.Push.Deleted:
		return e.Push.After
	}
	return ""
}

// HeadRef is the pull request's source branch or the pushed branch.
func (e *Event) HeadRef() string {
	switch {
	case e.PullRequest != nil:
		return e.PullRequest.HeadRef
	case e.Push != nil:
		return e.Push.Branch
	}
	return ""
}

// BaseRef is the branch triggers filter on with `branches`: the pull request's
// target branch, or the pushed branch.
func (e *Event) BaseRef() string {
	switch {
	case e.PullRequest != nil:
		return e.PullRequest.BaseRef
	case e.Push != nil:
		return e.Push.Branch
	}
	return ""
}

// CommentBody is the comment text, or "".
func (e *Event) CommentBody() string {
	if e.Comment != nil {
		return e.Comment.Body
	}
	return ""
}

// Env returns the HOOKRUN_* variables that describe the event to a step
// (DESIGN.md §3). Event text reaches steps only this way, never as shell
// source. Run-scoped variables (HOOKRUN_RUN_ID, HOOKRUN_WORKSPACE, ...) are
// added by the runner.
func (e *Event) Env() []EnvVar {
	env := []EnvVar{
		{"HOOKRUN_FORGE", string(e.Forge)},
		{"HOOKRUN_EVENT", string(e.Kind)},
		{"HOOKRUN_ACTION", e.Action},
		{"HOOKRUN_DELIVERY", e.DeliveryID},
		{"HOOKRUN_REPO", e.Repo},
		{"HOOKRUN_REPO_URL", e.CloneURL},
		{"HOOKRUN_SENDER", e.Sender},
		{"HOOKRUN_HEAD_SHA", e.HeadSHA()},
		{"HOOKRUN_HEAD_REF", e.HeadRef()},
		{"HOOKRUN_BASE_REF", e.BaseRef()},
		{"HOOKRUN_COMMENT_BODY", e.CommentBody()},
		{"HOOKRUN_COMMAND_ARGS", e.CommandArgs},
	}
	if c := e.Comment; c != nil && c.Path != "" {
		env = append(env, EnvVar{"HOOKRUN_COMMENT_PATH", c.Path})
		if c.Line > 0 {
			env = append(env, EnvVar{"HOOKRUN_COMMENT_LINE", strconv.Itoa(c.Line)})
		}
	}
	if c := e.Chat; c != nil {
		env = append(env,
			EnvVar{"HOOKRUN_CHAT_PLATFORM", c.Platform},
			EnvVar{"HOOKRUN_CHAT_USER_ID", c.UserID},
			EnvVar{"HOOKRUN_CHAT_USER_NAME", c.UserName},
			EnvVar{"HOOKRUN_CHAT_CHANNEL_ID", c.ChannelID},
			EnvVar{"HOOKRUN_CHAT_CHANNEL_NAME", c.ChannelName},
			EnvVar{"HOOKRUN_CHAT_TEXT", c.Text})
	}
	if e.PullRequest != nil {
		env = append(env,
			EnvVar{"HOOKRUN_PR_NUMBER", strconv.Itoa(e.PullRequest.Number)},
			EnvVar{"HOOKRUN_PR_TITLE", e.PullRequest.Title})
	}
	if e.Issue != nil {
		env = append(env,
			EnvVar{"HOOKRUN_ISSUE_NUMBER", strconv.Itoa(e.Issue.Number)},
			EnvVar{"HOOKRUN_ISSUE_TITLE", e.Issue.Title})
	}
	return env
}

// IsCommitID reports whether s is a full commit id: 40 (SHA-1) or 64
// (SHA-256) hex digits.
func IsCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
