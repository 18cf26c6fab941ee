package host_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/providers/host/stepinit"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

// stepUID is the unprivileged user the isolation tests run steps as.
const stepUID = 65534

// requireRoot fails (never skips) when the tests cannot isolate: CI and
// developers run as root, and isolation is what protects a server's
// credentials, so its tests must run.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("isolated host steps need root; run the tests as root (CI does)")
	}
}

// ownedDir returns a new directory, outside any test directory (those are
// 0700 root), that belongs to the step user.
func ownedDir(t *testing.T) string {
	t.Helper()
	return ownedDirIn(t, "")
}

// ownedDirIn is ownedDir in parent ("": the temporary directory).
func ownedDirIn(t *testing.T, parent string) string {
	t.Helper()
	d, err := os.MkdirTemp(parent, "hookrun-iso-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chown(d, stepUID, stepUID); err != nil {
		t.Fatal(err)
	}
	return d
}

// isolated is an isolating executor as a server makes it: its commands
// start without an init where the kernel allows (host.CanLaunchDirect), as
// here.
func isolated(hide ...string) *host.Executor {
	return isolatedWith(autoLaunch, hide...)
}

// Launches for isolatedWith besides an init's path: directLaunch starts
// the command without an init, autoLaunch as a server's default does.
const (
	directLaunch = "direct"
	autoLaunch   = "auto"
)

// isolatedWith is isolated, started as init says: directLaunch,
// autoLaunch, or through the given init program ("" re-executes the test
// binary, which TestMain lets run as the init).
func isolatedWith(init string, hide ...string) *host.Executor {
	iso := &host.Isolation{UID: stepUID, GID: stepUID, Username: "nobody", Hide: hide, InitBinary: init, Launch: host.LaunchInit}
	switch init {
	case directLaunch:
		iso.InitBinary, iso.Launch = "", host.LaunchDirect
	case autoLaunch:
		iso.InitBinary, iso.Launch = "", host.LaunchAuto
	}
	return host.New(host.Config{Grace: 500 * time.Millisecond, Isolation: iso})
}

var buildInit = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "hookrun-step-init-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hookrun-step-init")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/hookrun/hookrun/cmd/hookrun-step-init").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building hookrun-step-init: %v\n%s", err, out)
	}
	return bin, nil
})

// inits are the three ways an isolated step starts (isolatedWith): without
// an init (a kernel with procfs's pidns option, Linux 6.18, as CI's: the
// tests fail where it is missing), through a re-execution of the running
// binary as its init, and through the hookrun-step-init program make build
// installs.
func inits(t *testing.T) map[string]string {
	t.Helper()
	bin, err := buildInit()
	if err != nil {
		t.Fatal(err)
	}
	if !host.CanLaunchDirect() {
		t.Fatalf("this kernel cannot mount a /proc for another PID namespace (procfs pidns, Linux 6.18): isolated steps start through an init here, and starting them without one cannot be tested")
	}
	return map[string]string{"direct": directLaunch, "re-exec": "", "hookrun-step-init": bin}
}

func TestIsolatedConformance(t *testing.T) {
	requireRoot(t)
	for name, init := range inits(t) {
		t.Run(name, func(t *testing.T) { isolatedConformance(t, init) })
	}
}

func isolatedConformance(t *testing.T, init string) {
	contracttest.Run(t, func(t *testing.T) contract.Executor {
		return isolatedWith(init)
	}, contracttest.Options{
		Workspace: func(t *testing.T) (string, string) {
			d := ownedDir(t)
			return d, d
		},
		// The command starts after a re-execution of this binary as its
		// init: some 30 ms, but seconds under -race on a loaded machine.
		Startup: 2 * time.Second,
	})
}

// fakeDataDir builds what a hookrun data_dir holds: the NATS store, a git
// mirror, this run's workspace, HOME and TMPDIR, and another run's
// workspace, plus a configuration file beside it.
type fakeDataDir struct {
	root, config, nats, mirror, other string
	workspace, home, tmp              string
}

