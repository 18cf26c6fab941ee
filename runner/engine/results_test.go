package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// runResults runs w with a reporter that keeps the final report.
func runResults(t *testing.T, w *workflows.Workflow, spec engine.RunSpec, lookup map[string]string) (*engine.Result, *contract.RunReport, *enginetest.MemSink) {
	t.Helper()
	sink, rep := enginetest.NewMemSink(), &finalReporter{}
	eng, err := engine.New(engine.Config{Providers: engine.Providers{Host: enginetest.HostExec()}, Logs: sink, Reporter: rep, LookupEnv: enginetest.Env(lookup)})
	if err != nil {
		t.Fatal(err)
	}
	spec.Workflow, spec.Event = w, samplePR()
	if spec.ID == "" {
		spec.ID = "r1"
	}
	res := eng.Run(context.Background(), spec)
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return res, rep.final, sink
}

// A linter's SARIF and an agent's rdjsonl and actions.json, written by two
// steps to $HOOKRUN_RESULTS, are the run's findings and actions, in its
// Result and its final report: paths relative to the workspace, the one
// outside dropped and counted, secrets redacted.
func TestResultsInTheRunReport(t *testing.T) {
	w := enginetest.Parse(t, `
secrets: [REVIEW_TOKEN]
steps:
  - id: lint
    continue_on: failed
    run: |
      cat > "$HOOKRUN_RESULTS/lint.sarif" <<EOF
      {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "golangci-lint"}}, "results": [
        {"ruleId": "errcheck", "level": "error", "message": {"text": "unchecked error"},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file://$HOOKRUN_WORKSPACE/pkg/a.go"}, "region": {"startLine": 42, "startColumn": 3}}}]},
        {"ruleId": "errcheck", "message": {"text": "outside"},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "/usr/lib/go/src/os/file.go"}, "region": {"startLine": 1}}}]}]}]}
      EOF
      exit 1
  - id: agent
    depends: [lint]
    run: |
      echo '{"message": "the token '"$REVIEW_TOKEN"' is printed", "location": {"path": "cmd/main.go", "range": {"start": {"line": 7}}}, "severity": "WARNING", "code": {"value": "leak"}}' > "$HOOKRUN_RESULTS/review.rdjsonl"
      echo '{"labels": {"add": ["bug"]}, "comment": "found '"$REVIEW_TOKEN"'"}' > "$HOOKRUN_RESULTS/actions.json"
`)
	ws := t.TempDir()
	lookup := map[string]string{"PATH": testEnv["PATH"], "REVIEW_TOKEN": "tok-9f8e7d6c5b4a"}
	res, final, sink := runResults(t, w, engine.RunSpec{Workspace: ws}, lookup)
	if res.Status != workflows.StatusPartiallySucceeded {
		t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	r := res.Results
	if r == nil || len(r.Findings) != 2 {
		t.Fatalf("results %+v\n%s", r, sink.All())
	}
	a, b := r.Findings[0], r.Findings[1]
	if a.Path != "pkg/a.go" || a.StartLine != 42 || a.Level != "error" || a.Rule != "errcheck" || a.Tool != "golangci-lint" || a.File != "lint.sarif" {
		t.Errorf("SARIF finding %+v", a)
	}
	if b.Path != "cmd/main.go" || b.StartLine != 7 || b.Rule != "leak" || b.Message != "the token *** is printed" {
		t.Errorf("rdjsonl finding %+v (want the secret redacted)", b)
	}
	if r.Dropped["outside the checkout"] != 1 {
		t.Errorf("dropped %v, want 1 outside the checkout", r.Dropped)
	}
	if r.Actions == nil || r.Actions.Labels == nil || r.Actions.Labels.Add[0] != "bug" || r.Actions.Comment != "found ***" {
		t.Errorf("actions %+v", r.Actions)
	}
	if final == nil || final.Results != res.Results {
		t.Errorf("the final report does not carry the results: %+v", final)
	}
	if strings.Contains(sink.All(), lookup["REVIEW_TOKEN"]) {
		t.Error("the secret reached the logs")
	}
}

// HOOKRUN_RESULTS is RunSpec.Results when the run's preparer gives one
// (left in place), else a folder of the run's own outside the workspace,
// removed at its end.
func TestResultsFolder(t *testing.T) {
	w := enginetest.Parse(t, `
steps:
  - {id: show, output: P, run: 'test -d "$HOOKRUN_RESULTS" && test -w "$HOOKRUN_RESULTS" && echo "$HOOKRUN_RESULTS"'}
`)
	for _, prepared := range []string{filepath.Join(t.TempDir(), "results"), ""} {
		ws := t.TempDir()
		res, _, sink := runResults(t, w, engine.RunSpec{Workspace: ws, Results: prepared}, testEnv)
		if res.Status != workflows.StatusSucceeded || len(res.Outputs) != 1 {
			t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.All())
		}
		p := res.Outputs[0].Value
		_, err := os.Stat(p)
		switch {
		case strings.HasPrefix(p, ws):
			t.Errorf("HOOKRUN_RESULTS %s lies in the workspace", p)
		case prepared != "" && (p != prepared || err != nil):
			t.Errorf("HOOKRUN_RESULTS %s (%v), want the prepared %s, kept", p, err, prepared)
		case prepared == "" && !os.IsNotExist(err):
			t.Errorf("the run's own results folder %s is still there (%v)", p, err)
		}
	}
}

