package engine

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
		Results:   x.resultsDir.path,
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

// deliverTimeout bounds handing on a run's collected commits (the push and
// the draft pull request).
const deliverTimeout = 5 * time.Minute

// deliver hands on the commits the agent made in the run's sandbox
// (sandbox.push), once the session is closed: the sandbox is gone and no
// step or handler runs any more, so nothing of the run sees the
// credentials the push uses. It returns nil when the run has nothing to
// deliver: no sandbox, no checkout, push: none, or an abandoned run (the
// runner that executes it again delivers). A delivery that fails fails a
// run that had succeeded: the agent's work would otherwise be lost
// silently.
func (x *execution) deliver(ctx context.Context, end *runEnd) *workflows.Delivery {
	sb := x.wf.Sandbox
	if sb == nil || !x.wf.Checkout || sb.Push == workflows.PushNone || end.abandoned || x.session == nil {
		return nil
	}
	col, ok := x.session.Session.(contract.Collector)
	if !ok {
		return nil // a sandbox that collects nothing has nothing to deliver
	}
	d := x.deliverOnce(ctx, end, col)
	d.Note = x.red.String(d.Note) // git's and the forge's words, which could quote a secret
	log := x.e.cfg.Logger.With("run", x.spec.ID, "workflow", x.wf.Name, "outcome", d.Outcome)
	switch d.Outcome {
	case workflows.DeliveryPushed:
		log.Info("delivered the agent's commits", "branch", d.Branch, "commits", d.Commits, "head", d.Head)
		x.sysf("delivery: pushed %d commit(s) to branch %s (%s)", d.Commits, d.Branch, d.Head)
		if d.PullRequest != nil {
			x.sysf("delivery: draft pull/merge request %d %s", d.PullRequest.Number, d.PullRequest.URL)
		}
		if d.Note != "" {
			x.sysf("delivery: %s", d.Note)
		}
	case workflows.DeliveryNoCommits:
		x.sysf("delivery: the agent made no commits; nothing pushed")
	case workflows.DeliveryFailed:
		log.Warn("delivering the agent's commits failed", "err", d.Note)
		x.sysf("delivery failed: %s", d.Note)
		if end.status == workflows.StatusSucceeded {
			end.status = workflows.StatusFailed
			end.err = errors.New("delivering the agent's commits: " + d.Note)
		}
	default:
		x.sysf("delivery %s: %s", d.Outcome, d.Note)
	}
	return &d
}

// deliverOnce collects what the session gathered and asks the deliverer to
// push it.
func (x *execution) deliverOnce(ctx context.Context, end *runEnd, col contract.Collector) workflows.Delivery {
	if end.status == workflows.StatusCancelled {
		return workflows.Delivery{Outcome: workflows.DeliverySkipped, Note: "the run was cancelled: nothing pushed"}
	}
	branch, err := col.Collected()
	if err != nil {
		return workflows.Delivery{Outcome: workflows.DeliveryFailed, Note: fmt.Sprintf("collecting the agent's commits: %v", err)}
	}
	dl := x.e.cfg.Providers.Deliverer
	if dl == nil {
		return workflows.Delivery{Outcome: workflows.DeliverySkipped,
			Note: "nothing pushed: this runner has no forge credentials to push with (hookrun run); the agent's commits were collected on branch " + branch + " of the workspace"}
	}
	dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	d, err := dl.Deliver(dctx, contract.DeliverRequest{
		RunID:     x.spec.ID,
		Workflow:  x.wf,
		Event:     x.ev,
		Workspace: x.spec.Workspace,
		Branch:    branch,
		BaseSHA:   x.spec.HeadSHA,
	})
	if err != nil {
		d.Outcome, d.Note = workflows.DeliveryFailed, err.Error()
	}
	return d
}
