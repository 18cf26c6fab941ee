package workflows

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// Match is the outcome of matching one event against one workflow.
type Match struct {
	Matched     bool   // some trigger matched
	Reason      string // why nothing matched; empty when Matched
	CommandArgs string // with a `command:` trigger: Commands[0]
	// Commands holds, with a `command:` trigger, the arguments of each
	// command line of the comment (commandLines: any line, outside code
	// blocks and quotes) that one of the workflow's matching command
	// triggers takes, in comment order; a line repeated word for word counts
	// once. Each is one run. Nil for a trigger without a command.
	Commands []string
	// Lines holds the comment line each of Commands came from (trimmed,
	// the command included): what tells two command runs apart.
	Lines   []string
	Trigger int // index into Workflow.On of the first trigger that matched
}

// Match reports whether any trigger of w matches e; the first matching
// trigger in file order wins. It is pure: it reads e and never changes it
// (the caller copies Match.CommandArgs into its run's event).
//
// A trigger matches when, in this order: its event kind equals e.Kind; its
// actions (empty: any; with a command: DefaultCommandActions, so only a new
// comment) contain e.Action; one of its branches globs matches
// e.BaseRef() (an event without a branch never matches a trigger with
// branches); a line of the comment (commandLines), trimmed, equals its
// command or starts with the command and a space or tab; e carries one of its labels; one
// of its repos globs matches e.Repo; its `if:` expression is true. Before
// all that, a push that deletes its branch (Push.Deleted) matches only a
// trigger with `deleted: true`, and such a trigger only such a push.
func (w *Workflow) Match(e *Event) Match {
	if e == nil {
		return Match{Reason: "no event"}
	}
	if len(w.On) == 0 {
		return Match{Reason: "workflow has no triggers"}
	}
	var lines []string
	switch e.Kind {
	case KindComment:
		lines = commandLines(e.CommentBody())
	case KindChat:
		lines = []string{""} // one command, one run: chatCommand reads Chat.Text
	}
	var reasons []string
	for i := range w.On {
		t := &w.On[i]
		if t.Event != e.Kind {
			continue
		}
		args, reason := t.match(e, lines)
		if reason != "" {
			reasons = append(reasons, reason)
			continue
		}
		m := Match{Matched: true, Trigger: i}
		if t.Command != "" {
			m.Commands, m.Lines = w.commands(e, lines, i, args)
			m.CommandArgs = m.Commands[0]
		}
		return m
	}
	if len(reasons) == 0 {
		return Match{Reason: fmt.Sprintf("no trigger for event %q", e.Kind)}
	}
	return Match{Reason: strings.Join(reasons, "; ")}
}

// commands gathers the command lines that the matching command triggers
// from w.On[first] on take (first took args, indexed by line), each line
// with the arguments of the first trigger that takes it, in comment order,
// a line repeated word for word once.
func (w *Workflow) commands(e *Event, lines []string, first int, args map[int]string) (cmds, from []string) {
	taken := args
	for j := first + 1; j < len(w.On); j++ {
		t := &w.On[j]
		if t.Event != e.Kind || t.Command == "" {
			continue
		}
		more, reason := t.match(e, lines)
		if reason != "" {
			continue
		}
		for n, a := range more {
			if _, ok := taken[n]; !ok {
				taken[n] = a
			}
		}
	}
	seen := map[string]bool{}
	for n, line := range lines {
		a, ok := taken[n]
		if !ok || seen[line] {
			continue
		}
		seen[line] = true
		cmds, from = append(cmds, a), append(from, line)
	}
	return cmds, from
}

// Listens reports whether one of the workflow's triggers is for events of
// kind k, whatever its other conditions: such a workflow may need any field
// of such an event to decide.
func (w *Workflow) Listens(k Kind) bool {
	for i := range w.On {
		if w.On[i].Event == k {
			return true
		}
	}
	return false
}

