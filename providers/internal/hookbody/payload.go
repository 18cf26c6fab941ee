package hookbody

import (
	"errors"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// The payloads are decoded into these projections: only the fields
// normalization reads, with the JSON names and Go types of the reference
// client library's event types (the forge package that owns the shape
// names it, and its fuzz test checks that whatever that library's parser
// accepts normalizes identically through these). Decoding the full
// library types was about 80 % of the ingress handler's CPU for a 28 KB
// pull_request (docs/performance.md); the projection, decoded by the
// encoding/json v2 engine (go-json-experiment), skips everything else and
// costs about a ninth of it.
//
// Pointers mark what the library's getters distinguish by nil (a missing
// pull_request, a deleted head repository); everything else is a value,
// whose zero value is what the getter of a missing field returns.

type User struct {
	Login string `json:"login"`
}

// CommitAuthor is the library's CommitAuthor (a push's pusher), whose
// Login is the payload's "username".
type CommitAuthor struct {
	Name  string `json:"name"`
	Login string `json:"username"`
}

type Installation struct {
	ID int64 `json:"id"`
}

type Repository struct {
	FullName string `json:"full_name"`
	CloneURL string `json:"clone_url"`
}

type Label struct {
	Name string `json:"name"`
}

// Team is the library's Team (a pull request's requested_team).
type Team struct {
	Slug string `json:"slug"`
}

// Time is the library's Timestamp: RFC 3339 in quotes, or Unix seconds
// (milliseconds past the year 3000), kept as RFC 3339 in UTC so that the
// same instant reads the same whichever form and zone the forge wrote.
type Time string

// UnmarshalJSONFrom decodes as the library's Timestamp.UnmarshalJSON does
// (the v2 engine's interface: the value is read in place, not copied).
func (t *Time) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	data, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if string(data) == "null" {
		*t = "" // the library's nil *Timestamp
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
		*t = Time(data[1 : len(data)-1])
		return nil
	}
	*t = Time(tm.UTC().Format(time.RFC3339Nano))
	return nil
}

// String is the time, "" for a missing one.
func (t Time) String() string { return string(t) }

type Branch struct {
	Ref  string      `json:"ref"`
	SHA  string      `json:"sha"`
	Repo *Repository `json:"repo"`
}

type Pull struct {
	Number            int      `json:"number"`
	Title             string   `json:"title"`
	HTMLURL           string   `json:"html_url"`
	AuthorAssociation string   `json:"author_association"`
	Draft             bool     `json:"draft"`
	Merged            bool     `json:"merged"`
	Head              Branch   `json:"head"`
	Base              Branch   `json:"base"`
	Labels            []*Label `json:"labels"`
	UpdatedAt         Time     `json:"updated_at"`
}

type Issue struct {
	Number            int      `json:"number"`
	Title             string   `json:"title"`
	HTMLURL           string   `json:"html_url"`
	AuthorAssociation string   `json:"author_association"`
	Labels            []*Label `json:"labels"`
	UpdatedAt         Time     `json:"updated_at"`
	// PullRequestLinks is set when the issue is a pull request (the library's
	// Issue.IsPullRequest).
	PullRequestLinks *struct{} `json:"pull_request"`
}

type Comment struct {
	ID                int64  `json:"id"`
	Body              string `json:"body"`
	HTMLURL           string `json:"html_url"`
	AuthorAssociation string `json:"author_association"`
	UpdatedAt         Time   `json:"updated_at"`
}

// ReviewComment is the library's PullRequestComment: a comment on a line
// of a pull request's diff.
type ReviewComment struct {
	ID                int64  `json:"id"`
	Body              string `json:"body"`
	HTMLURL           string `json:"html_url"`
	AuthorAssociation string `json:"author_association"`
	Path              string `json:"path"`
	Line              int    `json:"line"`
	OriginalLine      int    `json:"original_line"`
	UpdatedAt         Time   `json:"updated_at"`
}

// Review is the library's PullRequestReview.
type Review struct {
	ID                int64  `json:"id"`
	Body              string `json:"body"`
	HTMLURL           string `json:"html_url"`
	AuthorAssociation string `json:"author_association"`
	State             string `json:"state"`
	SubmittedAt       Time   `json:"submitted_at"`
}

// Common is what every handled event carries.
type Common struct {
	Action       string       `json:"action"`
	Repo         *Repository  `json:"repository"`
	Sender       User         `json:"sender"`
	Installation Installation `json:"installation"`
}

