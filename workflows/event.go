package workflows

import (
	"encoding/json"
	"strconv"
)

// Forge names where an event came from: the name a forge's package
// (providers/<forge>) registers under. The workflow format names no forge
// itself; chat triggers' forge: values are the registered chat forges
// (RegisterChatForge).
type Forge string

// Kind is the normalized kind of an event. Each forge's own event names
// (its comment hook, its merge request hook, ...) are mapped to one of these
// by its normalizer.
type Kind string

// Known event kinds.
const (
	KindPullRequest Kind = "pull_request" // a pull or merge request changed
	KindComment     Kind = "comment"      // a comment on a pull/merge request or an issue
	KindIssue       Kind = "issue"        // an issue changed
	KindPush        Kind = "push"         // commits were pushed to a branch
	KindChat        Kind = "chat"         // a chat command (a Slack slash command) names a workflow's command
	KindSchedule    Kind = "schedule"     // a workflow's schedule fired (schedule.go)
)

// KindRerequest is a forge's request to run again the failed runs it
// names (a forge's "Re-run" button on a check run or a check suite;
// Event.Rerequest says which). It is not a trigger kind (not in Kinds): no
// workflow matches it; ingress re-runs the failed runs as a /retry comment
// does, authorized by the requester's role.
const KindRerequest Kind = "rerequest"

// Kinds lists every known kind, in documentation order.
var Kinds = []Kind{KindPullRequest, KindComment, KindIssue, KindPush, KindChat, KindSchedule}

// Actions lists the normalized actions each kind may carry. A forge whose
// actions are named otherwise maps them to these where they mean the same
// (open → opened, update → synchronize, reopen → reopened, close → closed,
// merge → closed with Merged set).
var Actions = map[Kind][]string{
	KindPullRequest: {"opened", "synchronize", "reopened", "closed", "edited", "labeled", "unlabeled",
		"ready_for_review", "converted_to_draft", "assigned", "unassigned", "review_requested",
		"review_request_removed", "locked", "unlocked", "approved", "unapproved", "merged"},
	KindComment: {"created", "edited", "deleted"},
	KindIssue: {"opened", "edited", "deleted", "closed", "reopened", "labeled", "unlabeled",
		"assigned", "unassigned", "transferred", "pinned", "unpinned", "locked", "unlocked", "milestoned", "demilestoned"},
	KindPush:     {"pushed"},
	KindChat:     {"command"},
	KindSchedule: {ActionTick},
}

