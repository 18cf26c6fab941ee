package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// A runner starting removes the hookrun-* sandboxes a crashed runner left:
// those of finished runs and of unknown runs older than runner.orphan_age;
// a live run's, a young unknown run's and sandboxes that are not hookrun's
// stay.
func TestStartRemovesOrphanedSandboxes(t *testing.T) {
	dir := t.TempDir()
	sim := filepath.Join(dir, "bin", "sbx")
	if out, err := exec.Command("go", "build", "-o", sim, "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		t.Fatalf("building the sbx simulator: %v\n%s", err, out)
	}
	state := filepath.Join(dir, "sbx-state")
	t.Setenv("SBXSIM_STATE", state)
	wf := filepath.Join(dir, "workflows")
	data := filepath.Join(dir, "data")
	for _, d := range []string{wf, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	on := true
	cfg := func() *Config {
		return &Config{Listen: "127.0.0.1:0", DataDir: data, Workflows: wf, AllowRepos: []string{"o/*"},
			GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"},
			Runner: RunnerConfig{SbxBinary: sim, HostSteps: HostStepsSameUser}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	now := time.Now()
	finished, live := ulidAt(now.Add(-time.Hour)), ulidAt(now.Add(-time.Minute))
	oldUnknown, youngUnknown := ulidAt(now.Add(-48*time.Hour)), ulidAt(now.Add(-2*time.Hour))
	a, err := Start(ctx, ModeServe, cfg(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []*stores.RunRecord{
		{ID: finished, Workflow: "hello", Status: workflows.StatusSucceeded, Attempt: 1},
		{ID: live, Workflow: "hello", Status: workflows.StatusRunning, Attempt: 1, Claimant: "elsewhere", HeartbeatAt: time.Now().Add(time.Hour)},
	} {
		if _, err := a.Stores().Runs().Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	ws := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet", ws}, {"-C", ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	names := map[string]bool{"dagu-claude": true} // want kept
	for id, keep := range map[string]bool{finished: false, live: true, oldUnknown: false, youngUnknown: true} {
		names["hookrun-"+strings.ToLower(id)] = keep
	}
	for n := range names {
		if out, err := exec.Command(sim, "create", "--name", n, "--clone", "--no-progress", "claude", ws).CombinedOutput(); err != nil {
			t.Fatalf("sbx create %s: %v\n%s", n, err, out)
		}
	}

	a, err = Start(ctx, ModeServe, cfg(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Shutdown(ctx) }()
	out, err := exec.Command(sim, "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("sbx ls: %v\n%s", err, out)
	}
	for n, keep := range names {
		if got := strings.Contains(string(out), n); got != keep {
			t.Errorf("sandbox %s present = %v, want %v", n, got, keep)
		}
	}
}

// A runner started as root pins container volumes under data_dir/volumes
// (0700), and its start unmounts and removes the pins a dead run left
// there, keeping a live run's (issue 24 point 1).
func TestStartSweepsVolumePins(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("!!! pinning volume sources needs root; test skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if cli, err := dockertest.Client(ctx); err != nil {
		t.Skipf("\n!!! WARNING: Docker test SKIPPED (a runner pins volumes only with a Docker engine): %v !!!", err)
	} else {
		_ = cli.Close()
	}
	dir := t.TempDir()
	wf, data := filepath.Join(dir, "workflows"), filepath.Join(dir, "data")
	for _, d := range []string{wf, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	on := true
	cfg := func() *Config {
		return &Config{Listen: "127.0.0.1:0", DataDir: data, Workflows: wf, AllowRepos: []string{"o/*"},
			GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"},
			Runner: RunnerConfig{HostSteps: HostStepsSameUser}}
	}
	now := time.Now()
	finished, live := ulidAt(now.Add(-time.Hour)), ulidAt(now.Add(-time.Minute))
	a, err := Start(ctx, ModeServe, cfg(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []*stores.RunRecord{
		{ID: finished, Workflow: "hello", Status: workflows.StatusSucceeded, Attempt: 1},
		{ID: live, Workflow: "hello", Status: workflows.StatusRunning, Attempt: 1, Claimant: "elsewhere", HeartbeatAt: time.Now().Add(time.Hour)},
	} {
		if _, err := a.Stores().Runs().Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(data, VolumeStagingDir)
	if fi, err := os.Stat(staging); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data_dir/%s after start: %v, %v; want a directory of mode 0700", VolumeStagingDir, fi, err)
	}

	// A dead runner's pins, as it left them.
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "kept"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	pin := func(runID string) string {
		p := filepath.Join(staging, runID, "c0ffee", "0")
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "--bind", src, p).CombinedOutput(); err != nil {
			t.Fatalf("mount --bind: %v\n%s", err, out)
		}
		return p
	}
	gone, kept := pin(finished), pin(live)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", kept).Run() })

	a, err = Start(ctx, ModeServe, cfg(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Shutdown(ctx) }()
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mountinfo), " "+gone+" ") {
		t.Errorf("the finished run's pin %s is still mounted", gone)
	}
	if _, err := os.Stat(filepath.Join(staging, finished)); !os.IsNotExist(err) {
		t.Errorf("the finished run's staging: %v; want it removed", err)
	}
	if !strings.Contains(string(mountinfo), " "+kept+" ") {
		t.Errorf("the live run's pin %s was unmounted", kept)
	}
	if _, err := os.Stat(filepath.Join(src, "kept")); err != nil {
		t.Errorf("the pinned content after the sweep: %v", err)
	}
}
