package engine

import (
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// TestStepDirRootWorkingDir: where a step runs, by place, given the
// workflow's root working_dir and the step's own.
func TestStepDirRootWorkingDir(t *testing.T) {
	const ws = "/data/workspaces/r1"
	cases := []struct {
		root, step string
		place      place
		want       string
	}{
		{"", "", placeHost, ws},
		{"repo", "", placeHost, ws + "/repo"},
		{"repo", "sub", placeHost, ws + "/repo/sub"},
		{"repo", "/abs", placeHost, "/abs"},
		{"/path/to/repo", "", placeHost, "/path/to/repo"},
		{"/path/to/repo", "sub", placeHost, "/path/to/repo/sub"},
		{"", "", placeContainer, ""},
		{"repo", "", placeContainer, "/workspace/repo"},
		{"repo", "sub", placeContainer, "/workspace/repo/sub"},
		{ws + "/repo", "sub", placeContainer, "/workspace/repo/sub"},
		{"/path/to/repo", "sub", placeContainer, "/workspace/sub"}, // a host path outside the workspace means nothing there
		{"/path/to/repo", "", placeContainer, ""},
		{"", "", placeSandbox, ""},
		{"repo", "", placeSandbox, ws + "/repo"},
		{"/path/to/repo", "", placeSandbox, "/path/to/repo"},
	}
	for _, c := range cases {
		x := &execution{wf: &workflows.Workflow{WorkingDir: c.root}, spec: RunSpec{Workspace: ws}}
		if got := x.stepDir(&workflows.Step{WorkingDir: c.step}, route{place: c.place}); got != c.want {
			t.Errorf("root %q step %q at %d: %q, want %q", c.root, c.step, c.place, got, c.want)
		}
	}
}
