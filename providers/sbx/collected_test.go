package sbx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// TestCollectInAHostileWorkspace: the workspace's git configuration and
// hooks are not hookrun's (a step container or a host step may write them):
// collecting the agent's commits, which hookrun does as its own user, runs
// none of what they name, and works in a workspace owned by another user.
func TestCollectInAHostileWorkspace(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	ws := gitRepo(t)
	s := open(t, p, "hostile", ws)
	if res, _, _, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "a", Argv: []string{"sh", "-c", commitScript}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v", res.ExitCode, err)
	}
	marks := t.TempDir()
	evil := filepath.Join(marks, "evil")
	writeExec := func(path, name string) {
		if err := os.WriteFile(path, []byte("#!/bin/sh\ntouch "+filepath.Join(marks, name)+"\nexec git-upload-pack \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeExec(evil, "uploadpack")
	hooks := filepath.Join(marks, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"reference-transaction", "post-checkout", "pre-auto-gc"} {
		writeExec(filepath.Join(hooks, h), "hook-"+h)
		writeExec(filepath.Join(ws, ".git", "hooks", h), "own-hook-"+h)
	}
	fsmonitor := filepath.Join(marks, "fsmonitor")
	writeExec(fsmonitor, "fsmonitor")
	for _, kv := range [][2]string{
		{"core.hooksPath", hooks},
		{"core.fsmonitor", fsmonitor},
		{"remote." + RemoteName("hostile") + ".uploadpack", evil},
		{"credential.helper", "!" + evil},
		{"gc.auto", "1"},
	} {
		runGit(t, ws, "config", kv[0], kv[1])
	}
	// Owned by someone else, as a workspace handed to the step user is.
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	branch, err := s.Collected()
	if err != nil || branch != BranchName("hostile") {
		t.Fatalf("Collected: %q, %v", branch, err)
	}
	if got := runGit(t, ws, "-c", "safe.directory=*", "log", "-1", "--format=%s", branch); got != "agent commit" {
		t.Errorf("%s holds %q, want the agent's commit", branch, got)
	}
	if ran, _ := os.ReadDir(marks); len(ran) != 3 { // evil, hooks, fsmonitor: the scripts themselves
		var names []string
		for _, e := range ran {
			names = append(names, e.Name())
		}
		t.Errorf("the workspace's configuration ran something: %v", names)
	}
}
