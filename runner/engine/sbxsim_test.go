package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// A harness attempt that times out in the run's sandbox stops its agent
// before the retry starts: against the sbx provider and its simulator,
// where, as with sbx, ending `sbx exec` leaves the agent running.
func TestTimedOutAgentStopsBeforeTheRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sim, ws := buildSim(t, dir), gitWorkspace(t, dir)
	p, err := sbx.New(sbx.Config{Binary: sim, Env: append(os.Environ(), "SBXSIM_STATE="+filepath.Join(dir, "state"))})
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.Parse(t, `
sandbox: {provider: sbx, agent: claude}
harnesses:
  agent: {binary: sh, prefix_args: [-c]}
steps:
  - id: fix
    action: harness.run
    timeout: 1s
    retry_policy: {limit: 1}
    with:
      provider: agent
      prompt: |
        if [ -e first ]; then n=$(wc -l < ticks); sleep 0.5; m=$(wc -l < ticks); echo "before=$n after=$m"; exit 0; fi
        touch first
        while :; do echo 1 >> ticks; sleep 0.02; done
`)
	sink := enginetest.NewMemSink()
	eng, err := engine.New(engine.Config{
		Providers: engine.Providers{Host: enginetest.HostExec(), SBX: p, Harness: contract.HarnessFunc(harness.Run)},
		Logs:      sink,
		LookupEnv: enginetest.Env(testEnv),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := eng.Run(context.Background(), engine.RunSpec{ID: "01JRETRY", Workflow: w, Event: samplePR(), Workspace: ws})
	if res.Status != succeeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	if st := enginetest.Step(res, "fix"); st.Attempts != 2 {
		t.Fatalf("fix made %d attempts, want 2", st.Attempts)
	}
	got := strings.TrimSpace(sink.Text("fix", "stdout"))
	var before, after string
	for _, f := range strings.Fields(got) {
		if v, ok := strings.CutPrefix(f, "before="); ok {
			before = v
		}
		if v, ok := strings.CutPrefix(f, "after="); ok {
			after = v
		}
	}
	if before == "" || before == "0" || before != after {
		t.Errorf("the retry saw the first attempt's agent still writing (%q)\n%s", got, sink.All())
	}
}

// buildSim builds the sbx simulator as dir/sbx.
func buildSim(t *testing.T, dir string) string {
	t.Helper()
	sim := filepath.Join(dir, "sbx")
	if out, err := exec.Command("go", "build", "-o", sim, "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		t.Fatalf("building the sbx simulator: %v\n%s", err, out)
	}
	return sim
}

// gitWorkspace is dir/ws, a git repository with one commit.
func gitWorkspace(t *testing.T, dir string) string {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	for _, args := range [][]string{{"init", "--quiet", ws}, {"-C", ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return ws
}

// A step in the run's sandbox (`sandbox:`, sbx create --clone) writes
// findings to $HOOKRUN_RESULTS, a folder in its clone's .git; hookrun
// copies it out after the step, which failed as a linter that found
// something does, and the run's report carries the finding: against the
// sbx provider and its simulator.
func TestSandboxResultsReachTheReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sim, ws := buildSim(t, dir), gitWorkspace(t, dir)
	p, err := sbx.New(sbx.Config{Binary: sim, Env: append(os.Environ(), "SBXSIM_STATE="+filepath.Join(dir, "state"))})
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.Parse(t, `
sandbox: {provider: sbx, agent: claude}
steps:
  - id: lint
    continue_on: failed
    run: |
      printf '%s\n' "$HOOKRUN_RESULTS"
      echo '{"message": "unchecked error", "location": {"path": "'"$HOOKRUN_WORKSPACE"'/main.go", "range": {"start": {"line": 3}}}, "severity": "ERROR", "code": {"value": "errcheck"}}' > "$HOOKRUN_RESULTS/lint.rdjsonl"
      exit 1
`)
	sink, rep := enginetest.NewMemSink(), &finalReporter{}
	eng, err := engine.New(engine.Config{
		Providers: engine.Providers{Host: enginetest.HostExec(), SBX: p},
		Logs:      sink,
		Reporter:  rep,
		LookupEnv: enginetest.Env(testEnv),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := eng.Run(context.Background(), engine.RunSpec{ID: "01JRESULTS", Workflow: w, Event: samplePR(), Workspace: ws})
	if res.Status != workflows.StatusPartiallySucceeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	if got := strings.TrimSpace(sink.Text("lint", "stdout")); got != contract.SandboxResultsPath(ws) {
		t.Errorf("HOOKRUN_RESULTS in the sandbox = %q, want %s", got, contract.SandboxResultsPath(ws))
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hookrun")); !os.IsNotExist(err) {
		t.Errorf("the host workspace has .git/hookrun (%v): the step wrote outside its clone", err)
	}
	r := res.Results
	if r == nil || len(r.Findings) != 1 {
		t.Fatalf("results %+v\n%s", r, sink.All())
	}
	if f := r.Findings[0]; f.Path != "main.go" || f.StartLine != 3 || f.Rule != "errcheck" || f.Level != contract.LevelError || f.File != "lint.rdjsonl" {
		t.Errorf("finding %+v", f)
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if rep.final == nil || rep.final.Results != res.Results {
		t.Errorf("the final report does not carry the results: %+v", rep.final)
	}
}

// A sandbox the workflow creates itself, as Dagu's sbx page does (`sbx
// create` in a step, with --clone or without it, the workspace then
// mounted read-write), is reached through `sbx exec` on the host, where
// HOOKRUN_RESULTS is the host folder: the step that runs `sbx exec` puts
// the agent's findings there, and the run's results carry them.
func TestOwnSbxSandboxResults(t *testing.T) {
	t.Parallel()
	for _, clone := range []string{"--clone", ""} {
		t.Run("create "+clone, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sim, ws := buildSim(t, dir), gitWorkspace(t, dir)
			env := map[string]string{"PATH": filepath.Dir(sim) + ":" + testEnv["PATH"], "HOME": filepath.Join(dir, "home")}
			res, sink, _ := runWorkflow(t, `
type: chain
harnesses:
  agent: {binary: sbx, prefix_args: [exec, box, sh, -c]}
handler_on:
  exit: {run: sbx rm --force box}
steps:
  - {id: sandbox, run: "sbx create --name box `+clone+` --no-progress claude ."}
  - id: review
    action: harness.run
    with:
      provider: agent
      prompt: |
        echo '{"message": "off by one", "location": {"path": "loop.go", "range": {"start": {"line": 9}}}}' > review.rdjsonl
  - {id: collect, run: 'sbx exec box cat review.rdjsonl > "$HOOKRUN_RESULTS/review.rdjsonl"'}
`, enginetest.RunOpts{Dir: ws, Env: env, Cfg: func(c *engine.Config) { c.Providers.Harness = contract.HarnessFunc(harness.Run) }})
			if res.Status != workflows.StatusSucceeded {
				t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
			}
			if r := res.Results; r == nil || len(r.Findings) != 1 || r.Findings[0].Path != "loop.go" || r.Findings[0].StartLine != 9 {
				t.Fatalf("results %+v\n%s", r, sink.All())
			}
			// The two modes differ as the page says: only without --clone
			// do the agent's files appear in the host working tree.
			_, err := os.Stat(filepath.Join(ws, "review.rdjsonl"))
			if inTree := err == nil; inTree != (clone == "") {
				t.Errorf("review.rdjsonl in the host working tree: %v, want %v", inTree, clone == "")
			}
		})
	}
}
