package results

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// roots are the names the fixtures' workspace is known by.
var roots = Roots{"/home/ci/work/web", "/workspace"}

// TestDecodeGolden decodes each fixture, written to the shape each tool
// writes, and compares the findings with its golden file.
func TestDecodeGolden(t *testing.T) {
	for _, tc := range []struct {
		file    string
		outside int
	}{
		{"golangci-lint.sarif", 0},
		{"semgrep.sarif", 0},
		{"eslint.sarif", 1},
		{"codeql.sarif", 1},
		{"agent.rdjsonl", 1},
		{"staticcheck.rdjson", 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var d *decoded
			switch filepath.Ext(tc.file) {
			case ".sarif":
				d, err = decodeSARIF(tc.file, data, roots)
			case ".rdjson":
				d, err = decodeRDJSON(tc.file, data, roots)
			case ".rdjsonl":
				d, err = decodeRDJSONL(tc.file, data, roots)
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.outside != tc.outside {
				t.Errorf("dropped outside the checkout: %d, want %d", d.outside, tc.outside)
			}
			got, _ := json.MarshalIndent(d.findings, "", "  ")
			golden := filepath.Join("testdata", tc.file+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(want)) != string(got) {
				t.Errorf("findings differ from %s:\n%s", golden, got)
			}
		})
	}
}

// TestMalformedPositions: a malformed file fails with file:line:col.
func TestMalformedPositions(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string
	}{
		{"bad.sarif", "{\n  \"version\": \"2.1.0\",\n  \"runs\": [\n    {\"results\": [}\n  ]\n}", "bad.sarif:4:18: invalid character '}' looking for beginning of value"},
		{"type.sarif", "{\"version\": \"2.1.0\",\n\"runs\": [{\"results\": [{\"locations\": [{\"physicalLocation\": {\"region\": {\"startLine\": \"42\"}}}]}]}]}",
			"type.sarif:2:84: runs.results.locations.physicalLocation.region.startLine: want number, got string"},
		{"v1.sarif", `{"version": "1.0.0", "runs": []}`, `v1.sarif: SARIF version "1.0.0": only 2.1.0 is read`},
		{"empty.sarif", "  \n", "empty.sarif:1:1: empty file"},
		{"trunc.rdjson", "{\"diagnostics\": [\n {\"message\": \"x\"", "trunc.rdjson:2:16: unexpected end of JSON input"},
		{"bad.rdjsonl", "{\"message\": \"a\"}\n\n{\"message\": \"b\", \"location\": {\"path\": 7}}\n", "bad.rdjsonl:3:39: location.path: want string, got number"},
		{"sev.rdjsonl", "{\"message\": \"a\", \"severity\": \"FATAL\"}\n", `sev.rdjsonl:1:18: severity "FATAL": want ERROR, WARNING, INFO or UNKNOWN_SEVERITY`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch filepath.Ext(tc.name) {
			case ".sarif":
				_, err = decodeSARIF(tc.name, []byte(tc.data), roots)
			case ".rdjson":
				_, err = decodeRDJSON(tc.name, []byte(tc.data), roots)
			case ".rdjsonl":
				_, err = decodeRDJSONL(tc.name, []byte(tc.data), roots)
			}
			var pe *PositionError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *PositionError", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n %s\nwant\n %s", err, tc.want)
			}
		})
	}
}

