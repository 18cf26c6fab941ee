package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// recExec records the requests it gets and runs them on the real host
// executor (rewriting container paths to the host workspace), so routing can
// be observed without Docker or sbx.
type recExec struct {
	name string
	mu   sync.Mutex
	reqs []contract.ExecRequest
	// closed counts Close calls when used as a session.
	closed int
}

func (e *recExec) Exec(ctx context.Context, req contract.ExecRequest) (contract.ExecResult, error) {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	run := req
	if strings.HasPrefix(run.Dir, "/workspace") || run.Dir == "" {
		run.Dir = req.Workspace + strings.TrimPrefix(req.Dir, "/workspace")
		if err := os.MkdirAll(run.Dir, 0o755); err != nil {
			return contract.ExecResult{ExitCode: -1}, err
		}
	}
	if !slices.ContainsFunc(run.Env, func(v workflows.EnvVar) bool { return v.Name == "PATH" }) {
		run.Env = append(slices.Clone(run.Env), workflows.EnvVar{Name: "PATH", Value: "/usr/bin:/bin"})
	}
	return enginetest.HostExec().Exec(ctx, run)
}

func (e *recExec) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed++
	return nil
}

func (e *recExec) steps() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	for _, r := range e.reqs {
		ids = append(ids, r.StepID)
	}
	return ids
}

func (e *recExec) req(step string) (contract.ExecRequest, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.reqs {
		if r.StepID == step {
			return r, true
		}
	}
	return contract.ExecRequest{}, false
}

// recSandbox opens recExec sessions.
type recSandbox struct {
	session *recExec
	opened  []contract.OpenRequest
	err     error
}

func (s *recSandbox) Open(_ context.Context, req contract.OpenRequest) (contract.Session, error) {
	s.opened = append(s.opened, req)
	if s.err != nil {
		return nil, s.err
	}
	return s.session, nil
}