func newFakeDataDir(t *testing.T) fakeDataDir {
	t.Helper()
	root, err := os.MkdirTemp("", "hookrun-data-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	f := fakeDataDir{
		root:      root,
		config:    filepath.Join(filepath.Dir(root), filepath.Base(root)+".yaml"),
		nats:      filepath.Join(root, "nats", "jetstream", "store.blk"),
		mirror:    filepath.Join(root, "mirrors", "github", "acme%2Fwidgets.git", "config"),
		other:     filepath.Join(root, "workspaces", "01OTHERRUN", "secret.txt"),
		workspace: filepath.Join(root, "workspaces", "01THISRUN"),
		home:      filepath.Join(root, "scratch", "01THISRUN", "home"),
		tmp:       filepath.Join(root, "scratch", "01THISRUN", "tmp"),
	}
	t.Cleanup(func() { _ = os.Remove(f.config) })
	// World-readable on purpose: the isolation must not depend on modes.
	for path, content := range map[string]string{
		f.config: "github:\n  token: cfg-token-4711\n",
		f.nats:   "payload-of-another-delivery",
		f.mirror: "[remote]\n",
		f.other:  "other-run-secret",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{f.workspace, f.home, f.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, stepUID, stepUID); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestIsolationKeepsRunnerSecretsOutOfReach runs, as an isolated step, each
// read a hostile pull request would try, and checks that every one is
// denied while the run's own directories work.
func TestIsolationKeepsRunnerSecretsOutOfReach(t *testing.T) {
	requireRoot(t)
	for name, init := range inits(t) {
		t.Run(name, func(t *testing.T) { keepsRunnerSecretsOutOfReach(t, init) })
	}
}

func keepsRunnerSecretsOutOfReach(t *testing.T, init string) {
	const token = "ghp_runner-token-0123456789"
	t.Setenv("HOOKRUN_TEST_FORGE_TOKEN", token)
	f := newFakeDataDir(t)
	exec := isolatedWith(init, f.root, f.config)
	me := strconv.Itoa(os.Getpid())

	run := func(t *testing.T, script string) (string, int) {
		t.Helper()
		var out bytes.Buffer
		res, err := exec.Exec(context.Background(), contract.ExecRequest{
			StepID:    "probe",
			Argv:      []string{"sh", "-c", script},
			Env:       []workflows.EnvVar{pathEnv, {Name: "HOME", Value: f.home}, {Name: "TMPDIR", Value: f.tmp}},
			Dir:       f.workspace,
			Workspace: f.workspace,
			Home:      f.home,
			TmpDir:    f.tmp,
			Stdout:    &out,
			Stderr:    &out,
		})
		if err != nil {
			t.Fatalf("Exec: %v (output %q)", err, out.String())
		}
		return out.String(), res.ExitCode
	}

	denied := []struct{ name, script string }{
		{"runner environ via $PPID", `tr '\0' '\n' </proc/$PPID/environ`},
		{"runner environ by pid", `tr '\0' '\n' </proc/` + me + `/environ`},
		{"runner memory by pid", `head -c 64 /proc/` + me + `/mem`},
		{"init environ", `tr '\0' '\n' </proc/1/environ`},
		// PID 1 is the init, or the holder that shares the runner's memory
		// and so its command line.
		{"PID 1's command line", `tr '\0' '\n' </proc/1/cmdline`},
		{"other users' processes' environ", `for p in /proc/[0-9]*; do [ -O "$p" ] || cat "$p/environ" 2>/dev/null; done`},
		{"configuration file", `cat ` + f.config},
		{"data dir listing", `ls -A ` + f.root + ` | grep -v -x -e workspaces -e scratch`},
		{"NATS store", `cat ` + f.nats},
		{"git mirror", `cat ` + f.mirror},
		{"other run's workspace", `cat ` + f.other},
		{"other runs' workspaces listing", `ls ` + filepath.Dir(f.workspace) + ` | grep -v -x 01THISRUN`},
		{"runner's env inherited", `env | grep -F ` + token},
	}
	for _, tt := range denied {
		t.Run("denied/"+tt.name, func(t *testing.T) {
			// A read that works prints what it read: the secret values
			// must not appear, and the command must not succeed with output.
			out, code := run(t, tt.script)
			for _, secret := range []string{token, "cfg-token-4711", "payload-of-another-delivery", "[remote]", "other-run-secret"} {
				if strings.Contains(out, secret) {
					t.Fatalf("the step read %q: %q", secret, out)
				}
			}
			if code == 0 && strings.TrimSpace(out) != "" {
				t.Fatalf("the read succeeded (exit 0): %q", out)
			}
		})
	}

	allowed := []struct{ name, script, want string }{
		{"runs as the step user", `id -u; id -g; id -G`, "65534\n65534\n65534\n"},
		{"USER names the step user", `echo "$USER $LOGNAME"`, "nobody nobody\n"},
		{"workspace writable", `echo w > in-workspace && cat in-workspace`, "w\n"},
		{"HOME writable", `echo h > "$HOME/x" && cat "$HOME/x"`, "h\n"},
		{"TMPDIR writable", `f=$(mktemp) && echo t > "$f" && cat "$f"`, "t\n"},
		{"sees only its own processes", `ls -d /proc/[0-9]* | wc -l | tr -d ' '`, ""},
	}
	for _, tt := range allowed {
		t.Run("allowed/"+tt.name, func(t *testing.T) {
			out, code := run(t, tt.script)
			if code != 0 {
				t.Fatalf("exit %d: %q", code, out)
			}
			if tt.want != "" && out != tt.want {
				t.Fatalf("output %q, want %q", out, tt.want)
			}
			if tt.want == "" {
				// init, sh, ls (and wc, tr): a handful, never the host's
				// hundreds.
				if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n > 8 {
					t.Fatalf("the step sees %q processes", out)
				}
			}
		})
	}
}

// TestIsolationNoNewPrivileges: a setuid-root binary does not give the step
// root back.
func TestIsolationNoNewPrivileges(t *testing.T) {
	requireRoot(t)
	ws := ownedDir(t)
	idPath, err := exec.LookPath("id")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(idPath)
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(ws, "suid-id")
	if err := os.WriteFile(suid, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := isolated().Exec(context.Background(), contract.ExecRequest{
		Argv: []string{suid, "-u"}, Dir: ws, Workspace: ws, Stdout: &out, Stderr: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v: %q", res.ExitCode, err, out.String())
	}
	if got := strings.TrimSpace(out.String()); got != strconv.Itoa(stepUID) {
		t.Fatalf("a setuid-root binary ran with euid %s, want %d", got, stepUID)
	}
}

func TestIsolationRefusesHiddenWorkingDir(t *testing.T) {
	requireRoot(t)
	f := newFakeDataDir(t)
	_, err := isolated(f.root).Exec(context.Background(), contract.ExecRequest{
		StepID: "wd", Argv: []string{"sh", "-c", "ls"}, Dir: filepath.Join(f.root, "nats"), Workspace: f.workspace,
	})
	if err == nil || !strings.Contains(err.Error(), "is hidden from host steps") {
		t.Fatalf("err %v, want the working directory refused", err)
	}
}

func TestIsolationValidate(t *testing.T) {
	tests := []struct {
		name string
		iso  host.Isolation
		ok   bool
	}{
		{"unprivileged", host.Isolation{UID: 65534, GID: 65534, Hide: []string{"/var/lib/hookrun"}}, true},
		{"root user", host.Isolation{UID: 0, GID: 65534}, false},
		{"root group", host.Isolation{UID: 65534, GID: 0}, false},
		{"relative hidden path", host.Isolation{UID: 1, GID: 1, Hide: []string{"data"}}, false},
		{"hiding /", host.Isolation{UID: 1, GID: 1, Hide: []string{"/"}}, false},
		{"launch through the init", host.Isolation{UID: 1, GID: 1, Launch: host.LaunchInit}, true},
		{"launch direct", host.Isolation{UID: 1, GID: 1, Launch: host.LaunchDirect}, true},
		{"unknown launch", host.Isolation{UID: 1, GID: 1, Launch: "fork"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.iso.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// markedAlive counts the processes on this machine whose command line
// contains marker.
func markedAlive(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			s := string(st)
			if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestIsolatedNoProcessOutlivesItsStep is TestNoProcessOutlivesItsStep for
// isolated steps, including a child that escaped the process group with
// setsid, which the PID namespace still catches.
func TestIsolatedNoProcessOutlivesItsStep(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name    string
		script  string // MARK is a unique sleep duration
		timeout time.Duration
	}{
		{"timeout", `sleep $MARK & wait`, 500 * time.Millisecond},
		{"timeout, child ignores SIGTERM", `(trap '' TERM; exec sleep $MARK) & wait`, 500 * time.Millisecond},
		{"exits leaving a child", `sleep $MARK & exit 0`, 0},
		{"exits leaving an escaped child", `setsid sleep $MARK & sleep 0.2; exit 0`, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mark := fmt.Sprintf("%d.%d", 3000+i, time.Now().UnixNano()%100000)
			ws := ownedDir(t)
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			_, _ = isolated().Exec(ctx, contract.ExecRequest{
				Argv: []string{"sh", "-c", tt.script}, Env: []workflows.EnvVar{pathEnv, {Name: "MARK", Value: mark}},
				Dir: ws, Workspace: ws,
			})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Exec took %s", d)
			}
			if left := markedAlive(mark); len(left) > 0 {
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Fatalf("processes %v of the step outlived it", left)
			}
		})
	}
}

// TestIsolatedStepDiesWithItsRunner: a runner killed with SIGKILL in the
// middle of a step takes every process of the step with it.
func TestIsolatedStepDiesWithItsRunner(t *testing.T) {
	requireRoot(t)
	mark := fmt.Sprintf("4%d.5", time.Now().UnixNano()%100000)
	ws := ownedDir(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HOOKRUN_TEST_RUNNER_CHILD="+mark, "HOOKRUN_TEST_WS="+ws)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	deadline := time.Now().Add(20 * time.Second)
	for len(markedAlive(mark)) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(markedAlive(mark)); n < 2 {
		_ = cmd.Process.Kill()
		_, _ = stdout.Read(buf)
		t.Fatalf("the step did not start its processes (%d seen)", n)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for len(markedAlive(mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := markedAlive(mark); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v of the step outlived its runner's SIGKILL", left)
	}
}

// runnerChild is the runner of TestIsolatedStepDiesWithItsRunner: the test
// binary started with HOOKRUN_TEST_RUNNER_CHILD set (see TestMain).
func runnerChild(mark string) {
	ws := os.Getenv("HOOKRUN_TEST_WS")
	script := `sleep $MARK & setsid sleep $MARK & wait`
	if os.Getenv("HOOKRUN_TEST_NO_SETSID") != "" {
		script = `sleep $MARK & sleep $MARK & wait`
	}
	_, _ = runnerExecutor(os.Getenv("HOOKRUN_TEST_RUNNER_MODE")).Exec(context.Background(), contract.ExecRequest{
		Argv: []string{"sh", "-c", script},
		Env:  []workflows.EnvVar{pathEnv, {Name: "MARK", Value: mark}},
		Dir:  ws, Workspace: ws,
	})
}

// TestIsolationReachesWorkspaceBelowPrivateDirs: a data_dir under a
// directory the step user may not traverse (root's 0700 home, a test's
// temporary directory) still gives the step its own workspace, HOME and
// TMPDIR, and nothing else of that directory.
func TestIsolationReachesWorkspaceBelowPrivateDirs(t *testing.T) {
	requireRoot(t)
	private := t.TempDir() // 0700 root, and so is its parent
	if err := os.WriteFile(filepath.Join(private, "beside.txt"), []byte("beside-data"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(private, "data")
	ws, home := filepath.Join(data, "workspaces", "R1"), filepath.Join(data, "scratch", "R1", "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, stepUID, stepUID); err != nil {
			t.Fatal(err)
		}
	}
	// Apart: the two pipes are copied by two goroutines, so the error of
	// the last cat could land between the lines of the first two.
	var out, errOut bytes.Buffer
	res, err := isolated(data).Exec(context.Background(), contract.ExecRequest{
		Argv:      []string{"sh", "-c", `echo ok > f && cat f && echo h > "$HOME/h" && cat "$HOME/h"; cat ` + filepath.Join(private, "beside.txt")},
		Env:       []workflows.EnvVar{pathEnv, {Name: "HOME", Value: home}},
		Dir:       ws,
		Workspace: ws,
		Home:      home,
		Stdout:    &out,
		Stderr:    &errOut,
	})
	if err != nil {
		t.Fatalf("Exec: %v (%q, %q)", err, out.String(), errOut.String())
	}
	if out.String() != "ok\nh\n" || strings.Contains(errOut.String(), "beside-data") || res.ExitCode == 0 {
		t.Fatalf("exit %d, output %q, errors %q: want the workspace and HOME usable and the private directory's other files unreadable", res.ExitCode, out.String(), errOut.String())
	}
}

func TestIsolationProbe(t *testing.T) {
	requireRoot(t)
	if err := (&host.Isolation{UID: stepUID, GID: stepUID}).Probe(context.Background()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
}

func TestRefusingRunsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	res, err := host.Refusing{Reason: "host steps are refused: because"}.Exec(context.Background(), contract.ExecRequest{
		StepID: "s", Argv: []string{"sh", "-c", "touch " + marker}, Dir: dir,
	})
	if err == nil || !strings.Contains(err.Error(), "running step s: host steps are refused: because") || res.ExitCode != -1 {
		t.Fatalf("exit %d, err %v", res.ExitCode, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused step ran")
	}
}

// TestIsolationReadsTheEventFile: the run's event file lies outside the
// workspace, alone in a directory other runs' files share (the preparer's
// shard): an isolated step reads it, cannot change or replace it, and sees
// nothing else of that directory, whichever way it starts.
func TestIsolationReadsTheEventFile(t *testing.T) {
	requireRoot(t)
	for name, init := range inits(t) {
		t.Run(name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data") // below 0700 root directories
			ws, shard := filepath.Join(data, "workspaces", "3", "R1"), filepath.Join(data, "scratch", "3")
			if err := os.MkdirAll(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(ws, stepUID, stepUID); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(shard, 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(shard, "R1+event.json")
			for f, body := range map[string]string{file: `{"payload":1}`, filepath.Join(shard, "R2+event.json"): `{"other run":"secret"}`} {
				if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(shard, "R2+home"), 0o755); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res, err := isolatedWith(init, data).Exec(context.Background(), contract.ExecRequest{
				Argv: []string{"sh", "-c", `cat "$HOOKRUN_EVENT_PATH" && echo && ls -A "${HOOKRUN_EVENT_PATH%/*}" &&
if echo x >> "$HOOKRUN_EVENT_PATH" || touch "${HOOKRUN_EVENT_PATH%/*}/new" || mv "$HOOKRUN_EVENT_PATH" "$HOME/moved" 2>/dev/null; then echo writable; fi
cat "${HOOKRUN_EVENT_PATH%/*}/R2+event.json" 2>/dev/null; true`},
				Env:       []workflows.EnvVar{pathEnv, {Name: "HOOKRUN_EVENT_PATH", Value: file}, {Name: "HOME", Value: ws}},
				Dir:       ws,
				Workspace: ws,
				EventFile: file,
				Stdout:    &out,
				Stderr:    io.Discard,
			})
			if err != nil {
				t.Fatalf("Exec: %v (%q)", err, out.String())
			}
			if want := "{\"payload\":1}\nR1+event.json\n"; res.ExitCode != 0 || out.String() != want {
				t.Fatalf("exit %d, output %q, want %q: the event file readable, not writable, alone in its directory", res.ExitCode, out.String(), want)
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != `{"payload":1}` {
				t.Errorf("the event file after the step: %q, %v", got, err)
			}
		})
	}
}

// TestDirectLaunchLeavesNoThreadInTheStepsNamespaces: the thread that set
// up a step's namespaces (a direct launch) ends with the step; no thread
// of the runner stays in a step's mount, IPC, UTS or PID namespace, where
// it would see the step's mounts, or start the next child there.
func TestDirectLaunchLeavesNoThreadInTheStepsNamespaces(t *testing.T) {
	requireRoot(t)
	inits(t) // fails where a direct launch is impossible
	e := isolatedWith(directLaunch)
	for range 8 {
		if out, code := runStep(t, e, ownedDir(t), `hostname`); code != 0 || strings.TrimSpace(out) != host.Hostname {
			t.Fatalf("exit %d, output %q", code, out)
		}
	}
	// A thread ends just after its goroutine, which Exec does not wait for.
	var strays []string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strays = threadsElsewhere(t); len(strays) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, s := range strays {
		t.Error(s)
	}
}

// threadsElsewhere lists the threads of this process in another mount,
// IPC, UTS or PID (for children) namespace than its main thread's.
func threadsElsewhere(t *testing.T) []string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ns := range []string{"mnt", "ipc", "uts", "pid_for_children"} {
		want, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			got, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/" + ns)
			if err == nil && got != want {
				out = append(out, fmt.Sprintf("thread %s is in %s, not the process's %s", task.Name(), got, want))
			}
		}
	}
	return out
}

// TestDirectLaunchDryRun: the once-per-process check that decides the
// default launch passes where a launch works, and fails, saying why, where
// one would not (here: a directory to bring back that does not exist);
// neither leaves a thread in its namespaces.
func TestDirectLaunchDryRun(t *testing.T) {
	requireRoot(t)
	if err := host.DryRunDirect(stepinit.Spec{}); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	hidden := t.TempDir()
	err := host.DryRunDirect(stepinit.Spec{Hide: []string{hidden}, Expose: []string{filepath.Join(hidden, "gone")}})
	if err == nil || !strings.Contains(err.Error(), "trying an isolated launch without an init: opening "+filepath.Join(hidden, "gone")) {
		t.Fatalf("dry run with a directory that does not exist: %v", err)
	}
	for deadline := time.Now().Add(2 * time.Second); len(threadsElsewhere(t)) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range threadsElsewhere(t) {
		t.Error(s)
	}
}

// TestIsolatedStepsWithEventFilesAtOnce starts many isolated steps at
// once, each shown its own event file alone: none may fail to isolate. The
// runner forks steps from several threads at a time, and a forked process
// holds a copy of the runner's open files until it execs: a mount point
// made by opening a file on a step's cover for writing, even for an
// instant, could then be open elsewhere when the cover is remounted
// read-only, which fails (EBUSY; stepinit.mkfile makes it with mknod).
func TestIsolatedStepsWithEventFilesAtOnce(t *testing.T) {
	requireRoot(t)
	data := filepath.Join(t.TempDir(), "data")
	shard := filepath.Join(data, "scratch", "3")
	if err := os.MkdirAll(shard, 0o755); err != nil {
		t.Fatal(err)
	}
	e := isolated(data)
	const workers, each = 8, 250
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			ws := filepath.Join(data, "workspaces", "3", fmt.Sprintf("R%d", w))
			if err := os.MkdirAll(ws, 0o700); err != nil {
				errs <- err
				return
			}
			if err := os.Chown(ws, stepUID, stepUID); err != nil {
				errs <- err
				return
			}
			for i := range each {
				file := filepath.Join(shard, fmt.Sprintf("R%d-%d+event.json", w, i))
				if err := os.WriteFile(file, []byte(`{}`), 0o644); err != nil {
					errs <- err
					return
				}
				res, err := e.Exec(context.Background(), contract.ExecRequest{
					Argv: []string{"sh", "-c", `cat "$HOOKRUN_EVENT_PATH" >/dev/null`}, Env: []workflows.EnvVar{pathEnv, {Name: "HOOKRUN_EVENT_PATH", Value: file}},
					Dir: ws, Workspace: ws, EventFile: file, Stdout: io.Discard, Stderr: io.Discard,
				})
				_ = os.Remove(file)
				if err != nil || res.ExitCode != 0 {
					errs <- fmt.Errorf("step %d of worker %d: exit %d, %v", i, w, res.ExitCode, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
