package runner_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
	"github.com/hookrun/hookrun/workflows"
)

// TestAdmitRefusalFailsBeforeWorkspace: a run Config.Admit refuses (a
// repository outside allow_repos) fails at its first delivery with the
// refusal as its error; no workspace is prepared and no step runs.
func TestAdmitRefusalFailsBeforeWorkspace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, func(c *runner.Config) {
		c.Admit = func(e *workflows.Event) error {
			if !workflows.AnyRepo([]string{"myorg/*"}, e.Repo) {
				return fmt.Errorf("repository %s is not in allow_repos", e.Repo)
			}
			return nil
		}
	})
	f.start()
	refused := f.publish("count", nil) // octo/demo
	allowed := f.publish("count", func(r *queue.RunRequest) { r.Event.Repo = "MyOrg/app" })

	rec := f.waitRecord(refused, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusFailed || rec.Error != "refusing run: repository octo/demo is not in allow_repos" {
		t.Errorf("refused run: %s %q, want failed with the refusal", rec.Status, rec.Error)
	}
	if rec := f.waitRecord(allowed, 15*time.Second, "a terminal state", terminal); rec.Status != workflows.StatusSucceeded {
		t.Errorf("allowed run: %s %q, want succeeded", rec.Status, rec.Error)
	}
	f.ws.mu.Lock()
	prepared := f.ws.prepared
	f.ws.mu.Unlock()
	if len(prepared) != 1 || prepared[0] != allowed {
		t.Errorf("workspaces prepared for %v, want only the allowed run %s", prepared, allowed)
	}
	if got := enginetest.ReadFile(t, f.tmp, "executions"); strings.TrimSpace(got) != allowed {
		t.Errorf("executions %q, want only %s", got, allowed)
	}
	if c := f.calls.Load(); c != 2 {
		t.Errorf("handler called %d times, want 2 (the refusal is not retried)", c)
	}
}

// TestPrepareRefusalIsNotRetried: a workspace error matching
// contract.ErrRefused (a clone URL outside the forge's host) fails the run
// at once, where any other Prepare error is retried.
func TestPrepareRefusalIsNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"count": countingWorkflow}, nil, nil)
	f.ws.refuse = fmt.Errorf("preparing workspace of run x: %w",
		contract.Refuse(errors.New(`clone URL host "evil.example" is not github's (want https://github.com)`)))
	f.start()
	id := f.publish("count", nil)
	rec := f.waitRecord(id, 15*time.Second, "a terminal state", terminal)
	if rec.Status != workflows.StatusFailed || !strings.Contains(rec.Error, `clone URL host "evil.example" is not github's`) {
		t.Errorf("status %s (%q), want failed with the refusal", rec.Status, rec.Error)
	}
	time.Sleep(300 * time.Millisecond) // PrepareRetry is 100ms: a retry would have come
	if c := f.calls.Load(); c != 1 {
		t.Errorf("handler called %d times, want 1 (a refusal is not retried)", c)
	}
	if enginetest.ReadFile(t, f.tmp, "executions") != "" {
		t.Error("a refused run executed")
	}
}
