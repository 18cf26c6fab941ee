package sbx

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

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

func workflow(agent string) *workflows.Workflow {
	return &workflows.Workflow{Name: "review", Sandbox: &workflows.Sandbox{Provider: "sbx", Agent: agent}}
}

func open(t *testing.T, p *Provider, runID, ws string) *Session {
	t.Helper()
	return openResults(t, p, runID, ws, "")
}

// openResults is open with a results folder (OpenRequest.Results).
func openResults(t *testing.T, p *Provider, runID, ws, results string) *Session {
	t.Helper()
	sess, err := p.Open(context.Background(), contract.OpenRequest{RunID: runID, Workspace: ws, Results: results, Workflow: workflow("claude")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return sess.(*Session)
}

func TestConformance(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	const runID = "conformance"
	ws, results := gitRepo(t), contracttest.ResultsDir(t)
	s := openResults(t, p, runID, ws, results)
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	// The simulator's sandbox filesystem is a directory on this host: each
	// subtest works in its own directory inside the clone.
	var n atomic.Int64
	contracttest.Run(t, func(t *testing.T) contract.Executor { return s }, contracttest.Options{
		Workspace: func(t *testing.T) (string, string) {
			d := filepath.Join(sim.sandboxDir(SandboxName(runID)), fmt.Sprintf("ct-%d", n.Add(1)))
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d, d
		},
		Results: func(*testing.T) (string, string) { return results, contract.SandboxResultsPath(ws) },
	})
}

// The provider passes the Sandbox suite against the simulator: open, exec,
// close, and nothing of the run left whatever happened.
func TestSandboxConformance(t *testing.T) {
	s := newSim(t)
	p := s.provider(t)
	failing := (&sim{state: s.state, env: []string{"SBXSIM_FAIL=exists:create"}}).provider(t)
	contracttest.RunSandbox(t, func(*testing.T) contract.Sandbox { return p }, contracttest.SandboxOptions{
		Request: func(t *testing.T) contract.OpenRequest {
			return contract.OpenRequest{Workspace: gitRepo(t), Workflow: workflow("claude")}
		},
		Leftovers: func(t *testing.T, req contract.OpenRequest) []string {
			return leftovers(t, s, req.Workspace, req.RunID)
		},
		// sbx refuses the create (the name was taken meanwhile).
		FailOpen:    func(*testing.T, *contract.OpenRequest) contract.Sandbox { return failing },
		Env:         []workflows.EnvVar{{Name: "PATH", Value: os.Getenv("PATH")}},
		ResultsPath: func(req contract.OpenRequest) string { return contract.SandboxResultsPath(req.Workspace) },
	})
}

// step is one Exec of the lifecycle tests.
func step(t *testing.T, ctx context.Context, s *Session, req contract.ExecRequest) (contract.ExecResult, string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	req.RunID, req.Stdout, req.Stderr = s.runID, &out, &errb
	if req.Env == nil {
		req.Env = []workflows.EnvVar{{Name: "PATH", Value: os.Getenv("PATH")}}
	}
	res, err := s.Exec(ctx, req)
	return res, out.String(), errb.String(), err
}

const commitScript = `echo "agent work" > agent.txt && git add agent.txt && git -c user.name=agent -c user.email=agent@example.com commit --quiet -m "agent commit"`

func TestLifecycle(t *testing.T) {
	const secretValue = "s3cr3t-value-never-on-a-command-line"
	tests := []struct {
		name string
		// prepare adjusts the workspace before Open.
		prepare func(t *testing.T, ws string)
		// steps run after Open; each returns nothing, failures are the test's.
		steps func(t *testing.T, s *Session)
		// wantCommit: the agent's commit must arrive on hookrun/<run>.
		wantCommit bool
	}{
		{
			name: "commit collected",
			steps: func(t *testing.T, s *Session) {
				res, _, stderr, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "agent", Argv: []string{"sh", "-c", commitScript}})
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("agent step: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
				}
				// Env by name; the secret is not forwarded at all.
				res, stdout, _, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "env",
					Env: []workflows.EnvVar{{Name: "PATH", Value: os.Getenv("PATH")}, {Name: "HOOKRUN_PR_TITLE", Value: "fix: a $(b) `c`"},
						{Name: "ANTHROPIC_API_KEY", Value: secretValue}},
					SecretNames: []string{"ANTHROPIC_API_KEY"},
					Argv:        []string{"sh", "-c", `echo "$HOOKRUN_PR_TITLE|${ANTHROPIC_API_KEY-not forwarded}"`}})
				if err != nil || res.ExitCode != 0 || stdout != "fix: a $(b) `c`|not forwarded\n" {
					t.Errorf("env step: exit %d, err %v, stdout %q", res.ExitCode, err, stdout)
				}
			},
			wantCommit: true,
		},
		{
			name: "step failed after committing",
			steps: func(t *testing.T, s *Session) {
				res, _, _, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "agent", Argv: []string{"sh", "-c", commitScript + " && exit 3"}})
				if err != nil || res.ExitCode != 3 {
					t.Fatalf("exit %d, err %v", res.ExitCode, err)
				}
			},
			wantCommit: true,
		},
		{
			name: "run cancelled mid-step",
			steps: func(t *testing.T, s *Session) {
				// Cancelled once the agent has committed and goes on working.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				out := &cancelOnWrite{cancel: cancel}
				res, err := s.Exec(ctx, contract.ExecRequest{RunID: s.runID, StepID: "agent", Grace: 200 * time.Millisecond,
					Env:    []workflows.EnvVar{{Name: "PATH", Value: os.Getenv("PATH")}},
					Argv:   []string{"sh", "-c", commitScript + " && echo committed && sleep 30"},
					Stdout: out})
				if !errors.Is(err, context.Canceled) || res.ExitCode != -1 {
					t.Fatalf("exit %d, err %v", res.ExitCode, err)
				}
			},
			wantCommit: true,
		},
		{
			name:    "detached workspace",
			prepare: func(t *testing.T, ws string) { runGit(t, ws, "checkout", "--quiet", "--detach") },
			steps: func(t *testing.T, s *Session) {
				if res, _, stderr, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "agent", Argv: []string{"sh", "-c", commitScript}}); err != nil || res.ExitCode != 0 {
					t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
				}
			},
			wantCommit: true,
		},
		{
			name: "agent made no commit",
			steps: func(t *testing.T, s *Session) {
				if res, _, _, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "noop", Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
					t.Fatalf("exit %d, err %v", res.ExitCode, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSim(t)
			p := sim.provider(t)
			ws := gitRepo(t)
			if tt.prepare != nil {
				tt.prepare(t, ws)
			}
			base := runGit(t, ws, "rev-parse", "HEAD")
			const runID = "01JRUN"
			s := open(t, p, runID, ws)
			if _, err := os.Stat(filepath.Join(sim.sandboxDir(SandboxName(runID)), "README")); err != nil {
				t.Fatalf("the sandbox is not a clone of the workspace: %v", err)
			}
			tt.steps(t, s)
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}

			// The agent's commit is on hookrun/<run>, on top of the workspace's HEAD.
			tip := runGit(t, ws, "rev-parse", "refs/heads/"+BranchName(runID))
			if tt.wantCommit {
				if subject := runGit(t, ws, "log", "-1", "--format=%s", tip); subject != "agent commit" {
					t.Errorf("hookrun/%s is at %q, want the agent's commit", runID, subject)
				}
				if parent := runGit(t, ws, "rev-parse", tip+"^"); parent != base {
					t.Errorf("the agent's commit has parent %s, want the workspace HEAD %s", parent, base)
				}
				if got := runGit(t, ws, "show", tip+":agent.txt"); got != "agent work" {
					t.Errorf("agent.txt in the collected commit: %q", got)
				}
			} else if tip != base {
				t.Errorf("hookrun/%s is at %s, want the unchanged %s", runID, tip, base)
			}
			// The workspace itself is untouched: the agent worked in its clone.
			if runGit(t, ws, "rev-parse", "HEAD") != base {
				t.Errorf("the workspace HEAD moved")
			}

			assertGone(t, sim, ws, runID)
			argv := sim.argv(t)
			assertNoSecret(t, argv, secretValue, "ANTHROPIC_API_KEY")
			if tt.name == "commit collected" {
				compareGolden(t, "lifecycle.golden", renderArgv(argv, ws))
			}
		})
	}
}

