package workflows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDaguSeedDocuments parses every YAML example of the two Dagu pages
// hookrun users paste from ("Sandbox Docker para harness.run" and "Run
// Harness Agents in Docker Sandboxes (sbx)"), copied verbatim under
// testdata/dagu, and compares the validated workflow with its .json golden.
func TestDaguSeedDocuments(t *testing.T) {
	files, err := filepath.Glob("testdata/dagu/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("%d seed examples under testdata/dagu, want the 4 of the two pages", len(files))
	}
	sch := compileSchema(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := sch.Validate(yamlInstance(t, f)); err != nil {
				t.Errorf("the schema refuses the Dagu example: %v", err)
			}
			w, err := ParseFile(f)
			if err != nil {
				t.Fatalf("the Dagu example does not validate:\n%v", err)
			}
			b, err := json.MarshalIndent(w, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".yaml")+".json", append(b, '\n'))
		})
	}
}

// TestWorkingDirServer: a root working_dir outside the workspace is a
// problem at its value in server mode only; inside it is fine everywhere.
func TestWorkingDirServer(t *testing.T) {
	seed := "testdata/dagu/sbx-long-lived-sandbox.yaml"
	if _, err := ParseFile(seed); err != nil {
		t.Fatalf("local mode refuses the seed: %v", err)
	}
	_, err := ParseFileWith(seed, ParseOptions{Server: true})
	want := seed + `:1:14: working_dir "/path/to/repo" is outside the run's workspace: the server runs steps in a fresh workspace per run; use a path relative to it`
	if err == nil || err.Error() != want {
		t.Errorf("server mode:\n got %v\nwant %s", err, want)
	}
	for _, c := range []struct {
		wd      string
		problem string
	}{
		{"sub/dir", ""},
		{"./a/../b", ""},
		{"..", "climbs out"},
		{"a/../../b", "climbs out"},
		{"/tmp", "outside the run's workspace"},
		{"''", "must not be empty"},
	} {
		src := fmt.Sprintf("working_dir: %s\nsteps: [{id: a, run: x}]\n", c.wd)
		w, err := ParseWith("a.yaml", []byte(src), ParseOptions{Server: true})
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%s: %v", c.wd, err)
		case c.problem == "" && w.WorkingDir != c.wd:
			t.Errorf("%s: WorkingDir %q", c.wd, w.WorkingDir)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%s: got %v, want a problem saying %q", c.wd, err, c.problem)
		}
	}
}

// TestLoadWithServer: LoadWith passes the options to every file.
func TestLoadWithServer(t *testing.T) {
	if _, err := LoadWith(ParseOptions{Server: true}, "testdata/dagu"); err == nil {
		t.Error("server mode accepts working_dir: /path/to/repo")
	}
	if _, err := Load("testdata/dagu"); err != nil {
		t.Error(err)
	}
}

