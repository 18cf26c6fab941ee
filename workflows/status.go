package workflows

import (
	"strings"
	"time"
)

// Status is the state of a run or of one step.
type Status string

// Run and step states. A run moves queued → running → one terminal state;
// a step moves pending → running → one terminal state (or straight to skipped).
const (
	StatusQueued    Status = "queued"
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	// StatusPartiallySucceeded: a run whose only failed steps were
	// tolerated by their continue_on (Dagu's partial success).
	StatusPartiallySucceeded Status = "partially_succeeded"
	StatusFailed             Status = "failed"
	StatusSkipped            Status = "skipped"
	StatusCancelled          Status = "cancelled"
)

// Terminal reports whether nothing more will happen to a run or step in this state.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusPartiallySucceeded, StatusFailed, StatusSkipped, StatusCancelled:
		return true
	}
	return false
}

// Passed reports whether a run that ended in this state counts as a
// success where it is reported (commit status, exit code): it succeeded,
// partially succeeded (its only failures were tolerated by continue_on), or
// was skipped (its root preconditions did not hold).
func (s Status) Passed() bool {
	switch s {
	case StatusSucceeded, StatusPartiallySucceeded, StatusSkipped:
		return true
	}
	return false
}

// Tones group the states as people see them: the web UI's CSS class of a
// state, and the colour its icons share.
const (
	ToneOK      = "ok"      // succeeded
	TonePartial = "partial" // succeeded, with tolerated failures
	ToneBad     = "bad"     // failed
	ToneLive    = "live"    // running
	ToneOff     = "off"     // ended without running it all: cancelled, skipped
	ToneWait    = "wait"    // not started
)

// Presentation is how a state is shown: the one table the web UI, forge
// comments and Slack messages read.
type Presentation struct {
	Label string // in words: "partially succeeded"
	Tone  string // its group (Tone*)
	Emoji string // in forge comments (Markdown)
	Slack string // Slack's emoji code
}

var presentations = map[Status]Presentation{
	StatusQueued:             {"queued", ToneWait, "⏳", ":hourglass:"},
	StatusPending:            {"pending", ToneWait, "⏳", ":hourglass:"},
	StatusRunning:            {"running", ToneLive, "🔄", ":hourglass:"},
	StatusSucceeded:          {"succeeded", ToneOK, "✅", ":white_check_mark:"},
	StatusPartiallySucceeded: {"partially succeeded", TonePartial, "⚠️", ":large_yellow_circle:"},
	StatusFailed:             {"failed", ToneBad, "❌", ":x:"},
	StatusSkipped:            {"skipped", ToneOff, "⏭", ":no_entry_sign:"},
	StatusCancelled:          {"cancelled", ToneOff, "🚫", ":no_entry_sign:"},
}

// Present is how s is shown; a state this version does not know (a newer
// runner's) as one not started, labelled with its name.
func (s Status) Present() Presentation {
	if p, ok := presentations[s]; ok {
		return p
	}
	p := presentations[StatusQueued]
	p.Label = strings.ReplaceAll(string(s), "_", " ")
	return p
}

// StepState is what is known about one step of a run: stored in the run
// record, shown by the API and in the sticky comment.
type StepState struct {
	ID         string     `json:"id"`
	Status     Status     `json:"status"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Attempts   int        `json:"attempts,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Error      string     `json:"error,omitempty"` // redacted
}