func envOf(req contract.ExecRequest, name string) (string, bool) {
	for _, v := range req.Env {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

func TestRouting(t *testing.T) {
	t.Parallel()
	hostRec := &recExec{name: "host"}
	containers := &recExec{name: "containers"}
	root := &recSandbox{session: &recExec{name: "root"}}
	sbx := &recSandbox{session: &recExec{name: "sbx"}}
	providers := engine.Providers{Host: hostRec, Containers: containers, RootContainer: root, SBX: sbx, Harness: contract.HarnessFunc(harness.Run)}
	cfg := func(c *engine.Config) { c.Providers = providers }

	t.Run("root container", func(t *testing.T) {
		res, sink, _ := runWorkflow(t, `
container: {image: alpine:3.20}
secrets: [API_KEY]
steps:
  - {id: in-root, run: 'echo "$HOOKRUN_WORKSPACE"', working_dir: sub}
  - {id: own, run: "true", container: {image: golang:1.26}}
`, enginetest.RunOpts{Cfg: cfg, Env: map[string]string{"API_KEY": "k-123456", "PATH": "/host/bin"}})
		if res.Status != succeeded {
			t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
		}
		if got := root.session.steps(); !slices.Equal(got, []string{"in-root"}) {
			t.Errorf("root container ran %v", got)
		}
		if got := containers.steps(); !slices.Equal(got, []string{"own"}) {
			t.Errorf("step containers ran %v", got)
		}
		if got := hostRec.steps(); len(got) != 0 {
			t.Errorf("host ran %v", got)
		}
		req, _ := root.session.req("in-root")
		if req.Dir != "/workspace/sub" {
			t.Errorf("dir in root container = %q, want /workspace/sub", req.Dir)
		}
		if v, _ := envOf(req, "HOOKRUN_WORKSPACE"); v != "/workspace" {
			t.Errorf("HOOKRUN_WORKSPACE = %q", v)
		}
		if v, _ := envOf(req, "HOOKRUN_EVENT_PATH"); v != contract.ContainerEventPath {
			t.Errorf("HOOKRUN_EVENT_PATH = %q, want %s", v, contract.ContainerEventPath)
		}
		own, _ := containers.req("own")
		if req.EventFile == "" || own.EventFile != req.EventFile || root.opened[0].EventFile != req.EventFile {
			t.Errorf("event file: root exec %q, step container %q, root open %q", req.EventFile, own.EventFile, root.opened[0].EventFile)
		}
		if _, ok := envOf(req, "PATH"); ok {
			t.Error("the host PATH was passed into the container")
		}
		if v, _ := envOf(req, "API_KEY"); v != "k-123456" || !slices.Equal(req.SecretNames, []string{"API_KEY"}) {
			t.Errorf("secret env %q names %v", v, req.SecretNames)
		}
		if own, _ := containers.req("own"); own.Container == nil || own.Container.Image != "golang:1.26" {
			t.Errorf("per-step container request = %+v", own.Container)
		}
		if root.session.closed != 1 || len(root.opened) != 1 || root.opened[0].Workflow.Container.Image != "alpine:3.20" {
			t.Errorf("root container opened %d times, closed %d times", len(root.opened), root.session.closed)
		}
	})

	t.Run("sandbox, and an sbx-binary harness on the host", func(t *testing.T) {
		res, sink, dir := runWorkflow(t, `
sandbox: {provider: sbx, agent: claude}
harnesses:
  longlived: {binary: sbx, prefix_args: [exec, my-box, claude], prompt_mode: flag, prompt_flag: -p}
steps:
  - {id: in-box, run: 'echo "$HOOKRUN_SANDBOX"'}
  - {id: agent, action: harness.run, with: {provider: longlived, prompt: "Review ${HOOKRUN_PR_TITLE}"}, continue_on: failed}
`, enginetest.RunOpts{Cfg: cfg})
		if st := enginetest.Step(res, "in-box"); st.Status != succeeded {
			t.Fatalf("in-box = %s: %s\n%s", st.Status, st.Error, sink.All())
		}
		if got := strings.TrimSpace(sink.Text("in-box", "stdout")); got != "hookrun-r1" {
			t.Errorf("HOOKRUN_SANDBOX = %q, want hookrun-r1", got)
		}
		if got := sbx.session.steps(); !slices.Equal(got, []string{"in-box"}) {
			t.Errorf("sandbox ran %v", got)
		}
		inBox, _ := sbx.session.req("in-box")
		if _, ok := envOf(inBox, "PATH"); ok {
			t.Error("the host PATH was passed into the sandbox")
		}
		if v, _ := envOf(inBox, "HOOKRUN_EVENT_PATH"); v != contract.SandboxEventPath(dir) {
			t.Errorf("HOOKRUN_EVENT_PATH in the sandbox = %q, want %q (in the clone's .git, outside the worktree)", v, contract.SandboxEventPath(dir))
		}
		if v, _ := envOf(inBox, "HOOKRUN_WORKSPACE"); v != dir || inBox.Dir != "" {
			t.Errorf("sandbox step: HOOKRUN_WORKSPACE %q dir %q, want the host workspace %q and the sandbox's own dir", v, inBox.Dir, dir)
		}
		if got := sbx.opened[0].Env; slices.ContainsFunc(got, func(v workflows.EnvVar) bool { return v.Name == "PATH" || v.Value == "/workspace" }) {
			t.Errorf("sandbox open env has host PATH or container paths: %v", got)
		}
		req, ok := hostRec.req("agent")
		if !ok {
			t.Fatalf("the sbx harness did not run on the host (host ran %v)", hostRec.steps())
		}
		want := []string{"sbx", "exec", "my-box", "claude", "-p", "Review Add things"}
		if !slices.Equal(req.Argv, want) {
			t.Errorf("argv = %q, want %q", req.Argv, want)
		}
		if req.Dir != dir {
			t.Errorf("dir = %q, want the host workspace %q", req.Dir, dir)
		}
		// The event file: the sandbox's own copy in the sandbox, the host
		// file for the harness on the host; never in the workspace.
		if v, _ := envOf(inBox, "HOOKRUN_EVENT_PATH"); v != contract.SandboxEventPath(dir) {
			t.Errorf("HOOKRUN_EVENT_PATH in the sandbox = %q, want %s", v, contract.SandboxEventPath(dir))
		}
		if v, _ := envOf(req, "HOOKRUN_EVENT_PATH"); v == "" || v != req.EventFile || v != sbx.opened[0].EventFile || strings.HasPrefix(v, dir) {
			t.Errorf("HOOKRUN_EVENT_PATH on the host = %q, event file %q, sandbox opened with %q; want one host file outside %s",
				v, req.EventFile, sbx.opened[0].EventFile, dir)
		}
		if sbx.session.closed != 1 {
			t.Errorf("sandbox closed %d times", sbx.session.closed)
		}
	})

	t.Run("an sbx binary by path is not wrapped in sbx exec either", func(t *testing.T) {
		res, sink, _ := runWorkflow(t, `
sandbox: {provider: sbx, agent: claude}
harnesses:
  bypath: {binary: /usr/local/bin/sbx, prefix_args: [exec, my-box, claude], prompt_mode: flag, prompt_flag: -p}
steps:
  - {id: agent2, action: harness.run, with: {provider: bypath, prompt: "hi"}, continue_on: failed}
`, enginetest.RunOpts{Cfg: cfg})
		if st := enginetest.Step(res, "agent2"); st.Status == "" {
			t.Fatalf("no state for agent2\n%s", sink.All())
		}
		if slices.Contains(sbx.session.steps(), "agent2") {
			t.Fatalf("the harness was wrapped in the sandbox: %v", sbx.session.steps())
		}
		req, ok := hostRec.req("agent2")
		if !ok || !slices.Equal(req.Argv, []string{"/usr/local/bin/sbx", "exec", "my-box", "claude", "-p", "hi"}) {
			t.Fatalf("host ran %v (argv %q), want the sbx binary as written", hostRec.steps(), req.Argv)
		}
	})

	t.Run("missing providers fail clearly", func(t *testing.T) {
		bare := func(c *engine.Config) { c.Providers = engine.Providers{Host: enginetest.HostExec()} }
		res, _, _ := runWorkflow(t, `
steps:
  - {id: own, run: "true", container: {image: golang:1.26}}
  - {id: agent, action: harness.run, with: {provider: claude, prompt: hi}}
`, enginetest.RunOpts{Cfg: bare})
		if e := enginetest.Step(res, "own").Error; !strings.Contains(e, "no container executor configured") {
			t.Errorf("own container error = %q", e)
		}
		if e := enginetest.Step(res, "agent").Error; !strings.Contains(e, "no harness runner configured") {
			t.Errorf("harness error = %q", e)
		}
		res, _, _ = runWorkflow(t, `
sandbox: {provider: sbx, agent: claude}
steps:
  - {id: a, run: "true"}
`, enginetest.RunOpts{Cfg: bare})
		if res.Status != failed || !strings.Contains(res.Error, `no "sbx" sandbox provider configured`) {
			t.Errorf("sandbox without provider: %s %q", res.Status, res.Error)
		}
	})

	t.Run("session is closed after failure and cancel", func(t *testing.T) {
		s := &recSandbox{session: &recExec{name: "root"}}
		p := providers
		p.RootContainer = s
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(200*time.Millisecond, func() { cancel(contract.ErrCancelled) })
		res, _, _ := runWorkflow(t, `
container: {image: alpine:3.20}
steps:
  - {id: a, run: "sleep 5"}
`, enginetest.RunOpts{Ctx: ctx, Cfg: func(c *engine.Config) { c.Providers = p }})
		if res.Status != cancelled || s.session.closed != 1 {
			t.Errorf("status %s, closed %d times", res.Status, s.session.closed)
		}
		res, _, _ = runWorkflow(t, `
container: {image: alpine:3.20}
steps:
  - {id: a, run: "exit 1"}
`, enginetest.RunOpts{Cfg: func(c *engine.Config) { c.Providers = p }})
		if res.Status != failed || s.session.closed != 2 {
			t.Errorf("status %s, closed %d times", res.Status, s.session.closed)
		}
	})
}

func TestHarnessStepsWithFallbackAndUntrustedPrompt(t *testing.T) {
	t.Parallel()
	ev := samplePR()
	ev.PullRequest.Title = "$(touch /tmp/pwned-harness) `id`"
	res, sink, _ := runWorkflow(t, `
harnesses:
  broken: {binary: sh, prefix_args: [-c, "echo partial answer; exit 1", sh]}
  echoer: {binary: printf, prefix_args: ["%s\n"]}
steps:
  - id: review
    action: harness.run
    output: REVIEW
    with:
      provider: broken
      prompt: "Review: ${HOOKRUN_PR_TITLE}"
      fallback: [{provider: echoer}]
  - {id: after, run: 'printf "%s\n" "$REVIEW"', depends: [review]}
`, enginetest.RunOpts{Event: ev, Cfg: func(c *engine.Config) { c.Providers.Harness = contract.HarnessFunc(harness.Run) }})
	if res.Status != succeeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	want := "Review: " + ev.PullRequest.Title
	if got := strings.TrimSpace(sink.Text("after", "stdout")); got != want {
		t.Errorf("output passed on = %q, want %q", got, want)
	}
}

// TestShellHarnessTakesUntrustedTitleFromEnv: a custom harness written as
// Dagu's docs write `shell` (sh -c) gets no ${VAR} substitution from
// hookrun; the shell reads the PR title from the step's environment, so a
// hostile title prints literally and nothing in it runs. Workflow env and
// earlier outputs reach the script the same way.
func TestShellHarnessTakesUntrustedTitleFromEnv(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "pwned")
	ev := samplePR()
	ev.PullRequest.Title = "$(echo PWNED) `id` $(touch " + marker + ") \"; touch " + marker + "; echo \""
	res, sink, _ := runWorkflow(t, `
env:
  - GREETING: hello
harnesses:
  shell:
    binary: sh
    prefix_args:
      - -c
    prompt_mode: arg
steps:
  - {id: first, run: 'echo from-first', output: FIRST}
  - id: read_file
    depends: [first]
    action: harness.run
    with:
      provider: shell
      prompt: |
        echo "title: ${HOOKRUN_PR_TITLE}"
        echo "$GREETING ${FIRST}"
`, enginetest.RunOpts{Event: ev, Cfg: func(c *engine.Config) { c.Providers.Harness = contract.HarnessFunc(harness.Run) }})
	if res.Status != succeeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: the title was executed", marker)
	}
	want := "title: " + ev.PullRequest.Title + "\nhello from-first\n"
	if got := sink.Text("read_file", "stdout"); got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

// Every place a step runs is handed the run's results folder (the host
// path, ExecRequest.Results and OpenRequest.Results of the root container
// and the sandbox, which mount it or copy it out), and the step's
// HOOKRUN_RESULTS names it as that place sees it: the host path on the
// host (also for an sbx harness, which runs there), /hookrun/results in a
// container, the folder in the clone's .git in the sandbox.
func TestResultsFolderInEveryPlace(t *testing.T) {
	t.Parallel()
	type want struct{ step, env string }
	cases := []struct {
		name, yaml string
		open       bool // the workflow opens a root container or a sandbox
		want       func(ws string) []want
	}{
		{"host", `
steps:
  - {id: plain, run: "true"}
`, false, func(string) []want { return []want{{"plain", ""}} }},
		{"root container and a step's own", `
container: {image: alpine:3.20}
steps:
  - {id: in-root, run: "true"}
  - {id: own, run: "true", container: {image: golang:1.26}}
`, true, func(string) []want {
			return []want{{"in-root", contract.ContainerResultsPath}, {"own", contract.ContainerResultsPath}}
		}},
		{"sandbox, and an sbx harness on the host", `
sandbox: {provider: sbx, agent: claude}
harnesses:
  longlived: {binary: sbx, prefix_args: [exec, my-box, claude], prompt_mode: flag, prompt_flag: -p}
steps:
  - {id: in-box, run: "true"}
  - {id: agent, action: harness.run, with: {provider: longlived, prompt: hi}, continue_on: failed}
`, true, func(ws string) []want { return []want{{"in-box", contract.SandboxResultsPath(ws)}, {"agent", ""}} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			host, containers := &recExec{name: "host"}, &recExec{name: "containers"}
			root, sbx := &recSandbox{session: &recExec{name: "root"}}, &recSandbox{session: &recExec{name: "sbx"}}
			providers := engine.Providers{Host: host, Containers: containers, RootContainer: root, SBX: sbx, Harness: contract.HarnessFunc(harness.Run)}
			folder := filepath.Join(t.TempDir(), "results")
			res, sink, ws := runWorkflow(t, c.yaml, enginetest.RunOpts{Results: folder, Cfg: func(cfg *engine.Config) { cfg.Providers = providers }})
			if res.Status == failed || res.Status == cancelled {
				t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
			}
			opened := append(slices.Clone(root.opened), sbx.opened...)
			var given []string
			for _, o := range opened {
				given = append(given, o.Results)
			}
			if c.open && !slices.Equal(given, []string{folder}) {
				t.Errorf("sessions opened with the results folders %q, want one given %s", given, folder)
			}
			for _, w := range c.want(ws) {
				if w.env == "" {
					w.env = folder
				}
				var req contract.ExecRequest
				ok := false
				for _, e := range []*recExec{host, containers, root.session, sbx.session} {
					if r, found := e.req(w.step); found {
						req, ok = r, true
					}
				}
				if !ok {
					t.Errorf("step %s did not run\n%s", w.step, sink.All())
					continue
				}
				if v, _ := envOf(req, "HOOKRUN_RESULTS"); v != w.env {
					t.Errorf("step %s: HOOKRUN_RESULTS = %q, want %q", w.step, v, w.env)
				}
				if req.Results != folder {
					t.Errorf("step %s: ExecRequest.Results = %q, want the host folder %s", w.step, req.Results, folder)
				}
			}
		})
	}
}
