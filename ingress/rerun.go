package ingress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Re-runs and replays (issue #17), as the API and the web UI ask for them;
// which runs they start is package decide's (Decider.Rerun,
// Decider.Replay), persisting them persist.go's. A replay matches a stored
// delivery again against the workflows loaded now, under a new delivery
// id (stores.ReplayDelivery), so that the original's delivery keys do not
// dedupe it.

// RunRecords is what re-runs read, list and link run records through
// (*stores.RunStore).
type RunRecords interface {
	RunLister
	LinkRerun(ctx context.Context, id, rerun string) error
}

// Deliveries is the store of accepted deliveries (*stores.ReceivedStore).
type Deliveries interface {
	Get(ctx context.Context, forge workflows.Forge, id string) (*stores.Received, error)
	NextReplay(ctx context.Context, forge workflows.Forge, id string) (int, error)
	// TTL is how long deliveries are kept.
	TTL() time.Duration
	// KeepUnmatched stores a delivery that was not matched against the
	// workflows, without its body, and lists it (unmatched.go).
	KeepUnmatched(ctx context.Context, d *stores.Received) error
}

var _ Deliveries = (*stores.ReceivedStore)(nil)

// replayAnswer is the body of POST /api/v1/deliveries/{id}/replay.
type replayAnswer struct {
	response
	ReplayOf string `json:"replay_of"`
}

// replay matches stored delivery id of forge again against the workflows
// loaded now and queues what matches (a /retry command in it included).
// The event is the one taken at receipt (asReceived): a label change is
// the one decided then, and the forge's label memory is left alone.
func (s *Server) replay(ctx context.Context, forge workflows.Forge, id string) (replayAnswer, error) {
	if s.deliveries == nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, stores.ErrNotReceived)
	}
	d, err := s.deliveries.Get(ctx, forge, id)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	if d.Reason != "" {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, notReplayable(d))
	}
	n, err := s.deliveries.NextReplay(ctx, forge, id)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	rid := stores.ReplayDelivery(id, n)
	ans := replayAnswer{response: response{Delivery: rid, Runs: []runRef{}}, ReplayOf: id}
	ev, drift, err := normalizeTolerant(s.cfg.Forges.Get(forge), d.Event, d.Raw, rid)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	asReceived(ev, d)
	ans.Drift = drift
	if !s.dec.Allowed(ev.Repo) {
		ans.Ignored = ignoredNotAllowed
		return ans, nil
	}
	dec, err := s.dec.Replay(ctx, ev, id)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	ans.Skipped = dec.Skipped
	if len(dec.Runs) == 0 {
		ans.Reason = dec.Reason()
		return ans, nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PublishTimeout)
	defer cancel()
	results, err := s.persist.publishAll(pctx, dec.Runs)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	ans.Runs, _ = runRefs(dec.Runs, results)
	s.logger.Info("delivery replayed", "forge", forge, "delivery", id, "replay", rid, "runs", len(ans.Runs))
	return ans, nil
}

// receivedTTL is how long deliveries are stored, for messages.
func (s *Server) receivedTTL() string {
	if s.deliveries == nil {
		return "a limited time"
	}
	return s.deliveries.TTL().String()
}

// rerun queues a new run of a finished run's workflow (loaded now) on its
// event, linked both ways: POST /api/v1/runs/{id}/rerun and the UI's
// button. stores.ErrNotFound and decide's ErrNotFinished,
// ErrRepoNotAllowed and ErrWorkflowGone say why not; any other error is
// the queue's.
func (s *Server) rerun(ctx context.Context, id string) (rerunAnswer, error) {
	if s.records == nil {
		return rerunAnswer{}, errors.New("re-running: no run records are configured")
	}
	rec, _, err := s.records.Get(ctx, id)
	if err != nil {
		return rerunAnswer{}, err
	}
	req, err := s.dec.Rerun(ctx, rec)
	if err != nil {
		if !errors.Is(err, decide.ErrNotFinished) && !errors.Is(err, decide.ErrRepoNotAllowed) && !errors.Is(err, decide.ErrWorkflowGone) {
			s.logger.Error("re-running a run", "run", rec.ID, "err", err)
		}
		return rerunAnswer{}, err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PublishTimeout)
	defer cancel()
	results, err := s.persist.publishAll(pctx, []*queue.RunRequest{req})
	if err != nil {
		s.logger.Error("publishing a re-run", "run", rec.ID, "err", err)
		return rerunAnswer{}, err
	}
	s.logger.Info("run re-run", "workflow", req.Workflow, "run", rec.ID, "rerun", results[0].RunID)
	return rerunAnswer{Run: results[0].RunID, Workflow: req.Workflow, RerunOf: rec.ID,
		WorkflowChanged: rec.WorkflowDigest != "" && rec.WorkflowDigest != req.WorkflowDigest}, nil
}

// Rerun re-runs a finished run and returns the new run's id (the web UI's
// re-run button: ui.Rerunner).
func (s *Server) Rerun(ctx context.Context, id string) (string, error) {
	ans, err := s.rerun(ctx, id)
	return ans.Run, err
}
