package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// TestVolumeSymlinkCannotLeaveWorkspace: a step plants symlinks to a
// root-only host folder in the workspace; the next step's container (and a
// root container) mounting them as relative volumes fails naming the
// volume and never sees the folder (issue 24 point 1). A symlink that stays
// in the workspace still works.
//
// Both with volume sources pinned (VolumeStaging, as root) and only
// checked (the fallback).
func TestVolumeSymlinkCannotLeaveWorkspace(t *testing.T) {
	t.Run("checked", func(t *testing.T) { testVolumeSymlink(t, newDocker(t, Config{}), "") })
	t.Run("pinned", func(t *testing.T) {
		d, base := pinningDocker(t)
		testVolumeSymlink(t, d, base)
	})
}

// testVolumeSymlink is TestVolumeSymlinkCannotLeaveWorkspace with d; base
// is d's staging directory ("" when not pinned), empty at the end.
func testVolumeSymlink(t *testing.T, d *Docker, base string) {
	secret := t.TempDir() // 0700, root's
	if err := os.WriteFile(filepath.Join(secret, "marker"), []byte("host-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	runID := runPrefix + "volsym"
	plant := "ln -s " + secret + " /workspace/cache && ln -s ../../../../../../../../../.." + secret + " /workspace/climb" +
		" && mkdir /workspace/data && echo inside > /workspace/data/f && ln -s data /workspace/within"
	res, _, stderr, err := run(t, context.Background(), d, contract.ExecRequest{RunID: runID, StepID: "plant", Workspace: ws,
		Container: testImage, Argv: []string{"sh", "-c", plant}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("plant: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}

	for _, vol := range []string{"./cache:/cache", "climb:/cache:ro", "./cache/../cache:/cache"} {
		c := *testImage
		c.Volumes = []string{vol}
		res, stdout, _, err := run(t, context.Background(), d, contract.ExecRequest{RunID: runID, StepID: "read", Workspace: ws,
			Container: &c, Argv: []string{"sh", "-c", "ls -A /cache; cat /cache/marker"}})
		if strings.Contains(stdout, "host-secret") || strings.Contains(stdout, "marker") {
			t.Errorf("volume %q: the container saw the host folder: %q", vol, stdout)
		}
		want := "volume \"" + vol + "\": host path leaves the workspace"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("volume %q: exit %d, err %v; want an error containing %q", vol, res.ExitCode, err, want)
		}
		// The root container of a run resolves its volumes alike.
		sess, err := d.Open(context.Background(), contract.OpenRequest{RunID: runID + "-root", Workspace: ws,
			Workflow: &workflows.Workflow{Name: "test", Container: &c}})
		if err == nil {
			_ = sess.Close(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("root container with volume %q: err %v; want an error containing %q", vol, err, want)
		}
	}

	c := *testImage
	c.Volumes = []string{"./within:/in:ro"}
	res, stdout, stderr, err := run(t, context.Background(), d, contract.ExecRequest{RunID: runID, StepID: "within", Workspace: ws,
		Container: &c, Argv: []string{"cat", "/in/f"}})
	if err != nil || res.ExitCode != 0 || stdout != "inside\n" {
		t.Errorf("symlink within the workspace: exit %d, err %v, stdout %q, stderr %q; want %q", res.ExitCode, err, stdout, stderr, "inside\n")
	}
	assertNoContainers(t, d, runID)
	assertNoContainers(t, d, runID+"-root")
	if base != "" {
		assertNoStaging(t, base)
	}
}

// TestRunsIsolated: a run's containers are on a network of their own: a
// container of run B cannot reach a port of run A's container, which a
// container of run A itself can; containers have no NET_RAW unless the
// workflow adds it; the networks are gone with their runs (issue 24
// point 3).
func TestRunsIsolated(t *testing.T) {
	d := newDocker(t, Config{})
	runA, runB := runPrefix+"net-a", runPrefix+"net-b"
	s := openRoot(t, d, runA, t.TempDir(), testImage)
	if n := networksOf(t, d, runA); len(n) != 1 {
		t.Errorf("networks of run A while it runs: %v, want one", n)
	}
	// Run A serves a greeting on port 8080.
	res, _, stderr, err := run(t, context.Background(), s, contract.ExecRequest{RunID: runA, StepID: "serve",
		Argv: []string{"sh", "-c", "(while :; do echo hello-from-a | nc -l -p 8080; done) >/dev/null 2>&1 </dev/null &"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("serve: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	ins, err := d.Client().ContainerInspect(context.Background(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for name, ep := range ins.NetworkSettings.Networks {
		if name == "bridge" {
			t.Errorf("run A's container is on Docker's default bridge")
		}
		ip = ep.IPAddress
	}
	if ip == "" {
		t.Fatalf("run A's container has no IP address: %+v", ins.NetworkSettings.Networks)
	}
	// Tried thrice: the server restarts nc between connections.
	connect := "for i in 1 2 3; do nc -w 2 " + ip + " 8080 </dev/null && exit 0; sleep 0.3; done; echo unreachable"

	// A step container of run A reaches it: the server answers.
	res, stdout, _, err := run(t, context.Background(), s, contract.ExecRequest{RunID: runA, StepID: "same-run", Workspace: t.TempDir(),
		Container: testImage, Argv: []string{"sh", "-c", connect}})
	if err != nil || !strings.Contains(stdout, "hello-from-a") {
		t.Fatalf("a container of run A connecting to %s:8080: exit %d, err %v, stdout %q; want the greeting", ip, res.ExitCode, err, stdout)
	}

	// Run B does not, and has no NET_RAW.
	res, stdout, _, err = run(t, context.Background(), d, contract.ExecRequest{RunID: runB, StepID: "other-run", Workspace: t.TempDir(),
		Container: testImage, Argv: []string{"sh", "-c", "grep CapEff /proc/self/status; " + connect}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run B: exit %d, err %v, stdout %q", res.ExitCode, err, stdout)
	}
	if strings.Contains(stdout, "hello-from-a") {
		t.Errorf("run B's container connected to run A's at %s:8080: %q", ip, stdout)
	}
	capEff := parseCapEff(t, stdout)
	if capEff&(1<<13) != 0 {
		t.Errorf("run B's container has NET_RAW: CapEff %#x", capEff)
	}
	if capEff&1 == 0 || capEff&(1<<27) != 0 { // CHOWN kept, MKNOD dropped
		t.Errorf("CapEff %#x: want CHOWN and not MKNOD", capEff)
	}
	if n := networksOf(t, d, runB); len(n) != 0 {
		t.Errorf("networks of run B after its step: %v, want none", n)
	}

	// capabilities.add gives one back.
	c := *testImage
	c.CapAdd = []string{"NET_RAW"}
	_, stdout, _, err = run(t, context.Background(), d, contract.ExecRequest{RunID: runB, StepID: "cap-add", Workspace: t.TempDir(),
		Container: &c, Argv: []string{"grep", "CapEff", "/proc/self/status"}})
	if err != nil {
		t.Fatal(err)
	}
	if capEff := parseCapEff(t, stdout); capEff&(1<<13) == 0 {
		t.Errorf("capabilities.add NET_RAW: CapEff %#x lacks it", capEff)
	}

	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := networksOf(t, d, runA); len(n) != 0 {
		t.Errorf("networks of run A after it closed: %v, want none", n)
	}
}

// TestRemoveOrphanNetworks: the sweep at a runner's start removes the
// network a crashed process left with its container.
func TestRemoveOrphanNetworks(t *testing.T) {
	d := newDocker(t, Config{})
	crashed := newDocker(t, Config{}) // another process: its networks are not d's
	dead := runPrefix + "net-dead"
	sess, err := crashed.Open(context.Background(), contract.OpenRequest{RunID: dead, Workspace: t.TempDir(),
		Workflow: &workflows.Workflow{Container: testImage}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	if n := networksOf(t, d, dead); len(n) != 1 {
		t.Fatalf("networks of the run: %v, want one", n)
	}
	removed, err := d.RemoveOrphans(context.Background(), func(runID string) bool { return runID != dead })
	if err != nil {
		t.Fatal(err)
	}
	if removed != 2 {
		t.Errorf("removed %d, want 2 (the container and the network)", removed)
	}
	if n := networksOf(t, d, dead); len(n) != 0 {
		t.Errorf("networks of the orphaned run after the sweep: %v", n)
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Errorf("Close after the sweep: %v", err)
	}
}

func parseCapEff(t *testing.T, out string) uint64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no CapEff line in %q", out)
	return 0
}

// networksOf lists the networks labelled with runID.
func networksOf(t *testing.T, d *Docker, runID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := d.Client().NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelRun+"="+runID))})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list {
		out = append(out, n.Name)
	}
	return out
}
