package engine

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// place is where a step runs, as far as its environment is concerned.
type place int

const (
	placeHost      place = iota // host paths, the base environment
	placeContainer              // the workspace is at /workspace; the image brings PATH and HOME
	placeSandbox                // host paths (sbx clones the workspace at its path); the VM brings PATH and HOME
	placeHostSbx                // the host, for a harness that runs sbx itself: the base environment and what sbx needs (Config.SbxHostEnv)
	placeCount
)

// route is where a step runs.
type route struct {
	exec  contract.Executor
	place place
	err   error
}

// routeFor picks where a step runs: its own container; for an attempt of
// a harness h whose binary is sbx, the host, as written; the workflow's
// sandbox or root container; else the host. h is the harness of the
// attempt (the primary or a fallback), nil for a `run:` step: each attempt
// of a harness step is routed by its own binary, through the one
// predicate workflows.Harness.RunsSbx.
func (x *execution) routeFor(st *workflows.Step, h *workflows.Harness) route {
	p := x.e.cfg.Providers
	if st.Container != nil {
		if p.Containers == nil {
			return route{err: fmt.Errorf("step %s has its own container but this runner has no container executor configured", st.ID)}
		}
		return route{exec: p.Containers, place: placeContainer}
	}
	if h != nil && h.RunsSbx() {
		if err := x.checkSbxBinary(h.Binary); err != nil {
			return route{err: err}
		}
		return route{exec: p.Host, place: placeHostSbx}
	}
	if x.session != nil {
		return route{exec: x.session.Session, place: x.session.place}
	}
	if x.sessionErr != nil {
		return route{err: x.sessionErr}
	}
	return route{exec: p.Host, place: placeHost}
}

// checkSbxBinary refuses an sbx binary the pull request could have put
// there: a relative path (resolved in the workspace) or one inside the
// workspace. The step would run it on the host with sbx's login state.
func (x *execution) checkSbxBinary(bin string) error {
	if !strings.Contains(bin, "/") {
		return nil // looked up in the runner's PATH
	}
	if !filepath.IsAbs(bin) {
		return fmt.Errorf("harness binary %s is a relative path: it would run a file of the workspace, which the pull request controls, on the host; use sbx from PATH or an absolute path", bin)
	}
	if ws := x.spec.Workspace; ws != "" {
		if rel, err := filepath.Rel(ws, filepath.Clean(bin)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return fmt.Errorf("harness binary %s lies inside the run's workspace, which the pull request controls; use sbx from PATH or an absolute path outside it", bin)
		}
	}
	return nil
}

// stepDir resolves a step's working_dir for its route: a relative one
// below the workflow's root working_dir, a relative root one below the
// workspace. A step container sees the workspace at /workspace, so there the
// root working_dir applies only when it lies in the workspace.
func (x *execution) stepDir(st *workflows.Step, r route) string {
	root, wd := x.wf.WorkingDir, st.WorkingDir
	if r.place == placeContainer && filepath.IsAbs(root) {
		root = "" // a host path: only its part inside the workspace means something in the container
		if rel, err := filepath.Rel(x.spec.Workspace, x.wf.WorkingDir); x.spec.Workspace != "" && err == nil && filepath.IsLocal(rel) {
			root = filepath.ToSlash(rel)
		}
	}
	if root != "" && !path.IsAbs(wd) && !filepath.IsAbs(wd) {
		wd = filepath.Join(root, wd)
	}
	switch r.place {
	case placeContainer:
		if wd == "" || path.IsAbs(wd) {
			return wd
		}
		return path.Join(containerWorkspace, filepath.ToSlash(wd))
	case placeHost, placeHostSbx:
		if filepath.IsAbs(wd) {
			return wd
		}
		if x.spec.Workspace == "" {
			return wd
		}
		return filepath.Join(x.spec.Workspace, wd)
	default: // sandbox: the workspace keeps its host path inside the VM
		if wd == "" || path.IsAbs(wd) || x.spec.Workspace == "" {
			return wd
		}
		return path.Join(x.spec.Workspace, filepath.ToSlash(wd))
	}
}
