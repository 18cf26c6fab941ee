package runner_test

import (
	"bytes"
	"context"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// memSink is a LogSink that keeps every line in memory.
type memSink struct {
	mu   sync.Mutex
	logs map[string]*bytes.Buffer // "run/step/stream"
}

func newMemSink() *memSink { return &memSink{logs: map[string]*bytes.Buffer{}} }

func (s *memSink) Writer(runID, stepID, stream string) io.WriteCloser {
	return &memWriter{s: s, key: runID + "/" + stepID + "/" + stream}
}

type memWriter struct {
	s   *memSink
	key string
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	b := w.s.logs[w.key]
	if b == nil {
		b = &bytes.Buffer{}
		w.s.logs[w.key] = b
	}
	return b.Write(p)
}

func (w *memWriter) Close() error { return nil }

// text returns what one step wrote to one stream (any run).
func (s *memSink) text(stepID, stream string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out strings.Builder
	for k, b := range s.logs {
		if strings.HasSuffix(k, "/"+stepID+"/"+stream) {
			out.Write(b.Bytes())
		}
	}
	return out.String()
}

// all returns every line of every stream, keys sorted.
func (s *memSink) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.logs))
	for k := range s.logs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		out.WriteString("== " + k + "\n")
		out.Write(s.logs[k].Bytes())
	}
	return out.String()
}

// parse parses a workflow from YAML text or fails the test.
func parse(t testing.TB, yaml string) *workflows.Workflow {
	t.Helper()
	w, err := workflows.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("parsing workflow: %v\n%s", err, yaml)
	}
	return w
}

// hostExec is the real host executor with a short grace period.
func hostExec() contract.Executor { return host.New(host.Config{Grace: 300 * time.Millisecond}) }

// env is a fake runner environment for LookupEnv.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// testEnv is the runner environment of most tests: a PATH and a token that
// must never reach a step.
var testEnv = map[string]string{
	"PATH":             "/usr/local/bin:/usr/bin:/bin",
	"HOME":             "/nonexistent",
	"GITHUB_TOKEN":     "ghp_runner_token_must_not_leak",
	"UNRELATED_SECRET": "runner-only",
}

// samplePR is a pull request event.
func samplePR() *workflows.Event {
	return &workflows.Event{
		Forge: workflows.GitHub, Kind: workflows.KindPullRequest, Action: "opened", DeliveryID: "d-1",
		Repo: "octo/demo", CloneURL: "https://github.com/octo/demo.git", Sender: "alice",
		PullRequest: &workflows.PullRequest{Number: 7, Title: "Add things", HeadSHA: "abc123", HeadRef: "feature", BaseRef: "main"},
		Raw:         []byte(`{"action":"opened","number":7}`),
	}
}

type runOpts struct {
	ctx      context.Context
	env      map[string]string
	event    *workflows.Event
	reporter contract.Reporter
	cfg      func(*runner.EngineConfig)
	dir      string             // workspace; default a fresh temp dir
	params   []workflows.EnvVar // RunSpec.Params
}

// runWorkflow runs yaml once with the real host executor in a temp
// workspace.
func runWorkflow(t *testing.T, yaml string, o runOpts) (*runner.Result, *memSink, string) {
	t.Helper()
	w := parse(t, yaml)
	sink := newMemSink()
	if o.env == nil {
		o.env = testEnv
	}
	if o.event == nil {
		o.event = samplePR()
	}
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	cfg := runner.EngineConfig{
		Providers: runner.Providers{Host: hostExec()},
		Logs:      sink,
		Reporter:  o.reporter,
		LookupEnv: env(o.env),
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	eng, err := runner.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	res := eng.Run(o.ctx, runner.RunSpec{ID: "r1", Attempt: 1, Workflow: w, Event: o.event, Workspace: dir, Params: o.params})
	return res, sink, dir
}

// states maps step id to status.
func states(res *runner.Result) map[string]workflows.Status {
	m := map[string]workflows.Status{}
	for _, s := range res.Steps {
		m[s.ID] = s.Status
	}
	return m
}

func step(res *runner.Result, id string) workflows.StepState {
	for _, s := range res.Steps {
		if s.ID == id {
			return s
		}
	}
	return workflows.StepState{}
}
