package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

const (
	succeeded = workflows.StatusSucceeded
	failed    = workflows.StatusFailed
	skipped   = workflows.StatusSkipped
	cancelled = workflows.StatusCancelled
)

func TestDAGSemantics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		yaml       string
		wantStatus workflows.Status
		wantSteps  map[string]workflows.Status
		wantAtt    map[string]int // attempts
		wantExit   map[string]int
		wantOrder  string // content of the file "order" in the workspace
		wantErr    string // substring of Result.Error
		check      func(t *testing.T, res *engine.Result, sink *enginetest.MemSink, dir string)
	}{
		{
			name: "graph order by depends",
			yaml: `
steps:
  - {id: d, run: "echo d >> order", depends: [b, c]}
  - {id: a, run: "sleep 0.2; echo a >> order"}
  - {id: b, run: "echo b >> order", depends: [a]}
  - {id: c, run: "sleep 0.1; echo c >> order", depends: [a]}
`,
			wantStatus: succeeded,
			wantSteps:  map[string]workflows.Status{"a": succeeded, "b": succeeded, "c": succeeded, "d": succeeded},
			wantOrder:  "a\nb\nc\nd\n",
		},
		{
			name: "chain runs in file order one at a time",
			yaml: `
type: chain
steps:
  - {id: one, run: "sleep 0.2; echo 1 >> order"}
  - {id: two, run: "sleep 0.1; echo 2 >> order"}
  - {id: three, run: "echo 3 >> order"}
`,
			wantStatus: succeeded,
			wantOrder:  "1\n2\n3\n",
		},
		{
			name: "failure skips dependents transitively, independent steps still run",
			yaml: `
steps:
  - {id: a, run: "exit 3"}
  - {id: b, run: "echo b >> order", depends: [a]}
  - {id: c, run: "echo c >> order", depends: [b]}
  - {id: d, run: "echo d >> order"}
`,
			wantStatus: failed,
			wantSteps:  map[string]workflows.Status{"a": failed, "b": skipped, "c": skipped, "d": succeeded},
			wantExit:   map[string]int{"a": 3},
			wantOrder:  "d\n",
			wantErr:    "step a failed: exit status 3",
		},
		{
			name: "continue_on failed lets dependents run and the run partially succeed",
			yaml: `
steps:
  - {id: lint, run: "exit 1", continue_on: failed}
  - {id: review, run: "echo review >> order", depends: [lint]}
`,
			wantStatus: workflows.StatusPartiallySucceeded,
			wantSteps:  map[string]workflows.Status{"lint": failed, "review": succeeded},
			wantOrder:  "review\n",
		},
		{
			name: "continue_on skipped lets dependents of a skipped step run",
			yaml: `
steps:
  - {id: a, run: "exit 1"}
  - {id: b, run: "echo b >> order", depends: [a], continue_on: skipped}
  - {id: c, run: "echo c >> order", depends: [b]}
  - {id: e, run: "echo e >> order", depends: [c]}
`,
			wantStatus: failed,
			wantSteps:  map[string]workflows.Status{"a": failed, "b": skipped, "c": succeeded, "e": succeeded},
			wantOrder:  "c\ne\n",
		},
		{
			name: "retry policy attempt counts",
			yaml: `
steps:
  - id: always
    run: "echo x >> always; exit 2"
    retry_policy: {limit: 2, interval: 10ms}
  - id: other-code
    run: "echo x >> other; exit 2"
    retry_policy: {limit: 3, interval: 10ms, exit_codes: [5]}
  - id: second-time
    run: 'n=$(cat cnt 2>/dev/null || echo 0); n=$((n+1)); echo $n > cnt; [ "$n" -ge 2 ]'
    retry_policy: {limit: 3, interval: 10ms, backoff: 2}
  - id: backoff
    run: "exit 1"
    retry_policy: {limit: 4, interval: 10ms, backoff: 3, max_interval: 50ms}
`,
			wantStatus: failed,
			wantSteps:  map[string]workflows.Status{"always": failed, "other-code": failed, "second-time": succeeded, "backoff": failed},
			wantAtt:    map[string]int{"always": 3, "other-code": 1, "second-time": 2, "backoff": 5},
			wantExit:   map[string]int{"always": 2, "other-code": 2, "second-time": 0},
			check: func(t *testing.T, res *engine.Result, sink *enginetest.MemSink, dir string) {
				if got := strings.Count(enginetest.ReadFile(t, dir, "always"), "x"); got != 3 {
					t.Errorf("step always ran %d times, want 3", got)
				}
				if got := strings.Count(enginetest.ReadFile(t, dir, "other"), "x"); got != 1 {
					t.Errorf("step other-code ran %d times, want 1", got)
				}
				if !strings.Contains(sink.Text("always", "system"), "attempt 3 of 3") {
					t.Errorf("system log lacks the retry line:\n%s", sink.All())
				}
				// Intervals: 10ms, ×3 = 30ms, ×3 = 90ms capped at 50ms, 50ms.
				var waits []string
				for _, line := range strings.Split(sink.Text("backoff", "system"), "\n") {
					if _, after, ok := strings.Cut(line, " in "); ok && strings.HasPrefix(line, "attempt ") {
						waits = append(waits, after)
					}
				}
				if strings.Join(waits, ",") != "10ms,30ms,50ms,50ms" {
					t.Errorf("retry waits = %v, want 10ms,30ms,50ms,50ms", waits)
				}
			},
		},
		{
			name: "step timeout fails the step and skips dependents",
			yaml: `
steps:
  - {id: slow, run: "sleep 5", timeout: 300ms}
  - {id: after, run: "echo after >> order", depends: [slow]}
  - {id: other, run: "true"}
`,
			wantStatus: failed,
			wantSteps:  map[string]workflows.Status{"slow": failed, "after": skipped, "other": succeeded},
			wantErr:    "step slow failed: timed out after 300ms",
			check: func(t *testing.T, res *engine.Result, _ *enginetest.MemSink, _ string) {
				if d := res.Duration(); d > 3*time.Second {
					t.Errorf("run took %s, the step timeout did not stop it", d)
				}
			},
		},
		{
			name: "run timeout stops everything and runs the failure handler",
			yaml: `
timeout: 400ms
steps:
  - {id: slow, run: "sleep 5"}
  - {id: after, run: "echo after >> order", depends: [slow]}
handler_on:
  failure: {run: 'echo "failure:$HOOKRUN_RUN_STATUS" >> order'}
`,
			wantStatus: failed,
			wantSteps:  map[string]workflows.Status{"slow": failed, "after": skipped, "on_failure": succeeded},
			wantErr:    "run timed out after 400ms",
			wantOrder:  "failure:failed\n",
			check: func(t *testing.T, res *engine.Result, _ *enginetest.MemSink, _ string) {
				if d := res.Duration(); d > 3*time.Second {
					t.Errorf("run took %s, the run timeout did not stop it", d)
				}
			},
		},
		{
			name: "success handler then exit handler with HOOKRUN_RUN_STATUS",
			yaml: `
steps:
  - {id: a, run: "echo a >> order"}
handler_on:
  exit: {run: 'echo "exit:$HOOKRUN_RUN_STATUS" >> order'}
  failure: {run: 'echo "failure:$HOOKRUN_RUN_STATUS" >> order'}
  success: {run: 'echo "success:$HOOKRUN_RUN_STATUS" >> order'}
`,
			wantStatus: succeeded,
			wantSteps:  map[string]workflows.Status{"a": succeeded, "on_success": succeeded, "on_exit": succeeded},
			wantOrder:  "a\nsuccess:succeeded\nexit:succeeded\n",
		},
		{
			name: "failure handler then exit handler",
			yaml: `
steps:
  - {id: a, run: "exit 1"}
handler_on:
  success: {run: 'echo "success:$HOOKRUN_RUN_STATUS" >> order'}
  failure: {run: 'echo "failure:$HOOKRUN_RUN_STATUS" >> order'}
  exit: {id: cleanup, run: 'echo "exit:$HOOKRUN_RUN_STATUS" >> order'}
`,
			wantStatus: failed,
			wantSteps:  map[string]workflows.Status{"a": failed, "on_failure": succeeded, "cleanup": succeeded},
			wantOrder:  "failure:failed\nexit:failed\n",
		},
		{
			name: "outputs pass forward, trimmed, and env may reference them",
			yaml: `
env:
  - GREETING_PREFIX: hi
steps:
  - {id: a, run: "printf '  hello world \n\n'", output: GREETING}
  - id: b
    depends: [a]
    env: [{MSG: "${GREETING_PREFIX}, ${GREETING}!"}]
    run: 'printf "%s|%s\n" "$GREETING" "$MSG" >> order'
  - {id: c, run: 'echo "c sees [$GREETING]" >> order'}
`,
			wantStatus: succeeded,
			check: func(t *testing.T, res *engine.Result, _ *enginetest.MemSink, dir string) {
				order := enginetest.ReadFile(t, dir, "order")
				if !strings.Contains(order, "hello world|hi, hello world!\n") {
					t.Errorf("b did not see the output: %q", order)
				}
				if len(res.Outputs) != 1 || res.Outputs[0] != (workflows.EnvVar{Name: "GREETING", Value: "hello world"}) {
					t.Errorf("outputs = %+v", res.Outputs)
				}
			},
		},
		{
			name: "params are env, may reference workflow env, and step env overrides them",
			yaml: `
env:
  - BASE: /srv
params: "TARGET=staging DIR=${BASE}/app"
steps:
  - {id: a, run: 'printf "%s %s\n" "$TARGET" "$DIR" >> order'}
  - {id: b, env: [{TARGET: prod}], run: 'printf "%s\n" "$TARGET" >> order', depends: [a]}
`,
			wantStatus: succeeded,
			wantOrder:  "staging /srv/app\nprod\n",
		},
		{
			name: "a workflow cannot override HOOKRUN_ variables",
			yaml: `
env:
  - HOOKRUN_PR_NUMBER: "999"
steps:
  - {id: a, run: 'printf "%s\n" "$HOOKRUN_PR_NUMBER" >> order'}
`,
			wantStatus: succeeded,
			wantOrder:  "7\n",
		},
		{
			name: "the raw payload is at HOOKRUN_EVENT_PATH",
			yaml: `
steps:
  - {id: a, run: 'cat "$HOOKRUN_EVENT_PATH" > order; case "$HOOKRUN_EVENT_PATH" in "$HOOKRUN_WORKSPACE"/*|"") exit 1;; esac; test "$(ls -A)" = order || { ls -A; exit 1; }'}
`,
			wantStatus: succeeded,
			wantOrder:  `{"action":"opened","number":7}`,
		},
		{
			name: "unknown variables in env stay as written",
			yaml: `
env:
  - A: "${NOPE}-$HOME"
steps:
  - {id: a, run: 'printf "%s\n" "$A" >> order'}
`,
			wantStatus: succeeded,
			wantOrder:  "${NOPE}-$HOME\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, sink, dir := runWorkflow(t, tt.yaml, enginetest.RunOpts{})
			if res.Status != tt.wantStatus {
				t.Errorf("status = %s, want %s (error %q)\n%s", res.Status, tt.wantStatus, res.Error, sink.All())
			}
			got := enginetest.States(res)
			for id, want := range tt.wantSteps {
				if got[id] != want {
					t.Errorf("step %s = %s, want %s", id, got[id], want)
				}
			}
			for id, want := range tt.wantAtt {
				if a := enginetest.Step(res, id).Attempts; a != want {
					t.Errorf("step %s attempts = %d, want %d", id, a, want)
				}
			}
			for id, want := range tt.wantExit {
				if c := enginetest.Step(res, id).ExitCode; c == nil || *c != want {
					t.Errorf("step %s exit code = %v, want %d", id, c, want)
				}
			}
			if tt.wantOrder != "" {
				if o := enginetest.ReadFile(t, dir, "order"); o != tt.wantOrder {
					t.Errorf("order = %q, want %q", o, tt.wantOrder)
				}
			}
			if !strings.Contains(res.Error, tt.wantErr) || (tt.wantErr == "" && tt.wantStatus == succeeded && res.Error != "") {
				t.Errorf("error = %q, want it to contain %q", res.Error, tt.wantErr)
			}
			for _, s := range res.Steps {
				if !s.Status.Terminal() {
					t.Errorf("step %s left in state %s", s.ID, s.Status)
				}
			}
			if tt.check != nil {
				tt.check(t, res, sink, dir)
			}
		})
	}
}

