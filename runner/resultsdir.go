package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/results"
	"github.com/hookrun/hookrun/workflows"
)

// makeResultsDir settles the run's results folder ($HOOKRUN_RESULTS):
// RunSpec.Results, which its preparer made writable by the step user
// (contract.Workspace.Results), or, when the run has none (`hookrun run`,
// tests), a folder of the run's own, private to hookrun's user, removed
// at the run's end. Either lies outside the workspace.
func (x *execution) makeResultsDir() error {
	dir := x.spec.Results
	if dir == "" {
		tmp, err := os.MkdirTemp("", "hookrun-results-")
		if err != nil {
			return fmt.Errorf("creating results folder: %w", err)
		}
		x.resultsTmp, dir = tmp, tmp
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating results folder: %w", err)
	}
	x.resultsDir = dir
	x.results = results.NewReader(dir, results.Options{Roots: x.resultsRoots()})
	return nil
}

// removeResultsDir removes the folder makeResultsDir made (not
// RunSpec.Results, which belongs to whoever prepared the run).
func (x *execution) removeResultsDir() {
	if x.resultsTmp == "" {
		return
	}
	if err := os.RemoveAll(x.resultsTmp); err != nil {
		x.e.cfg.Logger.Warn("removing the results folder", "run", x.spec.ID, "err", err)
	}
}

// resultsRoots are the names the workspace has where the run's steps run:
// its host path (also its path in a sandbox), /workspace in containers,
// and the container paths a volume `.:PATH` mounts it at.
func (x *execution) resultsRoots() results.Roots {
	roots := results.Roots{}
	if x.spec.Workspace != "" {
		roots = append(roots, x.spec.Workspace)
	}
	roots = append(roots, containerWorkspace)
	containers := []*workflows.Container{x.wf.Container}
	for i := range x.wf.Steps {
		containers = append(containers, x.wf.Steps[i].Container)
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
