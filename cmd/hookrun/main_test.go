package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateExamplesExitsZero(t *testing.T) {
	code, out, errs := runCLI(t, "validate", "../../examples/")
	if code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestValidateReportsFileLineColAndExitsOne(t *testing.T) {
	code, out, _ := runCLI(t, "validate", "../../workflows/testdata/invalid/cycle.yaml", "../../examples/hello.yaml")
	if code != 1 {
		t.Fatalf("code %d, want 1; out %q", code, out)
	}
	if !strings.Contains(out, "cycle.yaml:") || !strings.Contains(out, " -> ") {
		t.Fatalf("want a file:line:col cycle message, got %q", out)
	}
}

// TestValidateServer: the Dagu seed examples validate as they are, but
// --server refuses a root working_dir outside the workspace, at its value.
func TestValidateServer(t *testing.T) {
	seed := "../../workflows/testdata/dagu/sbx-fresh-sandbox-per-run.yaml"
	if code, out, errs := runCLI(t, "validate", seed); code != 0 {
		t.Fatalf("without --server: code %d, %q %q", code, out, errs)
	}
	code, out, _ := runCLI(t, "validate", "--server", seed)
	want := seed + `:2:14: working_dir "/path/to/repo" is outside the run's workspace`
	if code != 1 || !strings.HasPrefix(out, want) {
		t.Fatalf("--server: code %d, out %q, want it to start with %q", code, out, want)
	}
	// the whole directory: every example valid as it is; with --server,
	// exactly the two sbx examples' absolute paths are problems
	const dir = "../../workflows/testdata/dagu/"
	if code, out, errs := runCLI(t, "validate", dir); code != 0 || out != "ok: 4 workflows valid\n" {
		t.Errorf("validate %s: code %d, %q %q", dir, code, out, errs)
	}
	_, out, _ = runCLI(t, "validate", "--server", dir)
	golden, err := os.ReadFile("testdata/validate-server-dagu.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(out, dir, "DAGU/"); got != string(golden) {
		t.Errorf("validate --server %s:\n%s--- want (testdata/validate-server-dagu.golden)\n%s", dir, got, golden)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{}, {"validate"}, {"nope"}, {"validate", "--bogus"}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: code %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, errs := runCLI(t, "validate", "--help"); code != 0 || !strings.Contains(errs, "file:line:col") {
		t.Errorf("--help: code %d, %q", code, errs)
	}
}

func TestSchemaIsJSON(t *testing.T) {
	code, out, _ := runCLI(t, "schema")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["$schema"] == nil {
		t.Fatalf("code %d, schema not JSON with $schema: %.200s", code, out)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands() {
		code, _, errs := runCLI(t, c.name, "--help")
		if code != 0 || !strings.Contains(errs, "Usage: hookrun "+c.name) || len(errs) < 80 {
			t.Errorf("%s --help: code %d, %q", c.name, code, errs)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir+"/ok.yaml", "steps:\n  - id: a\n    run: echo hi\n")
	bad := writeFile(t, dir+"/bad.yaml", "steps:\n  - id: a\n    run: exit 3\n")
	broken := writeFile(t, dir+"/broken.yaml", "steps:\n  - id: a\n    rn: echo\n")
	payload := "../../providers/github/testdata/github/pull_request/opened.payload.json"
	for _, tc := range []struct {
		args []string
		want int
		out  string
	}{
		{[]string{"run", ok, "--dir", dir}, 0, "[a] hi"},
		{[]string{"run", ok, "--dir", dir, "--event", payload, "--event-name", "pull_request"}, 0, "[a] hi"},
		{[]string{"run", bad, "--dir", dir}, 1, "failed"},
		{[]string{"run", broken}, exitUsage, "broken.yaml:3:5"},
		{[]string{"run", ok, "--event", payload}, exitUsage, "--event-name"},
		{[]string{"run", ok, "--forge", "bitbucket"}, exitUsage, "--forge"},
		{[]string{"run"}, exitUsage, "Usage"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != tc.want || !strings.Contains(out+errs, tc.out) {
			t.Errorf("%v: code %d (want %d), output %q lacks %q", tc.args[1:], code, tc.want, out+errs, tc.out)
		}
	}
}

// TestRunParams: `hookrun run -p NAME=VALUE` (repeatable) overrides a
// param's default, as data (shell syntax in it is printed, not run); an
// unknown name, or a flag without =, is a usage error naming the problem.
func TestRunParams(t *testing.T) {
	dir := t.TempDir()
	wf := writeFile(t, dir+"/params.yaml", `params:
  - TARGET: staging
  - "COUNT=1"
steps:
  - id: show
    run: echo "target=$TARGET count=$COUNT"
`)
	pwned := dir + "/pwned"
	for _, tc := range []struct {
		args []string
		want int
		out  string
	}{
		{[]string{"run", wf, "--dir", dir}, 0, "[show] target=staging count=1"},
		{[]string{"run", wf, "--dir", dir, "-p", "TARGET=prod", "-p", "COUNT=2"}, 0, "[show] target=prod count=2"},
		{[]string{"run", wf, "--dir", dir, "-p", "TARGET=$(touch " + pwned + ")"}, 0, "[show] target=$(touch " + pwned + ") count=1"},
		{[]string{"run", wf, "--dir", dir, "-p", "BRANCH=x"}, exitUsage, "workflow params has no param BRANCH (its params are TARGET, COUNT)"},
		{[]string{"run", wf, "-p", "TARGET"}, exitUsage, `want NAME=VALUE, got "TARGET"`},
		{[]string{"run", wf, "-p", "A=1", "-p", "A=2"}, exitUsage, "param A given twice"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != tc.want || !strings.Contains(out+errs, tc.out) {
			t.Errorf("%v: code %d (want %d), output %q lacks %q", tc.args[2:], code, tc.want, out+errs, tc.out)
		}
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Error("a -p value ran as shell source")
	}
}

// A pull request title that is shell syntax reaches a step only as
// $HOOKRUN_PR_TITLE: `hookrun run` with a hostile payload creates no file.
func TestRunHostileTitleIsData(t *testing.T) {
	dir := t.TempDir()
	pwned := dir + "/pwned"
	payload, err := os.ReadFile("../../providers/github/testdata/github/pull_request/opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	hostile := strings.Replace(string(payload), `"title": "Update the README with new information."`,
		`"title": "$(touch `+pwned+`) `+"`touch "+pwned+"`"+`"`, 1)
	if hostile == string(payload) {
		t.Fatal("fixture title not found")
	}
	ev := writeFile(t, dir+"/event.json", hostile)
	wf := writeFile(t, dir+"/wf.yaml", "steps:\n  - id: show\n    run: 'echo \"title: $HOOKRUN_PR_TITLE\"'\n")
	code, out, errs := runCLI(t, "run", wf, "--dir", dir, "--event", ev, "--event-name", "pull_request")
	if code != 0 || !strings.Contains(out, "title: $(touch "+pwned+")") {
		t.Fatalf("code %d, out %q, err %q", code, out, errs)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the title was executed")
	}
}

// `hookrun bench peer` needs webhook's binary, and says so.
func TestBenchPeerNeedsWebhook(t *testing.T) {
	if code, _, errs := runCLI(t, "bench", "peer"); code != exitUsage || !strings.Contains(errs, "--webhook BINARY") {
		t.Errorf("no --webhook: code %d, %q", code, errs)
	}
	if code, _, errs := runCLI(t, "bench", "peer", "--webhook", "/nonexistent/webhook"); code != 1 || !strings.Contains(errs, "webhook: stat /nonexistent/webhook") {
		t.Errorf("missing binary: code %d, %q", code, errs)
	}
}
