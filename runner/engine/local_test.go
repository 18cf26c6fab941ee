package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

var update = flag.Bool("update", false, "rewrite golden files")

// durations and timestamps vary from run to run.
var (
	durRE  = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m)\b`)
	timeRE = regexp.MustCompile(`"[0-9]{4}-[0-9]{2}-[0-9]{2}T[^"]*"`)
	numRE  = regexp.MustCompile(`"duration_seconds": [0-9.e-]+`)
)

func normalize(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "$WORKSPACE")
	s = timeRE.ReplaceAllString(s, `"TIME"`)
	s = numRE.ReplaceAllString(s, `"duration_seconds": 0`)
	return durRE.ReplaceAllString(s, "DUR")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

const localWorkflow = `
name: local-demo
type: chain
steps:
  - {id: hello, run: 'grep -q opened "$HOOKRUN_EVENT_PATH" && echo "hello from $HOOKRUN_WORKFLOW"; sleep 0.1; echo "to stderr" >&2'}
  - {id: number, run: 'echo "PR #$HOOKRUN_PR_NUMBER"', output: NUM}
  - {id: fails, run: 'echo "got $NUM"; exit 2', continue_on: failed}
  - {id: last, run: 'true'}
`

func TestRunLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		json     bool
		yaml     string
		wantCode int
	}{
		{"summary", false, localWorkflow, engine.ExitSucceeded},
		{"json", true, localWorkflow, engine.ExitSucceeded},
		{"failed", false, "name: local-fail\nsteps:\n  - {id: bad, run: 'echo nope; exit 3'}\n  - {id: next, run: 'true', depends: [bad]}\n", engine.ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := engine.RunLocal(context.Background(), engine.LocalOptions{
				Workflow:  enginetest.Parse(t, tt.yaml),
				Event:     samplePR(),
				Dir:       dir,
				RunID:     "local-1",
				JSON:      tt.json,
				Stdout:    &stdout,
				Stderr:    &stderr,
				Providers: engine.Providers{Host: enginetest.HostExec()},
				LookupEnv: enginetest.Env(testEnv),
			})
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, &stdout, &stderr)
			}
			golden(t, "local_"+tt.name+".stdout", normalize(stdout.String(), dir))
			golden(t, "local_"+tt.name+".stderr", normalize(stderr.String(), dir))
			if tt.json {
				var res engine.LocalResult
				if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
					t.Fatalf("--json output is not JSON: %v", err)
				}
				if res.Status != workflows.StatusPartiallySucceeded || len(res.Steps) != 4 { // fails is tolerated
					t.Errorf("json result: %s with %d steps", res.Status, len(res.Steps))
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".hookrun")); !os.IsNotExist(err) {
				t.Errorf("the local run left .hookrun behind in the directory (%v)", err)
			}
		})
	}
}

func TestTimedOutStepLeavesNoProcess(t *testing.T) {
	t.Parallel()
	res, sink, dir := runWorkflow(t, `
steps:
  - {id: bg, run: 'sleep 300 & echo $! > pid; sleep 300', timeout: 300ms}
`, enginetest.RunOpts{})
	if res.Status != failed {
		t.Fatalf("status %s\n%s", res.Status, sink.All())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(enginetest.ReadFile(t, dir, "pid")))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("background sleep %d survived its step's timeout", pid)
	}
}

// The engine's own cost per run of a 10-step chain of `true`, compared with
// a plain Go loop starting `sh -c true` ten times (issue 9 wants ≤ 1.2×).
// go test -run '^$' -bench 'Chain10' ./runner/
func BenchmarkEngineChain10(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("type: chain\nsteps:\n")
	for i := range 10 {
		sb.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: 'true'}\n")
	}
	w := enginetest.Parse(b, sb.String())
	eng, err := engine.New(engine.Config{Providers: engine.Providers{Host: enginetest.HostExec()}})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := eng.Run(context.Background(), engine.RunSpec{ID: "bench", Workflow: w, Event: samplePR(), Workspace: dir})
		if res.Status != succeeded {
			b.Fatal(res.Error)
		}
	}
}

func BenchmarkPlainLoopChain10(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for range 10 {
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// noopExec does nothing: it isolates the engine's own per-step cost.
type noopExec struct{}

func (noopExec) Exec(context.Context, contract.ExecRequest) (contract.ExecResult, error) {
	return contract.ExecResult{}, nil
}

// go test -run '^$' -bench 'EngineOverhead' -benchmem ./runner/
func BenchmarkEngineOverheadChain10(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("type: chain\nsteps:\n")
	for i := range 10 {
		sb.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: 'true'}\n")
	}
	w := enginetest.Parse(b, sb.String())
	eng, err := engine.New(engine.Config{Providers: engine.Providers{Host: noopExec{}}, Logs: enginetest.NewMemSink()})
	if err != nil {
		b.Fatal(err)
	}
	ev := samplePR()
	b.ReportAllocs()
	for b.Loop() {
		if res := eng.Run(context.Background(), engine.RunSpec{ID: "bench", Workflow: w, Event: ev}); res.Status != succeeded {
			b.Fatal(res.Error)
		}
	}
}
