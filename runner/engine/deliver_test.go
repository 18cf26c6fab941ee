package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// collectingSandbox opens sessions that run steps on the host and, when
// closed, say they collected branch (or fail with collectErr).
type collectingSandbox struct {
	collectErr error

	mu       sync.Mutex
	sessions []*collectingSession
}

func (s *collectingSandbox) Open(context.Context, contract.OpenRequest) (contract.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &collectingSession{Executor: enginetest.HostExec(), err: s.collectErr}
	s.sessions = append(s.sessions, c)
	return c, nil
}

type collectingSession struct {
	contract.Executor
	err error

	mu     sync.Mutex
	closed bool
}

func (c *collectingSession) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return c.err
}

func (c *collectingSession) Collected() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return "", errors.New("not closed")
	}
	if c.err != nil {
		return "", c.err
	}
	return "hookrun/r1", nil
}

// recDeliverer records its requests, and whether the session was closed
// when it was called.
type recDeliverer struct {
	sandbox *collectingSandbox
	d       workflows.Delivery
	err     error

	mu           sync.Mutex
	reqs         []contract.DeliverRequest
	beforeClosed bool
}

func (r *recDeliverer) Deliver(_ context.Context, req contract.DeliverRequest) (workflows.Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	for _, s := range r.sandbox.sessions {
		s.mu.Lock()
		if !s.closed {
			r.beforeClosed = true
		}
		s.mu.Unlock()
	}
	return r.d, r.err
}

// finalReporter keeps the final report.
type finalReporter struct {
	mu    sync.Mutex
	final *contract.RunReport
}

func (f *finalReporter) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if r.Phase == contract.PhaseFinal {
		f.mu.Lock()
		f.final = r
		f.mu.Unlock()
	}
	return contract.ReportRef{}, nil
}

var (
	_ contract.Sandbox   = (*collectingSandbox)(nil)
	_ contract.Collector = (*collectingSession)(nil)
	_ contract.Deliverer = (*recDeliverer)(nil)
)

const deliverYAML = `name: fix
checkout: %CHECKOUT%
sandbox: { provider: sbx, agent: claude, push: %PUSH% }
secrets: [AGENT_KEY]
steps:
  - id: agent
    run: "%RUN%"
`

