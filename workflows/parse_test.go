package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

// TestInvalidGolden parses every broken file under testdata/invalid (and
// loads every directory there) and compares the problems, one
// `file:line:col: message` per line, with its .golden file.
func TestInvalidGolden(t *testing.T) {
	entries, err := os.ReadDir("testdata/invalid")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		path := filepath.Join("testdata/invalid", e.Name())
		var load func() ([]*Workflow, error)
		switch {
		case e.IsDir():
			load = func() ([]*Workflow, error) { return Load(path) }
		case filepath.Ext(e.Name()) == ".yaml":
			load = func() ([]*Workflow, error) {
				w, err := ParseFile(path)
				if w != nil {
					return []*Workflow{w}, err
				}
				return nil, err
			}
		default:
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			_, err := load()
			if err == nil {
				t.Fatal("no problem reported")
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error is %T, not Problems", err)
			}
			for _, p := range ps {
				if p.Msg == "" || p.File == "" {
					t.Errorf("incomplete problem %#v", p)
				}
			}
			checkGolden(t, strings.TrimSuffix(path, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
	if n < 22 {
		t.Errorf("only %d invalid cases; want at least 22", n)
	}
}

// TestValidGolden parses every good file under testdata/valid and compares
// the validated Workflow, as indented JSON, with its .json golden file.
func TestValidGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			w, err := ParseFile(f)
			if err != nil {
				t.Fatalf("unexpected problems:\n%v", err)
			}
			if w.File != f || !strings.HasPrefix(w.Digest, "sha256:") || len(w.Digest) != len("sha256:")+64 {
				t.Errorf("File %q Digest %q", w.File, w.Digest)
			}
			b, err := json.MarshalIndent(w, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".yaml")+".json", append(b, '\n'))
		})
	}
}

