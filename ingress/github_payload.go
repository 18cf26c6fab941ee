package ingress

import (
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/hookrun/hookrun/workflows"
)

// The GitHub payloads are decoded into these projections: only the fields
// normalization reads, with the JSON names and Go types of go-github v62's
// event types (PullRequestEvent, IssueCommentEvent,
// PullRequestReviewCommentEvent, PullRequestReviewEvent, IssuesEvent,
// PushEvent), which remain the reference: FuzzGitHubProjection checks that
// whatever go-github's ParseWebHook accepts normalizes identically through
// these. Decoding the full go-github types was about 80 % of the ingress
// handler's CPU for a 28 KB pull_request (docs/performance.md); the
// projection, decoded by the encoding/json v2 engine (go-json-experiment),
// skips everything else and costs about a ninth of it.
//
// Pointers mark what go-github's getters distinguish by nil (a missing
// pull_request, a deleted head repository); everything else is a value,
// whose zero value is what the getter of a missing field returns.

type ghUser struct {
	Login string `json:"login"`
}

// ghCommitAuthor is go-github's CommitAuthor (a push's pusher), whose
// Login is the payload's "username".
type ghCommitAuthor struct {
	Name  string `json:"name"`
	Login string `json:"username"`
}

type ghInstallation struct {
	ID int64 `json:"id"`
}

type ghRepository struct {
	FullName string `json:"full_name"`
	CloneURL string `json:"clone_url"`
}

type ghLabel struct {
	Name string `json:"name"`
}

// ghTeam is go-github's Team (a pull request's requested_team).
type ghTeam struct {
	Slug string `json:"slug"`
}

// ghTime is go-github's Timestamp: RFC 3339 in quotes, or Unix seconds
// (milliseconds past the year 3000), kept as RFC 3339 in UTC so that the
// same instant reads the same whichever form and zone the forge wrote.
type ghTime string

// UnmarshalJSONFrom decodes as go-github's Timestamp.UnmarshalJSON does
// (the v2 engine's interface: the value is read in place, not copied).
func (t *ghTime) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	data, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if string(data) == "null" {
		*t = "" // go-github's nil *Timestamp
		return nil
	}
	var tm time.Time
	if data[0] != '"' { // only a number parses as one (no error built for a string)
		i, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return err
		}
		tm = time.Unix(i, 0)
		if tm.Year() > 3000 {
			tm = time.Unix(0, i*1e6)
		}
	} else if tm, err = time.Parse(`"`+time.RFC3339+`"`, string(data)); err != nil {
		return err
	}
	// Most forges write the canonical form already: one allocation.
	var buf [64]byte
	if canon := tm.UTC().AppendFormat(buf[:0], time.RFC3339Nano); len(data) == len(canon)+2 && string(data[1:len(data)-1]) == string(canon) {
		*t = ghTime(data[1 : len(data)-1])
		return nil
	}
	*t = ghTime(tm.UTC().Format(time.RFC3339Nano))
	return nil
}

// String is the time, "" for a missing one.
func (t ghTime) String() string { return string(t) }

type ghBranch struct {
	Ref  string        `json:"ref"`
	SHA  string        `json:"sha"`
	Repo *ghRepository `json:"repo"`
}

type ghPull struct {
	Number            int        `json:"number"`
	Title             string     `json:"title"`
	HTMLURL           string     `json:"html_url"`
	AuthorAssociation string     `json:"author_association"`
	Draft             bool       `json:"draft"`
	Merged            bool       `json:"merged"`
	Head              ghBranch   `json:"head"`
	Base              ghBranch   `json:"base"`
	Labels            []*ghLabel `json:"labels"`
	UpdatedAt         ghTime     `json:"updated_at"`
}

type ghIssue struct {
	Number            int        `json:"number"`
	Title             string     `json:"title"`
	HTMLURL           string     `json:"html_url"`
	AuthorAssociation string     `json:"author_association"`
	Labels            []*ghLabel `json:"labels"`
	UpdatedAt         ghTime     `json:"updated_at"`
	// PullRequestLinks is set when the issue is a pull request (go-github's
	// Issue.IsPullRequest).
	PullRequestLinks *struct{} `json:"pull_request"`
}

type ghComment struct {
	ID                int64  `json:"id"`
	Body              string `json:"body"`
	HTMLURL           string `json:"html_url"`
	AuthorAssociation string `json:"author_association"`
	UpdatedAt         ghTime `json:"updated_at"`
}