// maxOverlap is the largest number of steps whose [StartedAt, FinishedAt]
// intervals overlap, as recorded by the engine.
func maxOverlap(steps []workflows.StepState) int {
	peak := 0
	for _, s := range steps {
		if s.StartedAt == nil {
			continue
		}
		n := 0
		for _, o := range steps {
			if o.StartedAt != nil && o.FinishedAt != nil && !o.StartedAt.After(*s.StartedAt) && o.FinishedAt.After(*s.StartedAt) {
				n++
			}
		}
		peak = max(peak, n)
	}
	return peak
}

// Not parallel with the other tests: it measures wall time, which the
// issue bounds (two 1 s sleeps in parallel finish in under 1.6 s). On a
// loaded machine a measurement may be retried twice; every attempt must
// still show both steps running at the same time.
func TestParallelSteps(t *testing.T) {
	var elapsed time.Duration
	for attempt := 1; attempt <= 3; attempt++ {
		start := time.Now()
		res, sink, _ := runWorkflow(t, `
steps:
  - {id: a, run: "sleep 1"}
  - {id: b, run: "sleep 1"}
`, enginetest.RunOpts{})
		elapsed = time.Since(start)
		if res.Status != succeeded {
			t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
		}
		if n := maxOverlap(res.Steps); n != 2 {
			t.Fatalf("at most %d steps ran at once, want 2", n)
		}
		if elapsed < 1600*time.Millisecond {
			return
		}
		t.Logf("attempt %d: two parallel 1 s sleeps took %s", attempt, elapsed)
	}
	t.Errorf("two parallel 1 s sleeps took %s, want < 1.6 s", elapsed)
}

