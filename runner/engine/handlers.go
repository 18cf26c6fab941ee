package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// handler is one handler_on step and the id it gets when it has none.
type handler struct {
	step *workflows.Step
	id   string
}

// handlersFor lists the handlers of a run that ended with status: the one
// for the status (success, also after a partial success; failure; cancel),
// then exit. A skipped run (unmet root preconditions) runs exit only. Unset
// ones are nil.
func handlersFor(h workflows.HandlerOn, status workflows.Status) []handler {
	var list []handler
	switch status {
	case workflows.StatusSucceeded, workflows.StatusPartiallySucceeded: // as Dagu: the primary work was done
		list = append(list, handler{h.Success, "on_success"})
	case workflows.StatusFailed:
		list = append(list, handler{h.Failure, "on_failure"})
	case workflows.StatusCancelled:
		list = append(list, handler{h.Cancel, "on_cancel"})
	}
	return append(list, handler{h.Exit, "on_exit"})
}

// runHandlers runs handler_on.success/failure/cancel for status, then
// handler_on.exit, each with HOOKRUN_RUN_STATUS. They run even after a
// cancel or a run timeout (with a fresh context bounded by the step's
// timeout or HandlerTimeout) but stop when the run is abandoned.
//
// A handler runs where a step of its shape runs (in the sandbox or root
// container when the workflow has one). When that place could not be
// opened, the handler does not run anywhere else: its state is skipped
// with the reason, and the returned notes say so for the run's error.
func (x *execution) runHandlers(ctx context.Context, status workflows.Status) (notRun []string) {
	for _, hd := range handlersFor(x.wf.HandlerOn, status) {
		if hd.step == nil {
			continue
		}
		if errors.Is(context.Cause(ctx), contract.ErrAbandoned) {
			return notRun
		}
		st := *hd.step
		if st.ID == "" {
			st.ID = hd.id
		}
		x.mu.Lock()
		idx := len(x.states)
		x.states = append(x.states, workflows.StepState{ID: st.ID, Status: workflows.StatusPending})
		x.mu.Unlock()
		if r := x.routeFor(&st, primaryHarness(x.wf, &st)); r.err != nil && x.sessionErr != nil && errors.Is(r.err, x.sessionErr) {
			msg := fmt.Sprintf("handler %s not run: it runs where the workflow's steps run, which could not be opened", st.ID)
			x.stepSysf(st.ID, "%s: %s", msg, x.red.String(x.sessionErr.Error()))
			x.mu.Lock()
			x.states[idx].Status = workflows.StatusSkipped
			x.states[idx].Error = x.red.String(msg)
			x.mu.Unlock()
			x.changed()
			notRun = append(notRun, msg)
			continue
		}
		hctx, cancel := x.handlerContext(ctx, st.Timeout)
		x.execStep(hctx, idx, st, []workflows.EnvVar{{Name: "HOOKRUN_RUN_STATUS", Value: string(status)}})
		cancel()
	}
	return notRun
}

// withNotes adds notes to a run's error.
func withNotes(err error, notes []string) error {
	joined := strings.Join(notes, "; ")
	if err == nil {
		return errors.New(joined)
	}
	return fmt.Errorf("%w; %s", err, joined)
}

// handlerContext detaches a handler from the run's cancellation and
// timeout, bounds it, and still stops it when the run is abandoned.
func (x *execution) handlerContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = x.e.cfg.HandlerTimeout
	}
	hctx, cancelCause := context.WithCancelCause(context.WithoutCancel(ctx))
	hctx, cancelTimeout := context.WithTimeoutCause(hctx, timeout, errStepTimeout)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), contract.ErrAbandoned) {
			cancelCause(contract.ErrAbandoned)
		}
	})
	return hctx, func() {
		stop()
		cancelTimeout()
		cancelCause(nil)
	}
}
