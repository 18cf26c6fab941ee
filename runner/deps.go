package runner

import (
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
)

// The interfaces the engine and the runner consume live in runner/contract,
// so that providers can implement them (with an interface guard) without
// importing the engine. These aliases keep the runner's own names.
type (
	// Workspaces prepares and removes run workspaces (providers/git
	// implements it). A Prepare error matching contract.ErrRefused fails
	// the run at once; any other hands it back to the queue to be retried.
	Workspaces = contract.Workspaces
	// WorkflowSource finds the loaded workflow a run request names.
	WorkflowSource = contract.WorkflowSource
	// HarnessRunner runs harness.run steps (providers/harness.Run).
	HarnessRunner = contract.HarnessRunner
	// HarnessFunc adapts a function to HarnessRunner.
	HarnessFunc = contract.HarnessFunc
	// LogSink receives step output (queue.LogStore).
	LogSink = contract.LogSink
)

// Log streams and the step id of run-level lines (contract's).
const (
	StreamStdout = contract.StreamStdout
	StreamStderr = contract.StreamStderr
	StreamSystem = contract.StreamSystem
	RunLogStep   = contract.RunLogStep
)

// Causes for cancelling a run's context (contract's). The queue keeps its
// own queue.ErrCancelled for runs cancelled before they start.
var (
	ErrCancelled = contract.ErrCancelled
	ErrAbandoned = contract.ErrAbandoned
)

// queue's types satisfy the interfaces the runner consumes; queue does not
// import runner/contract, so their guards sit here, on the consumer's side.
var (
	_ contract.LogSink = (*queue.LogStore)(nil)
	_ RunStore         = (*queue.RunStore)(nil)
)