// TestDeliver: the engine hands a sandboxed run's collected branch to the
// deliverer after the session is closed, shows the delivery in the final
// report, fails a succeeded run whose delivery failed (with secrets
// redacted from the reason), and delivers nothing for push: none, without
// checkout, or for a cancelled run.
func TestDeliver(t *testing.T) {
	pushed := workflows.Delivery{Outcome: workflows.DeliveryPushed, Branch: "hookrun/fix/7", Head: strings.Repeat("b", 40), Commits: 1}
	cases := []struct {
		name, checkout, push, run string
		collectErr, deliverErr    error
		noDeliverer, cancel       bool
		wantCalls                 int
		wantStatus                workflows.Status
		wantOutcome               workflows.DeliveryOutcome // "": no delivery at all
		wantNote, wantError       string
	}{
		{name: "pushed", checkout: "true", push: "branch", run: "true", wantCalls: 1,
			wantStatus: workflows.StatusSucceeded, wantOutcome: workflows.DeliveryPushed},
		{name: "pull_request", checkout: "true", push: "pull_request", run: "true", wantCalls: 1,
			wantStatus: workflows.StatusSucceeded, wantOutcome: workflows.DeliveryPushed},
		{name: "failed step still delivers", checkout: "true", push: "branch", run: "exit 3", wantCalls: 1,
			wantStatus: workflows.StatusFailed, wantOutcome: workflows.DeliveryPushed, wantError: "step agent failed"},
		{name: "push refused fails the run", checkout: "true", push: "branch", run: "true",
			deliverErr: errors.New("pushing branch hookrun/fix/7: remote said sk-agent-secret-value is wrong"), wantCalls: 1,
			wantStatus: workflows.StatusFailed, wantOutcome: workflows.DeliveryFailed,
			wantNote: "remote said *** is wrong", wantError: "delivering the agent's commits: pushing branch hookrun/fix/7"},
		{name: "collect failed", checkout: "true", push: "branch", run: "true", collectErr: errors.New("git fetch failed"),
			wantStatus: workflows.StatusFailed, wantOutcome: workflows.DeliveryFailed, wantNote: "collecting the agent's commits: git fetch failed"},
		{name: "no deliverer", checkout: "true", push: "branch", run: "true", noDeliverer: true,
			wantStatus: workflows.StatusSucceeded, wantOutcome: workflows.DeliverySkipped, wantNote: "collected on branch hookrun/r1 of the workspace"},
		{name: "push none", checkout: "true", push: "none", run: "true", wantStatus: workflows.StatusSucceeded},
		{name: "no checkout", checkout: "false", push: "branch", run: "true", wantStatus: workflows.StatusSucceeded},
		{name: "cancelled", checkout: "true", push: "branch", run: "sleep 30", cancel: true,
			wantStatus: workflows.StatusCancelled, wantOutcome: workflows.DeliverySkipped, wantNote: "cancelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := &collectingSandbox{collectErr: c.collectErr}
			dl := &recDeliverer{sandbox: sb, d: pushed, err: c.deliverErr}
			if c.deliverErr != nil {
				dl.d = workflows.Delivery{}
			}
			rep := &finalReporter{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			src := strings.NewReplacer("%CHECKOUT%", c.checkout, "%PUSH%", c.push, "%RUN%", c.run).Replace(deliverYAML)
			res, _, dir := runWorkflow(t, src, enginetest.RunOpts{Ctx: ctx, Reporter: rep,
				Env: map[string]string{"PATH": "/usr/bin:/bin", "AGENT_KEY": "sk-agent-secret-value"},
				Cfg: func(cfg *engine.Config) {
					cfg.Providers.SBX = sb
					if !c.noDeliverer {
						cfg.Providers.Deliverer = dl
					}
				}})
			if res.Status != c.wantStatus || !strings.Contains(res.Error, c.wantError) {
				t.Errorf("run %s (error %q), want %s with an error containing %q", res.Status, res.Error, c.wantStatus, c.wantError)
			}
			dl.mu.Lock()
			defer dl.mu.Unlock()
			if len(dl.reqs) != c.wantCalls {
				t.Fatalf("%d deliveries, want %d", len(dl.reqs), c.wantCalls)
			}
			if dl.beforeClosed {
				t.Error("Deliver was called before the session was closed")
			}
			if c.wantCalls > 0 {
				r := dl.reqs[0]
				if r.RunID != "r1" || r.Branch != "hookrun/r1" || r.Workspace != dir || r.Workflow.Name != "fix" || r.Event.PullRequest.Number != 7 {
					t.Errorf("deliver request %+v", r)
				}
			}
			rep.mu.Lock()
			final := rep.final
			rep.mu.Unlock()
			if final == nil {
				t.Fatal("no final report")
			}
			if c.wantOutcome == "" {
				if res.Delivery != nil || final.Delivery != nil {
					t.Errorf("delivery %+v, want none", res.Delivery)
				}
				return
			}
			if res.Delivery == nil || final.Delivery == nil || *final.Delivery != *res.Delivery {
				t.Fatalf("delivery %+v, final report's %+v", res.Delivery, final.Delivery)
			}
			d := res.Delivery
			if d.Outcome != c.wantOutcome || !strings.Contains(d.Note, c.wantNote) || strings.Contains(d.Note+res.Error, "sk-agent-secret-value") {
				t.Errorf("delivery %+v, want outcome %s with a note containing %q and no secret", d, c.wantOutcome, c.wantNote)
			}
		})
	}
}
