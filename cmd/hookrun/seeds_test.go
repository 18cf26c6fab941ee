package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

// seedDir holds the YAML examples of the two source documents, verbatim.
const seedDir = "../../workflows/testdata/dagu/"

// TestSeedRootContainerExampleRuns: the harness.run-in-Docker page's shared
// root container example, unchanged, runs with `hookrun run`: the command
// step and the shell harness share the workspace mounted at /workspace, the
// container's env reaches the harness, and the harness runs in the image
// (alpine's release file). No registry here: alpine:3.20 is a stand-in built
// from the test image when the daemon lacks it, removed afterwards.
func TestSeedRootContainerExampleRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := dockertest.Client(ctx)
	if err != nil {
		t.Skipf("\n!!! WARNING: Docker test SKIPPED: %v !!!", err)
	}
	defer cli.Close()
	img, err := dockertest.EnsureStandIn(ctx, cli, "alpine:3.20", map[string]string{"etc/alpine-release": "3.20.9-hookrun-stand-in\n"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := img.Remove(context.Background(), cli); err != nil {
			t.Error(err)
		}
	}()
	// The example is `type: graph` with no depends: as in Dagu, both steps
	// start together, so whether read_file finds shared.txt is a race the
	// example itself contains (docs/workflows.md says so). What does not
	// race: both steps run in the image with the container's env, and the
	// command step writes through the root container into the workspace.
	ws := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "--dir", ws, seedDir+"root-container.yaml")
	raced := strings.Contains(stdout+stderr, "[read_file] cat: can't open 'shared.txt'") // busybox's words: it ran in the image
	if !raced {
		for _, want := range []string{"[read_file] from command step", "[read_file] SMOKE_TOKEN=container-env-ok", "[read_file] 3.20.9-hookrun-stand-in"} {
			if !strings.Contains(stdout+stderr, want) {
				t.Errorf("step logs lack %q", want)
			}
		}
		if code != 0 {
			t.Errorf("exit %d although read_file found shared.txt", code)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "shared.txt")); err != nil || string(b) != "from command step\n" {
		t.Errorf("workspace shared.txt = %q, %v; want the command step's line", b, err)
	}
	if t.Failed() {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// As a chain (the page's intent: "the root container shares the
	// filesystem between command and harness steps"), the harness reads
	// what the command step wrote, and the run succeeds.
	src, err := os.ReadFile(seedDir + "root-container.yaml")
	if err != nil {
		t.Fatal(err)
	}
	chain := strings.Replace(string(src), "type: graph", "type: chain", 1)
	wf := writeFile(t, filepath.Join(t.TempDir(), "root-container-chain.yaml"), chain)
	code, stdout, stderr = runCLI(t, "run", "--dir", t.TempDir(), wf)
	for _, want := range []string{"[read_file] from command step", "[read_file] SMOKE_TOKEN=container-env-ok", "[read_file] 3.20.9-hookrun-stand-in"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("chain: step logs lack %q", want)
		}
	}
	if code != 0 || t.Failed() {
		t.Fatalf("chain: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// fakeClaude stands in for Claude Code inside the simulated sandbox: it
// prints where it runs, its prompt and model and TICKET_ID, and when the
// prompt asks for a commit, commits a fix in its working tree.
const fakeClaude = `#!/bin/sh
prompt= model=
while [ $# -gt 0 ]; do
  case "$1" in
    -p) prompt=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    *) shift ;;
  esac
done
echo "claude in $(pwd) model=${model:-default}: $prompt"
echo "TICKET_ID=${TICKET_ID:-unset}"
case "$prompt" in
  *commit*) echo fixed > fix.txt && git add fix.txt && git -c user.name=agent -c user.email=agent@example.com commit -q -m "agent: fix the failing tests" ;;
esac
`

// seedRepo is the path the sbx page's examples name as their working_dir.
const seedRepo = "/path/to/repo"

// sbxSeed is what a run of an sbx page example needs: a PATH with the sbx
// simulator and the fake agent, a HOME that holds the simulator's state
// (sbx keeps its sandboxes in the user's home), and a git repository.
type sbxSeed struct {
	t    *testing.T
	bin  string // PATH entry with sbx and claude
	home string
	repo string
}

func newSbxSeed(t *testing.T) *sbxSeed {
	t.Helper()
	s := &sbxSeed{t: t, bin: t.TempDir(), home: t.TempDir(), repo: t.TempDir()}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(s.bin, "sbx"), "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		t.Fatalf("building the sbx simulator: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(s.bin, "claude"), fakeClaude)
	if err := os.Chmod(filepath.Join(s.bin, "claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.git("init", "-q", "-b", "main")
	writeFile(t, filepath.Join(s.repo, "README.md"), "hello\n")
	s.git("add", "README.md")
	s.git("-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "initial")
	return s
}

func (s *sbxSeed) git(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", s.repo}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// run runs `before` (shell, may be empty) and then `hookrun run` of the
// seed file in a private mount namespace where the repository is mounted
// at /path/to/repo, as the examples expect it; --dir is the repository
// (used by the example without a working_dir).
func (s *sbxSeed) run(seed, before string) (int, string) {
	s.t.Helper()
	if _, err := os.Stat(seedRepo); os.IsNotExist(err) {
		// The mount point only, empty; removed again (with the parents
		// this made) at the end of the test.
		if err := os.MkdirAll(seedRepo, 0o755); err != nil {
			s.t.Fatalf("creating the mount point %s: %v", seedRepo, err)
		}
		s.t.Cleanup(func() {
			for d := seedRepo; d != "/"; d = filepath.Dir(d) {
				if os.Remove(d) != nil {
					break // not empty, or not ours
				}
			}
		})
	}
	script := `set -e
mount --bind "$SEED_REPO" ` + seedRepo + `
cd ` + seedRepo + `
` + before + `
exec "$HOOKRUN_BIN" run --dir ` + seedRepo + ` "$SEED_FILE"`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "HOOKRUN_AS_MAIN=1", "HOOKRUN_BIN="+os.Args[0], "SEED_REPO="+s.repo,
		"HOME="+s.home, "PATH="+s.bin+":"+os.Getenv("PATH"))
	cmd.Env = slices.DeleteFunc(cmd.Env, func(e string) bool {
		return strings.HasPrefix(e, "SBXSIM_STATE=") || strings.HasPrefix(e, "XDG_STATE_HOME=")
	})
	abs, err := filepath.Abs(seedDir)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "SEED_FILE="+filepath.Join(abs, seed))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("running %s: %v\n%s", seed, err, out)
	}
	return code, string(out)
}

// argv is what the simulator was asked, one JSON array per line.
func (s *sbxSeed) argv() string {
	b, _ := os.ReadFile(filepath.Join(s.home, ".local", "state", "sbxsim", "argv.log"))
	return string(b)
}

// TestSeedSbxExamplesRun: the three YAML examples of the sbx page, unchanged,
// run with `hookrun run` against the simulator, as the page says they do.
func TestSeedSbxExamplesRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("!!! needs root (a mount namespace for /path/to/repo): the sbx page's examples are NOT run !!!")
	}
	t.Run("long-lived sandbox", func(t *testing.T) {
		s := newSbxSeed(t)
		writeFile(t, filepath.Join(s.repo, "README.md"), "hello\nan uncommitted change\n")
		code, out := s.run("sbx-long-lived-sandbox.yaml", "sbx create --name dagu-claude claude "+seedRepo)
		if want := "[review] claude in " + seedRepo + " model=sonnet: Review the uncommitted changes and list concrete bugs."; !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
		// The command the page says Dagu runs (the block scalar keeps its newline).
		if !strings.Contains(s.argv(), `["exec","dagu-claude","claude","--dangerously-skip-permissions","-p","Review the uncommitted changes and list concrete bugs.\n","--model","sonnet"]`) {
			t.Errorf("sbx was not asked what the page says Dagu runs:\n%s", s.argv())
		}
		if !strings.Contains(s.argv(), `["stop","dagu-claude"]`) {
			t.Errorf("the exit handler did not stop the sandbox:\n%s", s.argv())
		}
		if code != 0 || t.Failed() {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
	t.Run("fresh sandbox per run", func(t *testing.T) {
		s := newSbxSeed(t)
		code, out := s.run("sbx-fresh-sandbox-per-run.yaml", "")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if msg := s.git("log", "-1", "--format=%s", "dagu-fix"); msg != "agent: fix the failing tests" {
			t.Errorf("branch dagu-fix ends with %q, want the agent's commit", msg)
		}
		if got := s.git("show", "dagu-fix:fix.txt"); got != "fixed" {
			t.Errorf("dagu-fix:fix.txt = %q", got)
		}
		if remotes := s.git("remote"); remotes != "" {
			t.Errorf("remotes left after sbx rm: %q", remotes)
		}
		if status := s.git("status", "--porcelain"); status != "" {
			t.Errorf("the host repository changed (the agent worked on its clone): %q", status)
		}
		if !strings.Contains(s.argv(), `["rm","--force","dagu-fix"]`) {
			t.Errorf("the exit handler did not remove the sandbox:\n%s", s.argv())
		}
	})
	t.Run("environment variables", func(t *testing.T) {
		s := newSbxSeed(t)
		code, out := s.run("sbx-env-passthrough.yaml", "sbx create --name dagu-claude claude "+seedRepo)
		if !strings.Contains(out, "[triage] TICKET_ID=PROJ-123") {
			t.Errorf("the agent did not get TICKET_ID through -e")
		}
		if code != 0 || t.Failed() {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
}
