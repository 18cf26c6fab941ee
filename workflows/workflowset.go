package workflows

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReloadInterval is how often WorkflowSet.Run polls its directory
// when given no interval.
const DefaultReloadInterval = 2 * time.Second

// WorkflowSet is the workflows of a directory of workflow files (*.yaml,
// *.yml; hidden files and subdirectories are ignored), reloaded when they
// change: ingress matches deliveries against Workflows, the runner finds a
// run's workflow with Lookup. A file that becomes invalid keeps its last good
// version active and each of its problems is logged as file:line:col; a
// deleted file's workflows are dropped. Workflows is lock-free. The set
// is the server's: files are checked with ParseOptions{Server: true}.
type WorkflowSet struct {
	dir    string
	logger *slog.Logger

	active  atomic.Pointer[[]*Workflow]
	changed chan struct{} // a signal after each change of active (Changed)

	mu    sync.Mutex // serializes Reload
	files map[string]*fileState
}

// fileState is what the set knows about one file.
type fileState struct {
	modTime time.Time
	size    int64
	digest  [sha256.Size]byte // of the content last examined, valid or not
	good    []*Workflow       // last good version; nil if it never loaded
	valid   bool              // the content last examined loaded without problems
}

// NewWorkflowSet loads every workflow file in dir once. Invalid files are
// logged and skipped; an unreadable directory is an error.
func NewWorkflowSet(dir string, logger *slog.Logger) (*WorkflowSet, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &WorkflowSet{dir: dir, logger: logger, files: map[string]*fileState{}, changed: make(chan struct{}, 1)}
	empty := []*Workflow{}
	s.active.Store(&empty)
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Workflows returns the active workflows, sorted by name. The slice is
// shared: callers must not modify it.
func (s *WorkflowSet) Workflows() []*Workflow {
	return *s.active.Load()
}

// Lookup returns the active workflow of that name.
func (s *WorkflowSet) Lookup(name string) (*Workflow, bool) {
	for _, wf := range s.Workflows() {
		if wf.Name == name {
			return wf, true
		}
	}
	return nil, false
}

// Changed receives after a reload changed the active workflows: one
// signal stands for every change since it was last received, so a slow
// reader misses none. It is for one reader (the schedule sync).
func (s *WorkflowSet) Changed() <-chan struct{} { return s.changed }

// Run polls the directory every interval until ctx is done.
func (s *WorkflowSet) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultReloadInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Reload(); err != nil {
				s.logger.Error("reloading workflows", "dir", s.dir, "err", err)
			}
		}
	}
}

// Reload examines the directory once: new and changed files are loaded,
// deleted ones dropped. It returns an error only when the directory cannot be
// listed; problems in files are logged.
func (s *WorkflowSet) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()

	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("listing workflow directory %s: %w", s.dir, err)
	}
	changed := false
	seen := map[string]bool{}
	for _, de := range entries {
		name := de.Name()
		if strings.HasPrefix(name, ".") || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		path := filepath.Join(s.dir, name)
		info, err := os.Stat(path)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		seen[path] = true
		if s.examine(path, info) {
			changed = true
		}
	}
	for path := range s.files {
		if !seen[path] {
			delete(s.files, path)
			s.logger.Info("workflow file removed; its workflows are dropped", "file", path)
			changed = true
		}
	}
	if changed {
		s.publish()
	}
	return nil
}

// examine loads path if it changed since last time and reports whether the
// set of good workflows changed.
func (s *WorkflowSet) examine(path string, info os.FileInfo) bool {
	st := s.files[path]
	if st != nil && st.modTime.Equal(info.ModTime()) && st.size == info.Size() {
		return false
	}
	content, err := os.ReadFile(path)
	if err != nil {
		s.logger.Error("reading workflow file", "file", path, "err", err)
		return false
	}
	digest := sha256.Sum256(content)
	if st == nil {
		st = &fileState{}
		s.files[path] = st
	} else if st.digest == digest {
		st.modTime, st.size = info.ModTime(), info.Size()
		return false
	}
	st.modTime, st.size, st.digest = info.ModTime(), info.Size(), digest

	wfs, err := LoadWith(ParseOptions{Server: true}, path)
	if err != nil {
		st.valid = false
		s.logProblems(path, st.good != nil, err)
		return false
	}
	st.valid = true
	st.good = wfs
	for _, w := range wfs {
		s.logger.Info("workflow loaded", "file", path, "workflow", w.Name, "digest", w.Digest)
	}
	return true
}

// logProblems logs each file:line:col problem of an invalid file.
func (s *WorkflowSet) logProblems(path string, keptOld bool, err error) {
	msg := "workflow file invalid; it is not active"
	if keptOld {
		msg = "workflow file invalid; keeping its last good version"
	}
	var problems Problems
	if !errors.As(err, &problems) {
		s.logger.Error(msg, "file", path, "err", err)
		return
	}
	for _, p := range problems {
		s.logger.Error(msg, "file", path, "problem", p.Error())
	}
}

// publish rebuilds the active slice from every file's good version. When two
// files define the same workflow name the file that sorts first wins and the
// other is logged.
func (s *WorkflowSet) publish() {
	paths := make([]string, 0, len(s.files))
	for p := range s.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	byName := map[string]string{}
	var out []*Workflow
	for _, p := range paths {
		for _, w := range s.files[p].good {
			if first, dup := byName[w.Name]; dup {
				s.logger.Error("duplicate workflow name; ignoring the later file", "workflow", w.Name, "file", p, "first", first)
				continue
			}
			byName[w.Name] = p
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *Workflow) int { return strings.Compare(a.Name, b.Name) })
	if out == nil {
		out = []*Workflow{}
	}
	s.active.Store(&out)
	select {
	case s.changed <- struct{}{}:
	default: // a signal is pending already
	}
}
