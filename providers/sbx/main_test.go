package sbx

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// simBinary is the sbx simulator, built once by TestMain.
var simBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "sbxsim-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	simBinary = filepath.Join(dir, "sbx")
	out, err := exec.Command("go", "build", "-o", simBinary, "./internal/sbxsim").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the sbx simulator: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sim is one simulator state: its own sandboxes and argv log.
type sim struct {
	state string
	env   []string // extra environment of the sbx process (SBXSIM_FAIL=...)
}

func newSim(t *testing.T, env ...string) *sim {
	return &sim{state: t.TempDir(), env: env}
}

func (s *sim) provider(t *testing.T) *Provider {
	t.Helper()
	p, err := New(Config{Binary: simBinary, Env: append(append(os.Environ(), "SBXSIM_STATE="+s.state), s.env...)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sandboxDir is where the simulator keeps a sandbox's clone.
func (s *sim) sandboxDir(name string) string {
	return filepath.Join(s.state, "sandboxes", name, "clone")
}

// argv returns every logged invocation.
func (s *sim) argv(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(s.state, "argv.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a []string
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("argv log line %q: %v", sc.Text(), err)
		}
		out = append(out, a)
	}
	return out
}

// gitRepo makes a workspace repository with one commit on branch main.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "README")
	runGit(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "initial")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
