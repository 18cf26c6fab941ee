// Package contracttest holds the conformance suites of runner/contract:
// Run for every contract.Executor (host, docker per-step, docker root, sbx):
// exit codes, stdout and stderr kept apart, environment, working directory,
// timeout kill, cancel and output capture; RunSandbox for every
// contract.Sandbox and its Sessions (docker root container, sbx): open,
// exec, state between execs, Close cleaning up always, reopening a run, a
// failed Open leaving nothing; RunWorkspaces for every contract.Workspaces
// (providers/git): empty or checked-out workspaces, replacing an earlier
// attempt, runs kept apart, Remove. Provider tests call them with their
// implementation; the package's own tests run them against fakes, correct
// and broken.
package contracttest
