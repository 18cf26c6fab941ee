package runner

import (
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Workspaces prepares and removes run workspaces (contract.Workspaces;
// providers/git implements it). A Prepare error matching
// contract.ErrRefused fails the run at once; any other hands it back to the
// queue to be retried.
type Workspaces = contract.Workspaces

// WorkflowSource finds the loaded workflow a run request names.
type WorkflowSource interface {
	Lookup(name string) (*workflows.Workflow, bool)
}
