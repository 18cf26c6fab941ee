package workflows

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// This file holds the validated workflow types: what the parser hands to the
// rest of hookrun after every default is filled in and every rule of
// DESIGN.md §3 has been checked. The raw layer (as read, with positions) lives
// in raw.go, the field tables both layers and the schema share in fields.go.

// EnvVar is one NAME=value pair. Order matters: later entries may refer to
// earlier ones.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Workflow is one validated workflow file.
type Workflow struct {
	Name        string `json:"name"`                  // [a-z0-9-]+, unique across loaded files; default: file base name
	Description string `json:"description,omitempty"` // free text
	File        string `json:"file,omitempty"`        // path it was loaded from
	Digest      string `json:"digest,omitempty"`      // "sha256:<hex>" of the file content

	On            []Trigger    `json:"on,omitempty"` // empty: runs only through `hookrun run` or the API
	Authorization Authorize    `json:"authorize"`    // who may trigger it; applied by (*Workflow).Authorize
	Concurrency   *Concurrency `json:"concurrency,omitempty"`

	Type           string             `json:"type"`                    // "graph" (default) or "chain"
	MaxActiveSteps int                `json:"max_active_steps"`        // parallel steps in a graph; default DefaultMaxActiveSteps
	WorkingDir     string             `json:"working_dir,omitempty"`   // steps' default directory: relative to the workspace unless absolute
	Timeout        time.Duration      `json:"timeout,omitempty"`       // whole run; 0 = none
	Preconditions  []Condition        `json:"preconditions,omitempty"` // all must hold, else the run is skipped
	Env            []EnvVar           `json:"env,omitempty"`           // run-wide environment
	Params         []EnvVar           `json:"params,omitempty"`        // Dagu params: defaults for named parameters, exported as env
	Secrets        []string           `json:"secrets,omitempty"`       // names taken from the runner's environment; redacted everywhere
	Checkout       bool               `json:"checkout"`                // clone the repository at the head SHA into the workspace
	Sandbox        *Sandbox           `json:"sandbox,omitempty"`       // a fresh microVM per run
	Container      *Container         `json:"container,omitempty"`     // the root container shared by steps without their own
	Harnesses      map[string]Harness `json:"harnesses,omitempty"`     // custom agent CLIs by provider name

	Steps     []Step    `json:"steps"`                // in file order; for "chain" each step depends on the previous one
	HandlerOn HandlerOn `json:"handler_on,omitempty"` // steps run after the DAG
	Report    Report    `json:"report"`
	// Permissions say what a run may ask hookrun to do on the forge
	// (actions.json); nil: nothing.
	Permissions *Permissions `json:"permissions,omitempty"`

	namePos [2]int // line and column of `name:` (1:1 when defaulted), for Load's uniqueness problems
}

