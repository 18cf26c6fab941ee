package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `hookrun run` gives steps $HOOKRUN_RESULTS and prints the findings they
// left there at the end, path:line: level rule: message, with what was
// dropped.
func TestRunPrintsFindings(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "lint.yaml")
	body := `steps:
  - id: lint
    run: |
      cat > "$HOOKRUN_RESULTS/lint.sarif" <<EOF
      {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "golangci-lint"}}, "results": [
        {"ruleId": "errcheck", "level": "error", "message": {"text": "Error return value of f.Close is not checked"},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file://$PWD/internal/store/conn.go"}, "region": {"startLine": 42}}}]},
        {"ruleId": "x", "message": {"text": "elsewhere"},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "../other/file.go"}, "region": {"startLine": 1}}}]}]}]}
      EOF
      echo '{"message": "consider a deadline", "location": {"path": "queue/consumer.go", "range": {"start": {"line": 120}}}, "severity": "INFO"}' > "$HOOKRUN_RESULTS/agent.rdjsonl"
`
	if err := os.WriteFile(wf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "run", wf, "--dir", dir)
	if code != 0 {
		t.Fatalf("code %d\nstdout %s\nstderr %s", code, out, errs)
	}
	for _, want := range []string{
		"FINDINGS (2)\n",
		"queue/consumer.go:120: note: consider a deadline\n",
		"internal/store/conn.go:42: error errcheck: Error return value of f.Close is not checked\n",
		"note: 1 findings outside the checkout were dropped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the workspace holds %v: the results folder must lie outside it", entries)
	}
}
