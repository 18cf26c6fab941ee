package contracttest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Checkout is an event whose head a Workspaces implementation can check
// out, and what the checkout must hold.
type Checkout struct {
	Event   *workflows.Event
	HeadSHA string            // the commit Prepare must report
	Files   map[string]string // path (slash-separated, relative) → content
}

// WorkspacesOptions adapts the Workspaces suite to an implementation.
type WorkspacesOptions struct {
	// Checkout, when set, returns an event to check out; without it the
	// checkout subtests skip.
	Checkout func(t *testing.T) Checkout
}

// RunWorkspaces runs the conformance suite of a contract.Workspaces:
// Prepare makes an empty, writable workspace (or a checkout of the event's
// head) and the run's own HOME and TMPDIR; a second Prepare of a run
// replaces what the first left; runs never share a directory; Remove
// deletes everything Prepare made, and removing what is gone is not an
// error. newWorkspaces returns a fresh implementation for each subtest.
func RunWorkspaces(t *testing.T, newWorkspaces func(t *testing.T) contract.Workspaces, opts WorkspacesOptions) {
	s := &workspacesSuite{newWorkspaces: newWorkspaces, opts: opts}
	t.Run("Empty", s.empty)
	t.Run("Checkout", s.checkout)
	t.Run("PrepareReplacesEarlierAttempt", func(t *testing.T) { s.replaces(t, false) })
	t.Run("CheckoutReplacesEarlierAttempt", func(t *testing.T) { s.replaces(t, true) })
	t.Run("RunsApart", s.runsApart)
	t.Run("Remove", s.remove)
}

type workspacesSuite struct {
	newWorkspaces func(t *testing.T) contract.Workspaces
	opts          WorkspacesOptions
}

func runID() string { return newRunID(defaultRunIDPrefix) }

// prepare calls Prepare (with the Checkout event when checkout is set) and
// checks what every Workspace must be.
func (s *workspacesSuite) prepare(t *testing.T, ws contract.Workspaces, id string, checkout bool) contract.Workspace {
	t.Helper()
	ev := &workflows.Event{}
	if checkout {
		ev = s.opts.Checkout(t).Event
	}
	w, err := ws.Prepare(context.Background(), id, ev, contract.PrepareOptions{Checkout: checkout, HostSteps: true})
	if err != nil {
		t.Fatalf("Prepare(%s, checkout %t): %v", id, checkout, err)
	}
	t.Cleanup(func() { _ = ws.Remove(id) })
	if !filepath.IsAbs(w.Dir) {
		t.Fatalf("Workspace.Dir %q is not an absolute path", w.Dir)
	}
	for _, d := range dirsOf(w) {
		if err := os.WriteFile(filepath.Join(d, "hookrun-contracttest-probe"), nil, 0o644); err != nil {
			t.Errorf("directory %s is not writable: %v", d, err)
		}
		_ = os.Remove(filepath.Join(d, "hookrun-contracttest-probe"))
	}
	if w.Home != "" && (w.Home == w.Dir || w.Home == w.TmpDir) || w.TmpDir != "" && w.TmpDir == w.Dir {
		t.Errorf("workspace, HOME and TMPDIR are not three directories: %+v", w)
	}
	if w.EventFile != "" {
		if rel, err := filepath.Rel(w.Dir, w.EventFile); err == nil && !strings.HasPrefix(rel, "..") {
			t.Errorf("Workspace.EventFile %s lies in the workspace %s: the payload would show in git status", w.EventFile, w.Dir)
		}
		if fi, err := os.Stat(filepath.Dir(w.EventFile)); err != nil || !fi.IsDir() {
			t.Errorf("the directory of Workspace.EventFile %s is not there: %v", w.EventFile, err)
		}
	}
	return w
}

// dirsOf lists the directories of w ("" ones left out).
func dirsOf(w contract.Workspace) []string {
	var out []string
	for _, d := range []string{w.Dir, w.Home, w.TmpDir, w.Results} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

func (s *workspacesSuite) needCheckout(t *testing.T) {
	if s.opts.Checkout == nil {
		t.Skip("no WorkspacesOptions.Checkout")
	}
}

func (s *workspacesSuite) empty(t *testing.T) {
	w := s.prepare(t, s.newWorkspaces(t), runID(), false)
	if w.HeadSHA != "" {
		t.Errorf("HeadSHA %q without checkout, want \"\"", w.HeadSHA)
	}
	if entries, err := os.ReadDir(w.Dir); err != nil || len(entries) > 0 {
		t.Errorf("workspace %s: %d entries, %v; want an empty directory", w.Dir, len(entries), err)
	}
}

func (s *workspacesSuite) checkout(t *testing.T) {
	s.needCheckout(t)
	want := s.opts.Checkout(t)
	w := s.prepare(t, s.newWorkspaces(t), runID(), true)
	if w.HeadSHA != want.HeadSHA {
		t.Errorf("HeadSHA %q, want %q", w.HeadSHA, want.HeadSHA)
	}
	checkFiles(t, w.Dir, want.Files)
}

func checkFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(b) != content {
			t.Errorf("checkout file %s: %q, %v; want %q", name, b, err, content)
		}
	}
}

// replaces prepares a run twice, as a redelivered run does, and checks that
// nothing the first attempt's steps left survives.
func (s *workspacesSuite) replaces(t *testing.T, checkout bool) {
	if checkout {
		s.needCheckout(t)
	}
	ws, id := s.newWorkspaces(t), runID()
	first := s.prepare(t, ws, id, checkout)
	for _, d := range dirsOf(first) {
		if err := os.WriteFile(filepath.Join(d, "left-by-attempt-1"), []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	second := s.prepare(t, ws, id, checkout)
	for _, d := range append(dirsOf(first), dirsOf(second)...) {
		if _, err := os.Stat(filepath.Join(d, "left-by-attempt-1")); !os.IsNotExist(err) {
			t.Errorf("%s still holds what the first attempt left (%v)", d, err)
		}
	}
	if checkout {
		checkFiles(t, second.Dir, s.opts.Checkout(t).Files)
	}
}

func (s *workspacesSuite) runsApart(t *testing.T) {
	ws := s.newWorkspaces(t)
	a, b := s.prepare(t, ws, runID(), false), s.prepare(t, ws, runID(), false)
	seen := map[string]bool{}
	for _, d := range append(dirsOf(a), dirsOf(b)...) {
		if seen[d] {
			t.Errorf("two runs share directory %s: %+v and %+v", d, a, b)
		}
		seen[d] = true
	}
	if err := os.WriteFile(filepath.Join(a.Dir, "of-run-a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "of-run-a")); !os.IsNotExist(err) {
		t.Errorf("a file of one run's workspace shows in another's (%v)", err)
	}
}

func (s *workspacesSuite) remove(t *testing.T) {
	ws, id := s.newWorkspaces(t), runID()
	w := s.prepare(t, ws, id, false)
	if err := os.WriteFile(filepath.Join(w.Dir, "made-by-a-step"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ws.Remove(id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, d := range dirsOf(w) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s survived Remove (%v)", d, err)
		}
	}
	if err := ws.Remove(id); err != nil {
		t.Errorf("Remove of a run already removed: %v, want nil", err)
	}
}