func TestMaxActiveSteps(t *testing.T) {
	t.Parallel()
	res, sink, _ := runWorkflow(t, `
max_active_steps: 2
steps:
  - {id: a, run: "sleep 0.3"}
  - {id: b, run: "sleep 0.3"}
  - {id: c, run: "sleep 0.3"}
  - {id: d, run: "sleep 0.3"}
  - {id: e, run: "sleep 0.3"}
`, enginetest.RunOpts{})
	if res.Status != succeeded {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, sink.All())
	}
	if n := maxOverlap(res.Steps); n != 2 {
		t.Errorf("%d steps ran at once, max_active_steps is 2", n)
	}
	if d := res.Duration(); d < 850*time.Millisecond {
		t.Errorf("5 steps of 0.3 s two at a time took %s, want >= 0.9 s", d)
	}
}

func TestCancelStopsEverythingAndRunsCancelHandlers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(contract.ErrCancelled) })
	start := time.Now()
	res, sink, dir := runWorkflow(t, `
steps:
  - {id: slow, run: "echo started >> order; sleep 5; echo not-reached >> order"}
  - {id: after, run: "echo after >> order", depends: [slow]}
handler_on:
  cancel: {run: 'echo "cancel:$HOOKRUN_RUN_STATUS" >> order'}
  exit: {run: 'echo "exit:$HOOKRUN_RUN_STATUS" >> order'}
`, enginetest.RunOpts{Ctx: ctx})
	if res.Status != cancelled {
		t.Fatalf("status %s, want cancelled: %s\n%s", res.Status, res.Error, sink.All())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %s", d)
	}
	want := map[string]workflows.Status{"slow": cancelled, "after": cancelled, "on_cancel": succeeded, "on_exit": succeeded}
	for id, w := range want {
		if got := enginetest.States(res)[id]; got != w {
			t.Errorf("step %s = %s, want %s", id, got, w)
		}
	}
	if o := enginetest.ReadFile(t, dir, "order"); o != "started\ncancel:cancelled\nexit:cancelled\n" {
		t.Errorf("order = %q", o)
	}
}

