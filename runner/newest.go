package runner

import (
	"context"
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
		case !newest:
			n.log.Info("a newer run reported in this sticky comment; dropping this run's report", "run", r.RunID, "phase", r.Phase)
			return r.Ref, nil
		}
	}
	return n.next.Report(ctx, r)
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

var _ contract.Reporter = (*newestOnly)(nil)
