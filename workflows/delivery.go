package workflows

// A sandboxed agent's commits, once the run is over (sandbox.push): what
// runner/contract's Deliverer returns, the final report shows and the run
// record keeps.

// DeliveryOutcome says what became of a run's collected work.
type DeliveryOutcome string

// Delivery outcomes.
const (
	DeliveryPushed    DeliveryOutcome = "pushed"     // the commits are on Delivery.Branch
	DeliveryNoCommits DeliveryOutcome = "no_commits" // the agent committed nothing: nothing was pushed
	DeliverySkipped   DeliveryOutcome = "skipped"    // not delivered on purpose (Note says why)
	DeliveryFailed    DeliveryOutcome = "failed"     // collecting or pushing failed (Note says why)
)

// Delivery is what became of a run's collected work; the final report
// shows it. Every string in it is free of credentials.
type Delivery struct {
	Outcome    DeliveryOutcome `json:"outcome"`
	Branch     string          `json:"branch,omitempty"`      // the base repository's branch, hookrun/<workflow>/<number>
	Head       string          `json:"head,omitempty"`        // the commit pushed
	Commits    int             `json:"commits,omitempty"`     // commits after the checked-out head
	BranchURL  string          `json:"branch_url,omitempty"`  // the branch on the forge's web UI
	CompareURL string          `json:"compare_url,omitempty"` // the agent's commits against the checked-out head
	// PullRequest is the draft pull/merge request opened (or found open)
	// for the branch with `sandbox.push: pull_request`; nil otherwise.
	PullRequest *ChangeRequest `json:"pull_request,omitempty"`
	Note        string         `json:"note,omitempty"` // why skipped or failed, why no pull request was opened
}

// ChangeRequest is a pull or merge request.
type ChangeRequest struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
}
