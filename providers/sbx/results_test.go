package sbx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

// TestResultsCopyFollowsNoSymlink: symlinks a step plants in the
// sandbox's results folder arrive on the host as nothing, and a symlink
// planted in the host's results folder is not written through.
func TestResultsCopyFollowsNoSymlink(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	ws, results, outside := gitRepo(t), contracttest.ResultsDir(t), t.TempDir()
	s := openResults(t, p, "symlinks", ws, results)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	env := []workflows.EnvVar{{Name: "PATH", Value: os.Getenv("PATH")}, {Name: "HOOKRUN_RESULTS", Value: contract.SandboxResultsPath(ws)}}
	script := `cd "$HOOKRUN_RESULTS" && ln -s /etc/passwd x.sarif && ln -s ` + outside + ` out && echo ok > real.rdjsonl`
	res, _, stderr, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "plant", Argv: []string{"sh", "-c", script}, Env: env, Results: results})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(results, "real.rdjsonl")); err != nil || string(data) != "ok\n" {
		t.Errorf("real.rdjsonl on the host: %q, %v", data, err)
	}
	for _, name := range []string{"x.sarif", "out"} {
		if _, err := os.Lstat(filepath.Join(results, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("symlink %s of the sandbox reached the host folder (%v)", name, err)
		}
	}

	// A symlink in the host folder (a host step of the run could plant
	// one) is not written through.
	if err := os.Symlink(outside, filepath.Join(results, "sub")); err != nil {
		t.Fatal(err)
	}
	script = `mkdir -p "$HOOKRUN_RESULTS/sub" && echo pwned > "$HOOKRUN_RESULTS/sub/y.sarif"`
	_, _, _, err = step(t, context.Background(), s, contract.ExecRequest{StepID: "through", Argv: []string{"sh", "-c", script}, Env: env, Results: results})
	if err == nil {
		t.Error("copying over a host symlink did not fail")
	}
	if _, err := os.Lstat(filepath.Join(outside, "y.sarif")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy wrote through the host symlink (%v)", err)
	}
}