// Event is a forge event after normalization. Forge payload types never travel
// past ingress; this is what matching, authorization, the queue and the runner
// see. Every field is plain data so that it can be serialized into a run
// request and used in `if:` expressions as `event.<Field>`.
type Event struct {
	// Forge is where the event came from (a registered forge's name); for a chat
	// event, the forge of the repository the matched trigger's repo: names
	// (empty until a trigger matched); for a schedule, its trigger's.
	Forge          Forge  `json:"forge"`
	Kind           Kind   `json:"kind"`                      // pull_request | comment | issue | push | chat | schedule
	Action         string `json:"action"`                    // normalized action, e.g. opened, synchronize, created
	DeliveryID     string `json:"delivery_id"`               // the forge's delivery id, or its dedupe key
	InstallationID int64  `json:"installation_id,omitempty"` // the forge's app installation, 0 otherwise

	Repo     string `json:"repo"`      // owner/name, or group/.../project where the forge nests groups
	CloneURL string `json:"clone_url"` // HTTPS clone URL of the base repository

	Sender            string `json:"sender"`                       // login of whoever caused the event
	AuthorAssociation string `json:"author_association,omitempty"` // OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIMER, FIRST_TIME_CONTRIBUTOR, MANNEQUIN, NONE

	// ProjectID is the forge's numeric id of the project the event belongs
	// to (a merge request's target project), for a forge whose API is asked
	// by id (AuthorID's membership in it); 0 otherwise.
	ProjectID int64 `json:"project_id,omitempty"`
	// AuthorID is the forge's numeric id of the user AuthorAssociation is
	// about, where its API is asked by id: a merge request's author (the
	// code is theirs), a note's author, an issue's author; 0 otherwise and
	// for pushes.
	AuthorID int64 `json:"author_id,omitempty"`
	// Author is the login AuthorAssociation is about where the forge's
	// payload carries no association and ingress asks the API by login:
	// a pull request's author (the code is theirs), a comment's
	// or review's author, an issue's author; "" otherwise.
	Author string `json:"author,omitempty"`

	PullRequest *PullRequest  `json:"pull_request,omitempty"` // set for pull_request events and comments on pull/merge requests
	Issue       *Issue        `json:"issue,omitempty"`        // set for issue events and comments on issues
	Comment     *Comment      `json:"comment,omitempty"`      // set for comment events
	Push        *Push         `json:"push,omitempty"`         // set for push events
	Chat        *Chat         `json:"chat,omitempty"`         // set for chat events
	Rerequest   *Rerequest    `json:"rerequest,omitempty"`    // set for rerequest events
	Schedule    *ScheduleTick `json:"schedule,omitempty"`     // set for schedule events

	// Files are the files the pull request or push changes, for triggers
	// with paths: ingress looks them up (ChangedFilesLookup, the push
	// payload) only when a loaded workflow has such a trigger for the
	// event; nil otherwise.
	Files *ChangedFiles `json:"files,omitempty"`

	Labels []string `json:"labels,omitempty"` // labels of the pull/merge request or issue
	// Label is the label a labeled or unlabeled event added or removed
	// (where the forge says which); "" otherwise.
	Label string `json:"label,omitempty"`
	// LabelActionUnknown says the forge did not say whether a label was
	// added or removed and hookrun could not tell (it had not seen the
	// labels before): Action is labeled, and a trigger on labeled or on
	// unlabeled matches.
	LabelActionUnknown bool `json:"label_action_unknown,omitempty"`
	// Target is who an assigned, unassigned, review_requested or
	// review_request_removed event was about (a login; "team:<slug>" for a
	// team), one event each (where the forge says whom); "" otherwise.
	Target string `json:"target,omitempty"`
	// UpdatedAt is when the forge last changed the object the event is
	// about, as RFC 3339 in UTC where the forge's format parses (another
	// format, such as "2006-01-02 15:04:05 UTC", is kept as sent): the comment's for a
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

// PullRequest is a pull request, or a merge request on a forge that calls
// them so.
type PullRequest struct {
	Number  int    `json:"number"`             // the number (iid) within the repository
	Title   string `json:"title"`              // untrusted text
	URL     string `json:"url,omitempty"`      // web URL
	HeadSHA string `json:"head_sha,omitempty"` // for a comment, the head ingress pinned when it accepted the comment (see Head); empty only in a run request that is Refused
	HeadRef string `json:"head_ref,omitempty"` // source branch
	BaseRef string `json:"base_ref,omitempty"` // target branch
	Fork    bool   `json:"fork"`               // head lives in another repository
	Draft   bool   `json:"draft,omitempty"`
	Merged  bool   `json:"merged,omitempty"`
}

// Issue is an issue on a forge.
type Issue struct {
	Number int    `json:"number"` // the number (iid) within the repository
	Title  string `json:"title"`  // untrusted text
	URL    string `json:"url,omitempty"`
}

// Comment is a comment on a pull/merge request or an issue.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"` // untrusted text
	URL  string `json:"url,omitempty"`
	// Path and Line place a comment on a line of a pull/merge request's
	// diff (a review comment, a diff note): the file, as the
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
	// Truncated: the forge lists no more (some stop at 3,000 files of a
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

// Rerequest is what a forge asks to run again (KindRerequest): the failed
// runs of a head commit, or one run of them. The requester is
// Event.Sender, whose role ingress looks up by Event.Author.
type Rerequest struct {
	// RunID is the run the forge names (a check run's external_id, which
	// hookrun sets to the run's id); "" asks for every failed run of
	// HeadSHA (a check suite).
	RunID   string `json:"run_id,omitempty"`
	HeadSHA string `json:"head_sha"` // the commit whose runs are asked for
	// PullRequests are the numbers of the pull requests whose head
	// HeadSHA is, as the forge lists them (one may list none whose head
	// branch is in a fork).
	PullRequests []int `json:"pull_requests,omitempty"`
}

// ChatSlack is Chat.Platform of a Slack slash command.
const ChatSlack = "slack"

// ofChange is pr of the event's pull request, else issue of its issue,
// else push of its push (a nil function passes), else the zero value: the
// accessors below, written once.
func ofChange[T any](e *Event, pr func(*PullRequest) T, issue func(*Issue) T, push func(*Push) T) T {
	switch {
	case e.PullRequest != nil:
		return pr(e.PullRequest)
	case issue != nil && e.Issue != nil:
		return issue(e.Issue)
	case push != nil && e.Push != nil:
		return push(e.Push)
	}
	var zero T
	return zero
}

// Number is the pull/merge request number, else the issue number, else 0.
func (e *Event) Number() int {
	return ofChange(e, func(p *PullRequest) int { return p.Number }, func(i *Issue) int { return i.Number }, nil)
}

// Title is the pull/merge request title, else the issue title.
func (e *Event) Title() string {
	return ofChange(e, func(p *PullRequest) string { return p.Title }, func(i *Issue) string { return i.Title }, nil)
}

// HeadSHA is the commit a run checks out and reports a status on: the pull
// request head, or the pushed SHA. It is empty for issues, for a push that
// deleted its branch, and for a comment on a pull request whose head
// ingress could not pin.
func (e *Event) HeadSHA() string {
	return ofChange(e, func(p *PullRequest) string { return p.HeadSHA }, nil, func(p *Push) string {
		if p.Deleted {
			return ""
		}
		return p.After
	})
}

// HeadRef is the pull request's source branch or the pushed branch.
func (e *Event) HeadRef() string {
	return ofChange(e, func(p *PullRequest) string { return p.HeadRef }, nil, func(p *Push) string { return p.Branch })
}

// BaseRef is the branch triggers filter on with `branches`: the pull request's
// target branch, or the pushed branch.
func (e *Event) BaseRef() string {
	return ofChange(e, func(p *PullRequest) string { return p.BaseRef }, nil, func(p *Push) string { return p.Branch })
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
	if e.Schedule != nil {
		env = append(env, EnvVar{"HOOKRUN_SCHEDULE", e.Schedule.Spec})
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
