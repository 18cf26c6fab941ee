package runner_test

import (
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

const (
	succeeded = workflows.StatusSucceeded
	failed    = workflows.StatusFailed
)