// assertGone checks that neither the sandbox nor its remote survived.
// leftovers describes what remains of a run: its sandbox, its remote and
// remote-tracking refs in the workspace.
func leftovers(t *testing.T, sim *sim, ws, runID string) []string {
	t.Helper()
	var left []string
	if _, err := os.Stat(filepath.Dir(sim.sandboxDir(SandboxName(runID)))); !os.IsNotExist(err) {
		left = append(left, fmt.Sprintf("sandbox %s still exists (%v)", SandboxName(runID), err))
	}
	if remotes := runGit(t, ws, "remote"); strings.Contains(remotes, RemoteName(runID)) {
		left = append(left, fmt.Sprintf("remote %s left in the workspace: %q", RemoteName(runID), remotes))
	}
	if refs := runGit(t, ws, "for-each-ref", "refs/remotes/"); refs != "" {
		left = append(left, fmt.Sprintf("remote-tracking refs left: %q", refs))
	}
	return left
}

func assertGone(t *testing.T, sim *sim, ws, runID string) {
	t.Helper()
	for _, l := range leftovers(t, sim, ws, runID) {
		t.Error(l)
	}
}

func assertNoSecret(t *testing.T, argv [][]string, value, name string) {
	t.Helper()
	for _, a := range argv {
		for i, s := range a {
			if strings.Contains(s, value) {
				t.Errorf("a secret value is on the sbx command line: %q", a)
			}
			if (s == "-e" || s == "--env") && i+1 < len(a) && strings.HasPrefix(a[i+1], name) {
				t.Errorf("a secret is passed with -e: %q", a)
			}
		}
	}
}

