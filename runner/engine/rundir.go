package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/results"
	"github.com/hookrun/hookrun/workflows"
)

// runDir is a host folder of the run outside its workspace (the results
// folder): the one its preparer gave (RunSpec.Results, which belongs to
// whoever prepared the run), else one the run makes for itself and
// removes at its end.
type runDir struct {
	what string // "results folder": for errors and the log
	path string // host path; "" until made
	tmp  string // the folder make created; "" when given
}

// make settles d: given, created if missing with perm; else a new folder
// named after pattern with perm (MkdirTemp makes it 0700).
func (d *runDir) make(given, pattern string, perm os.FileMode) error {
	dir := given
	if dir == "" {
		tmp, err := os.MkdirTemp("", pattern)
		if err != nil {
			return fmt.Errorf("creating %s: %w", d.what, err)
		}
		d.tmp, dir = tmp, tmp
		if perm != 0o700 {
			if err := os.Chmod(dir, perm); err != nil {
				return fmt.Errorf("creating %s: %w", d.what, err)
			}
		}
	} else if err := os.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("creating %s: %w", d.what, err)
	}
	d.path = dir
	return nil
}

// remove removes the folder make created (not a given one). The folder
// as the run left it (empty) goes with one syscall; what steps left in
// it, with os.RemoveAll.
func (d *runDir) remove(log *slog.Logger, runID string) {
	if d.tmp == "" {
		return
	}
	if err := syscall.Rmdir(d.tmp); err == nil || errors.Is(err, syscall.ENOENT) {
		return
	}
	if err := os.RemoveAll(d.tmp); err != nil {
		log.Warn("removing the "+d.what, "run", runID, "err", err)
	}
}

// writeEventFile writes the raw payload for HOOKRUN_EVENT_PATH at given
// (RunSpec.EventFile), or, when the run has none, into a new file of its
// own in TMPDIR (own), which the run removes at its end: a file alone, not
// a directory of its own, so a run makes and removes one folder fewer
// (docs/performance.md, "The engine's own cost per step"). Either lies
// outside the workspace: the payload never shows in a checkout's `git
// status`. The file is readable by everyone and writable only by hookrun,
// so that host steps running as another user read it and cannot change it
// (a given file's directory is its preparer's to make so:
// contract.Workspace.EventFile; the file the run makes is its own, in a
// directory where only its owner may remove or rename it, as TMPDIR is).
func writeEventFile(ev *workflows.Event, given string) (file string, own bool, err error) {
	raw := []byte(ev.Raw)
	if len(raw) == 0 {
		ev := *ev
		if ev.Chat != nil { // a chat command's response_url is hookrun's to post to, not the steps'
			c := *ev.Chat
			c.ResponseURL = ""
			ev.Chat = &c
		}
		if raw, err = json.Marshal(&ev); err != nil {
			return "", false, fmt.Errorf("encoding event: %w", err)
		}
	}
	if given != "" {
		if err := writeReadable(given, raw); err != nil {
			return "", false, fmt.Errorf("writing event file: %w", err)
		}
		return given, false, nil
	}
	if file, err = writeOwnReadable("hookrun-event-*.json", raw); err != nil {
		return "", false, fmt.Errorf("writing event file: %w", err)
	}
	return file, true, nil
}

