package workflows

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *Workflow {
	t.Helper()
	w, err := Parse("test.yaml", []byte(src+"\nsteps:\n  - id: s\n    run: echo s\n"))
	if err != nil {
		t.Fatalf("parsing:\n%v", err)
	}
	return w
}

// Events as ingress normalizes them.
func ghPR(action, base string, fork bool) *Event {
	return &Event{Forge: GitHub, Kind: KindPullRequest, Action: action, Repo: "acme/api", Sender: "alice",
		AuthorAssociation: "MEMBER", Labels: []string{"needs-review"},
		PullRequest: &PullRequest{Number: 7, Title: "Fix it", HeadSHA: "abc", HeadRef: "fix", BaseRef: base, Fork: fork}}
}

func glMR(action, base string) *Event {
	return &Event{Forge: GitLab, Kind: KindPullRequest, Action: action, Repo: "group/sub/project", Sender: "bob",
		PullRequest: &PullRequest{Number: 3, Title: "MR", HeadSHA: "def", HeadRef: "feat", BaseRef: base}}
}

func comment(forge Forge, body string, onPR bool) *Event {
	e := &Event{Forge: forge, Kind: KindComment, Action: "created", Repo: "acme/api", Sender: "carol",
		AuthorAssociation: "OWNER", Comment: &Comment{ID: 1, Body: body}}
	if onPR {
		e.PullRequest = &PullRequest{Number: 7, BaseRef: "main"}
	} else {
		e.Issue = &Issue{Number: 9, Title: "Bug"}
	}
	return e
}

func push(forge Forge, branch string) *Event {
	return &Event{Forge: forge, Kind: KindPush, Action: "pushed", Repo: "acme/api", Sender: "dave",
		Push: &Push{Ref: "refs/heads/" + branch, Branch: branch, After: "123"}}
}

func issue(action string, labels ...string) *Event {
	return &Event{Forge: GitHub, Kind: KindIssue, Action: action, Repo: "acme/api", Sender: "erin",
		AuthorAssociation: "NONE", Labels: labels, Issue: &Issue{Number: 9, Title: "Crash"}}
}

