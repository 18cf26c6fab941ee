package host_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

// The modes of runnerChild besides the default (isolated).
const (
	modeContain   = "contain"   // Config.Contain
	modeLeftovers = "leftovers" // Config.LeftoversDir, no namespaces
)

// runnerExecutor is the executor runnerChild runs its step with.
func runnerExecutor(mode string) *host.Executor {
	switch mode {
	case modeContain:
		return host.New(host.Config{Grace: 500 * time.Millisecond, Contain: true})
	case modeLeftovers:
		return host.New(host.Config{Grace: 500 * time.Millisecond, LeftoversDir: os.Getenv("HOOKRUN_TEST_LEFTOVERS")})
	}
	return isolated()
}

// Contained commands keep the executor's contract, as root and as an
// unprivileged user (through a user namespace: see TestContainedStep...).
func TestContainedConformance(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) contract.Executor {
		return host.New(host.Config{Grace: 500 * time.Millisecond, Contain: true})
	}, contracttest.Options{Startup: 2 * time.Second})
}

// A contained command runs as this process's user, in its working
// directory, and sees itself in a PID namespace of its own.
func TestContainedRunsAsItselfInItsOwnPIDNamespace(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	res, err := host.New(host.Config{Contain: true}).Exec(context.Background(), contract.ExecRequest{
		Argv:   []string{"sh", "-c", `echo "uid=$(id -u) ppid=$PPID pwd=$(pwd)"`},
		Env:    []workflows.EnvVar{pathEnv},
		Dir:    dir,
		Stdout: &out, Stderr: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v: %s", res.ExitCode, err, out.String())
	}
	// Its parent is the init, PID 1 of the namespace.
	want := fmt.Sprintf("uid=%d ppid=1 pwd=%s\n", os.Geteuid(), dir)
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

func TestProbeContain(t *testing.T) {
	if err := host.ProbeContain(context.Background(), ""); err != nil {
		t.Fatalf("ProbeContain: %v", err)
	}
}

// startRunnerChild starts the test binary as a runner that runs, in mode,
// a step with two background children, one of them after setsid, and
// returns once both run; kill -9 it with the returned func.
func startRunnerChild(t *testing.T, mode, mark, ws string, cred *syscall.Credential, env ...string) (kill func()) {
	t.Helper()
	bin := os.Args[0]
	if cred != nil { // a binary the user may execute
		d := ownedDir(t)
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(d, "host.test")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), "HOOKRUN_TEST_RUNNER_CHILD="+mark, "HOOKRUN_TEST_WS="+ws, "HOOKRUN_TEST_RUNNER_MODE="+mode), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(markedAlive(mark)) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	kill = func() {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}
	if n := len(markedAlive(mark)); n < 2 {
		kill()
		t.Fatalf("the step did not start its processes (%d seen)", n)
	}
	return kill
}

// waitGone waits (generously) until no process with mark runs, and kills
// and reports those that still do.
func waitGone(t *testing.T, mark string, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(markedAlive(mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := markedAlive(mark); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v of the step %s", left, what)
	}
}

// TestContainedStepDiesWithItsRunner: a runner killed with SIGKILL in the
// middle of a contained step takes every process of the step with it, the
// one that called setsid too: as root (a PID namespace) and as an
// unprivileged user (a user namespace around it).
func TestContainedStepDiesWithItsRunner(t *testing.T) {
	requireRoot(t)
	for _, tt := range []struct {
		name string
		cred *syscall.Credential
	}{
		{"root", nil},
		{"unprivileged", &syscall.Credential{Uid: stepUID, Gid: stepUID, Groups: []uint32{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mark := fmt.Sprintf("5%d.5", time.Now().UnixNano()%100000)
			kill := startRunnerChild(t, modeContain, mark, ownedDir(t), tt.cred)
			kill()
			waitGone(t, mark, 5*time.Second, "outlived its runner's SIGKILL")
		})
	}
}

// TestLeftoversReapedAtRestart: without namespaces, a step's command dies
// with its runner (Pdeathsig) and what it left in its process group is
// killed by ReapLeftovers at the runner's next start, which leaves a
// live runner's records and an unrelated process alone.
func TestLeftoversReapedAtRestart(t *testing.T) {
	records := t.TempDir()
	mark := fmt.Sprintf("6%d.5", time.Now().UnixNano()%100000)
	ws := t.TempDir()
	// No setsid: a process that leaves its group escapes this mode.
	kill := startRunnerChild(t, modeLeftovers, mark, ws, nil, "HOOKRUN_TEST_LEFTOVERS="+records, "HOOKRUN_TEST_NO_SETSID=1")
	entries, _ := os.ReadDir(records)
	if len(entries) != 1 {
		kill()
		t.Fatalf("%d records of running steps, want 1", len(entries))
	}
	bystander := exec.Command("sleep", mark+"1") // another group, started later
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bystander.Process.Kill(); _ = bystander.Wait() }()
	kill()
	time.Sleep(300 * time.Millisecond)
	if len(markedAlive(mark)) < 2 {
		t.Fatalf("the step's children are gone before the restart: this test shows nothing")
	}
	n, err := host.ReapLeftovers(records)
	if err != nil || n != 1 {
		t.Fatalf("ReapLeftovers = %d, %v; want 1 group", n, err)
	}
	alive := markedAlive(mark)
	if len(alive) != 1 || alive[0] != bystander.Process.Pid {
		t.Errorf("after ReapLeftovers %v run, want only the bystander %d", alive, bystander.Process.Pid)
	}
	if entries, _ := os.ReadDir(records); len(entries) != 0 {
		t.Errorf("%d records left after ReapLeftovers", len(entries))
	}
}
