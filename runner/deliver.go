package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

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
