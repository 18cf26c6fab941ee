package host_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// shmKeyEnv, set in a step's environment, makes the test binary (run as
// the step's command) create a SysV shared-memory segment with that key,
// write shmSecret into it and exit, leaving the segment behind (TestMain).
const shmKeyEnv = "HOOKRUN_TEST_SHM_KEY"

const shmSecret = "run-a-shm-secret"

// shmCreate is the step command of shmKeyEnv: what a hostile run would do
// to leave data for the next one.
func shmCreate(key string) int {
	k, err := strconv.Atoi(key)
	if err == nil {
		var id int
		if id, err = unix.SysvShmGet(k, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666); err == nil {
			var mem []byte
			if mem, err = unix.SysvShmAttach(id, 0, 0); err == nil {
				copy(mem, shmSecret)
				err = unix.SysvShmDetach(mem)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a SysV segment: %v\n", err)
		return 1
	}
	return 0
}

// stepBinary copies the test binary where the step user may run it (the
// build directory is root's 0700).
func stepBinary(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(ownedDir(t), "host.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// hostShm reports whether this process's (the host's) IPC namespace holds
// a SysV segment with key, and removes it.
func hostShm(t *testing.T, key int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == strconv.Itoa(key) {
			found = true
			if id, err := strconv.Atoi(f[1]); err == nil {
				_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			}
		}
	}
	return found
}

// runStep runs script with env in ws and returns its output and exit code.
func runStep(t *testing.T, e *host.Executor, ws, script string, env ...workflows.EnvVar) (string, int) {
	t.Helper()
	var out bytes.Buffer
	res, err := e.Exec(context.Background(), contract.ExecRequest{
		StepID: "ipc", Argv: []string{"sh", "-c", script},
		Env: append([]workflows.EnvVar{pathEnv}, env...),
		Dir: ws, Workspace: ws, Stdout: &out, Stderr: &out,
	})
	if err != nil {
		t.Fatalf("Exec: %v (output %q)", err, out.String())
	}
	return out.String(), res.ExitCode
}

// TestStepSysVSharedMemoryDiesWithIt: a SysV shared-memory segment one
// host step (one run) makes is gone when it ends: the next step does not
// list it, nor does the host. Isolated (both inits) and contained.
func TestStepSysVSharedMemoryDiesWithIt(t *testing.T) {
	requireRoot(t)
	executors := map[string]func(init string) *host.Executor{
		"isolated": func(init string) *host.Executor { return isolatedWith(init) },
		"contained": func(init string) *host.Executor {
			return host.New(host.Config{Grace: 500 * time.Millisecond, Contain: true, InitBinary: init})
		},
	}
	bin := stepBinary(t)
	for mode, newExec := range executors {
		for name, init := range inits(t) {
			if mode == "contained" && init == directLaunch {
				continue // containment always starts through an init
			}
			t.Run(mode+"/"+name, func(t *testing.T) {
				e := newExec(init)
				ws := ownedDir(t)
				key := int(time.Now().UnixNano()%1_000_000_000) + 1
				t.Cleanup(func() { hostShm(t, key) })
				list := fmt.Sprintf(`awk '$1 == %d' /proc/sysvipc/shm`, key)
				// Run A: makes the segment, and sees it while it runs.
				out, code := runStep(t, e, ws, `"$BIN" && `+list,
					workflows.EnvVar{Name: "BIN", Value: bin}, workflows.EnvVar{Name: shmKeyEnv, Value: strconv.Itoa(key)})
				if code != 0 || strings.TrimSpace(out) == "" {
					t.Fatalf("the first step did not make its segment (exit %d): %q", code, out)
				}
				// Run B: lists the segments of its IPC namespace.
				out, code = runStep(t, e, ws, list)
				if code != 0 || strings.TrimSpace(out) != "" {
					t.Errorf("the next step sees the first one's segment (exit %d): %q", code, out)
				}
				if hostShm(t, key) {
					t.Errorf("the first step's segment outlived it on the host")
				}
			})
		}
	}
}

// TestIsolatedStepPOSIXSharedMemoryDiesWithIt: a file one isolated step
// writes to /dev/shm (where shm_open puts POSIX shared memory) is gone for
// the next step and never reaches the host's /dev/shm.
func TestIsolatedStepPOSIXSharedMemoryDiesWithIt(t *testing.T) {
	requireRoot(t)
	for name, init := range inits(t) {
		t.Run(name, func(t *testing.T) {
			e := isolatedWith(init)
			ws := ownedDir(t)
			file := fmt.Sprintf("/dev/shm/hookrun-test-%d", time.Now().UnixNano())
			t.Cleanup(func() { _ = os.Remove(file) })
			env := workflows.EnvVar{Name: "F", Value: file}
			out, code := runStep(t, e, ws, `echo shm-secret > "$F" && cat "$F"`, env)
			if code != 0 || out != "shm-secret\n" {
				t.Fatalf("the first step could not use /dev/shm (exit %d): %q", code, out)
			}
			out, _ = runStep(t, e, ws, `cat "$F"`, env)
			if strings.Contains(out, "shm-secret") {
				t.Errorf("the next step read the first one's /dev/shm file: %q", out)
			}
			if _, err := os.Stat(file); err == nil {
				t.Errorf("the step's /dev/shm file %s is on the host", file)
			}
			// Its /dev/shm is a tmpfs of its own, size-limited.
			out, code = runStep(t, e, ws, `df -k /dev/shm | awk 'NR == 2 {print $2}'`)
			if kb, err := strconv.Atoi(strings.TrimSpace(out)); code != 0 || err != nil || kb != host.DefaultShmSize>>10 {
				t.Errorf("the step's /dev/shm holds %q KiB (exit %d), want %d", out, code, host.DefaultShmSize>>10)
			}
		})
	}
}

// TestIsolatedWorkspaceBelowDevShm: a data_dir in /dev/shm (a RAM-backed
// scratch area) keeps working for isolated steps: the step's own /dev/shm
// covers the host's, and its run's directories there are brought back on
// top of it, while the host's other files there stay out of reach.
func TestIsolatedWorkspaceBelowDevShm(t *testing.T) {
	requireRoot(t)
	host := fmt.Sprintf("/dev/shm/hookrun-test-host-%d", time.Now().UnixNano())
	if err := os.WriteFile(host, []byte("host-shm-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(host) })
	for name, init := range inits(t) {
		t.Run(name, func(t *testing.T) {
			ws := ownedDirIn(t, "/dev/shm")
			out, code := runStep(t, isolatedWith(init), ws, `echo w > in-ws && cat in-ws && cat "$H"`,
				workflows.EnvVar{Name: "H", Value: host})
			// Its output and its errors come through two pipes: the line
			// "w" may follow cat's complaint about $H.
			if !slices.Contains(strings.Split(out, "\n"), "w") {
				t.Fatalf("the step could not use its workspace in /dev/shm (exit %d): %q", code, out)
			}
			if strings.Contains(out, "host-shm-secret") {
				t.Errorf("the step read the host's /dev/shm: %q", out)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "in-ws")); err != nil || string(b) != "w\n" {
				t.Errorf("the step's file is not in its workspace on the host: %q, %v", b, err)
			}
		})
	}
}

// TestIsolatedStepHasItsOwnHostname: an isolated step sees its own host
// name, not the host's.
func TestIsolatedStepHasItsOwnHostname(t *testing.T) {
	requireRoot(t)
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if hostname == host.Hostname {
		t.Fatalf("this machine is named %s: the test would show nothing", hostname)
	}
	for name, init := range inits(t) {
		t.Run(name, func(t *testing.T) {
			out, code := runStep(t, isolatedWith(init), ownedDir(t), `uname -n; cat /proc/sys/kernel/hostname /proc/sys/kernel/domainname`)
			want := host.Hostname + "\n" + host.Hostname + "\n(none)\n"
			if code != 0 || out != want {
				t.Fatalf("exit %d, output %q; want %q (the host is %s)", code, out, want, hostname)
			}
		})
	}
}

// TestContainedStepHasItsOwnIPCAndUTSNamespaces: a contained (same_user)
// step runs in IPC and UTS namespaces other than the host's (a step that
// renames its host renames only its namespace), and keeps the host's name.
func TestContainedStepHasItsOwnIPCAndUTSNamespaces(t *testing.T) {
	requireRoot(t)
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	e := host.New(host.Config{Grace: 500 * time.Millisecond, Contain: true})
	out, code := runStep(t, e, t.TempDir(), `readlink /proc/self/ns/ipc /proc/self/ns/uts; uname -n`)
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) < 3 {
		t.Fatalf("exit %d: %q", code, out)
	}
	for i, ns := range []string{"ipc", "uts"} {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		if lines[i] == mine {
			t.Errorf("the contained step is in the host's %s namespace (%s)", ns, mine)
		}
	}
	if lines[2] != hostname {
		t.Errorf("the contained step is on %q, want the host's name %q", lines[2], hostname)
	}
}

// mqueueChildEnv makes the test binary run mqueueChild (TestMain).
const mqueueChildEnv = "HOOKRUN_TEST_MQUEUE_CHILD"

// TestIsolatedStepHasItsOwnMqueue: where the host mounts /dev/mqueue (as
// systemd does), an isolated step sees there its own IPC namespace's POSIX
// message queues, not the host's, and a queue it makes is gone for the
// next step and never on the host. This machine's /dev may have no
// /dev/mqueue: the test builds one in mount and IPC namespaces of its own
// (a tmpfs /dev with the few devices a step needs, and a "host" whose
// queues die with the test) and runs its steps there.
func TestIsolatedStepHasItsOwnMqueue(t *testing.T) {
	requireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("this test needs util-linux's unshare: %v", err)
	}
	old := t.TempDir()
	script := `set -e
mount --make-rprivate /
mount --bind /dev "$OLD"
mount -t tmpfs tmpfs /dev
for f in null zero random urandom full; do touch /dev/$f; mount --bind "$OLD/$f" /dev/$f; done
mkdir /dev/shm /dev/mqueue
mount -t tmpfs tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue
touch /dev/mqueue/hostq
"$BIN"
echo "host:" $(ls /dev/mqueue)`
	cmd := exec.Command(unshare, "--mount", "--ipc", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "OLD="+old, "BIN="+os.Args[0], mqueueChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "step1:\nstep2:\nhost: hostq\n"
	if string(out) != want {
		t.Fatalf("output %q, want %q: each step sees an empty /dev/mqueue, the host only its own queue", out, want)
	}
}

// mqueueChild runs, in TestIsolatedStepHasItsOwnMqueue's mount namespace,
// two isolated steps: the first lists /dev/mqueue and makes a queue there,
// the second lists it.
func mqueueChild() int {
	ws, err := os.MkdirTemp("", "hookrun-mq-")
	if err == nil {
		defer os.RemoveAll(ws)
		err = os.Chown(ws, stepUID, stepUID)
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for _, s := range []string{`echo step1: $(ls /dev/mqueue) && touch /dev/mqueue/stepq`, `echo step2: $(ls /dev/mqueue)`} {
		res, err := isolated().Exec(context.Background(), contract.ExecRequest{
			Argv: []string{"sh", "-c", s}, Env: []workflows.EnvVar{pathEnv},
			Dir: ws, Workspace: ws, Stdout: os.Stdout, Stderr: os.Stdout,
		})
		if err != nil || res.ExitCode != 0 {
			fmt.Println("exit", res.ExitCode, err)
			return 1
		}
	}
	return 0
}
