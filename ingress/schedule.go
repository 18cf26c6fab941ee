package ingress

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Schedules: JetStream's scheduler fires each tick of a workflow's
// schedule once (queue/schedules.go), and the one ingress its consumer
// hands the tick to makes it a run here, on the path a delivery takes:
// the decider decides it (decide.Decider.Tick) and the run request is
// published with the tick's key as its delivery id, so that a tick handed
// out twice (an ingress died before its ack) is one run
// (PublishDelivery's dedupe).

// DeliverySeer tells whether a delivery id started a run
// (*queue.Queue): a tick handled late that did is a redelivery of a tick
// handled on time (its process died before it confirmed), not a late one.
type DeliverySeer interface {
	DeliverySeen(ctx context.Context, forge workflows.Forge, delivery string) (bool, error)
}

// TickOutcome is what became of a tick: its run, or why none starts.
type TickOutcome struct {
	RunID     string // the run, new or (Duplicate) the one the tick started before
	Workflow  string
	Duplicate bool
	// Skipped says why the tick starts no run, for good: the server's
	// configuration refuses it (allow_repos, no such forge).
	Skipped string
	// Late says why the tick starts no run: it is handled too long after
	// it was due (decide.LateTickBound), and started none before.
	Late string
}

// Tick makes the run of one tick. An error means the tick should be
// handed out again (to this or another ingress): the queue failed, or the
// workflow is not loaded here as the tick's definition has it (a reload
// or a rolling update in progress). A refusal by this server's
// configuration is no error but TickOutcome.Skipped, logged with its
// reason: a schedule on a repository outside allow_repos is refused at
// each tick, not when the workflow is loaded (the workflow set does not
// know the server's allow_repos). A tick handled too late
// (decide.Decider.LateTick) that started no run before is no error either
// but TickOutcome.Late, logged and counted.
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
	if late := s.dec.LateTick(t); late != "" {
		// A run this tick started before (a redelivery) is found as a
		// duplicate below, however late; only a tick that never started
		// one is dropped.
		seen := false
		if s.seen != nil {
			if seen, err = s.seen.DeliverySeen(ctx, req.Event.Forge, req.Event.DeliveryID); err != nil {
				return out, fmt.Errorf("looking up the run of late tick %s: %w", t.Key(), err)
			}
		}
		if !seen {
			out.Late = late
			s.metrics.lateTicks.WithLabelValues(req.Workflow).Inc()
			log.Warn("schedule tick is not on time (late, or fired again); starting no run", "reason", late)
			return out, nil
		}
	}
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
