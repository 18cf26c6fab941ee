package runner_test

import (
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Every implementation internal/app wires in has an interface guard: the
// providers' beside their code, queue's in runner/deps.go. workflows may not
// import the contract (the contract imports it), so the guard of its
// WorkflowSet sits here.
var _ contract.WorkflowSource = (*workflows.WorkflowSet)(nil)

// The stream names of contract.LogSink are queue's, which cannot import
// the contract.
func TestStreamNamesMatchQueue(t *testing.T) {
	for _, p := range [][2]string{
		{contract.StreamStdout, stores.StreamStdout},
		{contract.StreamStderr, stores.StreamStderr},
		{contract.StreamSystem, stores.StreamSystem},
	} {
		if p[0] != p[1] {
			t.Errorf("contract stream %q, queue stream %q", p[0], p[1])
		}
	}
}
