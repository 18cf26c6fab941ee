package contracttest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/runner/contract/contracttest"
	"github.com/hookrun/hookrun/workflows"
)

// runSandboxSuite runs RunSandbox against a fakeSandbox broken as named.
func runSandboxSuite(t *testing.T, broken string) {
	root := t.TempDir()
	contracttest.RunSandbox(t, func(*testing.T) contract.Sandbox { return &fakeSandbox{root: root, broken: broken} }, contracttest.SandboxOptions{
		Request: func(t *testing.T) contract.OpenRequest {
			return contract.OpenRequest{Workspace: t.TempDir(), Workflow: &workflows.Workflow{Name: "test", Container: &workflows.Container{Image: "fake"}}}
		},
		Leftovers: func(_ *testing.T, req contract.OpenRequest) []string {
			if _, err := os.Stat((&fakeSandbox{root: root}).dir(req.RunID)); err == nil {
				return []string{"session directory of " + req.RunID}
			}
			return nil
		},
		FailOpen: func(_ *testing.T, req *contract.OpenRequest) contract.Sandbox {
			req.Workflow = &workflows.Workflow{Name: "test", Container: &workflows.Container{Image: failImage}}
			return &fakeSandbox{root: root, broken: broken}
		},
	})
}

// runWorkspacesSuite runs RunWorkspaces against a fakeWorkspaces broken as
// named.
func runWorkspacesSuite(t *testing.T, broken string) {
	contracttest.RunWorkspaces(t, func(t *testing.T) contract.Workspaces { return &fakeWorkspaces{root: t.TempDir(), broken: broken} }, contracttest.WorkspacesOptions{
		Checkout: func(*testing.T) contracttest.Checkout {
			return contracttest.Checkout{
				Event:   &workflows.Event{PullRequest: &workflows.PullRequest{Number: 1, HeadSHA: "0123abc"}},
				HeadSHA: "0123abc",
				Files:   checkoutFiles,
			}
		},
	})
}

func TestFakesConform(t *testing.T) {
	t.Run("Sandbox", func(t *testing.T) { runSandboxSuite(t, "") })
	t.Run("Workspaces", func(t *testing.T) { runWorkspacesSuite(t, "") })
}

// brokenEnv names the broken fake TestBroken runs the suites against.
const brokenEnv = "HOOKRUN_CONTRACTTEST_BROKEN"

// TestBroken runs a suite against a broken fake; it is run in a child
// process by TestSuitesCatchBrokenImplementations, which expects it to
// fail.
func TestBroken(t *testing.T) {
	kind, broken, _ := strings.Cut(os.Getenv(brokenEnv), "/")
	switch kind {
	case "sandbox":
		runSandboxSuite(t, broken)
	case "workspaces":
		runWorkspacesSuite(t, broken)
	default:
		t.Skip("run by TestSuitesCatchBrokenImplementations")
	}
}

// Each conformance test fails against a fake broken the way it guards
// against.
func TestSuitesCatchBrokenImplementations(t *testing.T) {
	tests := []struct {
		broken   string // kind/way, see fakeSandbox and fakeWorkspaces
		wantFail string // the subtest that must notice
	}{
		{"sandbox/exit-zero", "OpenExecClose"},
		{"sandbox/leaky-close", "OpenExecClose"},
		{"sandbox/fresh-exec", "StateKeptBetweenExecs"},
		{"sandbox/ctx-close", "CloseAfterCancelledStep"},
		{"sandbox/no-replace", "OpenReplacesEarlierAttempt"},
		{"sandbox/leaky-open", "FailedOpenLeavesNothing"},
		{"workspaces/not-empty", "Empty"},
		{"workspaces/wrong-sha", "Checkout"},
		{"workspaces/keeps-leftovers", "PrepareReplacesEarlierAttempt"},
		{"workspaces/stale-checkout", "CheckoutReplacesEarlierAttempt"},
		{"workspaces/shared-dir", "RunsApart"},
		{"workspaces/remove-keeps-home", "Remove"},
		{"workspaces/remove-missing-errors", "Remove"},
	}
	for _, tt := range tests {
		t.Run(tt.broken, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBroken$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+tt.broken)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a fake broken as %s:\n%s", tt.broken, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBroken/"+tt.wantFail+" ") {
				t.Errorf("subtest %s did not fail against a fake broken as %s:\n%s", tt.wantFail, tt.broken, out)
			}
		})
	}
}
