package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// heartbeat keeps a claim alive: it refreshes HeartbeatAt (with the latest
// step states) every interval and acts on what the record says (a cancel
// request, a takeover). A cancel request is also heard at once, on the
// runner's subject (Runner.Start): no run watches its record.
type heartbeat struct {
	r      *Runner
	id     string
	group  *groupHold // the run's concurrency group lock, renewed with each beat; nil: none
	cancel context.CancelCauseFunc
	log    *slog.Logger

	mu      sync.Mutex
	steps   []workflows.StepState
	headSHA string

	lost    atomic.Bool
	lostErr atomic.Pointer[error] // why, once lost
}

// lostError is why the claim was lost (nil while it was not).
func (h *heartbeat) lostError() error {
	if p := h.lostErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (h *heartbeat) setSteps(s []workflows.StepState) {
	h.mu.Lock()
	h.steps = s
	h.mu.Unlock()
}

func (h *heartbeat) setHeadSHA(sha string) {
	h.mu.Lock()
	h.headSHA = sha
	h.mu.Unlock()
}

func (h *heartbeat) loop(ctx context.Context) {
	t := time.NewTicker(h.r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if h.beat(ctx) {
				return
			}
		}
	}
}

// check acts on the record as written by a heartbeat; true when we lost
// the run.
func (h *heartbeat) check(rec *stores.RunRecord) bool {
	if err := rec.CheckClaim(h.r.cfg.ID); err != nil {
		h.lose(err)
		return true
	}
	if rec.CancelRequested {
		h.cancel(ErrCancelled)
	}
	return false
}

// lose stops a run whose claim another runner (or an ended run) took.
func (h *heartbeat) lose(err error) {
	h.log.Warn("lost the claim on this run; stopping it", "err", err)
	h.lostErr.Store(&err)
	h.lost.Store(true)
	h.cancel(ErrAbandoned)
}

// beat refreshes the claim; true when we lost the run.
func (h *heartbeat) beat(ctx context.Context) bool {
	h.mu.Lock()
	spec := stores.HeartbeatSpec{Claimant: h.r.cfg.ID, Now: h.r.now(), Steps: h.steps, HeadSHA: h.headSHA}
	h.mu.Unlock()
	h.group.renew(ctx, spec.Now)
	rec, err := h.r.deps.Runs.Heartbeat(ctx, h.id, spec)
	switch {
	case errors.Is(err, stores.ErrClaimLost):
		h.lose(err)
		return true
	case err != nil:
		if ctx.Err() == nil {
			h.log.Warn("heartbeat: refreshing the claim", "err", err)
		}
		return false
	}
	return h.check(rec)
}
