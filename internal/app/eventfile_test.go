package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/docker"
	"github.com/hookrun/hookrun/providers/docker/dockertest"
	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/providers/sbx"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/workflows"
)

// buildSim builds the sbx simulator into dir.
func buildSim(dir string) (string, error) {
	bin := filepath.Join(dir, "sbx")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the sbx simulator: %w\n%s", err, out)
	}
	return bin, nil
}

// upstream is a repository with one commit on main, served as file://.
func upstream(t *testing.T) (url, sha string) {
	t.Helper()
	dir := t.TempDir()
	g := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g("init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g("add", "README")
	g("commit", "--quiet", "-m", "initial")
	return "file://" + dir, g("rev-parse", "HEAD")
}

// TestEventFileInEveryPlace runs a checkout of a real repository through
// the engine with the real providers: in every place a step runs (the
// host, isolated and as hookrun's user; a container of its own; the root
// container; an sbx --clone sandbox, simulated), it reads the raw payload
// at $HOOKRUN_EVENT_PATH, and the checkout's `git status` stays empty, so
// that an agent's `git add -A` cannot commit the payload.
func TestEventFileInEveryPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("isolated host steps need root; run the tests as root (CI does)")
	}
	cloneURL, sha := upstream(t)
	const payload = `{"hookrun":"raw payload","n":1}`
	event := &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPush, Action: "pushed", Repo: "o/r", CloneURL: cloneURL,
		Push: &workflows.Push{Ref: "refs/heads/main", Branch: "main", After: sha}, Raw: []byte(payload)}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := dockertest.Client(ctx)
	if err != nil {
		t.Skipf("\n!!! WARNING: Docker test SKIPPED (the container cases need a Docker engine): %v !!!", err)
	}
	if err := dockertest.Ensure(ctx, cli); err != nil {
		t.Fatalf("building the test image: %v", err)
	}
	d, err := docker.New(docker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	simBin, err := buildSim(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sbx.New(sbx.Config{Binary: simBin, Env: append(os.Environ(), "SBXSIM_STATE="+t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}

	// read prints the payload and fails when the checkout shows anything;
	// check does the second part where git is not at hand (busybox).
	const read = `cat "$HOOKRUN_EVENT_PATH" && echo && test -z "$(git status --porcelain)" && git add -A && test -z "$(git diff --cached --name-only)"`
	const readOnly = `cat "$HOOKRUN_EVENT_PATH" && echo && if echo x >> "$HOOKRUN_EVENT_PATH"; then echo writable; fi`
	const check = `test -z "$(git status --porcelain)" || { git status --porcelain; exit 1; }`
	img := "{image: " + dockertest.Ref + ", pull_policy: never}"
	for _, tc := range []struct {
		name     string
		isolated bool
		yaml     string
	}{
		{"host isolated", true, "steps:\n  - {id: read, run: '" + read + "'}\n  - {id: ro, run: '" + readOnly + " 2>/dev/null', depends: [read]}\n"},
		{"host same_user", false, "steps:\n  - {id: read, run: '" + read + "'}\n"},
		{"container step", false, "steps:\n  - {id: read, run: '" + readOnly + " 2>/dev/null', container: " + img + "}\n  - {id: check, run: '" + check + "', depends: [read]}\n"},
		{"root container", false, "container: " + img + "\nsteps:\n  - {id: read, run: '" + readOnly + " 2>/dev/null'}\n"},
		{"sbx clone", false, "sandbox: {provider: sbx, agent: claude}\nsteps:\n  - {id: read, run: '" + read + "'}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := workflows.Parse("t.yaml", []byte("name: t\ncheckout: true\n"+tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			data := t.TempDir()
			gcfg := git.Config{DataDir: data}
			hostExec := host.New(host.Config{})
			if tc.isolated {
				gcfg.Owner = &git.Owner{UID: 65534, GID: 65534}
				hostExec = host.New(host.Config{Isolation: &host.Isolation{UID: 65534, GID: 65534, Hide: []string{data}}})
			}
			wss, err := git.New(gcfg)
			if err != nil {
				t.Fatal(err)
			}
			runID := "ev-" + strings.ReplaceAll(tc.name, " ", "-")
			ws, err := wss.Prepare(ctx, runID, event, contract.PrepareOptions{Checkout: true, HostSteps: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = wss.Remove(runID) })
			sink := &outputs{}
			eng, err := engine.New(engine.Config{Logs: sink, Providers: engine.Providers{
				Host: hostExec, Containers: d, RootContainer: d, SBX: sb, Harness: contract.HarnessFunc(harness.Run)}})
			if err != nil {
				t.Fatal(err)
			}
			res := eng.Run(ctx, engine.RunSpec{ID: runID, Workflow: w, Event: event, Workspace: ws.Dir, Home: ws.Home, TmpDir: ws.TmpDir,
				EventFile: ws.EventFile, HeadSHA: ws.HeadSHA})
			if res.Status != workflows.StatusSucceeded {
				t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.String())
			}
			for _, st := range []string{"read", "ro"} {
				if got := sink.stdout(st); got != "" && got != payload+"\n" {
					t.Errorf("step %s printed %q, want the payload (read-only)", st, got)
				}
			}
			if got := sink.stdout("read"); got != payload+"\n" {
				t.Errorf("step read printed %q, want the payload", got)
			}
			out, err := exec.Command("git", "-c", "safe.directory=*", "-C", ws.Dir, "status", "--porcelain", "--ignored").CombinedOutput()
			if err != nil || len(out) != 0 {
				t.Errorf("git status of the checkout after the run: %q, %v; want nothing", out, err)
			}
		})
	}
}

// outputs keeps what each step wrote.
type outputs struct {
	mu   sync.Mutex
	logs map[string]*strings.Builder // step/stream
}

func (o *outputs) Writer(_, stepID, stream string) io.WriteCloser {
	return &outputWriter{o: o, key: stepID + "/" + stream}
}

func (o *outputs) stdout(step string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b := o.logs[step+"/"+contract.StreamStdout]; b != nil {
		return b.String()
	}
	return ""
}

func (o *outputs) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for k, v := range o.logs {
		b.WriteString(k + ": " + v.String() + "\n")
	}
	return b.String()
}

type outputWriter struct {
	o   *outputs
	key string
}

func (w *outputWriter) Write(p []byte) (int, error) {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	if w.o.logs == nil {
		w.o.logs = map[string]*strings.Builder{}
	}
	if w.o.logs[w.key] == nil {
		w.o.logs[w.key] = &strings.Builder{}
	}
	return w.o.logs[w.key].Write(p)
}

func (w *outputWriter) Close() error { return nil }