func TestMatch(t *testing.T) {
	prReview := `
on:
  - event: pull_request
    actions: [opened, synchronize]
    branches: [main, "release/*"]
  - event: comment
    command: /deploy
    if: 'event.PullRequest != nil'`
	cases := []struct {
		name     string
		workflow string
		event    *Event
		matched  bool
		reason   string // exact Reason when not matched
		args     string
		trigger  int
	}{
		{"github PR opened on main", prReview, ghPR("opened", "main", false), true, "", "", 0},
		{"github PR on release branch glob", prReview, ghPR("synchronize", "release/1.2", false), true, "", "", 0},
		{"github PR closed", prReview, ghPR("closed", "main", false), false, `action "closed" not in [opened synchronize]`, "", 0},
		{"PR on other base", prReview, ghPR("opened", "dev", false), false, `branch "dev" not in [main release/*]`, "", 0},
		{"glob does not cross slash", prReview, ghPR("opened", "release/1/2", false), false, `branch "release/1/2" not in [main release/*]`, "", 0},
		{"gitlab MR opened", prReview, glMR("opened", "main"), true, "", "", 0},
		{"gitlab MR update", prReview, glMR("synchronize", "release/x"), true, "", "", 0},
		{"push has no trigger", prReview, push(GitHub, "main"), false, `no trigger for event "push"`, "", 0},
		{"command with arguments", prReview, comment(GitHub, "/deploy staging now", true), true, "", "staging now", 1},
		{"command alone", prReview, comment(GitHub, "/deploy", true), true, "", "", 1},
		{"command with spaces around and more lines", prReview, comment(GitLab, "  /deploy   prod  \nthanks!", true), true, "", "prod", 1},
		{"command with a tab", prReview, comment(GitHub, "/deploy\tqa", true), true, "", "qa", 1},
		{"longer word is not the command", prReview, comment(GitHub, "/deployx staging", true), false, "no line of the comment is the command /deploy", "", 0},
		{"command on a later line", prReview, comment(GitHub, "please\n/deploy staging", true), true, "", "staging", 1},
		{"command in the middle of a line", prReview, comment(GitHub, "run /deploy", true), false, "no line of the comment is the command /deploy", "", 0},
		{"command in a fenced code block", prReview, comment(GitHub, "try:\n```\n/deploy staging\n```", true), false, "no line of the comment is the command /deploy", "", 0},
		{"command in a quote", prReview, comment(GitHub, "> /deploy staging\n\nnot yet", true), false, "no line of the comment is the command /deploy", "", 0},
		{"command in an indented code block", prReview, comment(GitHub, "like this:\n\n    /deploy staging", true), false, "no line of the comment is the command /deploy", "", 0},
		{"if false: comment on an issue", prReview, comment(GitHub, "/deploy", false), false, `if "event.PullRequest != nil" is false`, "", 0},
		{"no triggers", ``, ghPR("opened", "main", false), false, "workflow has no triggers", "", 0},
		{"any action", "on: [{event: push}]", push(GitLab, "feature/x"), true, "", "", 0},
		{"push branch", "on: [{event: push, branches: [main]}]", push(GitHub, "main"), true, "", "", 0},
		{"push other branch", "on: [{event: push, branches: [main]}]", push(GitHub, "dev"), false, `branch "dev" not in [main]`, "", 0},
		{"tag push has no branch", "on: [{event: push, branches: ['*']}]", push(GitHub, ""), false, "event has no branch to match [*]", "", 0},
		{"labels: one of them", "on: [{event: issue, labels: [bug, crash]}]", issue("opened", "crash"), true, "", "", 0},
		{"labels: none", "on: [{event: issue, labels: [bug]}]", issue("opened", "question"), false, "none of the labels [bug]", "", 0},
		{"labels: event without labels", "on: [{event: issue, labels: [bug]}]", issue("opened"), false, "none of the labels [bug]", "", 0},
		{"repos glob", "on: [{event: pull_request, repos: ['acme/*']}]", ghPR("opened", "main", false), true, "", "", 0},
		{"repos glob other owner", "on: [{event: pull_request, repos: ['other/*']}]", ghPR("opened", "main", false), false, `repository "acme/api" not in [other/*]`, "", 0},
		{"repos: gitlab subgroup needs its depth", "on: [{event: pull_request, repos: ['group/*']}]", glMR("opened", "main"), false, `repository "group/sub/project" not in [group/*]`, "", 0},
		{"repos: gitlab subgroup glob", "on: [{event: pull_request, repos: ['group/*/*']}]", glMR("opened", "main"), true, "", "", 0},
		{"if on Kind and Forge", `on: [{event: pull_request, if: 'event.Kind == "pull_request" && event.Forge == "gitlab"'}]`, glMR("opened", "main"), true, "", "", 0},
		{"if on Forge false", `on: [{event: pull_request, if: 'event.Forge == "gitlab"'}]`, ghPR("opened", "main", false), false, `if "event.Forge == \"gitlab\"" is false`, "", 0},
		{"if on labels and methods", `on: [{event: pull_request, if: '"needs-review" in event.Labels && event.Number() == 7'}]`, ghPR("opened", "main", false), true, "", "", 0},
		{"if on title", `on: [{event: pull_request, if: 'event.Title() startsWith "WIP"'}]`, ghPR("opened", "main", false), false, `if "event.Title() startsWith \"WIP\"" is false`, "", 0},
		{"if runtime error is no match", `on: [{event: comment, if: 'event.PullRequest.Draft'}]`, comment(GitHub, "hi", false), false, "", "", 0},
		{"second trigger matches", "on: [{event: issue, actions: [closed]}, {event: issue, actions: [opened]}]", issue("opened"), true, "", "", 1},
		{"all reasons joined", "on: [{event: issue, actions: [closed]}, {event: issue, labels: [bug]}]", issue("opened"), false, `action "opened" not in [closed]; none of the labels [bug]`, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := mustParse(t, c.workflow)
			m := w.Match(c.event)
			if m.Matched != c.matched {
				t.Fatalf("Matched = %v (reason %q), want %v", m.Matched, m.Reason, c.matched)
			}
			if c.matched {
				if m.Reason != "" || m.CommandArgs != c.args || m.Trigger != c.trigger {
					t.Errorf("got %+v, want args %q trigger %d", m, c.args, c.trigger)
				}
				return
			}
			if m.Reason == "" {
				t.Error("no reason given")
			}
			if c.reason != "" && m.Reason != c.reason {
				t.Errorf("reason %q, want %q", m.Reason, c.reason)
			}
		})
	}
}

