package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// scheduleSync keeps the schedule definitions in the stream
// HOOKRUN_SCHEDULES those of the loaded workflows (queue.SchedulesOf):
// at start, then whenever a reload changes them (a changed schedule
// replaces its definition, a removed one is removed), and hands each tick
// the shared consumer gives this process to ingress (Server.Tick). Every
// serve and ingress process does the same on one NATS; they must load the
// same workflow files, since the last to start or reload writes the
// definitions.
type scheduleSync struct {
	q      *queue.Queue
	set    *workflows.WorkflowSet
	srv    *ingress.Server
	logger *slog.Logger

	stream     *queue.Schedules // nil until opened
	openFailed bool             // opening the stream failed: tried again only for a schedule
	synced     []queue.Schedule // what the last Sync wrote
}

// scheduleRetry is how long a failed sync waits before it is tried
// again (when no reload comes first).
const scheduleRetry = 5 * time.Second

// startSchedules syncs the schedules of the loaded workflows and starts
// consuming ticks, then keeps the definitions in step with reloads until
// ctx ends. A schedule stream that does not open (a NATS server without
// message schedules, before 2.14; a timeout) fails the start only when a
// workflow has a schedule; otherwise it is logged and tried again when
// one appears.
func (a *App) startSchedules(ctx, run context.Context, srv *ingress.Server) error {
	s := &scheduleSync{q: a.queue, set: a.set, srv: srv, logger: a.logger}
	if err := s.sync(ctx, run); err != nil {
		if len(queue.SchedulesOf(a.set.Workflows())) > 0 {
			return err
		}
		// The error says why: the server's version (queue.ErrNoMessageSchedules)
		// or anything else (a timeout while a node is lost, a stream in the way).
		a.logger.Warn("workflow schedules are off until a workflow has one: the schedule stream did not open", "err", err)
	}
	go s.keep(run)
	return nil
}

// keep syncs again after each reload that changed the workflows, and
// after a failed sync, until ctx ends.
func (s *scheduleSync) keep(ctx context.Context) {
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.set.Changed():
		case <-retry:
		}
		retry = nil
		if err := s.sync(ctx, ctx); err != nil {
			s.logger.Error("syncing workflow schedules; trying again", "in", scheduleRetry, "err", err)
			retry = time.After(scheduleRetry)
		}
	}
}

// sync opens the stream and starts consuming (once), then writes the
// loaded schedules when they differ from what it wrote last. ctx bounds
// this call, run the consumer.
func (s *scheduleSync) sync(ctx, run context.Context) error {
	defs := queue.SchedulesOf(s.set.Workflows())
	if s.stream != nil && slices.Equal(defs, s.synced) {
		return nil
	}
	if s.stream == nil {
		if len(defs) == 0 && s.openFailed {
			return nil // nothing needs it yet
		}
		st, err := s.q.Schedules(ctx)
		if err != nil {
			s.openFailed = true
			return fmt.Errorf("opening the schedule stream: %w", err)
		}
		s.stream = st
		go func() {
			if err := st.Consume(run, s.tick); err != nil {
				s.logger.Error("consuming schedule ticks", "err", err)
			}
		}()
	}
	if err := s.stream.Sync(ctx, defs); err != nil {
		return err
	}
	s.synced = defs
	s.logger.Info("workflow schedules synced", "schedules", len(defs))
	return nil
}

// tick makes one tick's run; an error hands the tick out again.
func (s *scheduleSync) tick(ctx context.Context, t queue.Tick) error {
	_, err := s.srv.Tick(ctx, t)
	return err
}
