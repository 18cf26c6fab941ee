package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `hookrun validate` checks schedules: the stale sweep example passes
// (also as the server loads it), and a bad cron, a short @every, a
// schedule without a repository and an unknown zone are each reported as
// file:line:col: message.
func TestValidateSchedules(t *testing.T) {
	if code, out, errs := runCLI(t, "validate", "--server", "../../examples/stale-sweep.yaml"); code != 0 || out != "ok: 1 workflow valid\n" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "sweep.yaml")
	src := `schedule: "@every 500ms"
on:
  - schedule: "0 25 * * *"
    repo: o/r
  - schedule: "@daily"
    repo: o/r
    timezone: Europe/Nowhere
steps: [{id: a, run: x}]
`
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "validate", bad)
	want := []string{
		bad + `:1:11: schedule: @every 500ms: the interval must be at least 1s`,
		bad + `:1:11: schedule: a scheduled workflow needs repo: the repository (owner/name) its runs act on`,
		bad + `:3:15: on: schedule "0 25 * * *": hour: 25 is out of range (0-23)`,
		bad + `:7:15: on: unknown timezone "Europe/Nowhere" (an IANA zone name: Europe/Berlin, UTC)`,
	}
	if code != 1 || out != strings.Join(want, "\n")+"\n" {
		t.Errorf("code %d, stdout:\n%s\nwant:\n%s", code, out, strings.Join(want, "\n"))
	}
}