// TestMatchCommandLines: each command line of a comment, outside code
// blocks and quotes, is one match (one run), in comment order; a line
// repeated word for word counts once; a line two triggers take counts once,
// with the first trigger's reading.
func TestMatchCommandLines(t *testing.T) {
	w := mustParse(t, `
on:
  - event: comment
    command: /deploy
  - event: comment
    command: /rollback`)
	cases := []struct {
		name, body string
		want       []string
	}{
		{"one line", "/deploy staging", []string{"staging"}},
		{"two lines", "/deploy staging\nthen\n/deploy prod", []string{"staging", "prod"}},
		{"repeated line once", "/deploy staging\n/deploy staging", []string{"staging"}},
		{"second trigger adds its lines", "/rollback web\n/deploy api", []string{"web", "api"}},
		{"fence closes", "```sh\n/deploy no\n```\n/deploy yes", []string{"yes"}},
		{"tilde fence, longer closing", "~~~\n/deploy no\n~~~~\n/deploy yes", []string{"yes"}},
		{"backtick fence not closed by tildes", "```\n/deploy no\n~~~\n/deploy no2", nil},
		{"quote among lines", "> /deploy old\n/deploy new", []string{"new"}},
		{"CRLF", "hello\r\n/deploy staging\r\n", []string{"staging"}},
		{"up to three spaces of indent", "   /deploy qa", []string{"qa"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := w.Match(comment(GitHub, c.body, false))
			if c.want == nil {
				if m.Matched {
					t.Fatalf("matched %+v, want no match", m)
				}
				return
			}
			if !m.Matched || !slices.Equal(m.Commands, c.want) || m.CommandArgs != c.want[0] {
				t.Fatalf("got %+v, want commands %q", m, c.want)
			}
		})
	}
	dup := mustParse(t, `
on:
  - event: comment
    command: /deploy
    if: 'event.Sender == "nobody"'
  - event: comment
    command: /deploy
  - event: comment
    command: /deploy`)
	if m := dup.Match(comment(GitHub, "/deploy a\n/deploy b", false)); !m.Matched || m.Trigger != 1 || !slices.Equal(m.Commands, []string{"a", "b"}) {
		t.Fatalf("two triggers taking the same lines: %+v", m)
	}
	plain := mustParse(t, "on: [{event: comment}]")
	if m := plain.Match(comment(GitHub, "/deploy a\n/deploy b", false)); !m.Matched || m.Commands != nil {
		t.Fatalf("a trigger without a command: %+v, want one match without commands", m)
	}
}

// edited returns a comment event with another action, as ingress
// normalizes GitHub issue_comment edited/deleted and GitLab note updates.
func edited(e *Event, action string) *Event {
	e.Action = action
	return e
}