// Trigger is one entry of `on:`. A workflow runs when any trigger matches.
//
// A trigger with a Command and no Actions matches only new comments
// (DefaultCommandActions, action "created"): editing or deleting an old
// `/deploy` comment must not deploy again. Naming actions (`actions:
// [created, edited]`) opts in to the others. The default is applied by
// Match, not by the parser, so a Trigger built by hand in Go behaves the
// same as one read from a file; the JSON of a validated workflow shows
// Actions as written.
type Trigger struct {
	Event    Kind     `json:"event"`              // pull_request | comment | issue | push | chat | schedule
	Actions  []string `json:"actions,omitempty"`  // empty: any action; with Command on a comment: DefaultCommandActions
	Branches []string `json:"branches,omitempty"` // path.Match globs on the base branch (PRs) or pushed branch
	Command  string   `json:"command,omitempty"`  // comment: a line starts with it, the rest becomes CommandArgs (one run per line); chat: the first word of the text
	Labels   []string `json:"labels,omitempty"`   // the PR/issue carries at least one of them
	Repos    []string `json:"repos,omitempty"`    // path.Match globs on Event.Repo
	Deleted  bool     `json:"deleted,omitempty"`  // push: match pushes that delete the branch (only those); false: only the others
	// Paths and PathsIgnore select pull requests and pushes by the files
	// they change (doublestar globs: ** crosses directories): a changed
	// file counts when it matches one of Paths (or Paths is empty) and
	// none of PathsIgnore, and the trigger needs one file that counts.
	// Event.Files says which files changed; see Trigger.matchPaths.
	Paths       []string `json:"paths,omitempty"`
	PathsIgnore []string `json:"paths_ignore,omitempty"`
	// Repo and Forge, on a chat or schedule trigger (and only there, where
	// Repo is required), name the repository a run acts on: the run's
	// Event.Repo, Forge and CloneURL are that repository's (ingress fills
	// them in), so checkout, allow_repos and HOOKRUN_REPO apply as for a
	// forge event.
	Repo  string `json:"repo,omitempty"`
	Forge Forge  `json:"forge,omitempty"`
	// Schedule, on a schedule trigger (Event KindSchedule), is when it
	// fires: a 5-field cron expression, @every <duration>, @hourly,
	// @daily, ... (CheckSchedule); Timezone the IANA zone of a cron
	// expression's times ("": UTC).
	Schedule string `json:"schedule,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	If       string `json:"if,omitempty"` // expr-lang expression over `event`, compiled at load time

	program any // compiled If (*vm.Program); set by the parser
}

// Authorize says who may trigger a workflow.
type Authorize struct {
	AuthorAssociation []string `json:"author_association"` // default OWNER, MEMBER, COLLABORATOR
	Users             []string `json:"users,omitempty"`    // logins always allowed
	AllowForks        bool     `json:"allow_forks"`        // a PR from a fork triggers only when its sender is trusted unless true
	// SlackUsers and SlackChannels are what authorizes a chat event, and
	// nothing else does: its user id must be in SlackUsers and its channel
	// id in SlackChannels. Either empty: no chat event is authorized.
	SlackUsers    []string `json:"slack_users,omitempty"`
	SlackChannels []string `json:"slack_channels,omitempty"`
}

// Concurrency groups runs: the runs of a group run one at a time, in the
// order they were accepted; with CancelInProgress a newer run cancels an
// older one of the same group instead.
type Concurrency struct {
	Group            string `json:"group"` // "pull_request" (per PR/MR; per ref for a push), "workflow", "repo", or a literal name
	CancelInProgress bool   `json:"cancel_in_progress"`
}

// Sandbox is a per-run microVM (DESIGN.md §4).
type Sandbox struct {
	Provider string `json:"provider"` // "sbx"
	Agent    string `json:"agent"`    // the sbx agent: claude, codex, gemini, ...
	// Push says how the agent's commits are delivered after the steps
	// (with checkout: true): PushBranch (default) pushes them to the branch
	// hookrun/<workflow>/<number> of the base repository, PushPullRequest
	// also opens a draft pull/merge request, PushNone keeps them nowhere.
	Push string `json:"push"`
}

// Container describes a Docker container, for the whole run (root) or one step.
type Container struct {
	Image      string   `json:"image"`
	PullPolicy string   `json:"pull_policy"`       // always | missing (default) | never
	WorkingDir string   `json:"working_dir"`       // default /workspace
	Volumes    []string `json:"volumes,omitempty"` // "host:container[:ro]"; relative host paths are resolved against the workspace
	Env        []EnvVar `json:"env,omitempty"`
	User       string   `json:"user,omitempty"`    // "" : the image's user
	Network    string   `json:"network,omitempty"` // "" or bridge: the run's own network | none | host | a network name
	// CapAdd (capabilities.add) are Linux capabilities the container gets
	// besides the provider's default set; every other one is dropped.
	CapAdd []string `json:"cap_add,omitempty"`
	Memory int64    `json:"memory,omitempty"` // bytes; 0 = server default
	CPUs   float64  `json:"cpus,omitempty"`   // 0 = server default
	PIDs   int64    `json:"pids,omitempty"`   // 0 = server default
}

// Harness is a custom agent CLI declared under `harnesses:`.
type Harness struct {
	Binary     string   `json:"binary"`
	PrefixArgs []string `json:"prefix_args,omitempty"`
	PromptMode string   `json:"prompt_mode"`           // arg (default) | flag | stdin
	PromptFlag string   `json:"prompt_flag,omitempty"` // required with prompt_mode flag
}

// posixShells are the program names (without directory) that ShellScript
// treats as a POSIX shell.
var posixShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true,
	"ksh": true, "ksh93": true, "mksh": true, "pdksh": true, "oksh": true, "loksh": true,
	"yash": true, "posh": true,
}

// RunsSbx reports whether the harness runs the sbx CLI itself (Dagu's
// long-lived sandbox pattern, `binary: sbx`, also by a path such as
// /usr/local/bin/sbx): it is run as written on the runner's host, never
// wrapped in a second `sbx exec` nor put in a container. The one rule for
// validation and routing.
func (h Harness) RunsSbx() bool {
	return filepath.Base(h.Binary) == "sbx"
}

// ShellScript reports whether h runs a POSIX shell that reads its script
// from the harness invocation, so that the prompt (and any script in
// prefix_args) is shell source. It is the one rule for "this harness is a
// shell", used by providers/harness and by validation; the built-in `shell`
// provider (sh -c) is one such harness.
//
// The binary must be a POSIX shell: its base name is sh, bash, dash, ash,
// zsh, ksh (ksh93, mksh, pdksh, oksh, loksh), yash or posh, or it is busybox
// with sh or ash as its first prefix arg. The shell then reads a script from
// hookrun's arguments when a prefix arg is -c or a cluster of short options
// containing c (-ec, -euc, -lc), when prompt_mode is flag with such a
// prompt_flag, or when prompt_mode is stdin (a shell reads its script from
// stdin). A shell running a script file (`sh ./review.sh` with the prompt as
// its argument) is not a shell script harness: its prompt is data in $1.
//
// For such a harness hookrun substitutes nothing: ${VAR} in the prompt and
// in prefix_args is left to the shell, which expands it from the step's
// environment (HOOKRUN_* variables, env, params, outputs, secrets), as it
// does for `run:`. `with.model` and extra `with` keys do not apply.
func (h Harness) ShellScript() bool {
	args := h.PrefixArgs
	switch base := filepath.Base(h.Binary); {
	case base == "busybox":
		if len(args) == 0 || (args[0] != "sh" && args[0] != "ash") {
			return false
		}
		args = args[1:]
	case !posixShells[base]:
		return false
	}
	switch {
	case h.PromptMode == PromptStdin:
		return true
	case h.PromptMode == PromptFlag && isDashC(h.PromptFlag):
		return true
	}
	return slices.ContainsFunc(args, isDashC)
}

// isDashC reports whether a shell argument is -c or a cluster of short
// options that includes c (-ec, -euc).
func isDashC(arg string) bool {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return false
	}
	hasC := false
	for _, c := range arg[1:] {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
		hasC = hasC || c == 'c'
	}
	return hasC
}

// Step is one node of the DAG.
type Step struct {
	ID          string       `json:"id"`
	Name        string       `json:"name,omitempty"`    // display name; default: ID
	Run         string       `json:"run,omitempty"`     // handed to `sh -c` as written
	Action      string       `json:"action,omitempty"`  // "harness.run"
	Harness     *HarnessRun  `json:"harness,omitempty"` // the parsed `with:` of a harness.run step
	Depends     []string     `json:"depends,omitempty"` // step ids; for chain: the previous step
	Output      string       `json:"output,omitempty"`  // env var name receiving trimmed stdout
	Env         []EnvVar     `json:"env,omitempty"`
	WorkingDir  string       `json:"working_dir,omitempty"` // relative to the workspace unless absolute
	Container   *Container   `json:"container,omitempty"`   // a fresh container for this step only
	RetryPolicy *RetryPolicy `json:"retry_policy,omitempty"`
	ContinueOn  ContinueOn   `json:"continue_on,omitempty"`
	// Preconditions must all hold when the step becomes ready, else it is
	// skipped (checked once, not per retry).
	Preconditions []Condition   `json:"preconditions,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"` // 0 = none (the run timeout still applies)
}

// Condition is one entry of `preconditions:` (Dagu's). With Expected it
// compares a value: Condition with ${NAME} substituted by hookrun from the
// environment (never by a shell) and each `command` in it replaced by that
// command's output, against Expected (a literal, or re:REGEXP). Without
// Expected, Condition is a command, handed to `sh -c` as written like
// `run:`, that must exit 0. Negate inverts the result.
type Condition struct {
	Condition string `json:"condition"`
	Expected  string `json:"expected,omitempty"`
	Negate    bool   `json:"negate,omitempty"`
}

// HarnessRun is a harness.run invocation: which agent CLI, how, and what to
// try next after a failure.
type HarnessRun struct {
	Provider string       `json:"provider"`           // claude | codex | gemini | copilot | opencode | shell | a `harnesses:` key
	Model    string       `json:"model,omitempty"`    // becomes --model M
	Prompt   string       `json:"prompt"`             // ${VAR} substituted by hookrun, except for a shell harness (Harness.ShellScript): there the shell expands it
	Flags    []Flag       `json:"flags,omitempty"`    // other `with` keys, sorted by name, become --key value
	Fallback []HarnessRun `json:"fallback,omitempty"` // tried in order, only after a failure; inherits Prompt when empty
}

// Flag is one extra `with` key of a harness step.
type Flag struct {
	Name  string `json:"name"`
	Value string `json:"value"` // "true" for a bare boolean flag
}

// RetryPolicy retries a failed step.
type RetryPolicy struct {
	Limit       int           `json:"limit"`                  // extra attempts, 0..100
	Interval    time.Duration `json:"interval"`               // wait before the first retry
	Backoff     float64       `json:"backoff,omitempty"`      // multiplier per retry, >= 1; 0 = constant
	MaxInterval time.Duration `json:"max_interval,omitempty"` // cap with backoff
	ExitCodes   []int         `json:"exit_codes,omitempty"`   // retry only on these; empty: any failure
}

// ContinueOn lets dependents run although this step failed or was skipped.
// A run whose only failures are tolerated this way ends
// StatusPartiallySucceeded.
type ContinueOn struct {
	Failed      bool  `json:"failed,omitempty"`       // any failure is tolerated
	Skipped     bool  `json:"skipped,omitempty"`      // dependents run although this step was skipped
	ExitCodes   []int `json:"exit_codes,omitempty"`   // a failure with one of these exit codes is tolerated
	MarkSuccess bool  `json:"mark_success,omitempty"` // a tolerated failure counts as succeeded
}

// Tolerates reports whether a failure of the step with exit code exit (nil:
// it has none, e.g. it timed out or could not start) lets the run go on:
// the one rule for dependents, the run's status and mark_success.
func (c ContinueOn) Tolerates(exit *int) bool {
	return c.Failed || exit != nil && slices.Contains(c.ExitCodes, *exit)
}

// HandlerOn holds steps run after the DAG with HOOKRUN_RUN_STATUS set.
type HandlerOn struct {
	Success *Step `json:"success,omitempty"`
	Failure *Step `json:"failure,omitempty"`
	Cancel  *Step `json:"cancel,omitempty"`
	Exit    *Step `json:"exit,omitempty"` // always, last
}

// KeyedHandler is one handler that is set: its handler_on key and step.
type KeyedHandler struct {
	Key  string // success, failure, cancel, exit
	Step *Step
}

// Set lists the handlers that are set, in handler_on's order.
func (h *HandlerOn) Set() []KeyedHandler {
	var set []KeyedHandler
	for _, x := range h.handlers() {
		if *x.slot != nil {
			set = append(set, KeyedHandler{x.key, *x.slot})
		}
	}
	return set
}

// Report says what a run shows where the event came from.
type Report struct {
	Comment string `json:"comment"`        // sticky (default) | new | none
	Body    string `json:"body,omitempty"` // final comment body; ${VAR} substituted with outputs
	Status  bool   `json:"status"`         // commit status hookrun/<name>; default true
	// Review, when set, posts the run's findings ($HOOKRUN_RESULTS) as
	// inline review comments on the lines the pull request changed; nil:
	// no review, whatever the steps wrote.
	Review *ReviewOptions `json:"review,omitempty"`
}

// ReviewOptions are `report.review:`'s.
type ReviewOptions struct {
	// Filter says which findings become comments (ReviewFilter*).
	Filter string `json:"filter"`
	// MaxComments is the most inline comments one review posts.
	MaxComments int `json:"max_comments"`
}

// report.review.filter values, as reviewdog's filter modes.
const (
	ReviewFilterAdded       = "added"        // on lines the change added
	ReviewFilterDiffContext = "diff_context" // on lines the diff shows (added or context)
	ReviewFilterFile        = "file"         // in files the change touched
	ReviewFilterNone        = "none"         // anywhere (outside the diff: listed, not inline)
)

// Built-in values.
const (
	TypeGraph = "graph"
	TypeChain = "chain"

	ActionHarnessRun = "harness.run"

	CommentSticky = "sticky"
	CommentNew    = "new"
	CommentNone   = "none"

	PushBranch      = "branch"
	PushPullRequest = "pull_request"
	PushNone        = "none"

	PullAlways  = "always"
	PullMissing = "missing"
	PullNever   = "never"

	PromptArg   = "arg"
	PromptFlag  = "flag"
	PromptStdin = "stdin"
)

// DefaultCommandActions are the actions a trigger with a command and no
// `actions:` matches: a new comment only.
var DefaultCommandActions = []string{"created"}

// DefaultMaxActiveSteps is the default `max_active_steps`: the parser fills
// it in, and the engine applies it to a workflow built without the parser.
const DefaultMaxActiveSteps = 4

// Capabilities are the Linux capability names (without CAP_) that a
// container's capabilities.add may list.
var Capabilities = []string{
	"AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE",
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER",
	"KILL", "LEASE", "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN",
	"NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP",
	"SETUID", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT",
	"SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "SYSLOG", "WAKE_ALARM",
}

// DefaultAuthorAssociations is the default `authorize.author_association`.
var DefaultAuthorAssociations = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// AuthorAssociations lists every author association value a forge's
// payload or lookup may give.
var AuthorAssociations = []string{"OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR",
	"FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN", "NONE"}

// BuiltinHarnesses are the agent CLIs hookrun knows without a `harnesses:`
// entry (DESIGN.md §4).
var BuiltinHarnesses = map[string]Harness{
	"claude":   {Binary: "claude", PromptMode: PromptFlag, PromptFlag: "-p"},
	"codex":    {Binary: "codex", PrefixArgs: []string{"exec"}, PromptMode: PromptArg},
	"gemini":   {Binary: "gemini", PromptMode: PromptFlag, PromptFlag: "-p"},
	"copilot":  {Binary: "copilot", PromptMode: PromptFlag, PromptFlag: "-p"},
	"opencode": {Binary: "opencode", PrefixArgs: []string{"run"}, PromptMode: PromptArg},
	// shell: the prompt is shell source like `run:` and is handed to `sh -c`
	// as written; hookrun does not substitute ${VAR} in it (the shell does).
	// Harness.ShellScript is true for it, as for any custom sh -c harness.
	"shell": {Binary: "sh", PrefixArgs: []string{"-c"}, PromptMode: PromptArg},
}

// LookupHarness finds a provider among the workflow's custom harnesses, then
// the built-in ones.
func (w *Workflow) LookupHarness(provider string) (Harness, bool) {
	if h, ok := w.Harnesses[provider]; ok {
		return h, true
	}
	h, ok := BuiltinHarnesses[provider]
	return h, ok
}

// SetParams checks values given for the workflow's params at run time
// (`hookrun run -p NAME=VALUE`, the API's {"params": {...}}) and returns
// them in the order the workflow declares its params. Each name must be one
// of the workflow's params: an unknown name is an error naming the known
// ones. The values are data: they reach steps as environment variables,
// never expanded, never shell source.
func (w *Workflow) SetParams(given map[string]string) ([]EnvVar, error) {
	known := make([]string, 0, len(w.Params))
	for _, p := range w.Params {
		known = append(known, p.Name)
	}
	var unknown []string
	for name := range given {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		list := "it declares none"
		if len(known) > 0 {
			list = "its params are " + strings.Join(known, ", ")
		}
		return nil, fmt.Errorf("setting params: workflow %s has no param %s (%s)", w.Name, strings.Join(unknown, ", "), list)
	}
	var out []EnvVar
	for _, name := range known {
		if v, ok := given[name]; ok {
			out = append(out, EnvVar{Name: name, Value: v})
		}
	}
	return out, nil
}