// match checks everything but the kind. It returns, for a command trigger,
// the arguments of each of the comment's command lines (by index into
// lines) that is its command, or why the trigger does not match.
func (t *Trigger) match(e *Event, lines []string) (args map[int]string, reason string) {
	if e.Push != nil && e.Push.Deleted != t.Deleted {
		if e.Push.Deleted {
			return nil, "push deletes the branch (only a trigger with deleted: true matches it)"
		}
		return nil, "push does not delete the branch (the trigger has deleted: true)"
	}
	if e.Kind == KindSchedule {
		if reason := t.matchSchedule(e); reason != "" {
			return nil, reason
		}
	}
	if actions := t.actions(); len(actions) > 0 && !actionIn(actions, e) {
		if len(t.Actions) == 0 {
			return nil, fmt.Sprintf("action %q not in %v (a command trigger without actions: matches new comments only)", e.Action, actions)
		}
		return nil, fmt.Sprintf("action %q not in %v", e.Action, actions)
	}
	if len(t.Branches) > 0 {
		branch := e.BaseRef()
		if branch == "" {
			return nil, fmt.Sprintf("event has no branch to match %v", t.Branches)
		}
		if !anyGlob(t.Branches, branch) {
			return nil, fmt.Sprintf("branch %q not in %v", branch, t.Branches)
		}
	}
	if t.Command != "" && e.Kind == KindChat {
		a, ok := chatCommand(t.Command, e.Chat)
		if !ok {
			return nil, fmt.Sprintf("the chat command is not %s", t.Command)
		}
		args = map[int]string{0: a}
	} else if t.Command != "" {
		for n, line := range lines {
			if a, ok := matchCommand(t.Command, line); ok {
				if args == nil {
					args = map[int]string{}
				}
				args[n] = a
			}
		}
		if args == nil {
			return nil, fmt.Sprintf("no line of the comment is the command %s", t.Command)
		}
	}
	if len(t.Labels) > 0 && !slices.ContainsFunc(t.Labels, func(l string) bool { return slices.Contains(e.Labels, l) }) {
		return nil, fmt.Sprintf("none of the labels %v", t.Labels)
	}
	if reason := t.matchPaths(e.Files); reason != "" {
		return nil, reason
	}
	if len(t.Repos) > 0 && !anyGlob(t.Repos, e.Repo) {
		return nil, fmt.Sprintf("repository %q not in %v", e.Repo, t.Repos)
	}
	if t.If != "" {
		if e.Kind == KindChat {
			// the run's event: the trigger's repository (chat.go)
			c := *e
			c.Forge, c.Repo = t.ChatTarget()
			e = &c
		}
		ok, err := t.eval(e)
		if err != nil {
			return nil, fmt.Sprintf("evaluating if %q: %v", t.If, err)
		}
		if !ok {
			return nil, fmt.Sprintf("if %q is false", t.If)
		}
	}
	return args, ""
}

// actions returns the actions t matches, nil for any: its Actions, or
// DefaultCommandActions for a command trigger without them. This is the one
// place that default is applied (see Trigger).
func (t *Trigger) actions() []string {
	if len(t.Actions) == 0 && t.Command != "" && t.Event != KindChat {
		return DefaultCommandActions
	}
	return t.Actions
}

// eval runs the compiled `if:` expression with `event` bound to e. A trigger
// built by hand (not by the parser) is compiled on the fly.
func (t *Trigger) eval(e *Event) (bool, error) {
	prog, _ := t.program.(*vm.Program)
	if prog == nil {
		var err error
		if prog, err = compileIf(t.If); err != nil {
			return false, err
		}
	}
	out, err := expr.Run(prog, map[string]any{"event": e})
	if err != nil {
		return false, err
	}
	b, _ := out.(bool)
	return b, nil
}

// compileIf compiles an `if:` expression against the Event type.
func compileIf(src string) (*vm.Program, error) {
	return expr.Compile(src,
		expr.Env(map[string]any{"event": &Event{}}),
		expr.AsBool(),
		expr.Patch(plainStrings{}))
}

// plainStrings turns fields of named string types (Kind, Forge) into plain
// strings, so that `event.Kind == "comment"` type-checks: expr-lang otherwise
// refuses to compare workflows.Kind with a string literal.
type plainStrings struct{}

func (plainStrings) Visit(node *ast.Node) {
	if _, ok := (*node).(*ast.MemberNode); !ok {
		return
	}
	t := (*node).Type()
	if t == nil || t.Kind() != reflect.String || t == reflect.TypeFor[string]() {
		return
	}
	ast.Patch(node, &ast.BuiltinNode{Name: "string", Arguments: []ast.Node{*node}})
}

// CommandOf reports whether e is a new comment one of whose command lines
// (commandLines: any line outside code blocks and quotes) is command (the
// rule of a command trigger without `actions:`), and returns the rest of
// the first such line. Server commands such as /retry use it.
func CommandOf(command string, e *Event) (args string, ok bool) {
	if e == nil || e.Kind != KindComment || !slices.Contains(DefaultCommandActions, e.Action) {
		return "", false
	}
	for _, line := range commandLines(e.CommentBody()) {
		if args, ok := matchCommand(command, line); ok {
			return args, true
		}
	}
	return "", false
}

