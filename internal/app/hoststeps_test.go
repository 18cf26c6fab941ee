package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/sys/reexec"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// The test binary doubles as the init of isolated host steps, as hookrun
// does (providers/host).
func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	os.Exit(m.Run())
}

// stepWritableDir is a directory the unprivileged step user may write: a
// test's own temporary directory lies under one private to root.
func stepWritableDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestParseStepUser(t *testing.T) {
	for _, tt := range []struct {
		in       string
		uid, gid uint32
		ok       bool
	}{
		{"65534:65534", 65534, 65534, true},
		{"65534", 65534, 65534, true}, // nobody's primary group is nogroup (65534)
		{"nobody", 65534, 65534, true},
		{"1234:5678", 1234, 5678, true},
		{"0:65534", 0, 0, false},
		{"65534:0", 0, 0, false},
		{"root", 0, 0, false},
		{"", 0, 0, false},
		{"no-such-user-hookrun", 0, 0, false},
		{"65534:x", 0, 0, false},
	} {
		u, err := parseStepUser(tt.in)
		if (err == nil) != tt.ok || (tt.ok && (u.uid != tt.uid || u.gid != tt.gid)) {
			t.Errorf("parseStepUser(%q) = %+v, %v; want %d:%d ok %v", tt.in, u, err, tt.uid, tt.gid, tt.ok)
		}
	}
}

// TestHostStepsDecision: how serve and runner run host steps, by mode and
// by hookrun's own uid.
func TestHostStepsDecision(t *testing.T) {
	dir := stepWritableDir(t)
	base := func(mode string) *Config {
		c := &Config{DataDir: filepath.Join(dir, "data"), Runner: RunnerConfig{HostSteps: mode, StepUser: "65534:65534"}}
		return c
	}
	exec := func(t *testing.T, hs hostSteps) (string, error) {
		t.Helper()
		var out strings.Builder
		ws := stepWritableDir(t)
		_, err := hs.exec.Exec(context.Background(), contract.ExecRequest{
			StepID: "s", Argv: []string{"sh", "-c", "id -u"}, Dir: ws, Workspace: ws,
			Env: []workflows.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}}, Stdout: &out, Stderr: &out,
		})
		return strings.TrimSpace(out.String()), err
	}
	t.Run("same_user warns and runs as hookrun", func(t *testing.T) {
		var log strings.Builder
		hs := newHostSteps(context.Background(), base(HostStepsSameUser), os.Geteuid(), slog.New(slog.NewTextHandler(&log, nil)))
		if !strings.Contains(log.String(), "can read its credentials") || hs.owner != nil {
			t.Fatalf("log %q, owner %v", log.String(), hs.owner)
		}
		if out, err := exec(t, hs); err != nil || out != strconv.Itoa(os.Geteuid()) {
			t.Fatalf("ran as %q, %v", out, err)
		}
	})
	t.Run("isolated without root refuses", func(t *testing.T) {
		hs := newHostSteps(context.Background(), base(HostStepsIsolated), 1000, slog.New(slog.DiscardHandler))
		if _, err := exec(t, hs); err == nil || !strings.Contains(err.Error(), "hookrun runs as uid 1000, not root") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("isolated as root runs as the step user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Fatal("run the tests as root (CI does)")
		}
		var log strings.Builder
		hs := newHostSteps(context.Background(), base(HostStepsIsolated), 0, slog.New(slog.NewTextHandler(&log, nil)))
		if hs.owner == nil || hs.owner.UID != 65534 {
			t.Fatalf("owner %v", hs.owner)
		}
		// The log says how steps start: here (Linux 6.18, root) without an
		// init, or, where that dry run failed, through which init and why.
		want := "launch=direct"
		if err := host.DirectLaunchError(); err != nil {
			want = "no_direct_launch="
		}
		if !strings.Contains(log.String(), want) {
			t.Errorf("the start-up log does not say %q: %s", want, log.String())
		}
		if out, err := exec(t, hs); err != nil || out != "65534" {
			t.Fatalf("ran as %q, %v", out, err)
		}
	})
}
