package proc

import (
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

func TestEnvAndMerge(t *testing.T) {
	ev := func(kv ...string) []workflows.EnvVar {
		var out []workflows.EnvVar
		for _, s := range kv {
			n, v, _ := strings.Cut(s, "=")
			out = append(out, workflows.EnvVar{Name: n, Value: v})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		base  []string
		lists [][]workflows.EnvVar
		want  []string
	}{
		{"nothing is empty, not nil", nil, nil, []string{}},
		{"in order", nil, [][]workflows.EnvVar{ev("A=1", "B=2")}, []string{"A=1", "B=2"}},
		{"a later entry replaces in place", nil, [][]workflows.EnvVar{ev("A=1", "B=2"), ev("A=3", "C=4")}, []string{"A=3", "B=2", "C=4"}},
		{"within one list too", nil, [][]workflows.EnvVar{ev("A=1", "A=2")}, []string{"A=2"}},
		{"values keep their = and may be empty", nil, [][]workflows.EnvVar{ev("A=x=y", "B=")}, []string{"A=x=y", "B="}},
		{"over a base", []string{"PATH=/bin", "HOME=/root"}, [][]workflows.EnvVar{ev("HOME=/tmp", "X=1")}, []string{"PATH=/bin", "HOME=/tmp", "X=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.base, tc.lists...)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Merge = %#v, want %#v", got, tc.want)
			}
			if tc.base == nil {
				if env := Env(tc.lists...); env == nil || !slices.Equal(env, tc.want) {
					t.Fatalf("Env = %#v, want %#v", env, tc.want)
				}
			}
		})
	}
}

// start runs script as the leader of its own process group.
func start(t *testing.T, script string) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { Signal(cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, exited
}

func signalOf(t *testing.T, err error) syscall.Signal {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit %v, want one by signal", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("exit %v, want one by signal", err)
	}
	return ws.Signal()
}

func TestStop(t *testing.T) {
	t.Run("SIGTERM ends a process that heeds it", func(t *testing.T) {
		cmd, exited := start(t, "sleep 30")
		t0 := time.Now()
		err := Stop(cmd.Process.Pid, 10*time.Second, exited, nil)
		if sig := signalOf(t, err); sig != syscall.SIGTERM || time.Since(t0) > 5*time.Second {
			t.Fatalf("ended by %v after %v, want SIGTERM at once", sig, time.Since(t0))
		}
	})
	t.Run("SIGKILL after the grace", func(t *testing.T) {
		cmd, exited := start(t, `trap "" TERM; echo ready; while :; do sleep 0.05; done`)
		time.Sleep(200 * time.Millisecond) // the trap is set
		t0 := time.Now()
		err := Stop(cmd.Process.Pid, 300*time.Millisecond, exited, nil)
		if sig := signalOf(t, err); sig != syscall.SIGKILL || time.Since(t0) < 300*time.Millisecond {
			t.Fatalf("ended by %v after %v, want SIGKILL after the grace", sig, time.Since(t0))
		}
	})
	t.Run("SIGTERM waits for ready", func(t *testing.T) {
		cmd, exited := start(t, "sleep 30")
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- Stop(cmd.Process.Pid, 10*time.Second, exited, ready) }()
		select {
		case err := <-done:
			t.Fatalf("stopped before ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		close(ready)
		if sig := signalOf(t, <-done); sig != syscall.SIGTERM {
			t.Fatalf("ended by %v, want SIGTERM", sig)
		}
	})
}

// A leader that exits leaves a child in its group: StopLeftovers ends it,
// with SIGKILL when it ignores SIGTERM.
func TestStopLeftovers(t *testing.T) {
	for _, script := range []string{
		"sleep 30 &",
		`sh -c 'trap "" TERM; while :; do sleep 0.05; done' &`,
	} {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		t.Cleanup(func() { Signal(pgid, syscall.SIGKILL) })
		if !Alive(pgid) {
			t.Fatalf("%s: nothing alive in group %d", script, pgid)
		}
		time.Sleep(100 * time.Millisecond) // the trap is set
		StopLeftovers(pgid, time.Time{}, 300*time.Millisecond)
		if Alive(pgid) {
			t.Fatalf("%s: group %d still alive", script, pgid)
		}
	}
}

func TestOrDiscard(t *testing.T) {
	var b strings.Builder
	if w := OrDiscard(&b); w != io.Writer(&b) {
		t.Fatal("a writer given must be kept")
	}
	if w := OrDiscard(nil); w != io.Discard {
		t.Fatal("no writer must discard")
	}
}