// matchPaths applies paths and paths_ignore: a changed file counts when it
// matches one of Paths (or there are none) and none of PathsIgnore; the
// trigger needs one that counts. Files not looked up, unknown or truncated
// match: a check that should have run is worse than one that ran for
// nothing.
func (t *Trigger) matchPaths(f *ChangedFiles) string {
	if len(t.Paths) == 0 && len(t.PathsIgnore) == 0 {
		return ""
	}
	if f == nil || f.Unknown != "" || f.Truncated {
		return ""
	}
	for _, p := range f.Paths {
		if (len(t.Paths) == 0 || anyDoublestar(t.Paths, p)) && !anyDoublestar(t.PathsIgnore, p) {
			return ""
		}
	}
	switch {
	case len(f.Paths) == 0:
		return "no changed files"
	case len(t.Paths) == 0:
		return fmt.Sprintf("every changed file is in paths_ignore %v", t.PathsIgnore)
	case len(t.PathsIgnore) == 0:
		return fmt.Sprintf("no changed file in paths %v", t.Paths)
	}
	return fmt.Sprintf("no changed file in paths %v outside paths_ignore %v", t.Paths, t.PathsIgnore)
}

// anyDoublestar reports whether any doublestar pattern matches the path.
func anyDoublestar(patterns []string, p string) bool {
	for _, g := range patterns {
		if doublestar.MatchUnvalidated(g, p) {
			return true
		}
	}
	return false
}

// HasPaths reports whether a trigger of w for events of kind k selects by
// changed files: only then does ingress look them up.
func (w *Workflow) HasPaths(k Kind) bool {
	for i := range w.On {
		if t := &w.On[i]; t.Event == k && (len(t.Paths) > 0 || len(t.PathsIgnore) > 0) {
			return true
		}
	}
	return false
}

// anyGlob reports whether any path.Match pattern matches s. Patterns were
// checked at load time; a malformed one matches nothing.
func anyGlob(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Authorize applies the workflow's `authorize` policy to the event's sender.
// It is pure. The rules, in order:
//
//  1. A sender listed in `users` (compared case-insensitively, as forge logins
//     are) is allowed, whatever else holds.
//  2. A push is allowed: only accounts with write access can push to the
//     repository, so the forge has authorized it already (push payloads carry
//     no author association).
//  3. With a non-empty `author_association` list, the sender's association
//     (an empty one counts as NONE) must be in it. The sender is then
//     trusted.
//  0. A chat event (KindChat) is judged by the Slack allowlists alone, and
//     none of the rules below applies (authorizeChat). A schedule event
//     (KindSchedule) has no sender: the workflow file started it, and it
//     is allowed.
//  4. An explicit empty list (`author_association: []`) lets any association
//     through, but such a sender is not trusted: a pull request from a fork
//     (also a comment on one) is refused unless `allow_forks` is true.
func (w *Workflow) Authorize(e *Event) (ok bool, reason string) {
	if e == nil {
		return false, "no event"
	}
	a := w.Authorization
	if e.Kind == KindChat {
		return a.authorizeChat(e.Chat)
	}
	if e.Kind == KindSchedule {
		return true, "a schedule is started by the workflow file itself, not by a user"
	}
	if slices.ContainsFunc(a.Users, func(u string) bool { return strings.EqualFold(u, e.Sender) }) {
		return true, fmt.Sprintf("user %q is listed in authorize.users", e.Sender)
	}
	if e.Kind == KindPush {
		return true, "pushes are authorized by the forge's write access"
	}
	assoc := e.AuthorAssociation
	if assoc == "" {
		assoc = "NONE"
	}
	trusted := false
	if len(a.AuthorAssociation) > 0 {
		if !slices.Contains(a.AuthorAssociation, assoc) {
			return false, fmt.Sprintf("author association %s of %q not in %v", assoc, e.Sender, a.AuthorAssociation)
		}
		trusted = true
	}
	if e.PullRequest != nil && e.PullRequest.Fork && !trusted && !a.AllowForks {
		return false, fmt.Sprintf("pull request from a fork and %q is not trusted (allow_forks is false)", e.Sender)
	}
	if trusted {
		return true, fmt.Sprintf("author association %s is allowed", assoc)
	}
	return true, "any author association is allowed"
}

// authorizeChat allows a chat command only when both its user id is in
// slack_users and its channel id in slack_channels (ids compared exactly:
// Slack ids are upper case and never reused). An empty list allows
// nobody: a workflow is never open to a whole workspace. The forge logins
// of `users` and the associations do not apply: a chat user has none.
func (a *Authorize) authorizeChat(c *Chat) (bool, string) {
	switch {
	case c == nil:
		return false, "chat event without its chat"
	case len(a.SlackUsers) == 0 || len(a.SlackChannels) == 0:
		return false, "the workflow lists no authorize.slack_users or no authorize.slack_channels: no chat command runs it"
	case !slices.Contains(a.SlackUsers, c.UserID):
		return false, fmt.Sprintf("Slack user %s is not in authorize.slack_users", c.UserID)
	case !slices.Contains(a.SlackChannels, c.ChannelID):
		return false, fmt.Sprintf("Slack channel %s is not in authorize.slack_channels", c.ChannelID)
	}
	return true, fmt.Sprintf("Slack user %s in channel %s is allowed", c.UserID, c.ChannelID)
}

// actionIn reports whether actions lists e's action; with
// LabelActionUnknown, labeled and unlabeled both stand for it.
func actionIn(actions []string, e *Event) bool {
	if slices.Contains(actions, e.Action) {
		return true
	}
	return e.LabelActionUnknown && (slices.Contains(actions, "labeled") || slices.Contains(actions, "unlabeled"))
}

// Repository globs name the repositories a server acts for (the server's
// `allow_repos`). A pattern is matched against a repository path,
// "owner/name", or "group/sub/project" on a forge that nests groups:
//
//   - `*` matches any run of characters within one path segment (never `/`),
//   - `**` matches any run of characters, `/` included (any depth of
//     subgroups),
//   - `?` matches one character other than `/`,
//   - everything else matches itself, compared case-insensitively (ASCII), as
//     forges compare repository names.
//
// So `myorg/*` is every repository of myorg, `mygroup/**` every project
// under mygroup at any depth, and `**` every repository.

// maxRepoPattern bounds a pattern's length (it sizes the matcher's state).
const maxRepoPattern = 256

// CheckRepoPattern reports why pattern is not a repository glob. A valid one
// is `**`, or path segments separated by single slashes, each non-empty, of
// letters, digits, `-`, `_`, `.` and the wildcards; at most two `*` in a
// row; at most 256 bytes.
func CheckRepoPattern(pattern string) error {
	switch {
	case pattern == "":
		return errors.New("empty repository pattern")
	case len(pattern) > maxRepoPattern:
		return fmt.Errorf("repository pattern longer than %d bytes", maxRepoPattern)
	case pattern == "**":
		return nil
	case !strings.Contains(pattern, "/"):
		return fmt.Errorf("repository pattern %q has no slash: want owner/name (e.g. %q), or ** for every repository", pattern, pattern+"/*")
	case strings.HasPrefix(pattern, "/") || strings.HasSuffix(pattern, "/") || strings.Contains(pattern, "//"):
		return fmt.Errorf("repository pattern %q has an empty path segment", pattern)
	case strings.Contains(pattern, "***"):
		return fmt.Errorf("repository pattern %q has more than two * in a row", pattern)
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '/' || c == '*' || c == '?') {
			return fmt.Errorf("repository pattern %q contains %q: want letters, digits, - _ . / and the wildcards * ** ?", pattern, c)
		}
	}
	return nil
}

