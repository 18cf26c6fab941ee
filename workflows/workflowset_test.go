package workflows

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkWorkflow is one workflow whose step's run: is on line 4.
const checkWorkflow = "name: pr-check\nsteps:\n  - id: check\n    run: make check\n"

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// touch moves a file's mtime forward so a change is seen even on file
// systems with coarse timestamps.
func touch(t *testing.T, path string, step int) {
	t.Helper()
	ts := time.Now().Add(time.Duration(step) * time.Second)
	if err := os.Chtimes(path, ts, ts); err != nil {
		t.Fatal(err)
	}
}

func names(ws []*Workflow) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name+"@"+filepath.Base(w.File))
	}
	return strings.Join(out, ",")
}

func reload(t *testing.T, s *WorkflowSet) {
	t.Helper()
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
}

func TestWorkflowSetReload(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := writeFile(t, dir, "a.yaml", checkWorkflow)
	writeFile(t, dir, "broken.yml", "name: broken\nsteps:\n  - id: x\n    action: shell.run\n")
	writeFile(t, dir, "notes.txt", "not a workflow")
	writeFile(t, dir, ".hidden.yaml", "name: [")
	s, err := NewWorkflowSet(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s.Workflows()); got != "pr-check@a.yaml" {
		t.Fatalf("initial workflows %q", got)
	}
	if !regexp.MustCompile(`workflow file invalid; it is not active.*problem=".*broken\.yml:4:13: step \\"x\\": unknown action`).MatchString(logs.String()) {
		t.Fatalf("invalid file at start not logged with file:line:col:\n%s", logs.String())
	}
	good := s.Workflows()[0]

	// Edited to be invalid: the last good version stays, the problem is logged.
	if err := os.WriteFile(a, []byte(strings.Replace(checkWorkflow, "run: make check", "action: shell.run", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	touch(t, a, 1)
	reload(t, s)
	if ws := s.Workflows(); len(ws) != 1 || ws[0] != good {
		t.Fatalf("after an invalid edit: %q, want the last good version kept", names(ws))
	}
	if !regexp.MustCompile(`workflow file invalid; keeping its last good version.*problem=".*a\.yaml:4:13: step \\"check\\": unknown action`).MatchString(logs.String()) {
		t.Fatalf("file:line:col problem not logged:\n%s", logs.String())
	}

	// Fixed: the new version replaces the old one.
	if err := os.WriteFile(a, []byte(strings.Replace(checkWorkflow, "make check", "make check-fixed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	touch(t, a, 2)
	reload(t, s)
	ws := s.Workflows()
	if len(ws) != 1 || ws[0] == good || ws[0].Digest == good.Digest || ws[0].Steps[0].Run != "make check-fixed" {
		t.Fatalf("after a fix: %q, want the new version", names(ws))
	}

	// Unchanged content with a new mtime does not reload.
	touch(t, a, 3)
	reload(t, s)
	if s.Workflows()[0] != ws[0] {
		t.Fatal("touching a file without changing it reloaded it")
	}

	// A second file with the same name: the first file (by name) wins.
	b := writeFile(t, dir, "b.yaml", checkWorkflow)
	reload(t, s)
	if got := names(s.Workflows()); got != "pr-check@a.yaml" {
		t.Fatalf("with a duplicate: %q", got)
	}
	if !strings.Contains(logs.String(), "duplicate workflow name") {
		t.Errorf("duplicate not logged:\n%s", logs.String())
	}

	// Deleted: dropped (and the duplicate takes over).
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	reload(t, s)
	if got := names(s.Workflows()); got != "pr-check@b.yaml" {
		t.Fatalf("after deleting a.yaml: %q", got)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	reload(t, s)
	if ws := s.Workflows(); ws == nil || len(ws) != 0 {
		t.Fatalf("after deleting every file: %q", names(ws))
	}
}

func TestWorkflowSetMissingDir(t *testing.T) {
	if _, err := NewWorkflowSet(filepath.Join(t.TempDir(), "nope"), nil); err == nil {
		t.Fatal("NewWorkflowSet on a missing directory succeeded")
	}
}

// Workflows is read lock-free while Reload swaps the slice.
func TestWorkflowSetConcurrentReads(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "pr.yaml", checkWorkflow)
	s, err := NewWorkflowSet(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if ws := s.Workflows(); len(ws) != 1 || ws[0].Name != "pr-check" {
					t.Errorf("read %q mid-reload", names(ws))
					return
				}
			}
		})
	}
	for i := range 20 {
		content := strings.Replace(checkWorkflow, "make check", "make check-"+string(rune('a'+i)), 1)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		touch(t, p, i+1)
		reload(t, s)
	}
	close(stop)
	wg.Wait()
}

// Lookup finds an active workflow by name, and nothing for other names.
func TestWorkflowSetLookup(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "pr.yaml", checkWorkflow)
	set, err := NewWorkflowSet(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if wf, ok := set.Lookup("pr-check"); !ok || wf.Name != "pr-check" {
		t.Fatalf("Lookup(pr-check) = %v, %v", wf, ok)
	}
	if wf, ok := set.Lookup("nope"); ok || wf != nil {
		t.Fatalf("Lookup(nope) = %v, %v, want nothing", wf, ok)
	}
}

// The server's set checks files in server mode: a root working_dir outside
// the workspace keeps the file out, one inside lets it in.
func TestWorkflowSetServerRules(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "out.yaml", "working_dir: /etc\nsteps: [{id: a, run: x}]\n")
	writeFile(t, dir, "in.yaml", "working_dir: sub\nsteps: [{id: a, run: x}]\n")
	set, err := NewWorkflowSet(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(set.Workflows()); got != "in@in.yaml" {
		t.Errorf("active %s, want in@in.yaml", got)
	}
}

// Changed signals a reload that changed the active workflows, once for
// any number of them, and not a reload that changed nothing.
func TestWorkflowSetChanged(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", checkWorkflow)
	s, err := NewWorkflowSet(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	pending := func() bool {
		select {
		case <-s.Changed():
			return true
		default:
			return false
		}
	}
	if !pending() {
		t.Error("no signal after the first load")
	}
	reload(t, s)
	if pending() {
		t.Error("a signal after a reload that changed nothing")
	}
	writeFile(t, dir, "b.yaml", strings.Replace(checkWorkflow, "pr-check", "other", 1))
	reload(t, s)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	reload(t, s)
	if !pending() || pending() {
		t.Error("two changes are not one pending signal")
	}
}
