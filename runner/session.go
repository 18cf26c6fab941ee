package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// sessionCloseTimeout bounds closing a run's session (removing the root
// container or the sandbox), which happens even after a cancel.
const sessionCloseTimeout = 2 * time.Minute

// runSession is a run's open sandbox or root container.
type runSession struct {
	contract.Session
	kind  string // "sandbox" or "container", for the run log
	place place  // where the steps executed in it run
}

// sessionPlan is what a workflow asks to open before its first step.
type sessionPlan struct {
	sandbox contract.Sandbox
	what    string // "sandbox" or "root container", for errors
	session runSession
}

// plan returns what to open for the workflow: nil when it has neither
// `sandbox:` nor a root `container:`; an error when this runner has no
// provider for it.
func (x *execution) plan() (*sessionPlan, error) {
	p := x.e.cfg.Providers
	switch {
	case x.wf.Sandbox != nil:
		if p.SBX == nil {
			return nil, fmt.Errorf("opening sandbox: this runner has no %q sandbox provider configured", x.wf.Sandbox.Provider)
		}
		return &sessionPlan{sandbox: p.SBX, what: "sandbox", session: runSession{kind: "sandbox", place: placeSandbox}}, nil
	case x.wf.Container != nil:
		if p.RootContainer == nil {
			return nil, errors.New("opening root container: this runner has no container provider configured")
		}
		return &sessionPlan{sandbox: p.RootContainer, what: "root container", session: runSession{kind: "container", place: placeContainer}}, nil
	}
	return nil, nil
}

// openSession opens the workflow's sandbox or root container, if any.
func (x *execution) openSession(ctx context.Context) error {
	pl, err := x.plan()
	if err != nil {
		x.sessionErr = err
		return err
	}
	if pl == nil {
		return nil
	}
	if pl.session.place == placeSandbox {
		x.sandboxName = contract.SandboxName(x.spec.ID)
	}
	env := x.prefix(pl.session.place)
	s, err := pl.sandbox.Open(ctx, contract.OpenRequest{
		RunID:     x.spec.ID,
		Workspace: x.spec.Workspace,
		EventFile: x.eventFile,
		Results:   x.resultsDir,
		Workflow:  x.wf,
		Env:       append([]workflows.EnvVar(nil), env.vars...),
		Stdout:    x.sys,
		Stderr:    x.sys,
	})
	if err != nil {
		x.sandboxName = ""
		x.sessionErr = fmt.Errorf("opening %s: %w", pl.what, err)
		return x.sessionErr
	}
	pl.session.Session = s
	x.session = &pl.session
	return nil
}

// closeSession closes the session whatever happened, with a fresh context.
func (x *execution) closeSession(ctx context.Context) {
	if x.session == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionCloseTimeout)
	defer cancel()
	if err := x.session.Close(cctx); err != nil {
		msg := x.red.String(err.Error())
		x.sysf("closing %s: %s", x.session.kind, msg)
		x.e.cfg.Logger.Warn("closing run session", "run", x.spec.ID, "kind", x.session.kind, "err", msg)
	}
}
