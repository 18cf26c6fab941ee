package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

var testImage = &workflows.Container{Image: dockertest.Ref, PullPolicy: workflows.PullNever}

// sharedWorkspace gives every conformance subtest its own directory under
// one host directory mounted at /workspace, so that one root container can
// serve the whole suite.
func sharedWorkspace(t *testing.T) (root string, ws func(t *testing.T) (string, string)) {
	root = t.TempDir()
	// The container may run as another user than the test.
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	return root, func(t *testing.T) (string, string) {
		name := fmt.Sprintf("ws-%d", n.Add(1))
		host := filepath.Join(root, name)
		if err := os.Mkdir(host, 0o777); err != nil {
			t.Fatal(err)
		}
		return host, WorkspaceMount + "/" + name
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestConformancePerStep(t *testing.T) {
	d := newDocker(t, Config{})
	root, ws := sharedWorkspace(t)
	contracttest.Run(t, func(t *testing.T) contract.Executor { return d }, contracttest.Options{
		Workspace: ws,
		Request: func(t *testing.T, req *contract.ExecRequest) {
			req.RunID = runPrefix + "perstep"
			req.Workspace = root // the host path; Dir is the path inside
			req.Container = testImage
		},
		Results: func(t *testing.T) (string, string) {
			return contracttest.ResultsDir(t), contract.ContainerResultsPath
		},
		// Creating and starting a container takes 0.3-1 s here, several
		// seconds when the machine is busy.
		Startup:    4 * time.Second,
		StopWithin: 10 * time.Second,
	})
}

func TestConformanceRoot(t *testing.T) {
	d := newDocker(t, Config{})
	root, ws := sharedWorkspace(t)
	results := contracttest.ResultsDir(t)
	s := openRootResults(t, d, runPrefix+"root", root, results, testImage)
	contracttest.Run(t, func(t *testing.T) contract.Executor { return s }, contracttest.Options{
		Workspace:  ws,
		Results:    func(*testing.T) (string, string) { return results, contract.ContainerResultsPath },
		Startup:    time.Second, // an exec starts in tens of milliseconds, more when busy
		StopWithin: 10 * time.Second,
	})
	// The container survived every timeout and cancel of the suite.
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), contract.ExecRequest{RunID: runPrefix + "root", StepID: "after", Argv: []string{"echo", "alive"}, Stdout: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "alive\n" {
		t.Errorf("root container after the suite: exit %d, err %v, out %q", res.ExitCode, err, out.String())
	}
}

// The root container passes the Sandbox suite: open, exec, close, and
// nothing of the run left whatever happened.
func TestSandboxConformanceRoot(t *testing.T) {
	d := newDocker(t, Config{})
	contracttest.RunSandbox(t, func(*testing.T) contract.Sandbox { return d }, contracttest.SandboxOptions{
		Request: func(t *testing.T) contract.OpenRequest {
			ws := t.TempDir()
			if err := os.Chmod(ws, 0o777); err != nil { // the container may run as another user
				t.Fatal(err)
			}
			return contract.OpenRequest{Workspace: ws, Workflow: &workflows.Workflow{Name: "test", Container: testImage}}
		},
		Leftovers: func(t *testing.T, req contract.OpenRequest) []string { return containersOf(t, d, req.RunID) },
		// The container is created, then cannot start: Open must remove it.
		FailOpen: func(_ *testing.T, req *contract.OpenRequest) contract.Sandbox {
			c := *testImage
			c.User = "hookrun-no-such-user"
			req.Workflow = &workflows.Workflow{Name: "test", Container: &c}
			return d
		},
		PrivateDir:  "/tmp", // the workspace is the host's, shared by the attempts of a run
		ResultsPath: func(contract.OpenRequest) string { return contract.ContainerResultsPath },
		RunIDPrefix: runPrefix + "sandbox-",
		Startup:     time.Second,
		StopWithin:  10 * time.Second,
	})
}

func openRoot(t *testing.T, d *Docker, runID, workspace string, c *workflows.Container) *Session {
	t.Helper()
	return openRootResults(t, d, runID, workspace, "", c)
}

// openRootResults is openRoot with a results folder (OpenRequest.Results).
func openRootResults(t *testing.T, d *Docker, runID, workspace, results string, c *workflows.Container) *Session {
	t.Helper()
	sess, err := d.Open(context.Background(), contract.OpenRequest{
		RunID: runID, Workspace: workspace, Results: results,
		Workflow: &workflows.Workflow{Name: "test", Container: c},
		Env:      []workflows.EnvVar{{Name: "RUN_WIDE", Value: "yes"}},
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := sess.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sess.(*Session)
}

// run is a helper executing argv and returning stdout, stderr.
func run(t *testing.T, ctx context.Context, e contract.Executor, req contract.ExecRequest) (contract.ExecResult, string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	req.Stdout, req.Stderr = &out, &errb
	res, err := e.Exec(ctx, req)
	return res, out.String(), errb.String(), err
}

func TestRootKeepsFilesAndSurvivesTimeout(t *testing.T) {
	d := newDocker(t, Config{})
	ws := t.TempDir()
	runID := runPrefix + "keep"
	s := openRoot(t, d, runID, ws, testImage)

	// A file outside the workspace written by one step is seen by the next:
	// they share one container.
	res, _, stderr, err := run(t, context.Background(), s, contract.ExecRequest{RunID: runID, StepID: "write", Argv: []string{"sh", "-c", "echo kept > /tmp/state; echo $RUN_WIDE > /workspace/env.txt"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("write: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "env.txt")); err != nil || string(b) != "yes\n" {
		t.Errorf("workspace file: %q, %v; want the run-wide env written through the bind mount", b, err)
	}

	// A step that times out is killed with everything it started...
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	res, _, _, err = run(t, ctx, s, contract.ExecRequest{RunID: runID, StepID: "hang", Grace: 500 * time.Millisecond,
		Argv: []string{"sh", "-c", "(trap '' TERM; sleep 300) & sleep 300 & echo started; wait"}})
	if !errors.Is(err, context.DeadlineExceeded) || res.ExitCode != -1 {
		t.Fatalf("hang: exit %d, err %v; want -1 and a deadline error", res.ExitCode, err)
	}

	// ...and the next step runs in the same container, which has no
	// process of the killed step left.
	res, stdout, stderr, err := run(t, context.Background(), s, contract.ExecRequest{RunID: runID, StepID: "read",
		Argv: []string{"sh", "-c", "cat /tmp/state; ps -o comm | grep -c '^sleep' || true"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("read: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	// The keep-alive loop has one sleep of its own.
	if stdout != "kept\n1\n" {
		t.Errorf("read: stdout %q, want %q (the file kept, only the keep-alive's sleep left)", stdout, "kept\n1\n")
	}

	// A step with its own container does not run in the root container.
	res, stdout, _, err = run(t, context.Background(), s, contract.ExecRequest{RunID: runID, StepID: "own", Workspace: ws, Container: testImage,
		Argv: []string{"sh", "-c", "cat /tmp/state 2>/dev/null || echo fresh; cat /workspace/env.txt"}})
	if err != nil || res.ExitCode != 0 || stdout != "fresh\nyes\n" {
		t.Errorf("own container: exit %d, err %v, stdout %q; want a fresh container with the workspace", res.ExitCode, err, stdout)
	}
}

func TestRootCloseRemovesContainer(t *testing.T) {
	d := newDocker(t, Config{})
	runID := runPrefix + "close"
	sess, err := d.Open(context.Background(), contract.OpenRequest{RunID: runID, Workspace: t.TempDir(),
		Workflow: &workflows.Workflow{Name: "t", Container: testImage}})
	if err != nil {
		t.Fatal(err)
	}
	id := sess.(*Session).ID()
	// Close works with a done context (runner shutdown, run cancelled).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sess.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sess.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := d.Client().ContainerInspect(context.Background(), id); err == nil {
		t.Errorf("container %s still exists after Close", shortID(id))
	}
	// Open again under the same run id after a crash left the container.
	s1 := openRoot(t, d, runID, t.TempDir(), testImage)
	s2 := openRoot(t, d, runID, t.TempDir(), testImage)
	if s1.ID() == s2.ID() {
		t.Fatal("same container twice")
	}
	if _, err := d.Client().ContainerInspect(context.Background(), s1.ID()); err == nil {
		t.Errorf("the leftover of an earlier attempt was not replaced")
	}
}

func TestPerStepCancelMidStep(t *testing.T) {
	d := newDocker(t, Config{})
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runID := runPrefix + "cancel"
	// Cancel once the step has started (its first output arrived).
	out := &cancelOnWrite{cancel: cancel}
	start := time.Now()
	res, err := d.Exec(ctx, contract.ExecRequest{RunID: runID, StepID: "s", Workspace: ws, Container: testImage,
		Grace: 300 * time.Millisecond, Argv: []string{"sh", "-c", "trap '' TERM; echo started; sleep 300"}, Stdout: out})
	if !errors.Is(err, context.Canceled) || res.ExitCode != -1 {
		t.Errorf("exit %d, err %v; want -1 and context.Canceled", res.ExitCode, err)
	}
	if out.b.String() != "started\n" {
		t.Errorf("stdout %q", out.b.String())
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
	assertNoContainers(t, d, runID)
}

// cancelOnWrite cancels a context at the first write.
type cancelOnWrite struct {
	b      bytes.Buffer
	cancel func()
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.b.Write(p)
}

// containersOf describes every container of a run, running or not.
func containersOf(t *testing.T, d *Docker, runID string) []string {
	t.Helper()
	list, err := d.Client().ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelRun+"="+runID))})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list {
		out = append(out, fmt.Sprintf("container %s (%s, %s)", shortID(c.ID), c.Names, c.State))
	}
	return out
}

func assertNoContainers(t *testing.T, d *Docker, runID string) {
	t.Helper()
	if left := containersOf(t, d, runID); len(left) != 0 {
		t.Errorf("%d containers of run %s left", len(left), runID)
	}
}

func TestPullPolicy(t *testing.T) {
	d := newDocker(t, Config{PullTimeout: 20 * time.Second})
	const absent = "hookrun-test-absent-image:never-built"
	tests := []struct {
		name, image, policy string
		wantErr             []string // substrings; nil: success
	}{
		{"never, present", dockertest.Ref, workflows.PullNever, nil},
		{"missing, present", dockertest.Ref, workflows.PullMissing, nil},
		{"default, present", dockertest.Ref, "", nil},
		{"never, absent", absent, workflows.PullNever, []string{absent, "pull_policy", "never"}},
		{"missing, absent", absent, workflows.PullMissing, []string{absent, "pull_policy missing"}},
		{"always, absent", absent, workflows.PullAlways, []string{absent, "pull_policy always"}},
		// No registry here: always fails even for a local image, clearly.
		{"always, present but unpullable", dockertest.Ref, workflows.PullAlways, []string{dockertest.Ref, "pull_policy always"}},
		{"unknown policy", dockertest.Ref, "sometimes", []string{"sometimes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, stdout, _, err := run(t, context.Background(), d, contract.ExecRequest{RunID: runPrefix + "pull", StepID: "p",
				Container: &workflows.Container{Image: tt.image, PullPolicy: tt.policy}, Argv: []string{"echo", "ok"}})
			if tt.wantErr == nil {
				if err != nil || res.ExitCode != 0 || stdout != "ok\n" {
					t.Errorf("exit %d, err %v, stdout %q", res.ExitCode, err, stdout)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want one naming %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if res.ExitCode != -1 {
				t.Errorf("exit code %d, want -1", res.ExitCode)
			}
			if time.Since(start) > 25*time.Second {
				t.Errorf("took %s: the pull is not bounded", time.Since(start))
			}
		})
	}
	// The root container applies the same policy.
	_, err := d.Open(context.Background(), contract.OpenRequest{RunID: runPrefix + "pull", Workspace: t.TempDir(),
		Workflow: &workflows.Workflow{Container: &workflows.Container{Image: absent, PullPolicy: workflows.PullNever}}})
	if err == nil || !strings.Contains(err.Error(), absent) {
		t.Errorf("Open with an absent image: %v", err)
	}
}

// TestHostConfig checks what the engine itself reports about a step's
// container: limits, no-new-privileges, labels, user, binds.
func TestHostConfig(t *testing.T) {
	d := newDocker(t, Config{Memory: 64 << 20, CPUs: 0.5, PIDs: 50})
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "f.txt"), []byte("from-sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The step inspects its own container through its hostname (the
	// container's short id) and reports what it sees.
	tests := []struct {
		name   string
		c      workflows.Container
		script string
		check  func(t *testing.T, ins container.InspectResponse, stdout string)
	}{
		{
			name:   "server defaults",
			c:      workflows.Container{Image: dockertest.Ref, PullPolicy: workflows.PullNever},
			script: "hostname; cat /proc/self/status | grep NoNewPrivs; pwd",
			check: func(t *testing.T, ins container.InspectResponse, stdout string) {
				hc := ins.HostConfig
				if hc.Memory != 64<<20 || hc.NanoCPUs != 5e8 || hc.PidsLimit == nil || *hc.PidsLimit != 50 {
					t.Errorf("limits: memory %d, nanocpus %d, pids %v", hc.Memory, hc.NanoCPUs, hc.PidsLimit)
				}
				if !contains(hc.SecurityOpt, "no-new-privileges") {
					t.Errorf("SecurityOpt %v lacks no-new-privileges", hc.SecurityOpt)
				}
				if !strings.Contains(stdout, "NoNewPrivs:\t1") {
					t.Errorf("the process does not run with no_new_privs: %q", stdout)
				}
				if !strings.HasSuffix(stdout, "/workspace\n") {
					t.Errorf("working dir: %q", stdout)
				}
				if ins.Config.Labels[LabelRun] != runPrefix+"hc" || ins.Config.Labels[LabelStep] != "s" {
					t.Errorf("labels %v", ins.Config.Labels)
				}
				if !contains(hc.Binds, ws+":/workspace") {
					t.Errorf("binds %v lack the workspace", hc.Binds)
				}
			},
		},
		{
			name: "workflow limits, user, network, relative volume",
			c: workflows.Container{Image: dockertest.Ref, PullPolicy: workflows.PullNever, Memory: 32 << 20, CPUs: 1.5, PIDs: 20,
				User: "65534", Network: "none", WorkingDir: "/data", Volumes: []string{"sub:/data:ro"},
				Env: []workflows.EnvVar{{Name: "FROM_CONTAINER", Value: "c"}, {Name: "OVERRIDDEN", Value: "c"}}},
			script: "hostname; id -u; cat f.txt; echo $FROM_CONTAINER $OVERRIDDEN; ls /workspace | wc -l; touch x 2>/dev/null || echo read-only",
			check: func(t *testing.T, ins container.InspectResponse, stdout string) {
				hc := ins.HostConfig
				if hc.Memory != 32<<20 || hc.NanoCPUs != 15e8 || *hc.PidsLimit != 20 || hc.NetworkMode != "none" {
					t.Errorf("limits/network: memory %d, nanocpus %d, pids %v, network %s", hc.Memory, hc.NanoCPUs, *hc.PidsLimit, hc.NetworkMode)
				}
				if !contains(hc.Binds, filepath.Join(ws, "sub")+":/data:ro") {
					t.Errorf("binds %v: the relative volume is not resolved against the workspace", hc.Binds)
				}
				lines := strings.Split(stdout, "\n")
				if len(lines) < 6 || lines[1] != "65534" || lines[2] != "from-sub" || lines[3] != "c step" || lines[5] != "read-only" {
					t.Errorf("stdout %q", stdout)
				}
			},
		},
		{
			name:   "a volume on /workspace replaces the workspace mount",
			c:      workflows.Container{Image: dockertest.Ref, PullPolicy: workflows.PullNever, Volumes: []string{"./sub:/workspace"}},
			script: "hostname; cat f.txt",
			check: func(t *testing.T, ins container.InspectResponse, stdout string) {
				if len(ins.HostConfig.Binds) != 1 || !strings.HasSuffix(stdout, "\nfrom-sub\n") {
					t.Errorf("binds %v, stdout %q", ins.HostConfig.Binds, stdout)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Inspect the container while the step runs (it sleeps after
			// reporting what it sees).
			c := tt.c
			type result struct {
				res    contract.ExecResult
				stdout string
				err    error
			}
			ch := make(chan result, 1)
			var out syncBuffer
			go func() {
				res, err := d.Exec(context.Background(), contract.ExecRequest{RunID: runPrefix + "hc", StepID: "s", Workspace: ws, Container: &c,
					Env:  []workflows.EnvVar{{Name: "OVERRIDDEN", Value: "step"}},
					Argv: []string{"sh", "-c", tt.script + "; sleep 1"}, Stdout: &out, Stderr: &out})
				ch <- result{res, out.String(), err}
			}()
			ins := inspectRunning(t, d, runPrefix+"hc")
			r := <-ch
			if r.err != nil || r.res.ExitCode != 0 {
				t.Fatalf("exit %d, err %v, output %q", r.res.ExitCode, r.err, r.stdout)
			}
			tt.check(t, ins, r.stdout)
		})
	}
}

// inspectRunning waits for the running container of a run and inspects it.
func inspectRunning(t *testing.T, d *Docker, runID string) container.InspectResponse {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		list, err := d.Client().ContainerList(context.Background(), container.ListOptions{
			Filters: filters.NewArgs(filters.Arg("label", LabelRun+"="+runID), filters.Arg("status", "running"))})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 {
			ins, err := d.Client().ContainerInspect(context.Background(), list[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			return ins
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no running container appeared")
	return container.InspectResponse{}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDockerSocketRefused(t *testing.T) {
	tests := []struct {
		name    string
		volume  string
		allow   bool
		refused bool
	}{
		{"socket", "/var/run/docker.sock:/var/run/docker.sock", false, true},
		{"socket through /run", "/run/docker.sock:/sock", false, true},
		{"directory holding it", "/var/run:/host-run", false, true},
		{"root", "/:/host", false, true},
		{"renamed target", "/var/run/docker.sock:/tmp/x.sock:ro", false, true},
		{"other path", "/etc/hostname:/etc/host-name:ro", false, false},
		{"allowed", "/var/run/docker.sock:/var/run/docker.sock", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDocker(t, Config{AllowDockerSocket: tt.allow})
			res, stdout, _, err := run(t, context.Background(), d, contract.ExecRequest{RunID: runPrefix + "sock", StepID: "s", Workspace: t.TempDir(),
				Container: &workflows.Container{Image: dockertest.Ref, PullPolicy: workflows.PullNever, Volumes: []string{tt.volume}},
				Argv:      []string{"echo", "ran"}})
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "Docker socket") {
					t.Errorf("exit %d, err %v; want the volume refused", res.ExitCode, err)
				}
				if stdout != "" {
					t.Errorf("the step ran: %q", stdout)
				}
				return
			}
			if err != nil || stdout != "ran\n" {
				t.Errorf("exit %d, err %v, stdout %q", res.ExitCode, err, stdout)
			}
		})
	}
	// The root container refuses it too.
	d := newDocker(t, Config{})
	_, err := d.Open(context.Background(), contract.OpenRequest{RunID: runPrefix + "sock", Workspace: t.TempDir(),
		Workflow: &workflows.Workflow{Container: &workflows.Container{Image: dockertest.Ref, PullPolicy: workflows.PullNever,
			Volumes: []string{"/var/run/docker.sock:/var/run/docker.sock"}}}})
	if err == nil || !strings.Contains(err.Error(), "Docker socket") {
		t.Errorf("Open: %v", err)
	}
}

func TestRemoveOrphans(t *testing.T) {
	d := newDocker(t, Config{})
	live := openRoot(t, d, runPrefix+"live", t.TempDir(), testImage)
	dead := runPrefix + "dead"
	sess, err := d.Open(context.Background(), contract.OpenRequest{RunID: dead, Workspace: t.TempDir(),
		Workflow: &workflows.Workflow{Container: testImage}})
	if err != nil {
		t.Fatal(err)
	}
	deadID := sess.(*Session).ID()
	// Only look at this test's runs: others may run concurrently.
	removed, err := d.RemoveOrphans(context.Background(), func(runID string) bool { return runID != dead })
	if err != nil {
		t.Fatal(err)
	}
	if removed != 1 {
		t.Errorf("removed %d, want 1", removed)
	}
	if _, err := d.Client().ContainerInspect(context.Background(), deadID); err == nil {
		t.Errorf("orphan %s not removed", shortID(deadID))
	}
	if _, err := d.Client().ContainerInspect(context.Background(), live.ID()); err != nil {
		t.Errorf("live run's container removed: %v", err)
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Errorf("Close after the orphan was removed: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, ""},
		{Config{Memory: 1024}, "memory"},
		{Config{StopGrace: -time.Second}, "stop_grace"},
		{Config{PullTimeout: -1}, "pull_timeout"},
	}
	for _, tt := range tests {
		cfg := tt.cfg
		cfg.setDefaults()
		err := cfg.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := New(Config{Memory: 1}); err == nil {
		t.Error("New accepted an invalid config")
	}
}

func rootWorkflow() *workflows.Workflow {
	return &workflows.Workflow{Name: "bench", Container: testImage}
}

// The run's event file reaches both kinds of container read-only at
// contract.ContainerEventPath, outside the workspace.
func TestEventFileMountedReadOnly(t *testing.T) {
	d := newDocker(t, Config{})
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	eventFile := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(eventFile, []byte(`{"payload":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runID := runPrefix + "event"
	sess, err := d.Open(context.Background(), contract.OpenRequest{RunID: runID, Workspace: ws, EventFile: eventFile,
		Workflow: &workflows.Workflow{Name: "t", Container: testImage}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	script := `cat ` + contract.ContainerEventPath + ` && echo && if echo x >> ` + contract.ContainerEventPath + ` 2>/dev/null; then echo writable; fi; ls -A /workspace`
	for name, exec := range map[string]struct {
		e   contract.Executor
		req contract.ExecRequest
	}{
		"root":     {sess, contract.ExecRequest{RunID: runID, StepID: "root"}},
		"per-step": {d, contract.ExecRequest{RunID: runID, StepID: "own", Workspace: ws, EventFile: eventFile, Container: testImage}},
	} {
		exec.req.Argv = []string{"sh", "-c", script}
		res, stdout, stderr, err := run(t, context.Background(), exec.e, exec.req)
		if err != nil || res.ExitCode != 0 || stdout != "{\"payload\":1}\n" {
			t.Errorf("%s container: exit %d, err %v, stdout %q, stderr %q; want the payload, read-only, and an empty workspace", name, res.ExitCode, err, stdout, stderr)
		}
	}
}
