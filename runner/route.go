package runner

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// place is where a step runs, as far as its environment is concerned.
type place int

const (
	placeHost      place = iota // host paths, the base environment
	placeContainer              // the workspace is at /workspace; the image brings PATH and HOME
	placeSandbox                // host paths (sbx clones the workspace at its path); the VM brings PATH and HOME
	placeCount
)

// route is where a step runs.
type route struct {
	exec  contract.Executor
	place place
	err   error
}

// routeFor picks the executor of a step: its own container; a harness whose
// binary is sbx on the host as written; the workflow's sandbox; the root
// container; else the host.
func (x *execution) routeFor(st *workflows.Step) route {
	p := x.e.cfg.Providers
	if st.Container != nil {
		if p.Containers == nil {
			return route{err: fmt.Errorf("step %s has its own container but this runner has no container executor configured", st.ID)}
		}
		return route{exec: p.Containers, place: placeContainer}
	}
	if st.Harness != nil {
		if h, ok := x.wf.LookupHarness(st.Harness.Provider); ok && h.RunsSbx() {
			return route{exec: p.Host, place: placeHost}
		}
	}
	if x.session != nil {
		return route{exec: x.session.Session, place: x.session.place}
	}
	return route{exec: p.Host, place: placeHost}
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
	case placeHost:
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
