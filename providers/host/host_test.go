package host_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

var pathEnv = workflows.EnvVar{Name: "PATH", Value: contracttest.DefaultPath}

func TestConformance(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) contract.Executor {
		return host.New(host.Config{})
	}, contracttest.Options{})
}

// processGone reports whether pid no longer runs. An exited process whose
// parent is gone stays a zombie until init reaps it (some container inits
// never do); a zombie runs no code, so it counts as gone.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}

// TestNoProcessOutlivesItsStep: a step that starts a background `sleep 300`
// leaves nothing behind, whether it times out, is cancelled, or exits by
// itself; also when the background child ignores SIGTERM.
func TestNoProcessOutlivesItsStep(t *testing.T) {
	tests := []struct {
		name    string
		script  string // $PIDFILE receives the background child's pid
		timeout time.Duration
		wantErr error
	}{
		{"timeout", `sleep 300 & echo $! > "$PIDFILE"; wait`, 500 * time.Millisecond, context.DeadlineExceeded},
		{"timeout, child ignores SIGTERM", `(trap '' TERM; exec sleep 300) & echo $! > "$PIDFILE"; wait`, 500 * time.Millisecond, context.DeadlineExceeded},
		{"timeout, nested shells", `sh -c 'sh -c "sleep 300 & echo \$! > \"$PIDFILE\"; wait"' ; wait`, 500 * time.Millisecond, context.DeadlineExceeded},
		{"exits leaving a child", `sleep 300 & echo $! > "$PIDFILE"; exit 0`, 0, nil},
		{"exits leaving a child that holds stdout", `sleep 300 & echo $! > "$PIDFILE"; echo bye`, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			var out bytes.Buffer
			start := time.Now()
			res, err := host.New(host.Config{Grace: 500 * time.Millisecond}).Exec(ctx, contract.ExecRequest{
				StepID: "bg",
				Argv:   []string{"sh", "-c", tt.script},
				Env:    []workflows.EnvVar{pathEnv, {Name: "PIDFILE", Value: pidFile}},
				Dir:    dir,
				Stdout: &out,
				Stderr: &out,
			})
			elapsed := time.Since(start)
			if !errors.Is(err, tt.wantErr) && !(tt.wantErr == nil && err == nil) {
				t.Fatalf("Exec: err %v, want %v (output %q)", err, tt.wantErr, out.String())
			}
			if tt.wantErr != nil && res.ExitCode != -1 {
				t.Errorf("exit code %d, want -1", res.ExitCode)
			}
			if elapsed > 5*time.Second {
				t.Errorf("Exec took %s; the leftover child held it", elapsed)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the step did not record its child's pid: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 1 {
				t.Fatalf("bad pid %q", b)
			}
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("background child %d is still running after Exec returned", pid)
			}
		})
	}
}

// TestEscapedChildDoesNotHangExec: a child that leaves the process group
// (setsid) and keeps stdout open cannot be stopped by group signals; Exec must
// still return, bounded by DrainTimeout.
func TestEscapedChildDoesNotHangExec(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("setsid(1) not installed")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	start := time.Now()
	res, err := host.New(host.Config{DrainTimeout: 300 * time.Millisecond}).Exec(context.Background(), contract.ExecRequest{
		Argv: []string{"sh", "-c", `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' & sleep 0.2; echo done`},
		Env:  []workflows.EnvVar{pathEnv, {Name: "PIDFILE", Value: pidFile}},
		Dir:  dir,
	})
	elapsed := time.Since(start)
	if b, rerr := os.ReadFile(pidFile); rerr == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v", res.ExitCode, err)
	}
	if elapsed > 3*time.Second {
		t.Errorf("Exec took %s with an escaped child holding stdout, want about DrainTimeout", elapsed)
	}
}

func TestExecDetails(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "tool.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho tool \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	myShell := filepath.Join(dir, "myshell")
	if err := os.WriteFile(myShell, []byte("#!/bin/sh\nprintf 'via-myshell '\nexec /bin/sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cfg        host.Config
		argv       []string
		env        []workflows.EnvVar
		wantCode   int
		wantStdout string
		wantStderr string // substring
	}{
		{"argv is not re-parsed", host.Config{}, []string{"printf", "%s|", "a b", "$(id)", "`x`"}, []workflows.EnvVar{pathEnv}, 0, "a b|$(id)|`x`|", ""},
		{"absolute binary", host.Config{}, []string{script, "x"}, nil, 0, "tool x\n", ""},
		{"relative binary resolved against Dir", host.Config{}, []string{"./tool.sh", "y"}, nil, 0, "tool y\n", ""},
		{"found in the step's PATH", host.Config{}, []string{"tool.sh", "z"}, []workflows.EnvVar{{Name: "PATH", Value: dir}}, 0, "tool z\n", ""},
		{"not found in the step's PATH", host.Config{}, []string{"tool.sh"}, []workflows.EnvVar{{Name: "PATH", Value: "/nonexistent"}}, 127, "", "tool.sh: command not found"},
		{"not executable", host.Config{}, []string{notExec}, nil, 126, "", "permission denied"},
		{"no PATH: sh found with the runner's", host.Config{}, []string{"sh", "-c", "echo $0"}, nil, 0, "sh\n", ""},
		{"Shell replaces sh", host.Config{Shell: myShell}, []string{"sh", "-c", "echo ok"}, []workflows.EnvVar{pathEnv}, 0, "via-myshell ok\n", ""},
		{"environment is exactly Env", host.Config{}, []string{"sh", "-c", "env | grep -v '^PWD=' | grep -v '^SHLVL=' | grep -v '^_=' | sort"}, []workflows.EnvVar{pathEnv, {Name: "A", Value: "1"}}, 0, "A=1\nPATH=" + contracttest.DefaultPath + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			res, err := host.New(tt.cfg).Exec(context.Background(), contract.ExecRequest{
				Argv: tt.argv, Env: tt.env, Dir: dir, Stdout: &stdout, Stderr: &stderr,
			})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.ExitCode != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", res.ExitCode, tt.wantCode, stderr.String())
			}
			if stdout.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestExecErrors(t *testing.T) {
	tests := []struct {
		name string
		req  contract.ExecRequest
	}{
		{"empty argv", contract.ExecRequest{}},
		{"missing working directory", contract.ExecRequest{Argv: []string{"sh", "-c", "true"}, Dir: "/nonexistent/hookrun"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := host.New(host.Config{}).Exec(context.Background(), tt.req)
			if err == nil {
				t.Fatalf("Exec succeeded with exit %d, want an error", res.ExitCode)
			}
			if res.ExitCode != -1 {
				t.Errorf("exit code %d, want -1", res.ExitCode)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     host.Config
		wantErr bool
	}{
		{"zero", host.Config{}, false},
		{"negative grace", host.Config{Grace: -time.Second}, true},
		{"negative drain", host.Config{DrainTimeout: -time.Second}, true},
		{"shell command line", host.Config{Shell: "bash -e"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
