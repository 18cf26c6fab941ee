package workflows

import "time"

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