// A malformed result file fails the step that wrote it, with its
// position; a symlink planted in the folder is not followed.
func TestResultsMalformedFailsTheStep(t *testing.T) {
	w := enginetest.Parse(t, `
steps:
  - id: plant
    run: ln -s /etc/passwd "$HOOKRUN_RESULTS/x.sarif" && ln -s /etc "$HOOKRUN_RESULTS/etc"
  - id: bad
    depends: [plant]
    run: |
      printf '{"labels": {"add": ["bug"]},\n "lables": {}}\n' > "$HOOKRUN_RESULTS/actions.json"
`)
	res, _, sink := runResults(t, w, engine.RunSpec{Workspace: t.TempDir()}, testEnv)
	if res.Status != workflows.StatusFailed {
		t.Fatalf("run %s, want failed\n%s", res.Status, sink.All())
	}
	if res.Steps[0].Status != workflows.StatusSucceeded {
		t.Errorf("step plant %s: %s (a symlink must be skipped, not read)", res.Steps[0].Status, res.Steps[0].Error)
	}
	want := `results: actions.json:2:2: unknown field "lables"`
	if res.Steps[1].Status != workflows.StatusFailed || res.Steps[1].Error != want {
		t.Errorf("step bad %s: %q, want failed: %q", res.Steps[1].Status, res.Steps[1].Error, want)
	}
	if r := res.Results; r == nil || !hasNote(r.Notes, "x.sarif is a symlink: not followed") || !hasNote(r.Notes, "etc is a symlink: not followed") {
		t.Errorf("results %+v do not say the symlinks were not followed", res.Results)
	}
}

// More than 5,000 findings: the first 5,000 are kept, the cut is counted
// and said, in the results and the run log.
func TestResultsCapSaysWhatWasCut(t *testing.T) {
	w := enginetest.Parse(t, `
steps:
  - id: many
    run: |
      i=1
      while [ $i -le 5003 ]; do
        echo "{\"message\": \"m$i\", \"location\": {\"path\": \"a.go\", \"range\": {\"start\": {\"line\": $i}}}}"
        i=$((i+1))
      done > "$HOOKRUN_RESULTS/many.rdjsonl"
`)
	res, _, sink := runResults(t, w, engine.RunSpec{Workspace: t.TempDir()}, testEnv)
	if res.Status != workflows.StatusSucceeded {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	r := res.Results
	if r == nil || len(r.Findings) != contract.MaxResultsFindings || r.Findings[4999].StartLine != 5000 {
		t.Fatalf("findings: %d", len(r.Findings))
	}
	if r.Dropped["over the limit of 5000 findings per run"] != 3 || !hasNote(r.Notes, "3 findings over the limit of 5000 per run were cut (from many.rdjsonl)") {
		t.Errorf("dropped %v notes %q", r.Dropped, r.Notes)
	}
	if !strings.Contains(sink.Text(contract.RunLogStep, contract.StreamSystem), "were cut (from many.rdjsonl)") {
		t.Errorf("the run log does not say what was cut:\n%s", sink.All())
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
