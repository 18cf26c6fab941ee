// Package engine executes one validated workflow for one event in a
// prepared workspace: the DAG of steps (schedule.go), where each step runs
// (route.go), its environment (env.go), its attempts and retries
// (attempt.go), the workflow's sandbox or root container (session.go),
// preconditions (schedule.go), handler_on (handlers.go), the results
// folder and the event file's directory (rundir.go), the agent's commits
// (session.go), run and step logs with every secret masked (logs.go) and
// the reports beside
// the run (report.go). RunLocal (local.go) is `hookrun run`: the engine on
// this machine, without queue or server.
//
// It knows no queue: the runner (package runner) claims a run, gives the
// engine a RunSpec and writes the Result into the run record. What the
// engine needs of the rest it takes as small interfaces: executors,
// sandboxes, reporters and the log sink of runner/contract, a ReportKeeper
// for final reports that could not be delivered in time (runner.Outbox),
// an Observer for its metrics (runner.Metrics) and RunSpec.OnChange for
// step states (the runner's heartbeat writes them into the record).
//
// # Engine semantics
//
// A step runs when all its dependencies have ended (`graph`), or after the
// previous step in file order (`chain`), at most max_active_steps at a time.
// A dependency that failed (or was skipped) skips its dependents unless its
// continue_on tolerates that (failed, or its exit code in exit_code;
// skipped); with mark_success a tolerated failure counts as succeeded. A
// step whose preconditions do not hold when it is ready is skipped. A run
// fails when a step failed without continue_on tolerating it, or on the run
// timeout; it partially succeeds when its only failures were tolerated; it
// is skipped when the workflow's own preconditions do not hold (checked on
// the host before the session opens: no step runs, only handler_on.exit);
// it is cancelled when its context is cancelled (runner.Runner.Cancel, a newer run
// of the same concurrency group). Steps run in the root working_dir unless
// they set their own. handler_on success/failure/cancel then exit run afterwards with
// HOOKRUN_RUN_STATUS, even after a cancel or timeout (bounded by their own
// timeout or Config.HandlerTimeout); a handler's failure is recorded
// in its step state but does not change the run's status. A run stopped
// because the runner shuts down or lost its claim (ErrAbandoned) runs no
// handler and sends no final report: another runner executes it again.
//
// # Environment
//
// A step's environment is built in this order, a later name replacing an
// earlier one: PATH, HOME, LANG, TMPDIR and USER from the runner's
// environment (host steps only: containers and sandboxes bring their own);
// the workflow's env, then params (a value given for the run,
// RunSpec.Params, replaces its default as data, not expanded); the event's HOOKRUN_* variables and
// HOOKRUN_RUN_ID, HOOKRUN_WORKFLOW, HOOKRUN_WORKSPACE, HOOKRUN_EVENT_PATH,
// HOOKRUN_RESULTS, HOOKRUN_SANDBOX (so a workflow cannot override them); the outputs of
// earlier steps; the step's env (for a step container, its container env
// first); HOOKRUN_RUN_STATUS for handlers; the secrets. Nothing else of the
// runner's environment is passed on.
//
// HOOKRUN_EVENT_PATH names the raw payload, written before the first step
// at RunSpec.EventFile (else into a file of the run's own in TMPDIR, removed at
// its end), never into the workspace: the host path on the host,
// contract.ContainerEventPath in containers, contract.SandboxEventPath in
// the sandbox (the sandbox provider copies the file in).
//
// HOOKRUN_RESULTS names the run's results folder (RunSpec.Results, which
// its preparer hands to the step user, else a folder of the run's own,
// removed at its end), also outside the workspace: the host path on the
// host, contract.ContainerResultsPath in containers (bind-mounted
// read-write), contract.SandboxResultsPath in the sandbox (the sandbox
// provider copies it back after each command). After every step (its
// failure included: a linter exits 1 when it finds something) the engine
// reads the folder with a results.Reader (which does not list again a
// folder it found empty while nothing was made in it since), never
// following a symlink, up to
// contract.MaxResultsBytes and contract.MaxResultsFindings per run: SARIF,
// reviewdog rdjson/rdjsonl and actions.json. A malformed file fails the
// step with its file:line:col. At the run's end the findings and actions,
// redacted like everything else, are Result.Results and the final
// RunReport's Results; what was cut or skipped is in their Notes and the
// run log.
//
// Values written by the workflow author (env, params, container env) may
// reference, as ${NAME}, any variable set before them, and also the HOOKRUN_*
// variables; the substitution is workflows.Expand: no shell, values are not
// expanded again, unknown names stay as written. Event text and outputs are
// data and are never expanded. `run:` is executed as ["sh", "-c", run], so
// "$VAR" there is the shell's business; the same holds for the prompt of a
// shell harness (workflows.Harness.ShellScript), which providers/harness
// hands to the shell unsubstituted. Secrets cannot be referenced by
// ${NAME} (steps read them from the environment), and every secret value is
// replaced by *** in logs, outputs, step and run errors, the report body
// and therefore the run record.
package engine
