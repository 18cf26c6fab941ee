package stores

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Retention: run records do not stay forever. SweepRuns removes the runs
// that finished before a cutoff (the retention setting, internal/app's
// runs.retention) with everything kept per run: the record, its step
// output on HOOKRUN_LOGS, its webhook body in hookrun_bodies, its report
// waiting in hookrun_outbox, and its place in a cancel_in_progress group's
// key. A run that has not finished is never removed, however old.

// RunMarkerTTL is how long the marker a removed run record leaves in
// hookrun_runs lives: long enough for every index's watch to see it, then
// the bucket forgets the key altogether (a bucket of removed runs' markers
// would grow as the records did).
const RunMarkerTTL = time.Hour

// SweepRuns removes every run that finished before cutoff (see above),
// oldest first, and returns how many it removed. The candidates come from
// the run index (its finish-time list, never the bucket); each is
// read again before anything is removed and the record goes last,
// compare-and-set on the revision read: a run that changed meanwhile is
// kept, a pass cut short is finished by the next one, and several
// processes sweeping at once remove each run once (what is removed twice
// is removed idempotently).
func (s *Stores) SweepRuns(ctx context.Context, cutoff time.Time) (int, error) {
	x := s.runs.StartIndex()
	if err := x.Wait(ctx); err != nil {
		return 0, fmt.Errorf("sweeping run records: %w", err)
	}
	ids, err := x.expired(cutoff, 0)
	if err != nil {
		return 0, fmt.Errorf("sweeping run records: %w", err)
	}
	removed := 0
	for _, id := range ids {
		ok, err := s.removeRun(ctx, id, cutoff)
		if err != nil {
			if ctx.Err() != nil {
				return removed, fmt.Errorf("sweeping run records: %w", err)
			}
			s.opts.Logger.Warn("removing an expired run; the next sweep tries again", "run", id, "err", err)
		}
		if ok {
			removed++
		}
	}
	return removed, nil
}

// removeRun removes one expired run and what is kept per run; false when
// the run was kept (not expired after all, gone already, or an error).
func (s *Stores) removeRun(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	rec, rev, err := s.runs.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !rec.Status.Terminal() || rec.FinishedAt == nil || !rec.FinishedAt.Before(cutoff) {
		return false, nil
	}
	if err := s.logs.purgeRun(ctx, id); err != nil {
		return false, err
	}
	// The body is shared by the runs of one delivery, which were accepted
	// together and, past the retention, have long loaded it.
	delivery := rec.Event.DeliveryID
	if delivery == "" {
		delivery = id
	}
	if err := s.q.RemoveBody(ctx, rec.Event.Forge, delivery); err != nil {
		return false, fmt.Errorf("removing the body of run %s: %w", id, err)
	}
	if err := s.outbox.deleteRun(ctx, id); err != nil {
		return false, err
	}
	if err := s.groups.forgetRun(ctx, rec.ConcurrencyGroup, id); err != nil {
		return false, err
	}
	if err := s.runs.purge(ctx, id, rev); err != nil {
		return false, err
	}
	return true, nil
}

// purge removes a record if it is still at rev, leaving a marker that
// expires after RunMarkerTTL.
func (s *RunStore) purge(ctx context.Context, id string, rev uint64) error {
	s.recent.forget(id)
	err := s.kv.Purge(ctx, id, jetstream.LastRevision(rev), jetstream.PurgeTTL(RunMarkerTTL))
	if err != nil {
		if isWrongLastSequence(err) || errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("removing run record %s: %w", id, ErrConflict)
		}
		return fmt.Errorf("removing run record %s: %w", id, err)
	}
	return nil
}

// RetentionConfig is how long finished runs are kept and how often they
// are swept (internal/app's runs section holds the defaults).
type RetentionConfig struct {
	// Retention is how long a run is kept after it finished.
	Retention time.Duration
	// Interval is how often the sweep runs (also once at start).
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Validate reports a retention that cannot work.
func (c *RetentionConfig) Validate() error {
	if c.Retention < time.Minute || c.Interval <= 0 {
		return fmt.Errorf("retention must be at least 1m and the sweep interval positive, got %s and %s", c.Retention, c.Interval)
	}
	return nil
}

// StartRetention sweeps (SweepRuns at Now − Retention, then
// GroupStore.ExpireOldComments) at once and every Interval until the
// returned stop is called or the stores close; stop waits for a sweep in
// progress to end.
func (s *Stores) StartRetention(c RetentionConfig) (stop func(), _ error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("starting the retention sweep: %w", err)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.Interval)
		defer t.Stop()
		for {
			n, err := s.SweepRuns(ctx, c.Now().Add(-c.Retention))
			switch {
			case err != nil && ctx.Err() == nil:
				s.opts.Logger.Warn("sweeping expired runs", "err", err)
			case n > 0:
				s.opts.Logger.Info("removed expired runs", "runs", n, "retention", c.Retention)
			}
			switch n, err := s.groups.ExpireOldComments(ctx); {
			case err != nil && ctx.Err() == nil:
				s.opts.Logger.Warn("giving old sticky comment keys a TTL", "err", err)
			case n > 0:
				s.opts.Logger.Info("gave old sticky comment keys a TTL", "keys", n, "ttl", s.groups.CommentTTL)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}
