package enginetest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/workflows"
)

// MemSink is a LogSink that keeps every line in memory.
type MemSink struct {
	mu   sync.Mutex
	logs map[string]*bytes.Buffer // "run/step/stream"
}

var _ contract.LogSink = (*MemSink)(nil)

// NewMemSink returns an empty sink.
func NewMemSink() *MemSink { return &MemSink{logs: map[string]*bytes.Buffer{}} }

// Writer is contract.LogSink's.
func (s *MemSink) Writer(runID, stepID, stream string) io.WriteCloser {
	return &memWriter{s: s, key: runID + "/" + stepID + "/" + stream}
}

type memWriter struct {
	s   *MemSink
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

// Text returns what one step wrote to one stream (any run).
func (s *MemSink) Text(stepID, stream string) string {
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

// All returns every line of every stream, keys sorted.
func (s *MemSink) All() string {
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

// Reporter records every report it receives. It is the engine's own
// contract interface, not a forge: the forge adapters have their own tests.
type Reporter struct {
	Ref  contract.ReportRef // what Report answers
	Fail error              // when set, what Report fails with

	mu      sync.Mutex
	reports []contract.RunReport
	times   []time.Time
}

var _ contract.Reporter = (*Reporter)(nil)

// Report records a copy of rep and when it came.
func (r *Reporter) Report(_ context.Context, rep *contract.RunReport) (contract.ReportRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := *rep
	cp.Steps = append([]workflows.StepState(nil), rep.Steps...)
	r.reports = append(r.reports, cp)
	r.times = append(r.times, time.Now())
	if r.Fail != nil {
		return contract.ReportRef{}, r.Fail
	}
	return r.Ref, nil
}

// All returns the reports received so far.
func (r *Reporter) All() []contract.RunReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]contract.RunReport(nil), r.reports...)
}

// Times returns when each report came.
func (r *Reporter) Times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}

// Parse parses a workflow from YAML text or fails the test.
func Parse(t testing.TB, yaml string) *workflows.Workflow {
	t.Helper()
	w, err := workflows.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("parsing workflow: %v\n%s", err, yaml)
	}
	return w
}

// HostExec is the real host executor with a short grace period.
func HostExec() contract.Executor { return host.New(host.Config{Grace: 300 * time.Millisecond}) }

// Env is a fake runner environment for LookupEnv.
func Env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// RunnerEnv is the runner environment of most tests: a PATH, a HOME, and
// two values that must never reach a step: a forge token under tokenVar
// and an unrelated secret.
func RunnerEnv(tokenVar string) map[string]string {
	return map[string]string{
		"PATH":             "/usr/local/bin:/usr/bin:/bin",
		"HOME":             "/nonexistent",
		tokenVar:           "ghp_runner_token_must_not_leak",
		"UNRELATED_SECRET": "runner-only",
	}
}

// PullRequest is a sample event: pull request #7 of octo/demo on forge,
// cloned from cloneURL, opened by alice.
func PullRequest(forge workflows.Forge, cloneURL string) *workflows.Event {
	return &workflows.Event{
		Forge: forge, Kind: workflows.KindPullRequest, Action: "opened", DeliveryID: "d-1",
		Repo: "octo/demo", CloneURL: cloneURL, Sender: "alice",
		PullRequest: &workflows.PullRequest{Number: 7, Title: "Add things", HeadSHA: "abc123", HeadRef: "feature", BaseRef: "main"},
		Raw:         []byte(`{"action":"opened","number":7}`),
	}
}

// RunOpts are Run's options; the zero value runs an empty event with an
// empty runner environment and no reporter in a fresh temporary workspace.
type RunOpts struct {
	Ctx      context.Context
	Env      map[string]string // the runner's environment (Env)
	Event    *workflows.Event
	Reporter contract.Reporter
	Cfg      func(*engine.Config)
	Dir      string             // workspace; default a fresh temp dir
	Params   []workflows.EnvVar // RunSpec.Params
	OnEnd    func()             // RunSpec.OnEnd
	Results  string             // RunSpec.Results; default a folder of the run's own
}

// Run runs yaml once as run r1 with the real host executor and returns the
// result, the sink of its logs and its workspace.
func Run(t *testing.T, yaml string, o RunOpts) (*engine.Result, *MemSink, string) {
	t.Helper()
	w := Parse(t, yaml)
	sink := NewMemSink()
	if o.Ctx == nil {
		o.Ctx = context.Background()
	}
	cfg := engine.Config{
		Providers: engine.Providers{Host: HostExec()},
		Logs:      sink,
		Reporter:  o.Reporter,
		LookupEnv: Env(o.Env),
	}
	if o.Cfg != nil {
		o.Cfg(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	res := eng.Run(o.Ctx, engine.RunSpec{ID: "r1", Attempt: 1, Workflow: w, Event: o.Event, Workspace: dir, Params: o.Params, OnEnd: o.OnEnd, Results: o.Results})
	return res, sink, dir
}

// States maps step id to status.
func States(res *engine.Result) map[string]workflows.Status {
	m := map[string]workflows.Status{}
	for _, s := range res.Steps {
		m[s.ID] = s.Status
	}
	return m
}

// Step returns the state of step id, zero if the run has none.
func Step(res *engine.Result, id string) workflows.StepState {
	for _, s := range res.Steps {
		if s.ID == id {
			return s
		}
	}
	return workflows.StepState{}
}

// HangingStart is a forge API that accepts the start report and never
// answers it: Report blocks until its context ends. Other phases answer at
// once, with the comment id the start report would have created (9).
type HangingStart struct {
	mu     sync.Mutex
	phases []contract.Phase
	refs   []contract.ReportRef // the Ref each report carried
	times  []time.Time          // when each report was called
	ended  time.Time            // when the start report gave up
}

var _ contract.Reporter = (*HangingStart)(nil)

// Report records the call; for the start report it then waits for ctx.
func (h *HangingStart) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	h.mu.Lock()
	h.phases = append(h.phases, r.Phase)
	h.refs = append(h.refs, r.Ref)
	h.times = append(h.times, time.Now())
	h.mu.Unlock()
	if r.Phase == contract.PhaseStart {
		<-ctx.Done()
		h.mu.Lock()
		h.ended = time.Now()
		h.mu.Unlock()
		return contract.ReportRef{CommentID: 9}, ctx.Err()
	}
	return r.Ref, nil
}

// Calls returns the phase, the Ref carried and the time of every call so
// far, and when the start report gave up (zero while it waits).
func (h *HangingStart) Calls() (phases []contract.Phase, refs []contract.ReportRef, times []time.Time, ended time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]contract.Phase(nil), h.phases...), append([]contract.ReportRef(nil), h.refs...),
		append([]time.Time(nil), h.times...), h.ended
}

// ReadFile returns the text of dir/name, "" when it does not exist (a step
// that did not run did not write it).
func ReadFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}
