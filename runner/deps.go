package runner

import (
	"context"

	"github.com/hookrun/hookrun/workflows"
)

// Workspaces prepares and removes run workspaces. providers/git satisfies it.
type Workspaces interface {
	// Prepare creates the run's workspace: a checkout of the event's head
	// when checkout is true, else an empty directory. It returns the
	// directory and the head SHA checked out ("" without checkout). An
	// error matching contract.ErrRefused fails the run at once; any other
	// hands it back to the queue to be retried.
	Prepare(ctx context.Context, runID string, e *workflows.Event, checkout bool) (dir, headSHA string, err error)
	// Remove deletes the run's workspace.
	Remove(runID string) error
}

// WorkflowSource finds the loaded workflow a run request names.
type WorkflowSource interface {
	Lookup(name string) (*workflows.Workflow, bool)
}
