package contract

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// Executor runs one command to completion somewhere: on the host, in a fresh
// container, inside a run's root container, or inside its sbx sandbox.
//
// Exec returns when the process has exited and all its output has been
// written. A non-zero exit is not an error: it is ExitResult.ExitCode. An
// error means the command could not be run (image missing, sandbox gone, ...)
// or was stopped: when ctx ends before the process exits, Exec stops it and
// everything it started (SIGTERM, then SIGKILL after req.Grace), and returns
// an error that wraps ctx.Err() (context.DeadlineExceeded or
// context.Canceled) with ExitCode -1.
type Executor interface {
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// ExecRequest is one command to run.
type ExecRequest struct {
	RunID  string // labels containers, names sandboxes
	StepID string

	// Argv is the command: ["sh", "-c", step.Run] for `run:` steps, the
	// harness argv for harness.run steps. It is never re-parsed by a shell.
	Argv  []string
	Stdin io.Reader // nil: empty stdin

	Env []workflows.EnvVar // the complete environment (PATH included where the executor needs one)
	// SecretNames are names whose values the executor must pass without putting
	// them on a command line (secrets, for sbx: `-e NAME` is never used for
	// them). They are also present in Env.
	SecretNames []string

	// Dir is the working directory. For the host executor, an absolute host
	// path; for containers and sandboxes, a path inside them ("" = the
	// container's or sandbox's own default working directory).
	Dir string
	// Workspace is the run's workspace on the host (bind-mounted into
	// containers, cloned into sandboxes).
	Workspace string
	// Home and TmpDir are the run's own HOME and TMPDIR on the host (host
	// steps get them in Env); "" when the run has none. An executor that
	// hides parts of the host from its commands keeps these and Workspace
	// reachable.
	Home, TmpDir string
	// EventFile is the host path of the run's event file (the raw payload,
	// HOOKRUN_EVENT_PATH of host steps); "" when the run has none. An
	// executor that hides parts of the host keeps it readable; containers
	// get it read-only at ContainerEventPath.
	EventFile string
	// Results is the host path of the run's results folder, which the
	// command sees as $HOOKRUN_RESULTS and may write; "" when the run has
	// none. The host executor keeps it reachable and writable at its path;
	// containers get it read-write at ContainerResultsPath; the sbx
	// sandbox has it at SandboxResultsPath and copies it back here after
	// the command. After each step hookrun reads it (package
	// runner/results).
	Results string

	// Container is set for a step with its own `container:`; only the
	// per-step container executor reads it.
	Container *workflows.Container

	Stdout io.Writer // receives stdout as produced
	Stderr io.Writer // receives stderr as produced, kept apart from stdout

	Grace time.Duration // between SIGTERM and SIGKILL on timeout or cancel; 0 = 5s
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode int // -1 when stopped by ctx
	Duration time.Duration
}

// Timed is an executor's result, ExitCode -1 until the executor sets one,
// and done, which sets its Duration (the time since Timed) and returns it
// with err: an executor's every return.
func Timed() (res *ExecResult, done func(err error) (ExecResult, error)) {
	start := time.Now()
	res = &ExecResult{ExitCode: -1}
	return res, func(err error) (ExecResult, error) {
		res.Duration = time.Since(start)
		return *res, err
	}
}

// Workspaces prepares and removes the per-run directories on the host.
// providers/git implements it.
type Workspaces interface {
	// Prepare creates the run's directories: a workspace holding a checkout
	// of the event's head when o.Checkout (else empty), and the run's own
	// HOME and TMPDIR. It replaces what an earlier attempt left.
	Prepare(ctx context.Context, runID string, e *workflows.Event, o PrepareOptions) (Workspace, error)
	// Remove deletes everything Prepare created for the run; what is
	// already gone is not an error.
	Remove(runID string) error
}

// PrepareOptions says what a run needs of its workspace.
type PrepareOptions struct {
	Checkout bool // a checkout of the event's head
	// HostSteps: steps of the step user may run on the host in the
	// workspace, so it is handed to that user. A workflow that runs in an
	// sbx sandbox has none: its workspace stays hookrun's, which sbx
	// create --clone, running as hookrun's user, needs (git refuses a
	// repository another user owns).
	HostSteps bool
}

// Workspace is what Prepare made for one run.
type Workspace struct {
	Dir     string // the workspace: steps' working directory, HOOKRUN_WORKSPACE
	HeadSHA string // the commit checked out; "" without checkout
	Home    string // the run's HOME for host steps; "" to keep the runner's
	TmpDir  string // the run's TMPDIR for host steps; "" to keep the runner's
	// EventFile is where the engine writes the run's event file: a path
	// outside Dir, in a directory of the preparer's that host steps may
	// read but not change, so that they read the file and cannot change or
	// replace it; "" lets the engine make a file of its own for it (in
	// TMPDIR).
	// A file alone, not a directory of the run's own: one directory fewer
	// to make and remove per run, and an isolated host step is shown the
	// file alone (docs/performance.md, "The run's directories").
	EventFile string
	// Results is the run's results folder ($HOOKRUN_RESULTS), outside
	// Dir, writable by host steps; "" lets the engine make one.
	Results string
}

// ContainerEventPath is where containers see the run's event file
// (HOOKRUN_EVENT_PATH), bind-mounted read-only from ExecRequest.EventFile
// (OpenRequest.EventFile for the root container). Like the event file in
// every place a step runs, it lies outside the workspace, so that it never
// shows in `git status` and an agent's `git add -A` cannot commit the
// payload.
const ContainerEventPath = "/hookrun/event.json"

// SandboxEventPath is where the sbx sandbox of a run whose workspace is
// the host path workspace holds the event file: in the git directory of
// the sandbox's clone, which sbx puts at the workspace's path
// (<workspace>/.git/hookrun/event.json). A --clone sandbox has only the
// repository's tracked files, and its view of the host repository is
// read-only, so the sandbox provider writes the file there through the
// sandbox when it opens it; inside .git it never shows in `git status` nor
// travels with a commit or a fetch.
func SandboxEventPath(workspace string) string {
	return workspace + "/.git/hookrun/event.json"
}

// SandboxName is the name of a run's sbx sandbox (HOOKRUN_SANDBOX, `sbx
// create --name`): "hookrun-" and the run id in lowercase, as sbx wants
// its names (run ids are ULIDs, which do not depend on case). It is the one
// name: everything that looks for a run's sandbox computes it here.
func SandboxName(runID string) string { return SandboxPrefix + strings.ToLower(runID) }

// SandboxPrefix starts the name of every sandbox hookrun creates; a
// runner sweeping leftovers touches no other.
const SandboxPrefix = "hookrun-"

// Sandbox opens a per-run environment before the first step and closes it
// after the last (the root container, an sbx microVM).
type Sandbox interface {
	Open(ctx context.Context, req OpenRequest) (Session, error)
}

// OpenRequest describes the run a sandbox is opened for.
type OpenRequest struct {
	RunID     string
	Workspace string              // host path of the run's workspace
	EventFile string              // host path of the run's event file (ExecRequest.EventFile); "" when none
	Results   string              // host path of the run's results folder (ExecRequest.Results); "" when none
	Workflow  *workflows.Workflow // Container or Sandbox says what to open
	Env       []workflows.EnvVar  // run-wide environment (root container env)
	Stdout    io.Writer           // progress of opening/closing, for the run log
	Stderr    io.Writer
}

// Session is an opened per-run environment. Steps are executed in it; Close is
// always called, also after failures, cancellation and timeouts, and must
// remove everything Open created (with a fresh context if ctx is done).
type Session interface {
	Executor
	Close(ctx context.Context) error
}

// Reporter shows a run where its event came from (sticky comment, commit
// status). Implementations retry rate limits themselves, within ctx; a limit
// that outlasts ctx is returned as a RetryAfterError. The engine sends
// reports beside the run (never in its way), throttles progress updates and
// always sends the final one, or keeps it for the runner's outbox to retry.
type Reporter interface {
	Report(ctx context.Context, r *RunReport) (ReportRef, error)
}

// ActionApplier applies the actions of a final report alone, without
// sending the report: the comment and status of a run a newer run has
// superseded are the newer run's to write, but what its steps asked for
// (actions.json) is still applied within its workflow's permissions, or
// refused. r.Acted then says what became of them; an error says some
// failed on the forge and the whole is worth trying again (each step is
// idempotent). A Reporter that can act implements it (internal/app's
// Forges).
type ActionApplier interface {
	ApplyActions(ctx context.Context, r *RunReport) error
}

// Phase says which moment of a run a report describes.
type Phase string

// Report phases.
const (
	PhaseStart    Phase = "start"    // run claimed: create the comment, status pending, reaction
	PhaseProgress Phase = "progress" // a step changed state
	PhaseFinal    Phase = "final"    // run ended: final body, status success/failure
)

// RunReport is everything a reporter needs; it carries no secret values
// (Body and step errors are already redacted by the engine).
type RunReport struct {
	Phase    Phase
	RunID    string
	Attempt  int
	Workflow *workflows.Workflow // Name and Report say what to post
	Event    *workflows.Event
	HeadSHA  string // resolved head (the event's, or the one checked out)
	Status   workflows.Status
	// TimedOut, in the final phase, says the run failed because it ran
	// past its timeout (the workflow's, else runner.default_timeout): a
	// check run's conclusion is then timed_out. A step's own timeout is
	// that step's failure, not the run's.
	TimedOut bool
	Steps    []workflows.StepState
	Body     string    // final phase: report.body rendered with outputs, redacted
	Error    string    // run error, redacted
	Ref      ReportRef // what an earlier attempt stored (comment to edit)
	// Delivery, in the final phase of a sandboxed run with checkout, is what
	// became of the agent's commits (sandbox.push); nil otherwise.
	Delivery *workflows.Delivery
	// Results, in the final phase, are the findings and actions the
	// steps left in $HOOKRUN_RESULTS (redacted), with what was dropped;
	// nil when they left none.
	Results *Results
	// Acted, set by the reporter that applied Results.Actions within
	// Workflow.Permissions, is what became of them, for the report to
	// list.
	Acted *ActionsOutcome
}

// ReportRef is what a reporter wants kept in the run record so a restarted or
// redelivered run edits the same comment.
type ReportRef struct {
	CommentID int64 `json:"comment_id,omitempty"`
}

// HarnessRunner runs a harness.run step: it builds each attempt's argv
// (and stdin) from run, then run.Fallback in order after a failure, and
// executes every attempt where route says that attempt's harness runs (a
// harness whose binary is sbx on the host as written, any other in the
// run's sandbox or container: the primary and each fallback by its own
// binary). providers/harness.Run has this shape; internal/app hands it to
// the engine as HarnessFunc(harness.Run).
type HarnessRunner interface {
	RunHarness(ctx context.Context, route HarnessRoute, w *workflows.Workflow, run *workflows.HarnessRun) (ExecResult, error)
}

// HarnessRoute says where an attempt that runs harness h executes. An
// error means the attempt cannot run (it counts as a failed attempt).
type HarnessRoute func(h workflows.Harness) (Attempt, error)

// Attempt is where one attempt of a harness.run step runs.
type Attempt struct {
	Exec Executor    // the executor of the attempt's place
	Base ExecRequest // everything but Argv (and Stdin for prompt_mode stdin), for that place
	// Lookup resolves ${NAME} in the attempt's prompt and argv elements:
	// the environment of Base without the secrets.
	Lookup func(string) (string, bool)
}

// HarnessFunc adapts a function to HarnessRunner.
type HarnessFunc func(ctx context.Context, route HarnessRoute, w *workflows.Workflow, run *workflows.HarnessRun) (ExecResult, error)

// RunHarness calls f.
func (f HarnessFunc) RunHarness(ctx context.Context, route HarnessRoute, w *workflows.Workflow, run *workflows.HarnessRun) (ExecResult, error) {
	return f(ctx, route, w, run)
}

// LogSink receives step output. Writer returns a writer for one stream of one
// step; the engine writes whole, redacted lines to it and closes it when the
// step ends. stores.LogStore satisfies it (its guard sits in runner, since
// stores does not import this package); the local run prints.
type LogSink interface {
	Writer(runID, stepID, stream string) io.WriteCloser
}

// Log streams (the same names as queue's).
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamSystem = "system" // hookrun's own lines: retries, timeouts, truncation, sandbox progress
)

// RunLogStep is the step id under which run-level system lines are logged.
const RunLogStep = "_run"

// WorkflowSource finds the loaded workflow a run request names.
// ingress.WorkflowSet satisfies it.
type WorkflowSource interface {
	Lookup(name string) (*workflows.Workflow, bool)
}