// TestTimeoutSec: Dagu's timeout_sec means timeout, at the top and in a
// step; giving both is a problem.
func TestTimeoutSec(t *testing.T) {
	w, err := Parse("a.yaml", []byte("timeout_sec: 600\nsteps: [{id: a, run: x, timeout_sec: 90}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Timeout != 10*time.Minute || w.Steps[0].Timeout != 90*time.Second {
		t.Errorf("timeouts %s %s", w.Timeout, w.Steps[0].Timeout)
	}
	for _, src := range []string{
		"timeout: 10m\ntimeout_sec: 600\nsteps: [{id: a, run: x}]\n",
		"steps: [{id: a, run: x, timeout_sec: 5, timeout: 5s}]\n",
	} {
		_, err := Parse("a.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "set timeout only once") {
			t.Errorf("%q: got %v", src, err)
		}
	}
	if _, err := Parse("a.yaml", []byte("timeout_sec: -1\nsteps: [{id: a, run: x}]\n")); err == nil {
		t.Error("negative timeout_sec accepted")
	}
}

// TestContinueOnDagu: the map form with failure, exit_code and
// mark_success, and what Tolerates makes of it.
func TestContinueOnDagu(t *testing.T) {
	w, err := Parse("a.yaml", []byte(`steps:
  - id: a
    run: x
    continue_on: {failure: true, mark_success: true}
  - id: b
    run: x
    continue_on: {exit_code: [1, 3]}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := w.Steps[0].ContinueOn, w.Steps[1].ContinueOn
	if !a.Failed || !a.MarkSuccess || b.Failed || fmt.Sprint(b.ExitCodes) != "[1 3]" {
		t.Errorf("a %+v b %+v", a, b)
	}
	one, two := 1, 2
	if !b.Tolerates(&one) || b.Tolerates(&two) || b.Tolerates(nil) || !a.Tolerates(nil) {
		t.Error("Tolerates")
	}
	for src, want := range map[string]string{
		"steps: [{id: a, run: x, continue_on: {exit_code: [256]}}]": "continue_on.exit_code: 256 is not an exit code",
		"steps: [{id: a, run: x, continue_on: {output: [x]}}]":      `unknown field "output" in continue_on`,
	} {
		if _, err := Parse("a.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

// TestPreconditions: Dagu's forms at the top and in steps.
func TestPreconditions(t *testing.T) {
	src := `preconditions:
  - condition: "${ENVIRONMENT}"
    expected: production
  - "test -f ready"
steps:
  - id: a
    run: x
    preconditions: "` + "`date +%u`" + `"
  - id: b
    run: x
    preconditions:
      - condition: "` + "`date +%u`" + `"
        expected: "re:[1-5]"
        negate: true
`
	w, err := Parse("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t).Validate(yamlInstance(t, path)); err != nil {
		t.Errorf("the schema refuses Dagu's forms: %v", err)
	}
	got := fmt.Sprint(w.Preconditions, w.Steps[0].Preconditions, w.Steps[1].Preconditions)
	want := "[{${ENVIRONMENT} production false} {test -f ready  false}] [{`date +%u`  false}] [{`date +%u` re:[1-5] true}]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for src, msg := range map[string]string{
		"preconditions: ''\nsteps: [{id: a, run: x}]":                                 "a condition must not be empty",
		"preconditions: [{expected: x}]\nsteps: [{id: a, run: x}]":                    "condition is required",
		"preconditions: [{condition: x, expected: 're:('}]\nsteps: [{id: a, run: x}]": "is not a valid regular expression",
		"preconditions: [{condition: x, command: y}]\nsteps: [{id: a, run: x}]":       `unknown field "command"`,
		"preconditions: {condition: x}\nsteps: [{id: a, run: x}]":                     "",
		"steps: [{id: a, run: x, preconditions: [[x]]}]":                              "expected a condition string",
	} {
		_, err := Parse("a.yaml", []byte(src))
		switch {
		case msg == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case msg != "" && (err == nil || !strings.Contains(err.Error(), msg)):
			t.Errorf("%s: got %v, want %q", src, err, msg)
		}
	}
}

// TestDaguFieldsSchema: the schema agrees with the parser on the new
// fields' forms.
func TestDaguFieldsSchema(t *testing.T) {
	sch := compileSchema(t)
	for src, ok := range map[string]bool{
		"timeout_sec: 600\nsteps: [{id: a, run: x, timeout_sec: 90}]":                                       true,
		"timeout: 10m\ntimeout_sec: 600\nsteps: [{id: a, run: x}]":                                          false,
		"steps: [{id: a, run: x, timeout: 5s, timeout_sec: 5}]":                                             false,
		"steps: [{id: a, run: x, continue_on: {failure: true, exit_code: [1], mark_success: true}}]":        true,
		"steps: [{id: a, run: x, continue_on: {exit_code: [300]}}]":                                         false,
		"working_dir: repo\nsteps: [{id: a, run: x}]":                                                       true,
		"preconditions: [{condition: x, expected: y, negate: true}, 'test -f z']\nsteps: [{id: a, run: x}]": true,
		"preconditions: [{expected: y}]\nsteps: [{id: a, run: x}]":                                          false,
		"preconditions: ' '\nsteps: [{id: a, run: x}]":                                                      false,
	} {
		path := filepath.Join(t.TempDir(), "a.yaml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		schemaErr := sch.Validate(yamlInstance(t, path))
		_, parseErr := ParseFile(path)
		if (schemaErr == nil) != ok || (parseErr == nil) != ok {
			t.Errorf("%s: want accepted %v; schema: %v; parser: %v", src, ok, schemaErr, parseErr)
		}
	}
}
