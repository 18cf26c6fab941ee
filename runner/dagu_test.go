package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// TestContinueOnPartialSuccess: a run whose only failures continue_on
// tolerates (failure: true, or an exit_code listed) ends
// partially_succeeded, its dependents run, and the success handler runs
// with that status; a failure outside exit_code still fails the run.
func TestContinueOnPartialSuccess(t *testing.T) {
	cases := []struct {
		name, continueOn string
		exit             string
		want             workflows.Status
		dependent        workflows.Status
	}{
		{"failure true", "{failure: true}", "1", workflows.StatusPartiallySucceeded, workflows.StatusSucceeded},
		{"exit_code listed", "{exit_code: [3, 4]}", "3", workflows.StatusPartiallySucceeded, workflows.StatusSucceeded},
		{"exit_code not listed", "{exit_code: [3, 4]}", "5", workflows.StatusFailed, workflows.StatusSkipped},
		{"mark_success", "{failure: true, mark_success: true}", "1", workflows.StatusSucceeded, workflows.StatusSucceeded},
		{"mark_success needs a tolerated failure", "{exit_code: [2], mark_success: true}", "1", workflows.StatusFailed, workflows.StatusSkipped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, sink, _ := runWorkflow(t, `
steps:
  - id: lint
    run: echo linted; exit `+tc.exit+`
    output: LINT
    continue_on: `+tc.continueOn+`
  - id: review
    depends: lint
    run: echo reviewed
handler_on:
  success: {run: echo "success handler $HOOKRUN_RUN_STATUS"}
  failure: {run: echo "failure handler $HOOKRUN_RUN_STATUS"}
`, runOpts{})
			if res.Status != tc.want {
				t.Fatalf("run %s, want %s: %s\n%s", res.Status, tc.want, res.Error, sink.all())
			}
			if got := step(res, "review").Status; got != tc.dependent {
				t.Errorf("review %s, want %s", got, tc.dependent)
			}
			handler := "success handler " + string(tc.want)
			if tc.want == workflows.StatusFailed {
				handler = "failure handler failed"
			}
			if out := sink.text("on_success", "stdout") + sink.text("on_failure", "stdout"); out != handler+"\n" {
				t.Errorf("handlers printed %q, want %q", out, handler)
			}
			lint := step(res, "lint")
			if tc.name == "mark_success" {
				if lint.Status != workflows.StatusSucceeded || lint.Error != "" || lint.ExitCode == nil || *lint.ExitCode != 1 {
					t.Errorf("mark_success: lint %+v, want succeeded keeping exit 1", lint)
				}
				if len(res.Outputs) != 1 || res.Outputs[0].Value != "linted" {
					t.Errorf("mark_success: outputs %v", res.Outputs)
				}
			} else if lint.Status != workflows.StatusFailed {
				t.Errorf("lint %s, want failed", lint.Status)
			}
		})
	}
}

// TestRootWorkingDir: the root working_dir is where steps run; relative
// it is below the workspace, and a step's relative working_dir is below it;
// an absolute step working_dir stays as written.
func TestRootWorkingDir(t *testing.T) {
	ws := t.TempDir()
	other := t.TempDir()
	for _, d := range []string{"repo/sub", "repo2"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	res, sink, _ := runWorkflow(t, `
working_dir: repo
steps:
  - {id: root, run: pwd}
  - {id: below, run: pwd, working_dir: sub}
  - {id: abs, run: pwd, working_dir: `+other+`}
`, runOpts{dir: ws})
	if res.Status != workflows.StatusSucceeded {
		t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.all())
	}
	for id, want := range map[string]string{"root": filepath.Join(ws, "repo"), "below": filepath.Join(ws, "repo/sub"), "abs": other} {
		if got := strings.TrimSpace(sink.text(id, "stdout")); got != want {
			t.Errorf("%s ran in %q, want %q", id, got, want)
		}
	}
	// absolute, as the Dagu examples write it (hookrun run allows any path)
	res, sink, _ = runWorkflow(t, "working_dir: "+other+"\nsteps: [{id: root, run: pwd}]\n", runOpts{})
	if got := strings.TrimSpace(sink.text("root", "stdout")); res.Status != workflows.StatusSucceeded || got != other {
		t.Errorf("absolute root working_dir: %s in %q, want %q", res.Status, got, other)
	}
}
