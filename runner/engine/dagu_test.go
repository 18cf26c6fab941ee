package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/engine/enginetest"
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
`, enginetest.RunOpts{})
			if res.Status != tc.want {
				t.Fatalf("run %s, want %s: %s\n%s", res.Status, tc.want, res.Error, sink.All())
			}
			if got := enginetest.Step(res, "review").Status; got != tc.dependent {
				t.Errorf("review %s, want %s", got, tc.dependent)
			}
			handler := "success handler " + string(tc.want)
			if tc.want == workflows.StatusFailed {
				handler = "failure handler failed"
			}
			if out := sink.Text("on_success", "stdout") + sink.Text("on_failure", "stdout"); out != handler+"\n" {
				t.Errorf("handlers printed %q, want %q", out, handler)
			}
			lint := enginetest.Step(res, "lint")
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
`, enginetest.RunOpts{Dir: ws})
	if res.Status != workflows.StatusSucceeded {
		t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	for id, want := range map[string]string{"root": filepath.Join(ws, "repo"), "below": filepath.Join(ws, "repo/sub"), "abs": other} {
		if got := strings.TrimSpace(sink.Text(id, "stdout")); got != want {
			t.Errorf("%s ran in %q, want %q", id, got, want)
		}
	}
	// absolute, as the Dagu examples write it (hookrun run allows any path)
	res, sink, _ = runWorkflow(t, "working_dir: "+other+"\nsteps: [{id: root, run: pwd}]\n", enginetest.RunOpts{})
	if got := strings.TrimSpace(sink.Text("root", "stdout")); res.Status != workflows.StatusSucceeded || got != other {
		t.Errorf("absolute root working_dir: %s in %q, want %q", res.Status, got, other)
	}
}

// TestStepPreconditions: Dagu's value conditions (${VAR} from the
// environment, `command` output, literal or re: expected, negate) and
// command conditions (exit 0) gate a step: unmet, the step is skipped and
// its dependents with it unless continue_on.skipped; the run still
// succeeds. Event text in a value is data: never run.
func TestStepPreconditions(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(ws, "pwned")
	ev := samplePR()
	ev.PullRequest.Title = "$(touch " + pwned + ")`touch " + pwned + "`"
	res, sink, _ := runWorkflow(t, `
env:
  - ENVIRONMENT: production
steps:
  - id: literal
    run: echo ran
    preconditions: [{condition: "${ENVIRONMENT}", expected: production}]
  - id: literal_unmet
    run: echo ran
    preconditions: [{condition: "${ENVIRONMENT}", expected: staging}]
  - id: after_unmet
    depends: literal_unmet
    run: echo ran
  - id: tolerant
    run: echo ran
    preconditions: [{condition: "${ENVIRONMENT}", expected: staging}]
    continue_on: {skipped: true}
  - id: after_tolerant
    depends: tolerant
    run: echo ran
  - id: regex_command
    run: echo ran
    preconditions: [{condition: "`+"`echo week; echo 3`"+`", expected: "re:^[1-5]$"}]
  - id: command
    run: echo ran
    preconditions: ["test -f ready", "`+"`test -d .`"+`"]
  - id: command_unmet
    run: echo ran
    preconditions: [{condition: "test -f missing"}]
  - id: negated
    run: echo ran
    preconditions: [{condition: "test -f missing", negate: true}]
  - id: title_is_data
    run: echo ran
    preconditions: [{condition: "${HOOKRUN_PR_TITLE}", expected: "re:touch"}]
`, enginetest.RunOpts{Dir: ws, Event: ev})
	if res.Status != workflows.StatusSucceeded {
		t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	want := map[string]workflows.Status{
		"literal": "succeeded", "literal_unmet": "skipped", "after_unmet": "skipped",
		"tolerant": "skipped", "after_tolerant": "succeeded", "regex_command": "succeeded",
		"command": "succeeded", "command_unmet": "skipped", "negated": "succeeded", "title_is_data": "succeeded",
	}
	for id, w := range want {
		if got := enginetest.Step(res, id).Status; got != w {
			t.Errorf("%s: %s, want %s (%s)", id, got, w, enginetest.Step(res, id).Error)
		}
		ran := sink.Text(id, "stdout") == "ran\n"
		if ran != (w == workflows.StatusSucceeded) {
			t.Errorf("%s: ran %v", id, ran)
		}
	}
	if e := enginetest.Step(res, "literal_unmet").Error; e != `precondition not met: "${ENVIRONMENT}" is "production", want "staging"` {
		t.Errorf("reason %q", e)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Error("event text in a precondition ran as shell source")
	}
}

// TestRootPreconditions: unmet root preconditions skip the run (not
// failed): no step runs, only handler_on.exit; met, the run goes on. A
// command condition runs in the root working_dir.
func TestRootPreconditions(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "repo", "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const wf = `
working_dir: repo
params: [{MODE: daily}]
preconditions:
  - condition: "${MODE}"
    expected: daily
  - test -f %s
steps:
  - {id: main, run: echo main}
handler_on:
  success: {run: echo success}
  exit: {run: echo "exit $HOOKRUN_RUN_STATUS"}
`
	res, sink, _ := runWorkflow(t, strings.Replace(wf, "%s", "ready", 1), enginetest.RunOpts{Dir: ws})
	if res.Status != workflows.StatusSucceeded || sink.Text("main", "stdout") != "main\n" {
		t.Fatalf("met: run %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	res, sink, _ = runWorkflow(t, strings.Replace(wf, "%s", "missing", 1), enginetest.RunOpts{Dir: ws})
	if res.Status != workflows.StatusSkipped || enginetest.Step(res, "main").Status != workflows.StatusSkipped {
		t.Fatalf("unmet: run %s, main %s: %s", res.Status, enginetest.Step(res, "main").Status, res.Error)
	}
	if !strings.Contains(res.Error, `precondition not met: "test -f missing" exited 1`) {
		t.Errorf("error %q", res.Error)
	}
	if sink.Text("main", "stdout") != "" || sink.Text("on_success", "stdout") != "" || sink.Text("on_exit", "stdout") != "exit skipped\n" {
		t.Errorf("unmet: what ran:\n%s", sink.All())
	}
	res, _, _ = runWorkflow(t, strings.Replace(wf, "%s", "ready", 1), enginetest.RunOpts{Dir: ws, Params: []workflows.EnvVar{{Name: "MODE", Value: "weekly"}}})
	if res.Status != workflows.StatusSkipped {
		t.Errorf("a param given at run time: %s, want skipped", res.Status)
	}
}

// TestParamsAreData: params given at run time replace the defaults and
// reach steps as they are: ${NAME} in them is not substituted and shell
// syntax is not run.
func TestParamsAreData(t *testing.T) {
	res, sink, dir := runWorkflow(t, `
params: [{TARGET: staging}, {OTHER: x}]
steps:
  - {id: show, run: 'printf "%s|%s\n" "$TARGET" "$OTHER"'}
`, enginetest.RunOpts{Params: []workflows.EnvVar{{Name: "TARGET", Value: "${HOOKRUN_RUN_ID} $(touch pwned)"}}})
	if res.Status != workflows.StatusSucceeded {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	if got := sink.Text("show", "stdout"); got != "${HOOKRUN_RUN_ID} $(touch pwned)|x\n" {
		t.Errorf("step saw %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); !os.IsNotExist(err) {
		t.Error("a param ran as shell source")
	}
}
