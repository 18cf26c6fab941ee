package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// failExec records where each command went and fails it (exit 1), so
// that every fallback is tried.
type failExec struct {
	where string
	log   *attemptLog
}

type attemptLog struct {
	mu   sync.Mutex
	runs []string // "where argv0 PATH-set"
	reqs []contract.ExecRequest
}

func (e *failExec) Exec(_ context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	_, hasPath := envOf(req, "PATH")
	e.log.runs = append(e.log.runs, fmt.Sprintf("%s %s path=%v", e.where, req.Argv[0], hasPath))
	e.log.reqs = append(e.log.reqs, req)
	return contract.ExecResult{ExitCode: 1}, nil
}

func (e *failExec) Close(context.Context) error { return nil }

type failSandbox struct{ s *failExec }

func (s failSandbox) Open(context.Context, contract.OpenRequest) (contract.Session, error) {
	return s.s, nil
}

// Each attempt of a harness step, the primary and every fallback, runs
// where its own provider runs: an sbx-binary harness on the host as
// written, any other in the run's sandbox when the workflow has one, else
// on the host (or in the step's own container).
func TestHarnessAttemptsRouteByTheirOwnBinary(t *testing.T) {
	t.Parallel()
	const harnesses = `
harnesses:
  my_agent: {binary: my-agent, prompt_mode: stdin}
  long: {binary: sbx, prefix_args: [exec, my-box, claude], prompt_mode: flag, prompt_flag: -p}
`
	tests := []struct {
		primary, fallback string
		sandbox           bool
		container         bool     // the step has its own container
		want              []string // where each attempt ran, its argv[0], whether it got the host PATH
	}{
		{"claude", "claude", false, false, []string{"host claude path=true", "host claude path=true"}},
		{"claude", "my_agent", false, false, []string{"host claude path=true", "host my-agent path=true"}},
		{"claude", "long", false, false, []string{"host claude path=true", "host sbx path=true"}},
		{"my_agent", "claude", false, false, []string{"host my-agent path=true", "host claude path=true"}},
		{"my_agent", "my_agent", false, false, []string{"host my-agent path=true", "host my-agent path=true"}},
		{"my_agent", "long", false, false, []string{"host my-agent path=true", "host sbx path=true"}},
		{"long", "claude", false, false, []string{"host sbx path=true", "host claude path=true"}},
		{"long", "my_agent", false, false, []string{"host sbx path=true", "host my-agent path=true"}},
		{"long", "long", false, false, []string{"host sbx path=true", "host sbx path=true"}},

		{"claude", "claude", true, false, []string{"sandbox claude path=false", "sandbox claude path=false"}},
		{"claude", "my_agent", true, false, []string{"sandbox claude path=false", "sandbox my-agent path=false"}},
		{"claude", "long", true, false, []string{"sandbox claude path=false", "host sbx path=true"}},
		{"my_agent", "claude", true, false, []string{"sandbox my-agent path=false", "sandbox claude path=false"}},
		{"my_agent", "my_agent", true, false, []string{"sandbox my-agent path=false", "sandbox my-agent path=false"}},
		{"my_agent", "long", true, false, []string{"sandbox my-agent path=false", "host sbx path=true"}},
		{"long", "claude", true, false, []string{"host sbx path=true", "sandbox claude path=false"}},
		{"long", "my_agent", true, false, []string{"host sbx path=true", "sandbox my-agent path=false"}},
		{"long", "long", true, false, []string{"host sbx path=true", "host sbx path=true"}},

		{"claude", "my_agent", true, true, []string{"container claude path=false", "container my-agent path=false"}},
		{"my_agent", "claude", false, true, []string{"container my-agent path=false", "container claude path=false"}},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s then %s, sandbox %v, container %v", tt.primary, tt.fallback, tt.sandbox, tt.container)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := &attemptLog{}
			host := &failExec{where: "host", log: log}
			box := &failExec{where: "sandbox", log: log}
			containers := &failExec{where: "container", log: log}
			yaml := harnesses
			if tt.sandbox {
				yaml += "sandbox: {provider: sbx, agent: claude}\n"
			}
			stepContainer := ""
			if tt.container {
				stepContainer = ", container: {image: alpine:3.20}"
			}
			yaml += fmt.Sprintf(`steps:
  - {id: review, action: harness.run, with: {provider: %s, prompt: "p", fallback: [{provider: %s}]}%s}
`, tt.primary, tt.fallback, stepContainer)
			res, sink, dir := runWorkflow(t, yaml, enginetest.RunOpts{
				Env: map[string]string{"PATH": "/usr/bin:/bin"},
				Cfg: func(c *engine.Config) {
					c.Providers = engine.Providers{Host: host, Containers: containers, SBX: failSandbox{box},
						Harness: contract.HarnessFunc(harness.Run)}
				}})
			if res.Status != failed {
				t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
			}
			if !slices.Equal(log.runs, tt.want) {
				t.Errorf("attempts ran\n  %q\nwant\n  %q", log.runs, tt.want)
			}
			for i, req := range log.reqs {
				// Never wrapped in a second sbx exec: an sbx harness's argv is as written.
				if req.Argv[0] == "sbx" && !slices.Equal(req.Argv, []string{"sbx", "exec", "my-box", "claude", "-p", "p"}) {
					t.Errorf("attempt %d: sbx argv %q", i+1, req.Argv)
				}
				if strings.HasPrefix(log.runs[i], "host") && req.Dir != dir {
					t.Errorf("attempt %d on the host runs in %q, want the workspace %q", i+1, req.Dir, dir)
				}
			}
		})
	}
}

