package workflows

import (
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file is the one description of the workflow format's fields: for
// each mapping (the top level, a trigger, a step, a container, ...) a table
// of its keys, each with how its value is written, the rule it obeys, its
// default and its description. The rest follows from the tables:
//
//   - the raw layer reads a mapping by its table: the known keys, each value
//     by its slot's type, every other key an unknown field (raw.go, object);
//   - the second layer applies each field's rule and fills in each default
//     (parse.go, checkFields);
//   - Schema prints the same tables as JSON Schema (schema.go, fieldSchema).
//
// A new field is one line in its table, plus its slot in the raw struct, its
// field in the validated type (workflow.go), the line in build that copies
// it across, and its row in docs/workflows.md. A new enum value, pattern or
// bound is one edit here.
//
// The rules between a trigger's event and its other keys, and between
// triggers and the rest of a workflow (command only for comments (/word)
// and chat (word); no branches for issues, no labels for pushes, paths only
// for pull requests and pushes; chat triggers with command and repo and no
// repos; repo and forge only for chat; deleted only for pushes, and not
// with checkout; a workflow with a chat trigger has slack_users and
// slack_channels) are tables too, in rules.go, which the parser and the
// schema both read.
//
// Written by hand, in build (parse.go) and where JSON Schema can say it in
// schemaDoc (schema.go), with the patterns and enums declared here: the
// other rules between fields (run or action, one of them; with only with an
// action; working_dir or dir; timeout or timeout_sec; interval or
// interval_sec, max_interval or max_interval_sec; a root working_dir inside
// the workspace in server mode; an expected re: that compiles; a step id or
// a name that is one; prompt_mode flag needs prompt_flag; the actions of
// each event kind; with.provider and, but in a fallback, with.prompt
// required; at least one step), the names of harnesses and of with's
// flags, the fields marked own, and the rules JSON Schema cannot say
// (parserOnly in schema_test.go, listed in docs/workflows.md#checking-files).

// field is one key of a mapping in a workflow file.
type field struct {
	key string
	// to is the raw struct's slot the value is read into; its type says how
	// the value is written and how the schema types it: *val[string],
	// *val[bool], *val[int], *val[int64], *val[float64],
	// *val[time.Duration], *list[string], *list[int] or *envList.
	// It is nil for a nested mapping or list, which read fills in.
	to   any
	form form // how the value is written where to's type leaves a choice
	// read, when set, reads the value instead of the reader for to (a
	// nested mapping, a key with a second spelling, an irregular form).
	read func(r *reader, f *field, k, v *yaml.Node)
	// schema, when set, is the value's schema instead of the one derived
	// from to and the rules below (it must be set when to is nil).
	schema func() obj
	doc    string // the schema's description

	required bool     // the key must be there
	example  string   // what to write, in "is required" problems (default: the enum values)
	enum     []string // the value, or each item, is one of these (one value: a const)
	pattern  *pattern // the value, or each item, matches
	nonEmpty bool     // the value, or each item, is not ""
	bounds   *bounds  // the number, or each item, is within
	unique   bool     // no item twice
	// own says the parser checks this field's rule itself, in build, where
	// the rule needs words or context of its own (a step id, secrets); the
	// rule is still declared here, for the schema and for that check.
	own bool
	def any // the default, filled in by the parser and shown by the schema
}

// form says how a value is written where the slot's type leaves a choice.
type form int

const (
	formPlain     form = iota
	formOneOrList      // a list of strings, or one string as a list of one (Dagu's `depends: a`)
	formSeconds        // a duration written as integer seconds (Dagu's interval_sec)
	formSize           // a byte count: an integer, or a number with a unit (512m, 1g)
	formParams         // env, or Dagu's params string "A=1 B=two"
)

// pattern is a rule on strings. src is the one regular expression of the
// rule: the parser compiles it and the schema prints it as "pattern", so it
// keeps to the syntax RE2 and ECMA-262 share. fails words a value that does
// not match, after the quoted value; why, when set, words it by the value.
type pattern struct {
	src   string
	re    *regexp.Regexp
	fails string
	why   func(v string) string
	bare  bool // the problem leaves the value out ("must not be empty")
	// unicode, when set, is what the parser matches with instead of re,
	// where RE2 reads src other than ECMA-262 (editors) does: RE2's \s is
	// ASCII only, ECMA's takes in Unicode spaces.
	unicode func(v string) bool
}

// matches reports whether v matches the pattern.
func (p *pattern) matches(v string) bool {
	if p.unicode != nil {
		return p.unicode(v)
	}
	return p.re.MatchString(v)
}

// compiled compiles p's src; fails defaults to "must match" and the hint.
func compiled(p *pattern) *pattern {
	p.re = regexp.MustCompile(p.src)
	if p.fails == "" && p.why == nil {
		p.fails = "must match " + p.hint()
	}
	return p
}

// hint is the pattern as messages show it: without its anchors.
func (p *pattern) hint() string {
	return strings.TrimSuffix(strings.TrimPrefix(p.src, "^"), "$")
}

// problem words a value v that does not match.
func (p *pattern) problem(v string) string {
	if p.why != nil {
		return p.why(v)
	}
	return p.fails
}

// bounds is a rule on numbers: at least min (more than min when open) and,
// when capped, at most max. fails words an item out of bounds, after the
// value.
type bounds struct {
	min    float64
	open   bool
	max    float64
	capped bool
	fails  string
}

func atLeast(n float64) *bounds      { return &bounds{min: n} }
func moreThan(n float64) *bounds     { return &bounds{min: n, open: true} }
func between(lo, hi float64) *bounds { return &bounds{min: lo, max: hi, capped: true} }

// has reports whether x is within the bounds (NaN is: it was reported as
// not a number).
func (b *bounds) has(x float64) bool {
	return !(x < b.min || b.open && x == b.min || b.capped && x > b.max)
}

// saying returns the bounds with fails set.
func (b *bounds) saying(fails string) *bounds {
	c := *b
	c.fails = fails
	return &c
}

// list is a list as read: its items, each with its node, and the list's
// own node (nil when the key was absent).
type list[T any] = val[[]val[T]]

// envNameSrc is the rule for environment variable names: env and params
// keys, step outputs and the ${NAME} references Expand substitutes.
const envNameSrc = `[A-Za-z_][A-Za-z0-9_]*`

// The patterns of the format.
var (
	workflowName = compiled(&pattern{src: `^[a-z0-9-]+$`})
	stepID       = compiled(&pattern{src: `^[A-Za-z0-9_-]+$`}) // also harness names
	envName      = compiled(&pattern{src: `^` + envNameSrc + `$`, fails: "is not a valid variable name (" + envNameSrc + ")"})
	secretName   = compiled(&pattern{src: `^[A-Z_][A-Z0-9_]*$`})
	flagName     = compiled(&pattern{src: `^[A-Za-z0-9][A-Za-z0-9_-]*$`, fails: "is not a valid flag name"})
	nonBlank     = compiled(&pattern{src: `\S`, fails: "must not be empty", bare: true,
		unicode: func(v string) bool { return strings.TrimSpace(v) != "" }})
	slackID      = compiled(&pattern{src: `^[A-Z0-9]+$`, fails: "is not a Slack id (U0123ABCD, C0123ABCD): names can change, ids do not"})
	absolutePath = compiled(&pattern{src: `^/`, fails: "must be an absolute path"})
	volumeSpec   = compiled(&pattern{src: `^[^:]+:/[^:]*(:(ro|rw))?$`, fails: "must be host:container[:ro|rw] with an absolute container path"})
	// commandWord is one word: /deploy for a comment, deploy for a chat
	// command (the word after the slash command); which of the two is
	// build's rule (commentCommand, chatCommandWord), and the schema's.
	commandWord = compiled(&pattern{src: `^/?[^\s/]\S*$`, why: func(c string) string {
		if strings.TrimSpace(c) == "" || c == "/" || strings.HasPrefix(c, "//") {
			return "must start with / and a word, like /deploy"
		}
		return "must be one word; arguments come after it in the comment"
	}})
	commentCommand  = compiled(&pattern{src: `^/`, fails: "must start with / and a word, like /deploy"})
	chatCommandWord = compiled(&pattern{src: `^[^/]`, fails: "of a chat trigger is the word after the slash command, without /: like deploy for /hookrun deploy"})
	// scheduleSyntax is the shape of a schedule; CheckSchedule is its rule
	// (field ranges, @every's duration).
	scheduleSyntax = compiled(&pattern{src: `^[ \t]*(@[a-z]+|@every[ \t]+[^ \t]+|[^ \t@]+([ \t]+[^ \t]+){4})[ \t]*$`,
		fails: "must be a 5-field cron (minute hour day-of-month month day-of-week), @every <duration>, @hourly or @daily"})
	repoName       = compiled(&pattern{src: `^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$`, fails: "must be owner/name (or group/.../project), no globs"})
	durationSyntax = compiled(&pattern{src: `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`})
	sizeSyntax     = compiled(&pattern{src: `^[0-9]+\s*([kKmMgGtT][iI]?[bB]?|[bB])?$`})
	paramsString   = compiled(&pattern{src: `^\s*(` + envNameSrc + `=\S*\s*)*$`})
	envItemString  = compiled(&pattern{src: `^` + envNameSrc + `=`})
)

// The enums of the format.
var (
	workflowTypes    = []string{TypeGraph, TypeChain}
	commentModes     = []string{CommentSticky, CommentNew, CommentNone}
	pullPolicies     = []string{PullAlways, PullMissing, PullNever}
	promptModes      = []string{PromptArg, PromptFlag, PromptStdin}
	stepActions      = []string{ActionHarnessRun}
	sandboxProviders = []string{"sbx"}
	pushModes        = []string{PushBranch, PushPullRequest, PushNone}
	permissionStates = []string{PermitClose, PermitReopen}
	kindNames        = stringsOf(Kinds)
)

// continueWords are the conditions continue_on names, each with what it
// sets ("failure" is Dagu's spelling of "failed").
var continueWords = []struct {
	word string
	set  func(c *ContinueOn, on bool)
}{
	{"failed", func(c *ContinueOn, on bool) { c.Failed = on }},
	{"failure", func(c *ContinueOn, on bool) { c.Failed = on }},
	{"skipped", func(c *ContinueOn, on bool) { c.Skipped = on }},
}

// handler is one key of handler_on and the slot of its step.
type handler struct {
	key  string
	slot **Step
}

// handlers lists the keys of handler_on, each with its slot in h.
func (h *HandlerOn) handlers() []handler {
	return []handler{{"success", &h.Success}, {"failure", &h.Failure}, {"cancel", &h.Cancel}, {"exit", &h.Exit}}
}

// nested is a field holding a mapping or a list that read puts into a slot
// of its own; schema describes it.
func nested(key, doc string, schema func() obj, read func(r *reader, v *yaml.Node)) field {
	return field{key: key, doc: doc, schema: schema, read: func(r *reader, _ *field, _, v *yaml.Node) { read(r, v) }}
}

// mustHave marks a nested field required (for the schema: build checks it).
func mustHave(f field) field {
	f.required = true
	return f
}

// fields is the table of the top level of a workflow file.
func (w *rawWorkflow) fields() []field {
	return []field{
		{key: "name", to: &w.name, pattern: workflowName, doc: "unique across loaded files; default: the file's base name"},
		{key: "description", to: &w.description},
		nested("on", "any matching entry triggers a run; none: only `hookrun run` or the API", arrayOf("trigger"), w.readOn),
		nested("authorize", "", refTo("authorize"), func(r *reader, v *yaml.Node) {
			w.authorize = readInto(r, &rawAuthorize{node: v}, v, "authorize", "")
		}),
		nested("concurrency", "", inline((*rawConcurrency).fields), func(r *reader, v *yaml.Node) {
			w.concurrency = readInto(r, &rawConcurrency{node: v}, v, "concurrency", "concurrency.")
		}),
		{key: "type", to: &w.typ, enum: workflowTypes, def: TypeGraph},
		{key: "max_active_steps", to: &w.maxActiveSteps, bounds: atLeast(1), def: DefaultMaxActiveSteps},
		{key: "working_dir", to: &w.workingDir, pattern: nonBlank, own: true,
			doc: "where steps run by default: relative to the workspace unless absolute; in serve, inside the workspace"},
		{key: "timeout", to: &w.timeout, read: onlyOnce("timeout")},
		{key: "timeout_sec", to: &w.timeout, form: formSeconds, read: onlyOnce("timeout"), doc: "Dagu's timeout in seconds"},
		nested("preconditions", "all must hold, or the run is skipped", refTo("preconditions"), func(r *reader, v *yaml.Node) {
			w.preconditions = r.readPreconditions(v, "preconditions")
		}),
		{key: "env", to: &w.env},
		{key: "params", to: &w.params, form: formParams},
		{key: "secrets", to: &w.secrets, pattern: secretName, unique: true, own: true},
		{key: "checkout", to: &w.checkout, def: false},
		nested("sandbox", "", inline((*rawSandbox).fields), func(r *reader, v *yaml.Node) {
			w.sandbox = readInto(r, &rawSandbox{node: v}, v, "sandbox", "sandbox.")
		}),
		nested("container", "", refTo("container"), func(r *reader, v *yaml.Node) {
			w.container = readInto(r, &rawContainer{node: v}, v, "container", "container.")
		}),
		nested("harnesses", "", harnessesSchema, w.readHarnesses),
		mustHave(nested("steps", "", stepsSchema, w.readSteps)), // with at least one step: checked in build
		nested("handler_on", "", handlerOnSchema, w.readHandlers),
		nested("report", "", inline((*rawReport).fields), func(r *reader, v *yaml.Node) {
			w.report = readInto(r, &rawReport{node: v}, v, "report", "report.")
		}),
		nested("permissions", "what a run may ask hookrun to do on the forge ($HOOKRUN_RESULTS/actions.json); none: nothing",
			inline((*rawPermissions).fields), func(r *reader, v *yaml.Node) {
				w.permissions = readInto(r, &rawPermissions{node: v}, v, "permissions", "permissions.")
			}),
		{key: "schedule", to: &w.schedule, form: formOneOrList, pattern: scheduleSyntax, own: true,
			doc: "Dagu's schedule: cron expressions (or @every, @hourly, @daily) on which the workflow runs on its repo:, as on: [{schedule, repo, forge}]"},
		{key: "repo", to: &w.repo, pattern: repoName, doc: "with schedule: the repository (owner/name) the scheduled runs act on"},
		{key: "forge", to: &w.forge, enum: chatForgeNames(), doc: "with schedule: the forge repo lives on; default " + string(DefaultChatForge())},
	}
}

// fields is the table of `permissions:`.
func (p *rawPermissions) fields() []field {
	return []field{
		{key: "labels", to: &p.labels, pattern: nonBlank,
			doc: "labels a run may add or remove: names or globs (area/*)"},
		{key: "assignees", read: p.readAssignees, schema: func() obj {
			return obj{"anyOf": []any{obj{"type": "boolean"}, obj{"type": "array", "items": obj{"type": "string", "pattern": nonBlank.src}}}}
		}, doc: "true: a run may assign and unassign anyone; a list: only these logins"},
		{key: "state", to: &p.state, enum: permissionStates, doc: "close: a run may close; reopen: reopen"},
		{key: "comment", to: &p.comment, def: false, doc: "a run may post a comment of its own"},
		{key: "targets", to: &p.targets, def: false, doc: "a run may act on other issues and pull requests than its event's (actions.json targets)"},
		{key: "create_labels", to: &p.createLabels, def: false,
			doc: "labels missing on the repository are created; false: refused"},
	}
}

// fields is the table of an entry of `on:`.
func (t *rawTrigger) fields() []field {
	return []field{
		{key: "event", to: &t.event, enum: kindNames,
			doc: "required, but for a trigger with schedule: (whose event is schedule)"},
		{key: "actions", to: &t.actions, form: formOneOrList,
			doc: "normalized actions; empty: any, but a trigger with command: matches only created (new comments) unless actions names others"},
		{key: "branches", to: &t.branches, form: formOneOrList, nonEmpty: true},
		{key: "command", to: &t.command, pattern: commandWord,
			doc: "comment: /word; a line of a new comment (outside code blocks and quotes) starts with it (edited or deleted comments only if actions: names them); the rest of the line is HOOKRUN_COMMAND_ARGS; each such line is one run. chat (required there): the word after the slash command, without /; the rest of the text is HOOKRUN_COMMAND_ARGS"},
		{key: "labels", to: &t.labels, form: formOneOrList},
		{key: "repos", to: &t.repos, form: formOneOrList, nonEmpty: true},
		{key: "deleted", to: &t.deleted, def: false,
			doc: "push only: true matches pushes that delete the branch or tag (and only those); false, pushes that do not"},
		{key: "paths", to: &t.paths, form: formOneOrList, nonEmpty: true,
			doc: "pull_request and push only: globs (** crosses directories) of which at least one changed file must match"},
		{key: "paths_ignore", to: &t.ignore, form: formOneOrList, nonEmpty: true,
			doc: "pull_request and push only: globs of changed files that do not count; no other changed file, no run"},
		{key: "repo", to: &t.repo, pattern: repoName,
			doc: "chat and schedule only, and required there: the repository (owner/name) a run acts on: its checkout, HOOKRUN_REPO, allow_repos"},
		{key: "forge", to: &t.forge, enum: chatForgeNames(), doc: "chat and schedule only: the forge repo lives on; default " + string(DefaultChatForge())},
		{key: "schedule", to: &t.schedule, pattern: scheduleSyntax, own: true,
			doc: "a schedule trigger (event schedule): a 5-field cron expression in UTC (minute hour day-of-month month day-of-week), @every <duration> (at least 1s), @hourly or @daily; one run per tick across all servers"},
		{key: "timezone", to: &t.timezone,
			doc: "schedule only: the IANA zone (Europe/Berlin) of a cron expression's times; default UTC"},
		{key: "if", to: &t.ifExpr, pattern: nonBlank, doc: "expr-lang expression over `event`"},
	}
}

// fields is the table of `authorize:`.
func (a *rawAuthorize) fields() []field {
	return []field{
		{key: "author_association", to: &a.assoc, enum: AuthorAssociations, def: DefaultAuthorAssociations,
			doc: "[] lets any association through (forks then need allow_forks)"},
		{key: "users", to: &a.users, pattern: nonBlank},
		{key: "allow_forks", to: &a.allowForks, def: false},
		{key: "slack_users", to: &a.slackUsers, pattern: slackID,
			doc: "chat: Slack user ids (U…, W…) allowed; a chat command runs only when its user AND channel are listed; none: no chat command runs"},
		{key: "slack_channels", to: &a.slackChans, pattern: slackID,
			doc: "chat: Slack channel ids (C…, G…, D… for a direct message) commands are allowed in"},
	}
}

// fields is the table of `concurrency:`.
func (c *rawConcurrency) fields() []field {
	return []field{
		{key: "group", to: &c.group, required: true, pattern: nonBlank},
		{key: "cancel_in_progress", to: &c.cancel},
	}
}

// fields is the table of `sandbox:`.
func (s *rawSandbox) fields() []field {
	return []field{
		{key: "provider", to: &s.provider, required: true, enum: sandboxProviders},
		{key: "agent", to: &s.agent, required: true, example: "claude, codex, ...", pattern: nonBlank},
		{key: "push", to: &s.push, enum: pushModes, def: PushBranch,
			doc: "with checkout: true, where the agent's commits go: branch hookrun/<workflow>/<number> of the base repository, also a draft pull request, or nowhere"},
	}
}

// fields is the table of a root or step `container:`.
func (c *rawContainer) fields() []field {
	return []field{
		{key: "image", to: &c.image, required: true, pattern: nonBlank},
		{key: "pull_policy", to: &c.pullPolicy, enum: pullPolicies, def: PullMissing},
		{key: "working_dir", to: &c.workingDir, pattern: absolutePath, def: "/workspace"},
		{key: "volumes", to: &c.volumes, pattern: volumeSpec},
		{key: "env", to: &c.env},
		{key: "user", to: &c.user, doc: "user[:group] the container's processes run as; default: the image's (often root, with a reduced set of capabilities)"},
		{key: "network", to: &c.network,
			doc: "default (or bridge): a network of the run's own; none, host or a network's name: that network"},
		nested("capabilities", "added to the default set (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, NET_BIND_SERVICE); all others are dropped",
			inline((*rawCapabilities).fields), func(r *reader, v *yaml.Node) {
				c.caps = readInto(r, &rawCapabilities{node: v}, v, "capabilities", "capabilities.")
			}),
		{key: "memory", to: &c.memory, form: formSize, bounds: moreThan(0)},
		{key: "cpus", to: &c.cpus, bounds: moreThan(0)},
		{key: "pids", to: &c.pids, bounds: moreThan(0)},
	}
}

// fields is the table of a container's `capabilities:`.
func (c *rawCapabilities) fields() []field {
	return []field{
		{key: "add", to: &c.add, enum: Capabilities, unique: true},
	}
}

// fields is the table of an entry of `harnesses:`.
func (h *rawHarness) fields() []field {
	return []field{
		{key: "binary", to: &h.binary, required: true, pattern: nonBlank},
		{key: "prefix_args", to: &h.prefixArgs},
		{key: "prompt_mode", to: &h.promptMode, enum: promptModes, def: PromptArg},
		{key: "prompt_flag", to: &h.promptFlag},
	}
}

// fields is the table of a step (and of a handler_on step).
func (s *rawStep) fields() []field {
	// workingDir reads working_dir or its Dagu alias dir into one slot.
	workingDir := func(r *reader, f *field, k, v *yaml.Node) {
		if s.workingDir.set() {
			r.errf(k, "%s and working_dir are the same field; use one", k.Value)
			return
		}
		r.value(f, v, k.Value)
	}
	return []field{
		{key: "id", to: &s.id, pattern: stepID, own: true, doc: "unique step id; depends and logs refer to it"},
		{key: "name", to: &s.name, doc: "display name; default: id (a Dagu name that is a valid id serves as the id)"},
		{key: "description", to: &s.description},
		{key: "run", to: &s.run, pattern: nonBlank, doc: "handed to sh -c as written; ${VAR} is expanded by the shell"},
		{key: "action", to: &s.action, enum: stepActions},
		nested("with", "", refTo("with"), func(r *reader, v *yaml.Node) { w := r.readWith(v, "with", true); s.with = &w }),
		{key: "depends", to: &s.depends, form: formOneOrList},
		{key: "output", to: &s.output, pattern: envName, doc: "variable receiving the step's trimmed stdout"},
		{key: "env", to: &s.env},
		{key: "working_dir", to: &s.workingDir, read: workingDir},
		{key: "dir", to: &s.workingDir, read: workingDir, doc: "Dagu alias of working_dir"},
		nested("container", "", refTo("container"), func(r *reader, v *yaml.Node) {
			s.container = readInto(r, &rawContainer{node: v}, v, "container", "container.")
		}),
		nested("retry_policy", "", refTo("retryPolicy"), func(r *reader, v *yaml.Node) {
			s.retry = readInto(r, &rawRetry{node: v}, v, "retry_policy", "retry_policy.")
		}),
		nested("continue_on", "", refTo("continueOn"), func(r *reader, v *yaml.Node) { s.continueOn = r.continueOn(v) }),
		nested("preconditions", "all must hold, or the step is skipped", refTo("preconditions"), func(r *reader, v *yaml.Node) {
			s.preconditions = r.readPreconditions(v, "preconditions")
		}),
		{key: "timeout", to: &s.timeout, read: onlyOnce("timeout")},
		{key: "timeout_sec", to: &s.timeout, form: formSeconds, read: onlyOnce("timeout"), doc: "Dagu's timeout in seconds"},
	}
}

// fields is the table of a `with:` (top) or of one of its fallback entries
// (what names it in messages); the keys not listed are the harness's flags.
func (w *rawWith) fields(what string, top bool) []field {
	return []field{
		{key: "provider", to: &w.provider, doc: "built-in (" + builtinList() + ") or a harnesses: key"},
		{key: "model", to: &w.model, doc: "becomes --model M"},
		{key: "prompt", to: &w.prompt, doc: "${VAR} substituted by hookrun, never by a shell; for a shell harness (sh -c, the built-in shell) it is the script and the shell expands ${VAR} from the environment"},
		{key: "fallback", read: func(r *reader, _ *field, k, v *yaml.Node) { w.readFallback(r, k, v, what, top) },
			schema: arrayOf("fallback"), doc: "tried in order after a failure; inherits prompt"},
	}
}

// fields is the table of a step's `retry_policy:`.
func (p *rawRetry) fields() []field {
	// once reads interval or interval_sec (max_interval or
	// max_interval_sec) into one slot.
	once := func(r *reader, f *field, k, v *yaml.Node) {
		if f.to.(*val[time.Duration]).set() {
			r.errf(k, "retry_policy: set %s only once (as a duration or in seconds)", strings.TrimSuffix(f.key, "_sec"))
			return
		}
		r.value(f, v, "retry_policy."+k.Value)
	}
	return []field{
		{key: "limit", to: &p.limit, bounds: between(0, 100)},
		{key: "interval", to: &p.interval, read: once},
		{key: "interval_sec", to: &p.interval, form: formSeconds, read: once},
		{key: "max_interval", to: &p.maxInterval, read: once},
		{key: "max_interval_sec", to: &p.maxInterval, form: formSeconds, read: once},
		nested("backoff", "", backoffSchema, p.readBackoff), // 0, or at least backoffMin: checked in build
		{key: "exit_codes", to: &p.exitCodes, bounds: between(0, 255).saying("is not an exit code (0..255)")},
	}
}

// backoffMin is the smallest backoff multiplier besides 0 (a constant
// interval).
const backoffMin = 1

// fields is the table of `continue_on:` written as a mapping.
func (m *rawContinueMap) fields() []field {
	return []field{
		{key: "failed", to: &m.failed},
		{key: "failure", to: &m.failure, doc: "Dagu's spelling of failed"},
		{key: "skipped", to: &m.skipped},
		{key: "exit_code", to: &m.exitCodes, bounds: between(0, 255).saying("is not an exit code (0..255)"),
			doc: "a failure with one of these exit codes is tolerated"},
		{key: "mark_success", to: &m.markSuccess, doc: "a tolerated failure counts as succeeded"},
	}
}

// fields is the table of one entry of `preconditions:` written as a
// mapping (a string is its condition alone).
func (c *rawCondition) fields() []field {
	return []field{
		{key: "condition", to: &c.condition, required: true, pattern: nonBlank,
			doc: "with expected: a value (${VAR} from the environment, `command` output); without: a command that must exit 0"},
		{key: "expected", to: &c.expected, pattern: nonBlank, doc: "the literal value, or re:REGEXP"},
		{key: "negate", to: &c.negate, doc: "the condition must not hold"},
	}
}

// onlyOnce reads a field that has a second spelling into one slot (timeout
// or timeout_sec): the second one given is a problem.
func onlyOnce(name string) func(r *reader, f *field, k, v *yaml.Node) {
	return func(r *reader, f *field, k, v *yaml.Node) {
		if slotSet(f.to) {
			r.errf(k, "%s: set %s only once (as a duration or in seconds)", k.Value, name)
			return
		}
		r.value(f, v, k.Value)
	}
}

// fields is the table of `report:`.
func (p *rawReport) fields() []field {
	return []field{
		{key: "comment", to: &p.comment, enum: commentModes, def: CommentSticky},
		{key: "body", to: &p.body},
		{key: "status", to: &p.status, def: true},
		nested("review", "post the findings of $HOOKRUN_RESULTS as inline review comments: true, or the options", reviewSchema, p.readReview),
	}
}

// reviewFilters are the values of report.review.filter (reviewdog's
// filter modes).
var reviewFilters = []string{ReviewFilterAdded, ReviewFilterDiffContext, ReviewFilterFile, ReviewFilterNone}

// fields is the table of `report.review:` written as a mapping.
func (v *rawReview) fields() []field {
	return []field{
		{key: "filter", to: &v.filter, enum: reviewFilters, def: ReviewFilterAdded,
			doc: "which findings become comments: on added lines, on lines of the diff (with context), in changed files, or all"},
		{key: "max_comments", to: &v.maxComments, bounds: between(1, 100), def: 30,
			doc: "most inline comments one review posts; the rest are listed in the run's comment"},
	}
}

// IsEnvName reports whether s is a valid environment variable name
// ([A-Za-z_][A-Za-z0-9_]*): the rule of env keys, outputs and ${NAME}, for
// the executors that pass names on (sbx exec -e NAME).
func IsEnvName(s string) bool { return envName.matches(s) }

// stringsOf is a list of names as strings.
func stringsOf[T ~string](l []T) []string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = string(x)
	}
	return s
}