func TestAbandonedRunRunsNoHandler(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(contract.ErrAbandoned) })
	res, _, dir := runWorkflow(t, `
steps:
  - {id: slow, run: "sleep 5"}
handler_on:
  exit: {run: 'echo exit >> order'}
`, enginetest.RunOpts{Ctx: ctx})
	if !res.Abandoned || res.Status != cancelled {
		t.Errorf("abandoned = %v, status %s", res.Abandoned, res.Status)
	}
	if o := enginetest.ReadFile(t, dir, "order"); o != "" {
		t.Errorf("a handler ran for an abandoned run: %q", o)
	}
}

// A run whose workflow sets no timeout is bounded by the engine's
// DefaultTimeout; a workflow's own timeout, longer than the default, wins.
func TestDefaultRunTimeout(t *testing.T) {
	t.Parallel()
	withDefault := func(c *engine.Config) { c.DefaultTimeout = 400 * time.Millisecond }
	t.Run("no timeout of its own", func(t *testing.T) {
		t.Parallel()
		res, sink, _ := runWorkflow(t, `
steps:
  - {id: slow, run: "sleep 10"}
`, enginetest.RunOpts{Cfg: withDefault})
		if res.Status != failed || !strings.Contains(res.Error, "run timed out after 400ms") {
			t.Fatalf("status %s (%s), want failed: run timed out after 400ms\n%s", res.Status, res.Error, sink.All())
		}
		if d := res.Duration(); d > 5*time.Second {
			t.Errorf("run took %s, the default timeout did not stop it", d)
		}
		if !res.TimedOut {
			t.Error("a run stopped at its timeout is not marked timed out")
		}
	})
	t.Run("its own timeout wins", func(t *testing.T) {
		t.Parallel()
		res, sink, _ := runWorkflow(t, `
timeout: 30s
steps:
  - {id: slowish, run: "sleep 1.5"}
`, enginetest.RunOpts{Cfg: withDefault})
		if res.Status != succeeded {
			t.Fatalf("status %s (%s), want succeeded: the workflow's 30s timeout replaces the 400ms default\n%s", res.Status, res.Error, sink.All())
		}
	})
}

// TestTimedOutFinalReport: the final report of a run stopped at its own
// timeout says TimedOut (a check run's conclusion timed_out); a step's
// timeout is that step's failure, not the run's.
func TestTimedOutFinalReport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       bool
	}{
		{"run timeout", "timeout: 300ms\nsteps:\n  - {id: slow, run: \"sleep 5\"}\n", true},
		{"step timeout", "steps:\n  - {id: slow, run: \"sleep 5\", timeout: 300ms}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := &finalReporter{}
			res, _, _ := runWorkflow(t, tc.yaml, enginetest.RunOpts{Reporter: rep})
			rep.mu.Lock()
			defer rep.mu.Unlock()
			if res.Status != failed || res.TimedOut != tc.want || rep.final == nil || rep.final.TimedOut != tc.want {
				t.Errorf("status %s, result timed out %v, final report %+v; want timed out %v", res.Status, res.TimedOut, rep.final, tc.want)
			}
		})
	}
}