// renderArgv prints the log with the workspace path replaced, one command
// per line.
func renderArgv(argv [][]string, ws string) string {
	var b strings.Builder
	for _, a := range argv {
		b.WriteString("sbx")
		for _, s := range a {
			b.WriteString(" " + strings.ReplaceAll(s, ws, "$WORKSPACE"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestOpenRemovesLeftover(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	ws := gitRepo(t)
	const runID = "again"
	// An earlier attempt crashed after create: its sandbox and remote are left.
	first := open(t, p, runID, ws)
	if err := os.WriteFile(filepath.Join(sim.sandboxDir(first.Name()), "stale"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	second := open(t, p, runID, ws)
	if _, err := os.Stat(filepath.Join(sim.sandboxDir(second.Name()), "stale")); !os.IsNotExist(err) {
		t.Errorf("the second Open reused the stale sandbox")
	}
	if err := second.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, sim, ws, runID)
	// Close of the crashed attempt's session finds nothing to remove and
	// says so only through the collect step.
	_ = first.Close(context.Background())
	assertGone(t, sim, ws, runID)
}

func TestCloseAfterCancelledContext(t *testing.T) {
	sim := newSim(t)
	p := sim.provider(t)
	ws := gitRepo(t)
	s := open(t, p, "cancelled", ws)
	if res, _, _, err := step(t, context.Background(), s, contract.ExecRequest{StepID: "a", Argv: []string{"sh", "-c", commitScript}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v", res.ExitCode, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close with a done context: %v", err)
	}
	if runGit(t, ws, "log", "-1", "--format=%s", BranchName("cancelled")) != "agent commit" {
		t.Error("commits not collected")
	}
	assertGone(t, sim, ws, "cancelled")
}

// Each message of the sbx page's troubleshooting table, printed with the
// page's exact text where sbx (or the agent) prints it, is a run error that
// carries the page's fix; the golden file holds the errors as a step or
// the run shows them.
func TestKnownErrors(t *testing.T) {
	tests := []struct {
		fail string // SBXSIM_FAIL
		at   string // "open" or "exec"
		want error
	}{
		{"not-signed-in", "open", ErrNotSignedIn},
		{"policy:create", "open", ErrPolicyNotInitialized},
		{"agent-not-logged-in:exec", "exec", ErrAgentNotLoggedIn},
		{"agent-not-logged-in:create", "open", ErrAgentNotLoggedIn},
		{"not-found:exec", "exec", ErrSandboxNotFound},
		{"exists:create", "open", ErrSandboxExists},
		{"blocked:exec", "exec", ErrRequestBlocked},
		{"not-signed-in:exec", "exec", ErrNotSignedIn},
	}
	var golden strings.Builder
	for _, tt := range tests {
		t.Run(tt.fail, func(t *testing.T) {
			sim := newSim(t, "SBXSIM_FAIL="+tt.fail)
			p := sim.provider(t)
			ws := gitRepo(t)
			sess, err := p.Open(context.Background(), contract.OpenRequest{RunID: "e", Workspace: ws, Workflow: workflow("claude")})
			if tt.at == "exec" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				_, err = sess.Exec(context.Background(), contract.ExecRequest{RunID: "e", StepID: "s", Argv: []string{"true"}})
				_ = sess.Close(context.Background())
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			var k *KnownError
			if !errors.As(err, &k) || k.Fix == "" {
				t.Fatalf("error %v carries no fix", err)
			}
			fmt.Fprintf(&golden, "%s\n\t%s\n", tt.fail, err)
			// Nothing is left behind by a failed Open either.
			assertGone(t, sim, ws, "e")
		})
	}
	compareGolden(t, "known_errors.golden", golden.String())
}

// A create failure that says "not found" about something else keeps its
// own text: it is not "the sandbox does not exist".
func TestOtherFailuresKeepTheirText(t *testing.T) {
	sim := newSim(t, "SBXSIM_FAIL=create-other:create")
	p := sim.provider(t)
	ws := gitRepo(t)
	_, err := p.Open(context.Background(), contract.OpenRequest{RunID: "e", Workspace: ws, Workflow: workflow("claude")})
	if err == nil {
		t.Fatal("Open succeeded")
	}
	var k *KnownError
	if errors.As(err, &k) {
		t.Fatalf("create failure classified as %v: %v", k.Kind, err)
	}
	if !strings.Contains(err.Error(), "manifest for docker/sandbox-templates:claude-code not found") {
		t.Errorf("error %q lost sbx's own text", err)
	}
	assertGone(t, sim, ws, "e")
}

func TestClassify(t *testing.T) {
	tests := []struct {
		out  string
		want error
	}{
		{"list local sandboxes: ...\nno valid user session found, please sign in to Docker to proceed", ErrNotSignedIn},
		{"error: not signed in to Docker", ErrNotSignedIn},
		{"ERROR: default policy is already set; use \"sbx policy reset\" first to change it", nil},
		{"error: sandbox 'hookrun-r' already exists", ErrSandboxExists},
		{"error: sandbox 'hookrun-r' not found", ErrSandboxNotFound},
		{"error: sandbox 'someone-else' not found", nil},
		{"error: image not found", nil},
		{"error: pulling agent image: manifest for x not found", nil},
		{"warning: not signed in to the package registry", nil},
		{"ERROR: your Docker session could not be refreshed due to a network issue; this should resolve automatically, try again shortly", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := classify(tt.out, "hookrun-r"); (tt.want == nil) != (got == nil) || (got != nil && !errors.Is(got, tt.want)) {
			t.Errorf("classify(%q) = %v, want %v", tt.out, got, tt.want)
		}
	}
	// In sbx exec's output, mostly the step's own, sbx's messages count
	// only as stderr's last line, the agent's as the last line of either.
	execTests := []struct {
		stdout, stderr string
		want           error
	}{
		{"", "error: file not found", nil}, // the step's, not a missing sandbox
		{"", "error: sandbox 'hookrun-r' not found\nmore output", nil},
		{"", "warning: not signed in to the package registry\ndone", nil},
		{"", "error: sandbox 'hookrun-r' not found", ErrSandboxNotFound},
		{"error: not signed in to Docker", "", nil}, // sbx writes its errors to stderr
		{"Not logged in · Please run /login\n", "", ErrAgentNotLoggedIn},
		{"", "A request from the agent is blocked", ErrRequestBlocked},
		{"the docs say: Not logged in · Please run /login\nand then more", "", nil},
	}
	for _, tt := range execTests {
		if got := classifyExec(tt.stdout, tt.stderr, "hookrun-r"); (tt.want == nil) != (got == nil) || (got != nil && !errors.Is(got, tt.want)) {
			t.Errorf("classifyExec(%q, %q) = %v, want %v", tt.stdout, tt.stderr, got, tt.want)
		}
	}
}

// cancelOnWrite cancels a context at the first write.
type cancelOnWrite struct {
	mu     sync.Mutex
	b      bytes.Buffer
	cancel func()
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