// ghReviewComment is go-github's PullRequestComment: a comment on a line
// of a pull request's diff.
type ghReviewComment struct {
	ID                int64  `json:"id"`
	Body              string `json:"body"`
	HTMLURL           string `json:"html_url"`
	AuthorAssociation string `json:"author_association"`
	Path              string `json:"path"`
	Line              int    `json:"line"`
	OriginalLine      int    `json:"original_line"`
	UpdatedAt         ghTime `json:"updated_at"`
}

// ghReview is go-github's PullRequestReview.
type ghReview struct {
	ID                int64  `json:"id"`
	Body              string `json:"body"`
	HTMLURL           string `json:"html_url"`
	AuthorAssociation string `json:"author_association"`
	State             string `json:"state"`
	SubmittedAt       ghTime `json:"submitted_at"`
}

// ghCommon is what every handled event carries.
type ghCommon struct {
	Action       string         `json:"action"`
	Repo         *ghRepository  `json:"repository"`
	Sender       ghUser         `json:"sender"`
	Installation ghInstallation `json:"installation"`
}

type ghPullRequestEvent struct {
	ghCommon
	Number      int     `json:"number"`
	PullRequest *ghPull `json:"pull_request"`
	ghTarget
	// RequestedReviewer or RequestedTeam: review_requested and
	// review_request_removed, one delivery per reviewer.
	RequestedReviewer *ghUser `json:"requested_reviewer"`
	RequestedTeam     *ghTeam `json:"requested_team"`
}

// ghTarget is what a pull_request or issues action was about beside the
// object: the label of labeled/unlabeled, the user of assigned/unassigned.
type ghTarget struct {
	Label    *ghLabel `json:"label"`
	Assignee *ghUser  `json:"assignee"`
}

// label is the label's name, "" without one.
func (t *ghTarget) label() string {
	if t.Label == nil {
		return ""
	}
	return t.Label.Name
}

// target names the user or team the action was about, "" for none.
func (t *ghTarget) target(reviewer *ghUser, team *ghTeam) string {
	switch {
	case t.Assignee != nil:
		return t.Assignee.Login
	case reviewer != nil:
		return reviewer.Login
	case team != nil:
		return "team:" + team.Slug
	}
	return ""
}

type ghIssueCommentEvent struct {
	ghCommon
	Issue   *ghIssue   `json:"issue"`
	Comment *ghComment `json:"comment"`
}

type ghReviewCommentEvent struct {
	ghCommon
	PullRequest *ghPull          `json:"pull_request"`
	Comment     *ghReviewComment `json:"comment"`
}

type ghReviewEvent struct {
	ghCommon
	PullRequest *ghPull   `json:"pull_request"`
	Review      *ghReview `json:"review"`
}

type ghIssuesEvent struct {
	ghCommon
	Issue *ghIssue `json:"issue"`
	ghTarget
}

type ghPushEvent struct {
	ghCommon
	Ref     string         `json:"ref"`
	Before  string         `json:"before"`
	After   string         `json:"after"`
	Deleted bool           `json:"deleted"`
	Pusher  ghCommitAuthor `json:"pusher"`
}

// githubDecoding gives the v2 engine encoding/json's v1 leniency where it
// matters to go-github's results (names matched case-insensitively but
// with `_` and `-` significant, so "fullname" is not "full_name";
// duplicate names; invalid UTF-8 mangled rather than refused) without the
// v1 compatibility layer's other costs.
var githubDecoding = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// decodeGitHub decodes a GitHub webhook body into its event's projection:
// one of the *gh...Event types, or an error wrapping ErrUnhandledEvent.
func decodeGitHub(eventName string, body []byte) (any, error) {
	var p any
	switch eventName {
	case ghPullRequest:
		p = new(ghPullRequestEvent)
	case ghIssueComment:
		p = new(ghIssueCommentEvent)
	case ghPullReviewComment:
		p = new(ghReviewCommentEvent)
	case ghPullReview:
		p = new(ghReviewEvent)
	case ghIssues:
		p = new(ghIssuesEvent)
	case ghPush:
		p = new(ghPushEvent)
	default:
		return nil, unhandled(workflows.GitHub, eventName)
	}
	return decodeProjection(workflows.GitHub, eventName, body, p)
}

// decodeProjection decodes body into the projection p with
// githubDecoding (GitHub's and Gitea's bodies alike).
func decodeProjection(forge workflows.Forge, eventName string, body []byte, p any) (any, error) {
	if err := jsonv2.Unmarshal(body, p, githubDecoding); err != nil {
		return nil, malformed(forge, eventName, err)
	}
	return p, nil
}
