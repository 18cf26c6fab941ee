package runner

import (
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/stores"
)

// The interfaces the runner consumes of providers live in runner/contract,
// so that providers can implement them (with an interface guard) without
// importing the runner. These aliases keep the runner's own names.
type (
	// Workspaces prepares and removes run workspaces (providers/git
	// implements it). A Prepare error matching contract.ErrRefused fails
	// the run at once; any other hands it back to the queue to be retried.
	Workspaces = contract.Workspaces
	// WorkflowSource finds the loaded workflow a run request names.
	WorkflowSource = contract.WorkflowSource
)

// Causes for cancelling a run's context (contract's). The queue keeps its
// own stores.ErrCancelled for runs cancelled before they start.
var (
	ErrCancelled = contract.ErrCancelled
	ErrAbandoned = contract.ErrAbandoned
)

// queue's types satisfy the interfaces the runner and the engine consume;
// queue does not import runner/contract, so their guards sit here, on the
// consumer's side.
var (
	_ contract.LogSink = (*stores.LogStore)(nil)
	_ NewestStore      = (*stores.GroupStore)(nil)
)
