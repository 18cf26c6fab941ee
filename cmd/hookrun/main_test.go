package main

import (
	"bytes"
	"context"
	"encoding/json"
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
