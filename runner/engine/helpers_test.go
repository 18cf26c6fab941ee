package engine_test

import (
	"testing"

	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// testEnv is the runner environment of most tests: a PATH and a token that
// must never reach a step.
var testEnv = enginetest.RunnerEnv("GITHUB_TOKEN")

// samplePR is a pull request event.
func samplePR() *workflows.Event {
	return enginetest.PullRequest(workflows.Forge("github"), "https://github.com/octo/demo.git")
}

// runWorkflow runs yaml once (enginetest.Run) with testEnv and samplePR
// unless o says otherwise.
func runWorkflow(t *testing.T, yaml string, o enginetest.RunOpts) (*engine.Result, *enginetest.MemSink, string) {
	t.Helper()
	if o.Env == nil {
		o.Env = testEnv
	}
	if o.Event == nil {
		o.Event = samplePR()
	}
	return enginetest.Run(t, yaml, o)
}
