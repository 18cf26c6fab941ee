package sbx

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
)

// TestCollected: a session names the branch it collected only once Close
// collected it; a session whose collect failed (its remote is gone) says
// why instead.
func TestCollected(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	ws := gitRepo(t)
	s := open(t, p, "col", ws)
	if _, err := s.Collected(); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Errorf("Collected before Close: %v, want an error", err)
	}
	if res, _, _, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "a", Argv: []string{"sh", "-c", commitScript}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v", res.ExitCode, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	branch, err := s.Collected()
	if err != nil || branch != BranchName("col") {
		t.Fatalf("Collected: %q, %v; want %s", branch, err, BranchName("col"))
	}
	if runGit(t, ws, "log", "-1", "--format=%s", branch) != "agent commit" {
		t.Errorf("%s does not hold the agent's commit", branch)
	}

	// The remote vanished before Close (as when sbx removed the sandbox
	// early): nothing is collected, and Collected says so.
	broken := open(t, p, "broken", ws)
	if out, err := exec.Command("git", "-C", ws, "remote", "remove", RemoteName("broken")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_ = broken.Close(context.Background())
	if b, err := broken.Collected(); err == nil || b != "" || !strings.Contains(err.Error(), "collecting the agent's commits") {
		t.Errorf("Collected after a failed collect: %q, %v; want an error", b, err)
	}
}