// A handler never silently moves to the host: when the sandbox (or root
// container) its steps run in could not be opened, it does not run, its
// state says why, and so does the run's error; a handler that runs sbx
// itself runs on the host as a step of its shape would.
func TestHandlersDoNotMoveToTheHost(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"sandbox", "root container"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			log := &attemptLog{}
			host := &failExec{where: "host", log: log}
			broken := &recSandbox{err: errors.New("boom: cannot open")}
			wf := `sandbox: {provider: sbx, agent: claude}
harnesses:
  long: {binary: sbx, prefix_args: [stop, my-box]}
handler_on:
  failure: {run: echo cleanup}
  exit: {action: harness.run, with: {provider: long, prompt: p}}
`
			wantHost := []string{"host sbx path=true"}
			if kind == "root container" {
				wf = `container: {image: alpine:3.20}
handler_on:
  failure: {run: echo cleanup}
  exit: {run: echo bye}
`
				wantHost = nil
			}
			res, sink, _ := runWorkflow(t, wf+`
steps:
  - {id: a, run: "true"}
`, enginetest.RunOpts{Cfg: func(c *engine.Config) {
				c.Providers = engine.Providers{Host: host, SBX: broken, RootContainer: broken, Harness: contract.HarnessFunc(harness.Run)}
			}})
			if res.Status != failed {
				t.Fatalf("status %s", res.Status)
			}
			if slices.ContainsFunc(log.runs, func(r string) bool { return strings.Contains(r, " sh ") }) {
				t.Errorf("the failure handler ran on the host: %q", log.runs)
			}
			if st := enginetest.Step(res, "on_failure"); st.Status != workflows.StatusSkipped || !strings.Contains(st.Error, "not run") {
				t.Errorf("on_failure: %s %q\n%s", st.Status, st.Error, sink.All())
			}
			if !strings.Contains(res.Error, "boom: cannot open") || !strings.Contains(res.Error, "handler on_failure not run") {
				t.Errorf("run error %q does not say why the handler did not run", res.Error)
			}
			// The sbx-binary exit handler runs on the host, as written.
			if !slices.Equal(log.runs, wantHost) {
				t.Errorf("host ran %q, want %q", log.runs, wantHost)
			}
		})
	}
}