// MatchRepo reports whether repo matches pattern (see CheckRepoPattern for
// the syntax; a pattern it refuses matches nothing). It runs in time
// proportional to len(pattern)·len(repo) and does not allocate.
func MatchRepo(pattern, repo string) bool {
	if repo == "" || CheckRepoPattern(pattern) != nil {
		return false
	}
	// A simulation of the pattern's automaton: on[i] means pattern[:i] has
	// matched the input read so far.
	var cur, next [maxRepoPattern + 1]bool
	n := len(pattern)
	closure := func(on *[maxRepoPattern + 1]bool) {
		// A wildcard may match nothing: its state also enables the one after
		// it. Wildcards only lead forward, so one pass suffices.
		for i := 0; i < n; i++ {
			if on[i] && pattern[i] == '*' {
				on[i+starLen(pattern, i)] = true
			}
		}
	}
	cur[0] = true
	closure(&cur)
	for j := 0; j < len(repo); j++ {
		c := lower(repo[j])
		clear(next[:n+1])
		alive := false
		for i := 0; i < n; i++ {
			if !cur[i] {
				continue
			}
			switch p := pattern[i]; {
			case p == '*' && starLen(pattern, i) == 2:
				next[i] = true // ** consumes anything and stays
			case p == '*':
				if c != '/' {
					next[i] = true
				}
			case p == '?':
				if c != '/' {
					next[i+1] = true
				}
			case lower(p) == c:
				next[i+1] = true
			default:
				continue
			}
			alive = true
		}
		if !alive {
			return false
		}
		closure(&next)
		cur = next
	}
	return cur[n]
}

// AnyRepo reports whether repo matches one of patterns.
func AnyRepo(patterns []string, repo string) bool {
	for _, p := range patterns {
		if MatchRepo(p, repo) {
			return true
		}
	}
	return false
}

// starLen is the length of the wildcard at pattern[i] (a '*'): 2 for `**`,
// else 1. The second byte of a `**` is never a state of its own.
func starLen(pattern string, i int) int {
	if i+1 < len(pattern) && pattern[i+1] == '*' {
		return 2
	}
	return 1
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