// TestMatchCommandActions: a command trigger without actions fires on new
// comments only; actions: names the others explicitly. Parsed and hand-built
// triggers agree.
func TestMatchCommandActions(t *testing.T) {
	triggers := map[string]string{
		"no actions":       "on: [{event: comment, command: /deploy}]",
		"created":          "on: [{event: comment, command: /deploy, actions: [created]}]",
		"created, edited":  "on: [{event: comment, command: /deploy, actions: [created, edited]}]",
		"all three":        "on: [{event: comment, command: /deploy, actions: [created, edited, deleted]}]",
		"edited only":      "on: [{event: comment, command: /deploy, actions: edited}]",
		"no command":       "on: [{event: comment}]",
		"no command, [ed]": "on: [{event: comment, actions: [edited]}]",
	}
	hand := map[string]Trigger{
		"no actions":       {Event: KindComment, Command: "/deploy"},
		"created":          {Event: KindComment, Command: "/deploy", Actions: []string{"created"}},
		"created, edited":  {Event: KindComment, Command: "/deploy", Actions: []string{"created", "edited"}},
		"all three":        {Event: KindComment, Command: "/deploy", Actions: []string{"created", "edited", "deleted"}},
		"edited only":      {Event: KindComment, Command: "/deploy", Actions: []string{"edited"}},
		"no command":       {Event: KindComment},
		"no command, [ed]": {Event: KindComment, Actions: []string{"edited"}},
	}
	cases := []struct {
		trigger string
		action  string
		matched bool
		reason  string
	}{
		{"no actions", "created", true, ""},
		{"no actions", "edited", false, `action "edited" not in [created] (a command trigger without actions: matches new comments only)`},
		{"no actions", "deleted", false, `action "deleted" not in [created] (a command trigger without actions: matches new comments only)`},
		{"created", "created", true, ""},
		{"created", "edited", false, `action "edited" not in [created]`},
		{"created", "deleted", false, `action "deleted" not in [created]`},
		{"created, edited", "created", true, ""},
		{"created, edited", "edited", true, ""},
		{"created, edited", "deleted", false, `action "deleted" not in [created edited]`},
		{"all three", "created", true, ""},
		{"all three", "edited", true, ""},
		{"all three", "deleted", true, ""},
		{"edited only", "created", false, `action "created" not in [edited]`},
		{"edited only", "edited", true, ""},
		{"no command", "created", true, ""}, // without a command, no actions still means any
		{"no command", "edited", true, ""},
		{"no command", "deleted", true, ""},
		{"no command, [ed]", "edited", true, ""},
		{"no command, [ed]", "created", false, `action "created" not in [edited]`},
	}
	for _, c := range cases {
		for _, forge := range []Forge{GitHub, GitLab} {
			if forge == GitLab && c.action == "deleted" {
				continue // GitLab notes are created or edited only
			}
			parsed := mustParse(t, triggers[c.trigger])
			handBuilt := &Workflow{On: []Trigger{hand[c.trigger]}}
			for how, w := range map[string]*Workflow{"parsed": parsed, "hand-built": handBuilt} {
				t.Run(fmt.Sprintf("%s/%s/%s/%s", c.trigger, c.action, forge, how), func(t *testing.T) {
					m := w.Match(edited(comment(forge, "/deploy staging", true), c.action))
					if m.Matched != c.matched || m.Reason != c.reason {
						t.Fatalf("got %+v, want matched %v reason %q", m, c.matched, c.reason)
					}
					if m.Matched && hand[c.trigger].Command != "" && m.CommandArgs != "staging" {
						t.Errorf("command args %q", m.CommandArgs)
					}
				})
			}
		}
	}
}

