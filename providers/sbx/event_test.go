package sbx

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Open copies the run's event file into the --clone sandbox, into its
// clone's .git: a step reads it at contract.SandboxEventPath, the clone's
// `git status` stays empty, and an agent's `git add -A` does not commit it.
func TestOpenWritesTheEventFile(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	ws := gitRepo(t)
	const runID = "event"
	inBox := contract.SandboxEventPath(ws)
	eventFile := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(eventFile, []byte(`{"payload":"raw"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sess, err := p.Open(context.Background(), contract.OpenRequest{RunID: runID, Workspace: ws, EventFile: eventFile, Workflow: workflow("claude")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s := sess.(*Session)
	res, stdout, stderr, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "agent",
		Env: []workflows.EnvVar{{Name: "PATH", Value: os.Getenv("PATH")}, {Name: "HOOKRUN_EVENT_PATH", Value: inBox}},
		Argv: []string{"sh", "-c", `cat "$HOOKRUN_EVENT_PATH" && echo && git status --porcelain && echo work > agent.txt && git add -A &&
git -c user.name=agent -c user.email=agent@example.com commit --quiet -m "agent commit"`}})
	if err != nil || res.ExitCode != 0 || stdout != "{\"payload\":\"raw\"}\n" {
		t.Fatalf("exit %d, err %v, stdout %q, stderr %q; want the payload and a clean clone", res.ExitCode, err, stdout, stderr)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	files := strings.Fields(runGit(t, ws, "ls-tree", "-r", "--name-only", BranchName(runID)))
	if !slices.Equal(files, []string{"README", "agent.txt"}) {
		t.Errorf("the agent's commit holds %v, want README and agent.txt only", files)
	}
	if out := runGit(t, ws, "status", "--porcelain"); out != "" {
		t.Errorf("git status of the workspace: %q", out)
	}
	want := []string{"exec", "-i", SandboxName(runID), "sh", "-c", writeEventScript, "hookrun-event", inBox}
	if !slices.ContainsFunc(sim.argv(t), func(a []string) bool { return slices.Equal(a, want) }) {
		t.Errorf("no %q in the sbx invocations %q", want, sim.argv(t))
	}
}
