package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/telemetry"
	"github.com/hookrun/hookrun/workflows"
)

// progress sends a run's reports: start, progress throttled to one per
// interval (changes in between are coalesced into the next one), final. A
// reporting failure never fails the run: it is logged and kept for the run
// record's ReportError.
type progress struct {
	x *execution

	mu      sync.Mutex
	ref     contract.ReportRef
	lastErr string
	last    time.Time                // when the last report was sent
	acted   *contract.ActionsOutcome // what the final report's delivery did of the run's actions

	kick chan struct{} // a change is pending (capacity 1: coalesces)
	stop chan struct{}
	done chan struct{}
}

func newProgress(x *execution) *progress {
	return &progress{x: x, ref: x.spec.Ref, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// start starts the progress loop, which sends the start report first (it
// creates the comment whose id later reports edit): the run's steps start
// while it is on its way, however long the forge takes to answer.
func (p *progress) start(ctx context.Context) {
	go p.loop(ctx, p.snapshot(contract.PhaseStart, workflows.StatusRunning, nil))
}

// notify marks a change; the loop sends it when the interval allows.
func (p *progress) notify() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// loop sends first, then progress reports as changes come, until stop.
func (p *progress) loop(ctx context.Context, first *contract.RunReport) {
	defer close(p.done)
	p.send(ctx, first)
	interval := p.x.e.cfg.ProgressInterval
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		}
		select {
		case <-p.stop:
			return // stopped meanwhile (the start report took long): the final report carries the state
		default:
		}
		p.mu.Lock()
		wait := interval - time.Since(p.last)
		p.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-p.stop:
				t.Stop()
				return // the final report carries the last state
			case <-t.C:
			}
		}
		p.send(ctx, p.snapshot(contract.PhaseProgress, workflows.StatusRunning, nil))
	}
}

// finish stops the loop and sends the final report, unless the run was
// abandoned (another runner will report it). The final report comes after a
// report the loop is sending (the start report may be creating the comment
// the final one edits); when that one is still on its way after a sixth of
// the report timeout and there is an outbox, the final report is kept there
// at once, to be tried once the other has ended: the run does not wait for
// a forge that does not answer.
func (p *progress) finish(ctx context.Context, res *Result) {
	close(p.stop)
	x := p.x
	if x.e.cfg.Outbox != nil && !res.Abandoned {
		t := time.NewTimer(x.e.cfg.ReportTimeout / 6)
		select {
		case <-p.done:
			t.Stop()
		case <-t.C:
			p.keepFinal(ctx, res)
			return
		}
	}
	<-p.done
	if !res.Abandoned {
		p.send(ctx, p.snapshot(contract.PhaseFinal, res.Status, res))
	}
	p.mu.Lock()
	res.Ref = p.ref
	res.ReportError = p.lastErr
	res.Acted = p.acted
	p.mu.Unlock()
}

// keepFinal puts the final report straight into the outbox, due once the
// report in flight has surely ended (its timeout).
func (p *progress) keepFinal(ctx context.Context, res *Result) {
	x := p.x
	r := p.snapshot(contract.PhaseFinal, res.Status, res)
	p.mu.Lock()
	r.Ref = p.ref
	p.mu.Unlock()
	msg := "reporting final: an earlier report is still on its way"
	cause := &contract.RetryAfterError{After: x.e.cfg.ReportTimeout, Err: errors.New(msg)}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.e.cfg.ReportTimeout)
	defer cancel()
	if err := x.e.cfg.Outbox.Keep(kctx, r, cause); err != nil {
		x.e.cfg.Logger.Error("final report dropped: it could not be kept in the outbox", "run", x.spec.ID, "err", err)
		msg += "; it could not be kept in the outbox"
	} else {
		msg += " (kept in the outbox, delivered later)"
	}
	res.Ref = r.Ref
	res.ReportError = msg
}

func (p *progress) snapshot(phase contract.Phase, status workflows.Status, res *Result) *contract.RunReport {
	x := p.x
	r := &contract.RunReport{
		Phase:    phase,
		RunID:    x.spec.ID,
		Attempt:  x.spec.Attempt,
		Workflow: x.wf,
		Event:    x.ev,
		HeadSHA:  x.spec.HeadSHA,
		Status:   status,
	}
	if r.HeadSHA == "" {
		r.HeadSHA = x.ev.HeadSHA()
	}
	if res != nil {
		r.Steps = res.Steps
		r.TimedOut = res.TimedOut
		r.Body = res.Body
		r.Error = res.Error
		r.Delivery = res.Delivery
		r.Results = res.Results
	} else {
		x.mu.Lock()
		r.Steps = append([]workflows.StepState(nil), x.states...)
		x.mu.Unlock()
	}
	return r
}

// send calls the reporter with a context that outlives a cancelled run.
func (p *progress) send(ctx context.Context, r *contract.RunReport) {
	p.mu.Lock()
	r.Ref = p.ref
	p.last = time.Now()
	p.mu.Unlock()
	x := p.x
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.e.cfg.ReportTimeout)
	defer cancel()
	rctx, span := x.e.tracer.Start(rctx, "report", trace.WithAttributes(telemetry.AttrReportPhase.String(string(r.Phase)),
		telemetry.AttrForge.String(string(x.ev.Forge)), telemetry.AttrWorkflow.String(x.wf.Name)))
	ref, err := x.e.cfg.Reporter.Report(rctx, r)
	if err != nil {
		span.SetStatus(codes.Error, "report failed")
		x.e.cfg.Metrics.ReportFailed(x.ev.Forge, string(r.Phase))
	}
	span.End()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = time.Now()
	if r.Phase == contract.PhaseFinal && r.Acted != nil {
		p.acted = r.Acted
	}
	if ref != (contract.ReportRef{}) {
		p.ref = ref // known also with an error (a status failed, the comment landed)
	}
	if err != nil {
		msg := "reporting " + string(r.Phase) + ": " + x.red.String(err.Error())
		x.e.cfg.Logger.Warn("reporting run", "run", x.spec.ID, "phase", r.Phase, "err", msg)
		// A refusal (a chat run's response_url outside the allowed
		// prefix, or one Slack refused) stays one: nothing to retry.
		if r.Phase == contract.PhaseFinal && x.e.cfg.Outbox != nil && !errors.Is(err, contract.ErrRefused) {
			r.Ref = p.ref
			kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), x.e.cfg.ReportTimeout) // rctx may have ended
			kerr := x.e.cfg.Outbox.Keep(kctx, r, redactedErr{err, msg})
			kcancel()
			if kerr != nil {
				x.e.cfg.Logger.Error("final report dropped: it could not be kept in the outbox", "run", x.spec.ID, "err", kerr)
			} else {
				msg += " (kept in the outbox, delivered later)"
			}
		}
		p.lastErr = msg
		return
	}
	if r.Phase == contract.PhaseFinal {
		p.lastErr = "" // the final state landed; earlier hiccups no longer matter
	}
}

// redactedErr is a reporting error with its redacted message: what the
// outbox stores, with the error kept for errors.As (Retry-After).
type redactedErr struct {
	err error
	msg string
}

func (e redactedErr) Error() string { return e.msg }
func (e redactedErr) Unwrap() error { return e.err }
