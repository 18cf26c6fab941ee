package ingress

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/queue"
)

// Schedules: JetStream's scheduler fires each tick of a workflow's
// schedule once (queue/schedules.go), and the one ingress its consumer
// hands the tick to makes it a run here, on the path a delivery takes:
// the decider decides it (decide.Decider.Tick) and the run request is
// published with the tick's key as its delivery id, so that a tick handed
// out twice (an ingress died before its ack) is one run
// (PublishDelivery's dedupe).

// TickOutcome is what became of a tick: its run, or why none starts.
type TickOutcome struct {
	RunID     string // the run, new or (Duplicate) the one the tick started before
	Workflow  string
	Duplicate bool
	// Skipped says why the tick starts no run, for good: the server's
	// configuration refuses it (allow_repos, no such forge).
	Skipped string
}

// Tick makes the run of one tick. An error means the tick should be
// handed out again (to this or another ingress): the queue failed, or the
// workflow is not loaded here as the tick's definition has it (a reload
// or a rolling update in progress). A refusal by this server's
// configuration is no error but TickOutcome.Skipped, logged with its
// reason: a schedule on a repository outside allow_repos is refused at
// each tick, not when the workflow is loaded (the workflow set does not
// know the server's allow_repos).
func (s *Server) Tick(ctx context.Context, t queue.Tick) (TickOutcome, error) {
	out := TickOutcome{Workflow: t.Schedule.Workflow}
	log := s.logger.With("schedule", t.Schedule.ID, "workflow", t.Schedule.Workflow, "tick", t.Key())
	dec, err := s.dec.Tick(t)
	switch {
	case err != nil:
		return out, err
	case len(dec.Runs) == 0:
		out.Skipped = dec.Skipped[0].Reason
		log.Warn("schedule tick starts no run", "reason", out.Skipped)
		return out, nil
	}
	req := dec.Runs[0]
	results, err := s.persist.publishAll(ctx, dec.Runs)
	if err != nil {
		return out, fmt.Errorf("starting the run of tick %s: %w", t.Key(), err)
	}
	out.RunID, out.Duplicate = results[0].RunID, results[0].Duplicate
	if !out.Duplicate {
		s.metrics.runs.WithLabelValues(string(req.Event.Forge), req.Workflow).Inc()
	}
	log.Info("schedule tick accepted", "run", out.RunID, "duplicate", out.Duplicate)
	return out, nil
}