// TestDocumentedCommandWorkflows: the README's workflow and
// examples/chatops-deploy.yaml start on a new /deploy comment and not when
// an old one is edited or deleted.
func TestDocumentedCommandWorkflows(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## A workflow\n")
	if !ok {
		t.Fatal(`README.md has no "## A workflow" section`)
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the README's workflow section has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	fromReadme, err := Parse("README.md", []byte(block))
	if err != nil {
		t.Fatalf("README workflow: %v", err)
	}
	example, err := ParseFile("../examples/chatops-deploy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*Workflow{"README": fromReadme, "chatops-deploy.yaml": example} {
		for _, forge := range []Forge{GitHub, GitLab} {
			for action, want := range map[string]bool{"created": true, "edited": false, "deleted": false} {
				m := w.Match(edited(comment(forge, "/deploy staging", true), action))
				if m.Matched != want {
					t.Errorf("%s, %s comment %s: matched %v (%s), want %v", name, forge, action, m.Matched, m.Reason, want)
				}
				if m.Matched && m.CommandArgs != "staging" {
					t.Errorf("%s: command args %q, want staging", name, m.CommandArgs)
				}
			}
		}
	}
}

// TestMatchIsPure: matching never changes the event.
func TestMatchIsPure(t *testing.T) {
	w := mustParse(t, "on: [{event: comment, command: /deploy}]")
	e := comment(GitHub, "/deploy staging", true)
	before := fmt.Sprintf("%+v %+v", *e, *e.Comment)
	if m := w.Match(e); !m.Matched || m.CommandArgs != "staging" {
		t.Fatalf("%+v", m)
	}
	if after := fmt.Sprintf("%+v %+v", *e, *e.Comment); after != before || e.CommandArgs != "" {
		t.Errorf("event changed: %s", after)
	}
}

// TestMatchHandBuiltTrigger: a Trigger not made by the parser compiles its
// if: on demand.
func TestMatchHandBuiltTrigger(t *testing.T) {
	w := &Workflow{On: []Trigger{{Event: KindPush, If: `event.Push.Branch == "main"`}}}
	if m := w.Match(push(GitHub, "main")); !m.Matched {
		t.Errorf("main: %+v", m)
	}
	if m := w.Match(push(GitHub, "dev")); m.Matched {
		t.Errorf("dev: %+v", m)
	}
}

func TestAuthorizeAssociations(t *testing.T) {
	policies := []struct {
		name    string
		yaml    string
		allowed []string // associations allowed for a non-fork PR
	}{
		{"default", "", []string{"OWNER", "MEMBER", "COLLABORATOR"}},
		{"members only", "authorize: {author_association: [OWNER, MEMBER]}", []string{"OWNER", "MEMBER"}},
		{"contributors too", "authorize: {author_association: [OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR]}", []string{"OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR"}},
		{"anyone", "authorize: {author_association: []}", AuthorAssociations},
	}
	for _, p := range policies {
		w := mustParse(t, p.yaml)
		for _, assoc := range AuthorAssociations {
			for _, forge := range []Forge{GitHub, GitLab} {
				t.Run(fmt.Sprintf("%s/%s/%s", p.name, forge, assoc), func(t *testing.T) {
					e := ghPR("opened", "main", false)
					e.Forge = forge
					e.AuthorAssociation = assoc
					want := false
					for _, a := range p.allowed {
						want = want || a == assoc
					}
					ok, reason := w.Authorize(e)
					if ok != want {
						t.Errorf("Authorize = %v (%s), want %v", ok, reason, want)
					}
					if reason == "" {
						t.Error("no reason")
					}
					if !ok && !strings.Contains(reason, assoc) {
						t.Errorf("reason %q does not name the association", reason)
					}
				})
			}
		}
	}
}

func TestAuthorize(t *testing.T) {
	forkPR := func(assoc, sender string) *Event {
		e := ghPR("opened", "main", true)
		e.AuthorAssociation, e.Sender = assoc, sender
		return e
	}
	forkComment := func(assoc string) *Event {
		e := comment(GitHub, "/review", true)
		e.PullRequest.Fork = true
		e.AuthorAssociation = assoc
		return e
	}
	cases := []struct {
		name   string
		policy string
		event  *Event
		ok     bool
		reason string
	}{
		{"fork PR by a member: trusted", "", forkPR("MEMBER", "alice"), true, "author association MEMBER is allowed"},
		{"fork PR by an outsider: refused by association", "", forkPR("NONE", "mallory"), false, `author association NONE of "mallory" not in [OWNER MEMBER COLLABORATOR]`},
		{"fork PR by an outsider listed in users", "authorize: {users: [Mallory]}", forkPR("NONE", "mallory"), true, `user "mallory" is listed in authorize.users`},
		{"fork PR, any association, forks refused", "authorize: {author_association: []}", forkPR("CONTRIBUTOR", "x"), false, `pull request from a fork and "x" is not trusted (allow_forks is false)`},
		{"fork PR, any association, forks allowed", "authorize: {author_association: [], allow_forks: true}", forkPR("FIRST_TIMER", "x"), true, "any author association is allowed"},
		{"fork PR, any association, listed user", "authorize: {author_association: [], users: [x]}", forkPR("NONE", "x"), true, `user "x" is listed in authorize.users`},
		{"allow_forks does not widen associations", "authorize: {allow_forks: true}", forkPR("NONE", "x"), false, `author association NONE of "x" not in [OWNER MEMBER COLLABORATOR]`},
		{"non-fork PR, any association", "authorize: {author_association: []}", ghPR("opened", "main", false), true, "any author association is allowed"},
		{"comment on a fork PR by an owner", "", forkComment("OWNER"), true, "author association OWNER is allowed"},
		{"comment on a fork PR by a first-time contributor", "", forkComment("FIRST_TIME_CONTRIBUTOR"), false, `author association FIRST_TIME_CONTRIBUTOR of "carol" not in [OWNER MEMBER COLLABORATOR]`},
		{"comment on a fork PR, any association", "authorize: {author_association: []}", forkComment("MANNEQUIN"), false, `pull request from a fork and "carol" is not trusted (allow_forks is false)`},
		{"github push: write access", "authorize: {author_association: [OWNER]}", push(GitHub, "main"), true, "pushes are authorized by the forge's write access"},
		{"gitlab push: write access", "", push(GitLab, "main"), true, "pushes are authorized by the forge's write access"},
		{"gitlab event without association counts as NONE", "", glMR("opened", "main"), false, `author association NONE of "bob" not in [OWNER MEMBER COLLABORATOR]`},
		{"gitlab sender listed", "authorize: {users: [bob]}", glMR("opened", "main"), true, `user "bob" is listed in authorize.users`},
		{"issue by anyone", "authorize: {author_association: []}", issue("opened"), true, "any author association is allowed"},
		{"issue by NONE, default policy", "", issue("opened"), false, `author association NONE of "erin" not in [OWNER MEMBER COLLABORATOR]`},
		{"nil event", "", nil, false, "no event"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := mustParse(t, c.policy)
			ok, reason := w.Authorize(c.event)
			if ok != c.ok || reason != c.reason {
				t.Errorf("Authorize = %v, %q; want %v, %q", ok, reason, c.ok, c.reason)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	lookup := EnvLookup([]EnvVar{{"A", "1"}, {"TITLE", "$(rm -rf /) ${A}"}, {"EMPTY", ""}}, []EnvVar{{"A", "2"}})
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"${A}", "2"},                                    // later list wins
		{"x${A}y${A}z", "x2y2z"},                         // several
		{"$A and ${A}", "$A and 2"},                      // only the braced form
		{"${UNKNOWN} stays", "${UNKNOWN} stays"},         // unknown names left as is
		{"${TITLE}", "$(rm -rf /) ${A}"},                 // values are never expanded again
		{"${EMPTY}|", "|"},                               // known but empty
		{"${1A} ${A-B} ${} ${A", "${1A} ${A-B} ${} ${A"}, // malformed references left alone
		{"$${A}", "$2"},                                  // no escaping syntax: $ then ${A}
		{"${A}${", "2${"},                                // trailing
		{"unicode ${A}é", "unicode 2é"},                  // bytes around are kept
		{"${a_b}", "${a_b}"},                             // case-sensitive, unknown
		{"nested ${${A}}", "nested ${2}"},                // the outer one is not a name; the inner one expands, once
	}
	for _, c := range cases {
		if got := Expand(c.in, lookup); got != c.want {
			t.Errorf("Expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMatchDeletedPush: a push that deletes its branch (Push.Deleted)
// triggers only a trigger with deleted: true, on both forges, and such a
// trigger matches nothing else; a deleted push has no head to check out.
func TestMatchDeletedPush(t *testing.T) {
	deleted := func(forge Forge, branch string) *Event {
		e := push(forge, branch)
		e.Push.After = strings.Repeat("0", 40)
		e.Push.Deleted = true
		return e
	}
	workflows := map[string]string{
		"any push":       "on: [{event: push}]",
		"main":           "on: [{event: push, branches: [main]}]",
		"deleted: false": "on: [{event: push, deleted: false}]",
		"deletions":      "on: [{event: push, deleted: true}]",
		"main deleted":   "on: [{event: push, branches: [main], deleted: true}]",
		"both":           "on: [{event: push}, {event: push, deleted: true}]",
	}
	tests := []struct {
		workflow string
		event    func(Forge, string) *Event
		branch   string
		want     bool
	}{
		{"any push", push, "main", true},
		{"any push", deleted, "main", false},
		{"main", deleted, "main", false},
		{"deleted: false", deleted, "main", false},
		{"deleted: false", push, "main", true},
		{"deletions", deleted, "feature", true},
		{"deletions", push, "feature", false},
		{"main deleted", deleted, "main", true},
		{"main deleted", deleted, "dev", false},
		{"both", push, "dev", true},
		{"both", deleted, "dev", true},
	}
	for _, tt := range tests {
		for _, forge := range []Forge{GitHub, GitLab} {
			e := tt.event(forge, tt.branch)
			name := fmt.Sprintf("%s/%s/deleted=%v/%s", tt.workflow, forge, e.Push.Deleted, tt.branch)
			t.Run(name, func(t *testing.T) {
				m := mustParse(t, workflows[tt.workflow]).Match(e)
				if m.Matched != tt.want {
					t.Errorf("matched = %v (%s), want %v", m.Matched, m.Reason, tt.want)
				}
				if !m.Matched && e.Push.Deleted && tt.workflow != "main deleted" && !strings.Contains(m.Reason, "deletes the branch") {
					t.Errorf("reason %q does not say the push deletes the branch", m.Reason)
				}
			})
		}
	}
	if sha := deleted(GitHub, "main").HeadSHA(); sha != "" {
		t.Errorf("HeadSHA of a deleted push = %q, want none", sha)
	}
}

// TestMatchPaths: paths and paths_ignore select by the changed files with
// doublestar globs; files unknown or truncated match.
func TestMatchPaths(t *testing.T) {
	w := mustParse(t, `
on:
  - event: pull_request
    paths: ["src/**/*.go", "go.mod"]
    paths_ignore: ["src/**/*_test.go"]
  - event: push
    paths_ignore: ["docs/**", "**/*.md"]`)
	pr := func(files *ChangedFiles) *Event {
		e := ghPR("opened", "main", false)
		e.Files = files
		return e
	}
	ps := func(files *ChangedFiles) *Event {
		e := push(GitHub, "main")
		e.Files = files
		return e
	}
	list := func(paths ...string) *ChangedFiles { return &ChangedFiles{Paths: paths} }
	cases := []struct {
		name    string
		event   *Event
		matched bool
		reason  string
	}{
		{"deep go file", pr(list("README.md", "src/a/b/c.go")), true, ""},
		{"go file at the top of src", pr(list("src/main.go")), true, ""},
		{"go.mod", pr(list("go.mod")), true, ""},
		{"only tests", pr(list("src/a/x_test.go", "README.md")), false, "no changed file in paths [src/**/*.go go.mod] outside paths_ignore [src/**/*_test.go]"},
		{"nothing changed", pr(list()), false, "no changed files"},
		{"truncated list matches", pr(&ChangedFiles{Paths: []string{"README.md"}, Truncated: true}), true, ""},
		{"unknown files match", pr(&ChangedFiles{Unknown: "the API is down"}), true, ""},
		{"not looked up matches", pr(nil), true, ""},
		{"push of docs only", ps(list("docs/a/b.txt", "x/README.md")), false, "every changed file is in paths_ignore [docs/** **/*.md]"},
		{"push with code", ps(list("docs/a.txt", "main.go")), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := w.Match(c.event)
			if m.Matched != c.matched || (!c.matched && m.Reason != c.reason) {
				t.Fatalf("got %+v, want matched %v reason %q", m, c.matched, c.reason)
			}
		})
	}
	if !w.HasPaths(KindPullRequest) || !w.HasPaths(KindPush) || w.HasPaths(KindComment) {
		t.Fatal("HasPaths")
	}
	if _, err := Parse("c.yaml", []byte("on: [{event: comment, paths: [a]}]\nsteps: [{id: a, run: x}]")); err == nil ||
		!strings.Contains(err.Error(), "c.yaml:1:31: on: paths is only for event: pull_request or push") {
		t.Fatalf("paths on a comment trigger: %v", err)
	}
}

func TestCommandOf(t *testing.T) {
	comment := func(action, body string) *Event {
		return &Event{Kind: KindComment, Action: action, Comment: &Comment{Body: body}}
	}
	for _, tc := range []struct {
		e    *Event
		args string
		ok   bool
	}{
		{comment("created", "/retry"), "", true},
		{comment("created", "  /retry please\nmore"), "please", true},
		{comment("created", "/retryx"), "", false},
		{comment("edited", "/retry"), "", false},
		{comment("created", "thanks\n/retry"), "", true},
		{comment("created", "> /retry\n```\n/retry\n```"), "", false},
		{&Event{Kind: KindIssue, Action: "created"}, "", false},
		{nil, "", false},
	} {
		args, ok := CommandOf("/retry", tc.e)
		if ok != tc.ok || args != tc.args {
			t.Errorf("%+v: %q %v, want %q %v", tc.e, args, ok, tc.args, tc.ok)
		}
	}
}

// TestMatchLabelActionUnknown: an event whose label action the forge left
// unknown (LabelActionUnknown) matches triggers on labeled and on
// unlabeled; a known one only its own.
func TestMatchLabelActionUnknown(t *testing.T) {
	ev := func(action string, unknown bool) *Event {
		return &Event{Forge: GitHub, Kind: KindPullRequest, Action: action, Repo: "o/r", LabelActionUnknown: unknown,
			PullRequest: &PullRequest{Number: 1, HeadSHA: "abc", BaseRef: "main"}}
	}
	tests := []struct {
		on   string
		e    *Event
		want bool
	}{
		{"labeled", ev("labeled", false), true},
		{"unlabeled", ev("labeled", false), false},
		{"labeled", ev("unlabeled", false), false},
		{"unlabeled", ev("labeled", true), true},
		{"labeled", ev("labeled", true), true},
		{"opened", ev("labeled", true), false},
	}
	for _, tt := range tests {
		w := mustParse(t, "on: [{event: pull_request, actions: ["+tt.on+"]}]")
		if m := w.Match(tt.e); m.Matched != tt.want {
			t.Errorf("on %s, event %s (unknown %v): matched = %v (%s), want %v", tt.on, tt.e.Action, tt.e.LabelActionUnknown, m.Matched, m.Reason, tt.want)
		}
	}
}

func TestMatchRepo(t *testing.T) {
	tests := []struct {
		pattern, repo string
		want          bool
	}{
		{"myorg/*", "myorg/app", true},
		{"myorg/*", "MyOrg/App", true}, // forges compare names case-insensitively
		{"MYORG/app", "myorg/APP", true},
		{"myorg/*", "myorg", false},
		{"myorg/*", "other/app", false},
		{"myorg/*", "myorgx/app", false},
		{"myorg/*", "evil/myorg/app", false},
		{"myorg/*", "myorg/sub/app", false}, // * never crosses /
		{"myorg/**", "myorg/sub/app", true}, // ** does
		{"myorg/**", "myorg/app", true},
		{"myorg/**", "myorg", false},
		{"myorg/**/app", "myorg/a/b/app", true},
		{"myorg/**/app", "myorg/a/b/other", false},
		{"**", "anyone/anything", true},
		{"**", "group/sub/project", true},
		{"**", "", false},
		{"group/*/project", "group/sub/project", true},
		{"group/*/project", "group/sub/deeper/project", false},
		{"myorg/app-*", "myorg/app-web", true},
		{"myorg/app-*", "myorg/app-", true},
		{"myorg/app-*", "myorg/web-app", false},
		{"myorg/*-svc", "myorg/pay-svc", true},
		{"myorg/a?c", "myorg/abc", true},
		{"myorg/a?c", "myorg/a/c", false},
		{"myorg/a?c", "myorg/ac", false},
		{"my*/*", "myorg/app", true},
		{"*/*", "a/b", true},
		{"*/*", "a/b/c", false},
		{"codertocat/hello-world", "Codertocat/Hello-World", true},
		{"codertocat/hello-world", "Codertocat/Hello-World2", false},
		{"myorg/app", "myorg/app/../../evil/x", false},
		// Malformed patterns match nothing.
		{"", "myorg/app", false},
		{"myorg", "myorg", false},
		{"myorg/***", "myorg/app", false},
		{"myorg/[ab]", "myorg/a", false},
		{"*", "myorg", false},
	}
	for _, tt := range tests {
		if got := MatchRepo(tt.pattern, tt.repo); got != tt.want {
			t.Errorf("MatchRepo(%q, %q) = %v, want %v", tt.pattern, tt.repo, got, tt.want)
		}
	}
	if !AnyRepo([]string{"a/*", "myorg/**"}, "myorg/x/y") || AnyRepo([]string{"a/*"}, "b/c") || AnyRepo(nil, "a/b") {
		t.Errorf("AnyRepo wrong")
	}
	// Many wildcards against a long path stay fast (no backtracking).
	long := strings.Repeat("a/", 100) + "b"
	if MatchRepo(strings.Repeat("**a", 40)+"/c", long) {
		t.Errorf("matched a path that does not end in /c")
	}
}

func TestCheckRepoPattern(t *testing.T) {
	tests := []struct {
		pattern, wantErr string
	}{
		{"myorg/*", ""},
		{"myorg/**", ""},
		{"group/sub/project", ""},
		{"my.org_x/app-1?", ""},
		{"**", ""},
		{"", "empty"},
		{"myorg", `want owner/name (e.g. "myorg/*")`},
		{"*", "no slash"},
		{"/myorg/app", "empty path segment"},
		{"myorg/", "empty path segment"},
		{"myorg//app", "empty path segment"},
		{"myorg/***", "more than two *"},
		{"myorg/[ab]", `contains '['`},
		{"myorg/a b", `contains ' '`},
		{"https://github.com/myorg/app", "empty path segment"},
		{"github.com:myorg/app", `contains ':'`},
		{strings.Repeat("a/", 200), "longer than 256"},
	}
	for _, tt := range tests {
		err := CheckRepoPattern(tt.pattern)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("CheckRepoPattern(%q) = %v, want nil", tt.pattern, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("CheckRepoPattern(%q) = %v, want an error containing %q", tt.pattern, err, tt.wantErr)
		}
	}
}

func BenchmarkMatchRepo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MatchRepo("myorg/**/svc-*", "myorg/platform/team/svc-payments")
	}
}
