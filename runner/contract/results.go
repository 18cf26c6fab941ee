package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ContainerResultsPath is where containers (a step's own and the root
// container) see the run's results folder (ExecRequest.Results),
// bind-mounted read-write; HOOKRUN_RESULTS there.
const ContainerResultsPath = "/hookrun/results"

// SandboxResultsPath is the run's results folder inside the sbx sandbox
// of a run whose workspace is the host path workspace: in the git
// directory of the sandbox's clone (<workspace>/.git/hookrun/results),
// beside the event file, where it never shows in `git status` nor travels
// with a commit. hookrun creates its sandboxes with --clone only; in one
// without it, that path would be the host workspace's own .git.
// The sandbox provider copies it out to ExecRequest.Results after each
// command, without following a symlink.
func SandboxResultsPath(workspace string) string {
	return workspace + "/.git/hookrun/results"
}

// Limits of what hookrun reads from a run's results folder.
const (
	MaxResultsBytes    = 10 << 20 // bytes of result files read per run
	MaxResultsFindings = 5000     // findings kept per run
)

// Finding levels.
const (
	LevelError   = "error"
	LevelWarning = "warning"
	LevelNote    = "note"
)

// Finding is one remark a tool made about a place in the repository: a
// SARIF result or a reviewdog diagnostic, decoded from the run's results
// folder (package runner/results).
type Finding struct {
	// Path is relative to the repository root (the workspace), with
	// slashes; "" for a finding about no file.
	Path string `json:"path,omitempty"`
	// StartLine..EndLine, StartColumn..EndColumn: 1-based; 0 when unknown.
	StartLine   int    `json:"start_line,omitempty"`
	StartColumn int    `json:"start_column,omitempty"`
	EndLine     int    `json:"end_line,omitempty"`
	EndColumn   int    `json:"end_column,omitempty"`
	Level       string `json:"level"`          // LevelError, LevelWarning or LevelNote
	Rule        string `json:"rule,omitempty"` // the tool's rule id
	Message     string `json:"message"`
	// Suggestions are replacements that fix the finding.
	Suggestions []Suggestion `json:"suggestions,omitempty"`
	Tool        string       `json:"tool,omitempty"` // the tool that reported it (SARIF driver name, rdjson source)
	File        string       `json:"file,omitempty"` // the results file it came from, relative to the results folder
}

// Suggestion replaces the text of a range of the finding's file (Path)
// with Text. The range is 1-based, the end exclusive in columns; an
// EndColumn of 0 with EndLine > StartLine replaces whole lines.
type Suggestion struct {
	Path        string `json:"path,omitempty"` // "" : the finding's
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column,omitempty"`
	EndLine     int    `json:"end_line,omitempty"`
	EndColumn   int    `json:"end_column,omitempty"`
	Text        string `json:"text"`
}

// Fingerprint identifies a finding across runs whatever line it moved to:
// a digest of its rule, path, message and text (the finding's source
// lines, which the caller reads from the checkout; "" when unknown).
func (f *Finding) Fingerprint(text string) string {
	h := sha256.New()
	for _, s := range []string{f.Rule, f.Path, f.Message, strings.TrimSpace(text)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Results is what a run's steps left in its results folder, as the run
// report carries it.
type Results struct {
	Findings []Finding `json:"findings,omitempty"`
	// Dropped counts findings left out, by reason: "outside the checkout",
	// "over the limit of 5000 findings", "over the limit of 10 MiB".
	Dropped map[string]int `json:"dropped,omitempty"`
	// Notes say what was cut or skipped (files over the size limit,
	// symlinks not followed), for the run's report.
	Notes []string `json:"notes,omitempty"`
	// Actions are what the steps asked hookrun to do on the forge
	// (actions.json); nil when none asked.
	Actions *Actions `json:"actions,omitempty"`
}

// DroppedCount is the total of Dropped.
func (r *Results) DroppedCount() int {
	n := 0
	for _, c := range r.Dropped {
		n += c
	}
	return n
}

// Actions is $HOOKRUN_RESULTS/actions.json: what a step asks hookrun to do
// on the event's issue or pull request (or on Targets), applied after the
// run within the workflow's permissions.
type Actions struct {
	ActionSet
	// Targets are other issues or pull requests, each with its own
	// actions; without them the actions apply to the event's.
	Targets []TargetActions `json:"targets,omitempty"`
}

// ActionSet is what to do to one issue or pull request.
type ActionSet struct {
	Labels    *AddRemove `json:"labels,omitempty"`
	Assignees *AddRemove `json:"assignees,omitempty"`
	State     string     `json:"state,omitempty"`        // "open" | "closed"
	Reason    string     `json:"state_reason,omitempty"` // "completed" | "not_planned" | "duplicate"
	Comment   string     `json:"comment,omitempty"`
}

// AddRemove names what to add and what to remove.
type AddRemove struct {
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// TargetActions is an ActionSet for the issue or pull request Number.
type TargetActions struct {
	Number int `json:"number"`
	ActionSet
}