// TestDefaults checks each default of the format on a minimal file.
func TestDefaults(t *testing.T) {
	w, err := Parse("some_Flow.yml", []byte("steps:\n  - id: a\n    run: echo a\n  - name: b\n    run: echo b\n"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"name from file", w.Name, "some-flow"},
		{"type", w.Type, TypeGraph},
		{"max_active_steps", w.MaxActiveSteps, 4},
		{"author_association", strings.Join(w.Authorization.AuthorAssociation, ","), "OWNER,MEMBER,COLLABORATOR"},
		{"allow_forks", w.Authorization.AllowForks, false},
		{"report.comment", w.Report.Comment, CommentSticky},
		{"report.status", w.Report.Status, true},
		{"checkout", w.Checkout, false},
		{"step name defaults to id", w.Steps[0].Name, "a"},
		{"step id from a Dagu name", w.Steps[1].ID, "b"},
		{"graph: no implicit depends", len(w.Steps[1].Depends), 0},
		{"no triggers", len(w.On), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestDaguForms checks the Dagu-compatible spellings the parser accepts.
func TestDaguForms(t *testing.T) {
	src := `
type: chain
params: "A=1 B=two"
env:
  FOO: bar
  N: 3
steps:
  - id: one
    run: echo 1
    dir: sub
    env: ["X=1", {Y: 2}]
  - id: two
    run: echo 2
    timeout: 90
    retry_policy: {limit: 3, interval: 2s, backoff: true, max_interval_sec: 60, exit_codes: [1]}
    continue_on: {failed: true, skipped: true}
  - id: three
    run: echo 3
    depends: one
    container: {image: alpine, memory: 512m, cpus: 1.5, pids: 100, volumes: [".:/src:ro"]}
`
	w, err := Parse("dagu.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := w.Steps
	checks := []struct {
		what      string
		got, want any
	}{
		{"params", envString(w.Params), "A=1 B=two"},
		{"env map", envString(w.Env), "FOO=bar N=3"},
		{"step env list", envString(s[0].Env), "X=1 Y=2"},
		{"dir alias", s[0].WorkingDir, "sub"},
		{"chain: first has no depends", len(s[0].Depends), 0},
		{"chain: depends on previous", strings.Join(s[1].Depends, ","), "one"},
		{"chain: explicit depends kept", strings.Join(s[2].Depends, ","), "one"},
		{"timeout in seconds", s[1].Timeout, 90 * time.Second},
		{"retry limit", s[1].RetryPolicy.Limit, 3},
		{"retry interval", s[1].RetryPolicy.Interval, 2 * time.Second},
		{"backoff true", s[1].RetryPolicy.Backoff, 2.0},
		{"max_interval_sec", s[1].RetryPolicy.MaxInterval, time.Minute},
		{"continue_on map", fmt.Sprint(s[1].ContinueOn), fmt.Sprint(ContinueOn{Failed: true, Skipped: true})},
		{"memory 512m", s[2].Container.Memory, int64(512 << 20)},
		{"cpus", s[2].Container.CPUs, 1.5},
		{"pids", s[2].Container.PIDs, int64(100)},
		{"pull_policy default", s[2].Container.PullPolicy, PullMissing},
		{"working_dir default", s[2].Container.WorkingDir, "/workspace"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

func envString(env []EnvVar) string {
	parts := make([]string, len(env))
	for i, e := range env {
		parts[i] = e.Name + "=" + e.Value
	}
	return strings.Join(parts, " ")
}

// TestHarnessRunWith checks how `with:` becomes a HarnessRun: flags sorted,
// false booleans dropped, fallbacks inheriting the prompt.
func TestHarnessRunWith(t *testing.T) {
	src := `
steps:
  - id: r
    action: harness.run
    with:
      provider: claude
      model: opus
      prompt: "Review ${HOOKRUN_PR_NUMBER}"
      max-turns: 5
      verbose: true
      dangerously-skip-permissions: false
      fallback:
        - provider: codex
        - provider: gemini
          prompt: shorter
`
	w, err := Parse("h.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	h := w.Steps[0].Harness
	if h == nil {
		t.Fatal("no harness")
	}
	if h.Provider != "claude" || h.Model != "opus" || h.Prompt != "Review ${HOOKRUN_PR_NUMBER}" {
		t.Errorf("harness %+v", h)
	}
	if got := flagsString(h.Flags); got != "max-turns=5 verbose=true" {
		t.Errorf("flags %q", got)
	}
	if len(h.Fallback) != 2 || h.Fallback[0].Prompt != h.Prompt || h.Fallback[1].Prompt != "shorter" {
		t.Errorf("fallback %+v", h.Fallback)
	}
}

func flagsString(fs []Flag) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + f.Value
	}
	return strings.Join(parts, " ")
}

// TestLoad covers files and directories together, name uniqueness and the
// good workflows returned beside the problems.
func TestLoad(t *testing.T) {
	ws, err := Load("testdata/invalid/dupnames", "testdata/valid/design.yaml", "testdata/invalid/cycle.yaml", "testdata/nope")
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v is not Problems", err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.Name+"@"+w.File)
	}
	if got, want := strings.Join(names, " "), "deploy@testdata/invalid/dupnames/a.yaml pr-review@testdata/valid/design.yaml"; got != want {
		t.Errorf("loaded %q, want %q", got, want)
	}
	want := []string{
		"testdata/invalid/cycle.yaml:9:15: dependency cycle: a -> c -> b -> a",
		"testdata/invalid/cycle.yaml:15:15: dependency cycle: d -> d",
		"testdata/invalid/dupnames/b.yaml:2:7: workflow name \"deploy\" is already used by testdata/invalid/dupnames/a.yaml",
		"testdata/invalid/dupnames/deploy.yml:1:1: workflow name \"deploy\" is already used by testdata/invalid/dupnames/a.yaml",
		"testdata/nope: reading: no such file or directory",
	}
	if got := ps.Error(); got != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestLoadSameFileTwice: a file given directly and through its directory
// is loaded once, not reported as a duplicate name.
func TestLoadSameFileTwice(t *testing.T) {
	ws, err := Load("../examples", "../examples/hello.yaml", "../examples/")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(ws) != len(files) {
		t.Errorf("loaded %d workflows, want %d", len(ws), len(files))
	}
}

// TestExamples: every example loads without a problem (`hookrun validate
// examples/` exits 0).
func TestExamples(t *testing.T) {
	ws, err := Load("../examples")
	if err != nil {
		t.Fatalf("examples have problems:\n%v", err)
	}
	want := map[string]bool{"hello": true, "pr-review": true, "issue-triage": true, "chatops-deploy": true, "push-lint": true, "pr-fix": true, "stale-sweep": true}
	for _, w := range ws {
		delete(want, w.Name)
	}
	if len(want) > 0 {
		t.Errorf("missing examples: %v", want)
	}
}

func TestProblemFormat(t *testing.T) {
	ps := Problems{
		{File: "b.yaml", Line: 1, Col: 1, Msg: "z"},
		{File: "a.yaml", Line: 10, Col: 2, Msg: "y"},
		{File: "a.yaml", Line: 2, Col: 5, Msg: "x"},
		{File: "a.yaml", Msg: "whole file"},
	}
	err := ps.orNil()
	want := "a.yaml: whole file\na.yaml:2:5: x\na.yaml:10:2: y\nb.yaml:1:1: z"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if Problems(nil).orNil() != nil {
		t.Error("empty Problems is not a nil error")
	}
}

// TestAliasBomb: aliases that expand to a huge tree (1000 steps x 1000
// fallbacks x 1000 flags) are refused quickly instead of being walked.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x: &F {provider: claude")
	for i := range 1000 {
		fmt.Fprintf(&b, ", f%d: 1", i)
	}
	b.WriteString("}\ny: &FB [*F" + strings.Repeat(", *F", 999) + "]\n")
	b.WriteString("s: &S {id: a, action: harness.run, with: {provider: claude, prompt: p, fallback: *FB}}\n")
	b.WriteString("steps: [*S" + strings.Repeat(", *S", 999) + "]\n")
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "document too large") {
		t.Fatalf("not refused as too large: %.300v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestMergeKeys: YAML merge keys work like in any YAML tool; explicit keys win.
func TestMergeKeys(t *testing.T) {
	src := `
x-defaults: &defaults
  container: {image: alpine}
  timeout: 5m
steps:
  - id: a
    <<: *defaults
    run: echo a
  - id: b
    <<: [*defaults]
    timeout: 1m
    run: echo b
`
	_, err := Parse("merge.yaml", []byte(src))
	if err == nil || err.Error() != `merge.yaml:2:1: unknown field "x-defaults" in workflow` {
		t.Fatalf("got %v", err)
	}
	// anchors defined inside a known field
	src = `
env: [{A: "1"}]
steps:
  - id: a
    <<: &defaults {container: {image: alpine}, timeout: 5m}
    run: echo a
  - id: b
    <<: [*defaults]
    timeout: 1m
    run: echo b
`
	w, err := Parse("merge.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if w.Steps[0].Container == nil || w.Steps[0].Timeout != 5*time.Minute || w.Steps[1].Container == nil || w.Steps[1].Timeout != time.Minute {
		t.Errorf("merged steps: %+v", w.Steps)
	}
}
