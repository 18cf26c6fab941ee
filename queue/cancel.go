package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// ErrRunFinished is returned by RequestCancel for a run that already ended.
var ErrRunFinished = errors.New("run already finished")

// ErrCancelled is the error a run cancelled before it started carries.
var ErrCancelled = errors.New("run cancelled")

// RequestCancel asks a run to stop, through its record alone so that any
// process may call it: a queued run is marked cancelled at once (its message
// is acked and skipped when delivered); a running one gets CancelRequested,
// which its claimant sees and acts on. It retries lost CAS races and returns
// the record as written. ErrNotFound: no such run; ErrRunFinished: it ended.
func (s *RunStore) RequestCancel(ctx context.Context, id string) (*RunRecord, error) {
	for range 20 {
		rec, rev, err := s.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("cancelling run %s: %w", id, err)
		}
		if rec.Status.Terminal() {
			return rec, fmt.Errorf("cancelling run %s: %w", id, ErrRunFinished)
		}
		rec.CancelRequested = true
		if rec.Status == workflows.StatusQueued {
			now := time.Now().UTC()
			rec.Status = workflows.StatusCancelled
			rec.Error = ErrCancelled.Error()
			rec.FinishedAt = &now
		}
		if _, err := s.Update(ctx, rec, rev); errors.Is(err, ErrConflict) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("cancelling run %s: %w", id, err)
		}
		return rec, nil
	}
	return nil, fmt.Errorf("cancelling run %s: %w", id, ErrConflict)
}
