package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// pinningDocker is a Docker whose volume sources are pinned under a fresh
// staging directory, which it returns. Pinning needs root; as root, the
// probe must succeed.
func pinningDocker(t *testing.T) (*Docker, string) {
	t.Helper()
	needDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("!!! pinning volume sources needs root; test skipped")
	}
	base := filepath.Join(t.TempDir(), "volumes")
	d := newDocker(t, Config{VolumeStaging: base})
	if err := d.VolumePinning(); err != nil {
		t.Fatalf("volume pinning off as root: %v", err)
	}
	return d, base
}

// mountsUnder lists the mount points under dir in this process's mount
// namespace.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	all, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range all {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			out = append(out, m)
		}
	}
	return out
}

// assertNoStaging: no mount and no run directory left under base.
func assertNoStaging(t *testing.T, base string) {
	t.Helper()
	if m := mountsUnder(t, base); len(m) > 0 {
		t.Errorf("staging mounts left: %q", m)
	}
	if left, err := os.ReadDir(base); err != nil || len(left) > 0 {
		t.Errorf("staging directory: %v entries left, err %v", len(left), err)
	}
}

// raceWorkspace makes a workspace holding the directory cache (with a file
// "orig") and the file conf (content "orig-file"), and sets afterResolve to
// swap each of them, once resolved, for a symlink into secret, the way a
// process of the run racing the mount would. It returns the workspace.
func raceWorkspace(t *testing.T, secret string) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "cache", "orig"), []byte("orig-dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "conf"), []byte("orig-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	swaps := map[string]string{filepath.Join(ws, "cache"): secret, filepath.Join(ws, "conf"): filepath.Join(secret, "marker")}
	afterResolve = func(resolved string) {
		to, ok := swaps[resolved]
		if !ok {
			return
		}
		if err := os.Rename(resolved, resolved+".moved"); err != nil {
			t.Errorf("swapping %s: %v", resolved, err)
		}
		if err := os.Symlink(to, resolved); err != nil {
			t.Errorf("swapping %s: %v", resolved, err)
		}
	}
	t.Cleanup(func() { afterResolve = nil })
	return ws
}

// TestVolumePinnedAgainstSwap: between the check of a relative volume
// source and the container's creation, the directory (and a file) on its
// path is swapped for a symlink to a root-only host folder; the step
// container and the root container still mount what the check found, never
// the host folder, and the staging mounts are gone after the step and
// after the run (issue 24 point 1: "a swap between check and mount cannot
// escape either").
func TestVolumePinnedAgainstSwap(t *testing.T) {
	d, base := pinningDocker(t)
	secret := t.TempDir() // 0700, root's
	if err := os.WriteFile(filepath.Join(secret, "marker"), []byte("host-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runID := runPrefix + "pinswap"
	c := *testImage
	c.Volumes = []string{"./cache:/cache", "conf:/conf:ro"}
	const read = "ls -A /cache; cat /cache/*; cat /conf"
	check := func(what, stdout string) {
		t.Helper()
		if strings.Contains(stdout, "host-secret") || strings.Contains(stdout, "marker") {
			t.Errorf("%s: the container saw the host folder: %q", what, stdout)
		}
		if !strings.Contains(stdout, "orig-dir") || !strings.Contains(stdout, "orig-file") {
			t.Errorf("%s: stdout %q; want the checked directory's and file's content", what, stdout)
		}
	}

	ws := raceWorkspace(t, secret)
	res, stdout, stderr, err := run(t, context.Background(), d, contract.ExecRequest{RunID: runID, StepID: "read", Workspace: ws,
		Container: &c, Argv: []string{"sh", "-c", read}})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("step: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	check("step container", stdout)
	if _, err := os.Readlink(filepath.Join(ws, "cache")); err != nil {
		t.Fatalf("the swap did not happen: %v", err)
	}
	assertNoStaging(t, base)

	ws = raceWorkspace(t, secret)
	sess, err := d.Open(context.Background(), contract.OpenRequest{RunID: runID, Workspace: ws,
		Workflow: &workflows.Workflow{Name: "test", Container: &c}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if m := mountsUnder(t, base); len(m) != 2 {
		t.Errorf("staging mounts while the root container lives: %q; want 2", m)
	}
	res, stdout, stderr, err = run(t, context.Background(), sess, contract.ExecRequest{RunID: runID, StepID: "read-root", Workspace: ws,
		Argv: []string{"sh", "-c", read}})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("root exec: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	check("root container", stdout)
	if err := sess.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	assertNoStaging(t, base)
	assertNoContainers(t, d, runID)
}

// TestVolumeStagingSwept: the stagings of a run that died with its
// process are unmounted and removed by the next process's orphan sweep,
// without touching the pinned content; those of a run the process holds,
// or of a live run, stay.
func TestVolumeStagingSwept(t *testing.T) {
	d, base := pinningDocker(t)
	dead, alive := runPrefix+"pinswept", runPrefix+"pinlive"
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "kept"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, runID := range []string{dead, alive} {
		st, err := d.pins.newStaging(runID)
		if err != nil {
			t.Fatal(err)
		}
		h, err := os.OpenFile(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.pin(h)
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	mine := func(runID string) bool { return runID != dead && runID != alive }

	// While this process holds them, its own sweep leaves them.
	if _, err := d.RemoveOrphans(context.Background(), mine); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, base); len(m) != 2 {
		t.Fatalf("mounts after a sweep by their holder: %q; want 2", m)
	}

	// The next process (a restart): dead is swept, alive is live.
	d2 := newDocker(t, Config{VolumeStaging: base})
	if _, err := d2.RemoveOrphans(context.Background(), func(runID string) bool { return mine(runID) || runID == alive }); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, filepath.Join(base, dead)); len(m) > 0 {
		t.Errorf("mounts of the dead run left: %q", m)
	}
	if _, err := os.Stat(filepath.Join(base, dead)); !os.IsNotExist(err) {
		t.Errorf("staging of the dead run: %v; want it gone", err)
	}
	if m := mountsUnder(t, filepath.Join(base, alive)); len(m) != 1 {
		t.Errorf("mounts of the live run: %q; want 1", m)
	}
	if _, err := os.Stat(filepath.Join(src, "kept")); err != nil {
		t.Errorf("the pinned content after the sweep: %v", err)
	}

	// Once no longer live, it goes too.
	if _, err := d2.RemoveOrphans(context.Background(), mine); err != nil {
		t.Fatal(err)
	}
	assertNoStaging(t, base)
	if _, err := os.Stat(filepath.Join(src, "kept")); err != nil {
		t.Errorf("the pinned content after the sweep: %v", err)
	}
}

// TestVolumePinningOff: without a staging directory the sources are only
// checked, and VolumePinning says why.
func TestVolumePinningOff(t *testing.T) {
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.VolumePinning(); err == nil || !strings.Contains(err.Error(), "no volume staging directory") {
		t.Errorf("VolumePinning() = %v; want why pinning is off", err)
	}
	if _, err := New(Config{VolumeStaging: "relative/dir"}); err == nil {
		t.Error("New with a relative volume_staging: no error")
	}
}
