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
)

// A harness attempt that times out in the run's sandbox stops its agent
// before the retry starts: against the sbx provider and its simulator,
// where, as with sbx, ending `sbx exec` leaves the agent running.
func TestTimedOutAgentStopsBeforeTheRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sim := filepath.Join(dir, "sbx")
	if out, err := exec.Command("go", "build", "-o", sim, "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		t.Fatalf("building the sbx simulator: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "ws")
	for _, args := range [][]string{{"init", "--quiet", ws}, {"-C", ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
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
