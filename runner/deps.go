package runner

import (
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Workspaces prepares and removes run workspaces (contract.Workspaces;
// providers/git implements it).
type Workspaces = contract.Workspaces

// WorkflowSource finds the loaded workflow a run request names.
type WorkflowSource interface {
	Lookup(name string) (*workflows.Workflow, bool)
}