// A harness that runs sbx itself on the host gets what sbx needs from the
// runner's environment (Config.SbxHostEnv: HOME, XDG_*, DOCKER_*,
// PATH) and nothing else of it; other host steps do not get it. A relative
// sbx binary, or one inside the workspace, is refused: the pull request
// controls the workspace.
func TestSbxOnTheHost(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	log := &attemptLog{}
	host := &failExec{where: "host", log: log}
	w := enginetest.Parse(t, `
harnesses:
  long: {binary: sbx, prefix_args: [exec, my-box, claude], prompt_mode: flag, prompt_flag: -p}
  relative: {binary: /placeholder/sbx}
  inside: {binary: `+ws+`/bin/sbx}
  outside: {binary: /usr/local/bin/sbx}
steps:
  - {id: long, action: harness.run, with: {provider: long, prompt: p}, continue_on: failed}
  - {id: plain, run: "true", continue_on: failed}
  - {id: relative, action: harness.run, with: {provider: relative, prompt: p}, continue_on: failed}
  - {id: inside, action: harness.run, with: {provider: inside, prompt: p}, continue_on: failed}
  - {id: outside, action: harness.run, with: {provider: outside, prompt: p}, continue_on: failed}
`)
	// Validation refuses a relative sbx binary; the runner does too, for a
	// workflow that did not come through it.
	rel := w.Harnesses["relative"]
	rel.Binary = "./bin/sbx"
	w.Harnesses["relative"] = rel
	eng, err := engine.New(engine.Config{
		Providers: engine.Providers{Host: host, Harness: contract.HarnessFunc(harness.Run)},
		LookupEnv: enginetest.Env(map[string]string{"PATH": "/usr/bin", "HOME": "/root", "GITHUB_TOKEN": "ghp_secret"}),
		SbxHostEnv: []workflows.EnvVar{{Name: "HOME", Value: "/home/sbx-user"}, {Name: "XDG_CONFIG_HOME", Value: "/home/sbx-user/.config"},
			{Name: "DOCKER_HOST", Value: "unix:///run/docker.sock"}, {Name: "PATH", Value: "/opt/sbx/bin:/usr/bin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := eng.Run(context.Background(), engine.RunSpec{ID: "r1", Workflow: w, Workspace: ws, Home: ws + "/../home"})
	byStep := map[string]contract.ExecRequest{}
	for _, r := range log.reqs {
		byStep[r.StepID] = r
	}
	long, ok := byStep["long"]
	if !ok {
		t.Fatalf("the sbx harness did not run: %q", log.runs)
	}
	for name, want := range map[string]string{"HOME": "/home/sbx-user", "XDG_CONFIG_HOME": "/home/sbx-user/.config",
		"DOCKER_HOST": "unix:///run/docker.sock", "PATH": "/opt/sbx/bin:/usr/bin"} {
		if got, _ := envOf(long, name); got != want {
			t.Errorf("sbx step: %s = %q, want %q", name, got, want)
		}
	}
	for _, r := range log.reqs {
		if _, ok := envOf(r, "GITHUB_TOKEN"); ok {
			t.Errorf("step %s got the runner's GITHUB_TOKEN", r.StepID)
		}
	}
	plain := byStep["plain"]
	if got, _ := envOf(plain, "HOME"); got != ws+"/../home" {
		t.Errorf("plain host step HOME = %q, want the run's own", got)
	}
	for _, name := range []string{"XDG_CONFIG_HOME", "DOCKER_HOST"} {
		if _, ok := envOf(plain, name); ok {
			t.Errorf("plain host step got %s", name)
		}
	}
	for id, want := range map[string]string{"relative": "relative path", "inside": "inside the run's workspace"} {
		if _, ran := byStep[id]; ran {
			t.Errorf("step %s ran", id)
		}
		if st := enginetest.Step(res, id); st.Status != failed || !strings.Contains(st.Error, want) {
			t.Errorf("step %s: %s %q, want a refusal saying %q", id, st.Status, st.Error, want)
		}
	}
	if _, ran := byStep["outside"]; !ran {
		t.Errorf("an absolute sbx outside the workspace was refused: %s", enginetest.Step(res, "outside").Error)
	}
}
