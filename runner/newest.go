package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// NewestStore remembers the newest run that reported under a key: it
// records runID unless a newer run (a greater ULID) did already, and then
// says so. *stores.GroupStore satisfies it.
type NewestStore interface {
	Advance(ctx context.Context, key, runID string) (newest bool, err error)
}

// NewestOnly wraps a Reporter so that a run never writes over the sticky
// comment (nor the commit status) of a newer run of the same workflow on
// the same pull request: once a newer run has reported, the older run's
// reports (an edit of a cancelled run, a final edit that arrives late) are
// dropped. Reports without a sticky comment pass as they are; so do all
// when the store cannot be read (a report never holds a run back).
//
// The actions of a dropped final report (actions.json) are not the
// comment's: they are still applied, by next when it is a
// contract.ActionApplier, in the order of the runs (ApplyActions). The
// returned reporter is an ActionApplier too, for the outbox's superseded
// reports.
func NewestOnly(next contract.Reporter, store NewestStore, log *slog.Logger) contract.Reporter {
	if log == nil {
		log = slog.Default()
	}
	return &newestOnly{next: next, store: store, log: log}
}

type newestOnly struct {
	next  contract.Reporter
	store NewestStore
	log   *slog.Logger
}

func (n *newestOnly) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if key := stickyKey(r); key != "" {
		newest, err := n.store.Advance(ctx, key, r.RunID)
		switch {
		case err != nil:
			n.log.Warn("checking for a newer run of the sticky comment; reporting anyway", "run", r.RunID, "err", err)
		case !newest && r.AsksActions():
			n.log.Info("a newer run reported in this sticky comment; applying only this run's actions", "run", r.RunID)
			return r.Ref, n.ApplyActions(ctx, r)
		case !newest:
			n.log.Info("a newer run reported in this sticky comment; dropping this run's report", "run", r.RunID, "phase", r.Phase)
			return r.Ref, nil
		}
	}
	if r.AsksActions() {
		if why := n.actsInOrder(ctx, r); why != "" {
			return n.next.Report(ctx, withActionsRefused(r, why))
		}
	}
	return n.next.Report(ctx, r)
}

// ApplyActions applies the actions of r alone (its comment and status are
// a newer run's) through next, unless a newer run of the workflow on the
// same issue or pull request has acted already: applied after the newer
// run's, they could undo them (add again a label it removed), so they are
// refused, with that reason. r.Acted says what became of them.
func (n *newestOnly) ApplyActions(ctx context.Context, r *contract.RunReport) error {
	if !r.AsksActions() {
		return nil
	}
	if why := n.actsInOrder(ctx, r); why != "" {
		r.Acted = contract.RefuseActions(r, why)
		return nil
	}
	a, ok := n.next.(contract.ActionApplier)
	if !ok {
		r.Acted = contract.RefuseActions(r, "a newer run reports in this run's place, and this reporter cannot act without reporting")
		return nil
	}
	return a.ApplyActions(ctx, r)
}

// actsInOrder records r, a final report about to act, as the newest run
// of its workflow that acted on its event's issue or pull request, and
// returns "" - unless a newer run did already: then why r's actions are
// refused. Actions are thus applied in the order of the runs, never an
// older run's after a newer one's. When the store cannot be read, r acts.
func (n *newestOnly) actsInOrder(ctx context.Context, r *contract.RunReport) string {
	ev := r.Event
	key := "actions:" + string(ev.Forge) + ":" + ev.Repo + "#" + strconv.Itoa(ev.Number()) + ":" + r.Workflow.Name
	newest, err := n.store.Advance(ctx, key, r.RunID)
	if err != nil {
		n.log.Warn("checking for a newer run that acted; acting anyway", "run", r.RunID, "err", err)
		return ""
	}
	if newest {
		return ""
	}
	where := "the repository"
	if ev.Number() > 0 {
		where = "#" + strconv.Itoa(ev.Number())
	}
	return fmt.Sprintf("a newer run of workflow %s has acted on %s already: this older run's actions, applied after its, could undo them", r.Workflow.Name, where)
}

// withActionsRefused is r to report with none of its actions applied, each
// refused for why (r.Acted says so, for the run record).
func withActionsRefused(r *contract.RunReport, why string) *contract.RunReport {
	r.Acted = contract.RefuseActions(r, why)
	c, res := *r, *r.Results
	res.Actions = nil
	c.Results = &res
	return &c
}

// stickyKey names the sticky comment r is shown in ("" when none): one per
// forge, repository, pull request (or issue) and workflow, as the
// reporters find it by its marker.
func stickyKey(r *contract.RunReport) string {
	if r.Workflow == nil || r.Event == nil || r.Workflow.Report.Comment != workflows.CommentSticky || r.Event.Number() == 0 {
		return ""
	}
	return "comment:" + string(r.Event.Forge) + ":" + r.Event.Repo + "#" + strconv.Itoa(r.Event.Number()) + ":" + r.Workflow.Name
}

var (
	_ contract.Reporter      = (*newestOnly)(nil)
	_ contract.ActionApplier = (*newestOnly)(nil)
)