type PullRequestEvent struct {
	Common
	Number      int   `json:"number"`
	PullRequest *Pull `json:"pull_request"`
	Target
	// RequestedReviewer or RequestedTeam: review_requested and
	// review_request_removed, one delivery per reviewer.
	RequestedReviewer *User `json:"requested_reviewer"`
	RequestedTeam     *Team `json:"requested_team"`
}

// Target is what a pull_request or issues action was about beside the
// object: the label of labeled/unlabeled, the user of assigned/unassigned.
type Target struct {
	Label    *Label `json:"label"`
	Assignee *User  `json:"assignee"`
}

// LabelName is the label's name, "" without one.
func (t *Target) LabelName() string {
	if t.Label == nil {
		return ""
	}
	return t.Label.Name
}

// TargetName names the user or team the action was about, "" for none.
func (t *Target) TargetName(reviewer *User, team *Team) string {
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

type IssueCommentEvent struct {
	Common
	Issue   *Issue   `json:"issue"`
	Comment *Comment `json:"comment"`
}

type ReviewCommentEvent struct {
	Common
	PullRequest *Pull          `json:"pull_request"`
	Comment     *ReviewComment `json:"comment"`
}

type ReviewEvent struct {
	Common
	PullRequest *Pull   `json:"pull_request"`
	Review      *Review `json:"review"`
}

type IssuesEvent struct {
	Common
	Issue *Issue `json:"issue"`
	Target
}

// Need is one part a payload must have: Missing when it lacks it, Err
// saying which (ErrNoPullRequest, ...).
type Need struct {
	Missing bool
	Err     error
}

// FirstLacking is the Err of the first part Missing, nil for none.
func FirstLacking(needs ...Need) error {
	for _, n := range needs {
		if n.Missing {
			return n.Err
		}
	}
	return nil
}

// Lacks is the first part a pull_request payload lacks, nil for none.
func (p *PullRequestEvent) Lacks() error {
	return FirstLacking(Need{p.PullRequest == nil, ErrNoPullRequest}, Need{p.Repo == nil, ErrNoRepository})
}

// Lacks is the first part an issue_comment payload lacks, nil for none.
func (p *IssueCommentEvent) Lacks() error {
	return FirstLacking(Need{p.Issue == nil, ErrNoIssue}, Need{p.Comment == nil, ErrNoComment}, Need{p.Repo == nil, ErrNoRepository})
}

// Lacks is the first part a pull_request_review_comment payload lacks, nil
// for none.
func (p *ReviewCommentEvent) Lacks() error {
	return FirstLacking(Need{p.PullRequest == nil, ErrNoPullRequest}, Need{p.Comment == nil, ErrNoComment}, Need{p.Repo == nil, ErrNoRepository})
}

// Lacks is the first part a pull_request_review payload lacks, nil for
// none.
func (p *ReviewEvent) Lacks() error {
	return FirstLacking(Need{p.PullRequest == nil, ErrNoPullRequest}, Need{p.Review == nil, ErrNoReview}, Need{p.Repo == nil, ErrNoRepository})
}

// Lacks is the first part an issues payload lacks, nil for none.
func (p *IssuesEvent) Lacks() error {
	return FirstLacking(Need{p.Issue == nil, ErrNoIssue}, Need{p.Repo == nil, ErrNoRepository})
}

type PushEvent struct {
	Common
	Ref     string       `json:"ref"`
	Before  string       `json:"before"`
	After   string       `json:"after"`
	Deleted bool         `json:"deleted"`
	Pusher  CommitAuthor `json:"pusher"`
}

// decoding gives the v2 engine encoding/json's v1 leniency where it
// matters to the library's results (names matched case-insensitively but
// with `_` and `-` significant, so "fullname" is not "full_name";
// duplicate names; invalid UTF-8 mangled rather than refused) without the
// v1 compatibility layer's other costs.
var decoding = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// Projections name, for each event name a forge handles, the projection
// its body decodes into (a function returning a new pointer: New[T]).
type Projections map[string]func() any

// New is a Projections entry: a new *T.
func New[T any]() any { return new(T) }

// Decode decodes body into the projection of eventName, with encoding/json
// v2 and the decoding options (every forge's bodies alike); an event name
// it has none for answers forge.Unhandled.
func (ps Projections) Decode(name workflows.Forge, eventName string, body []byte) (any, error) {
	newP, ok := ps[eventName]
	if !ok {
		return nil, forge.Unhandled(name, eventName)
	}
	p := newP()
	if err := jsonv2.Unmarshal(body, p, decoding); err != nil {
		return nil, forge.Malformed(name, eventName, err)
	}
	return p, nil
}

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