// writeOwnReadable writes data to a new file in TMPDIR named after
// pattern (os.CreateTemp: created, never an existing file or link),
// readable by everyone, and returns its path.
func writeOwnReadable(pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := writeShared(f, data); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// removeOwnEventFile removes the event file the run made (writeEventFile's
// own), if any.
func (x *execution) removeOwnEventFile() {
	if !x.ownEventFile {
		return
	}
	if err := syscall.Unlink(x.eventFile); err != nil && !errors.Is(err, syscall.ENOENT) {
		x.e.cfg.Logger.Warn("removing the event file", "run", x.spec.ID, "err", err)
	}
}

// writeReadable writes data to the file at path, created or truncated,
// readable by everyone whatever the umask; a symbolic link at path is
// refused, not followed.
func writeReadable(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	return writeShared(f, data)
}

// writeShared writes data to f, makes it readable by everyone (mode 0644,
// whatever the umask or the mode it was created with) and closes it.
func writeShared(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openResults settles the run's results folder ($HOOKRUN_RESULTS) in d:
// RunSpec.Results (given), which its preparer made writable by the step
// user (contract.Workspace.Results), or, when the run has none (`hookrun
// run`, tests), a folder of the run's own, private to hookrun's user,
// removed at the run's end; and returns the reader that reads it after
// each step.
func openResults(d *runDir, given, workspace string, wf *workflows.Workflow) (*results.Reader, error) {
	if err := d.make(given, "hookrun-results-", 0o700); err != nil {
		return nil, err
	}
	return results.NewReader(d.path, results.Options{Roots: resultsRoots(workspace, wf)}), nil
}

// resultsRoots are the names the workspace has where the run's steps run:
// its host path (also its path in a sandbox), /workspace in containers,
// and the container paths a volume `.:PATH` mounts it at.
func resultsRoots(workspace string, wf *workflows.Workflow) results.Roots {
	roots := results.Roots{}
	if workspace != "" {
		roots = append(roots, workspace)
	}
	roots = append(roots, containerWorkspace)
	containers := []*workflows.Container{wf.Container}
	for i := range wf.Steps {
		containers = append(containers, wf.Steps[i].Container)
	}
	for _, c := range containers {
		if c == nil {
			continue
		}
		for _, v := range c.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && path.Clean(parts[0]) == "." && path.IsAbs(parts[1]) {
				roots = append(roots, path.Clean(parts[1]))
			}
		}
	}
	return roots
}

// scanResults reads what the step left in the results folder. A malformed
// result file fails the step (a step that failed already keeps its own
// error, the file's added) with its position; the run log says it too.
func (x *execution) scanResults(ctx context.Context, st *workflows.Step, out *stepOutcome) {
	if x.results == nil || ctx.Err() != nil && errors.Is(context.Cause(ctx), contract.ErrAbandoned) {
		return
	}
	err := x.results.Scan()
	if err == nil {
		return
	}
	msg := x.red.String("results: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	x.stepSysf(st.ID, "%s", msg)
	switch {
	case out.status == workflows.StatusSucceeded:
		out.status, out.err = workflows.StatusFailed, msg
	case out.err == "":
		out.err = msg
	default:
		out.err += "; " + msg
	}
}

// collectResults is what the results folder holds at the run's end,
// redacted; nil when nothing.
func (x *execution) collectResults() *contract.Results {
	if x.results == nil {
		return nil
	}
	res := x.results.Results()
	if res == nil {
		return nil
	}
	red := x.red.String
	for i := range res.Findings {
		f := &res.Findings[i]
		f.Path, f.Rule, f.Message, f.Tool, f.File = red(f.Path), red(f.Rule), red(f.Message), red(f.Tool), red(f.File)
		for j := range f.Suggestions {
			s := &f.Suggestions[j]
			s.Path, s.Text = red(s.Path), red(s.Text)
		}
	}
	for i := range res.Notes {
		res.Notes[i] = red(res.Notes[i])
		x.sysf("results: %s", res.Notes[i])
	}
	if a := res.Actions; a != nil {
		redactActions(&a.ActionSet, red)
		for i := range a.Targets {
			redactActions(&a.Targets[i].ActionSet, red)
		}
	}
	return res
}

func redactActions(s *contract.ActionSet, red func(string) string) {
	s.Comment = red(s.Comment)
	for _, ar := range []*contract.AddRemove{s.Labels, s.Assignees} {
		if ar == nil {
			continue
		}
		for i := range ar.Add {
			ar.Add[i] = red(ar.Add[i])
		}
		for i := range ar.Remove {
			ar.Remove[i] = red(ar.Remove[i])
		}
	}
}