// TestActions decodes actions.json strictly.
func TestActions(t *testing.T) {
	good := `{"labels": {"add": ["bug", "area/queue"], "remove": ["triage"]},
 "assignees": {"add": ["octocat"]},
 "state": "closed", "state_reason": "duplicate",
 "comment": "Duplicate of #12.",
 "targets": [{"number": 7, "labels": {"add": ["stale"]}, "state": "closed", "state_reason": "not_planned"}]}`
	a, err := decodeActions("actions.json", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := &contract.Actions{
		ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug", "area/queue"}, Remove: []string{"triage"}},
			Assignees: &contract.AddRemove{Add: []string{"octocat"}}, State: "closed", Reason: "duplicate", Comment: "Duplicate of #12."},
		Targets: []contract.TargetActions{{Number: 7, ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"stale"}}, State: "closed", Reason: "not_planned"}}},
	}
	if g, w := fmt.Sprintf("%+v", jsonOf(a)), fmt.Sprintf("%+v", jsonOf(want)); g != w {
		t.Errorf("decoded\n %s\nwant\n %s", g, w)
	}
	for _, tc := range []struct{ data, want string }{
		{"{\"labels\": {\"add\": [\"bug\"]},\n \"lables\": {}}", `actions.json:2:2: unknown field "lables"`},
		{"{\"targets\": [{\"number\": 3,\n   \"colour\": \"red\"}]}", `actions.json:2:4: unknown field "colour"`},
		{"{\"state\": \"merged\"}", `actions.json:1:2: state "merged": want open or closed`},
		{"{\"state\": \"closed\",\n\"state_reason\": \"wontfix\"}", `actions.json:2:1: state_reason "wontfix": want completed, not_planned or duplicate`},
		{"{\"targets\": [{\"labels\": {}}]}", `actions.json:1:2: targets[0]: number must be a positive issue or pull request number`},
		{"{\"labels\": {\"add\": \"bug\"}}", `actions.json:1:20: labels.add: want array, got string`},
		{"{\"comment\": \"a\"} {\"comment\": \"b\"}", `actions.json:1:18: invalid character '{' after top-level value`},
		{"{\"comment\": \"a\",}", `actions.json:1:17: invalid character '}' looking for beginning of object key string`},
	} {
		_, err := decodeActions("actions.json", []byte(tc.data))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %s", tc.data, err, tc.want)
		}
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestRelativePaths: paths become relative to the repository root;
// outside ones are refused.
func TestRelativePaths(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"src/a.go", "src/a.go", true},
		{"./src/a.go", "src/a.go", true},
		{"src/../b.go", "b.go", true},
		{"/workspace/src/a.go", "src/a.go", true},
		{"/home/ci/work/web/x/y.js", "x/y.js", true},
		{"file:///home/ci/work/web/x%20y.js", "x y.js", true},
		{"file://localhost/workspace/a.go", "a.go", true},
		{"", "", true},
		{"../x", "", false},
		{"src/../../x", "", false},
		{"..", "", false},
		{"/etc/passwd", "", false},
		{"/workspace", "", false},
		{"/workspace-other/a.go", "", false},
		{"/workspace/../etc/passwd", "", false},
		{"file://evil.example/workspace/a.go", "", false},
	} {
		got, ok := roots.rel(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("rel(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// writeFile writes a results file as a step would.
func writeFile(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rdjsonl(n int, path string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"message\": \"m%d\", \"location\": {\"path\": %q, \"range\": {\"start\": {\"line\": %d}}}}\n", i, path, i+1)
	}
	return b.String()
}

// TestReaderCapsFindings: at most MaxFindings per run; the cut is counted
// and said.
func TestReaderCapsFindings(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.rdjsonl", rdjsonl(3000, "a.go"))
	writeFile(t, dir, "b.rdjsonl", rdjsonl(3000, "b.go"))
	r := NewReader(dir, Options{Roots: roots})
	if err := r.Scan(); err != nil {
		t.Fatal(err)
	}
	res := r.Results()
	if len(res.Findings) != contract.MaxResultsFindings {
		t.Fatalf("%d findings, want %d", len(res.Findings), contract.MaxResultsFindings)
	}
	if last := res.Findings[len(res.Findings)-1]; last.Path != "b.go" || last.StartLine != 2000 {
		t.Errorf("last finding kept %s:%d, want b.go:2000", last.Path, last.StartLine)
	}
	if n := res.Dropped[ReasonLimit(contract.MaxResultsFindings)]; n != 1000 {
		t.Errorf("dropped over the limit %d, want 1000 (%v)", n, res.Dropped)
	}
	if !containsNote(res.Notes, "1000 findings over the limit of 5000 per run were cut (from b.rdjsonl)") {
		t.Errorf("notes %q do not say what was cut", res.Notes)
	}
}

// TestReaderCapsBytes: files beyond the run's byte budget are not read,
// and the note says so.
func TestReaderCapsBytes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.rdjsonl", rdjsonl(10, "a.go"))
	writeFile(t, dir, "b.rdjsonl", rdjsonl(10, "b.go"))
	size, _ := os.Stat(filepath.Join(dir, "a.rdjsonl"))
	r := NewReader(dir, Options{Roots: roots, MaxBytes: size.Size() + 10})
	if err := r.Scan(); err != nil {
		t.Fatal(err)
	}
	res := r.Results()
	if len(res.Findings) != 10 || res.Findings[0].Path != "a.go" {
		t.Errorf("findings %d (first %+v), want the 10 of a.rdjsonl", len(res.Findings), res.Findings[0])
	}
	if !containsNote(res.Notes, "b.rdjsonl (") {
		t.Errorf("notes %q do not name the file left out", res.Notes)
	}
}

func containsNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// TestReaderDoesNotFollowSymlinks: a file symlink or a directory symlink
// planted in the folder is not followed, and noted.
func TestReaderDoesNotFollowSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeFile(t, outside, "secret.sarif", `{"version": "2.1.0", "runs": [{"results": [{"message": {"text": "SECRET"}}]}]}`)
	writeFile(t, outside, "sub/x.rdjsonl", `{"message": "SECRET"}`)
	for name, target := range map[string]string{
		"x.sarif":      filepath.Join(outside, "secret.sarif"),
		"passwd.sarif": "/etc/passwd",
		"out":          filepath.Join(outside, "sub"),
		"actions.json": filepath.Join(outside, "secret.sarif"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "ok.rdjsonl", `{"message": "fine"}`)
	r := NewReader(dir, Options{Roots: roots})
	if err := r.Scan(); err != nil {
		t.Fatalf("scan: %v (a symlink must be skipped, not read)", err)
	}
	res := r.Results()
	if len(res.Findings) != 1 || res.Findings[0].Message != "fine" || res.Actions != nil {
		t.Errorf("findings %+v actions %+v: only ok.rdjsonl's finding expected", res.Findings, res.Actions)
	}
	for _, n := range []string{"x.sarif", "passwd.sarif", "out", "actions.json"} {
		if !containsNote(res.Notes, n+" is a symlink: not followed") {
			t.Errorf("notes %q do not say %s was not followed", res.Notes, n)
		}
	}
	// The folder itself a symlink: not opened.
	link := filepath.Join(t.TempDir(), "results")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := NewReader(link, Options{}).Scan(); err == nil {
		t.Error("a results folder that is a symlink was opened")
	}
}

// TestReaderRescan: only new or changed files are decoded again, a
// malformed one is reported once, and removed files leave.
func TestReaderRescan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "lint/a.sarif", `{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}}, "results": [{"ruleId": "r", "message": {"text": "one"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.go"}, "region": {"startLine": 1}}}]}]}]}`)
	r := NewReader(dir, Options{Roots: roots})
	if err := r.Scan(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "b.rdjsonl", "{\"message\": \"two\"}\n{oops}\n")
	err := r.Scan()
	if err == nil || err.Error() != "b.rdjsonl:2:2: invalid character 'o' looking for beginning of object key string" {
		t.Fatalf("second scan: %v", err)
	}
	if err := r.Scan(); err != nil {
		t.Errorf("an unchanged malformed file was reported again: %v", err)
	}
	res := r.Results()
	if len(res.Findings) != 1 || res.Findings[0].File != "lint/a.sarif" || res.Findings[0].Tool != "t" {
		t.Errorf("findings %+v", res.Findings)
	}
	if err := os.Remove(filepath.Join(dir, "lint/a.sarif")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "b.rdjsonl", "{\"message\": \"two\"}\n")
	if err := r.Scan(); err != nil {
		t.Fatal(err)
	}
	if res := r.Results(); len(res.Findings) != 1 || res.Findings[0].Message != "two" {
		t.Errorf("after the change: %+v", res.Findings)
	}
}

// TestFingerprint does not depend on the line.
func TestFingerprint(t *testing.T) {
	a := contract.Finding{Rule: "r", Path: "a.go", Message: "m", StartLine: 3}
	b := a
	b.StartLine = 40
	if a.Fingerprint("x := 1") != b.Fingerprint("  x := 1\n") {
		t.Error("fingerprint depends on the line or the text's surrounding space")
	}
	if a.Fingerprint("x := 1") == a.Fingerprint("x := 2") {
		t.Error("fingerprint ignores the text")
	}
}
