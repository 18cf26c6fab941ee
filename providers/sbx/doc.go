// Package sbx runs a workflow inside a fresh Docker Sandboxes microVM per
// run: `sbx create --clone`, steps through `sbx exec`, the agent's commits
// collected from the sandbox-<name> git remote, `sbx rm --force` always.
// It implements contract.Sandbox.
//
// Lifecycle of run R (DESIGN.md §4):
//
//	Open:  sbx rm --force hookrun-R                 (a leftover; "not found" is fine)
//	       sbx create --name hookrun-R --clone --no-progress AGENT WORKSPACE
//	Exec:  sbx exec [-i] [-w DIR] -e NAME... hookrun-R ARGV...
//	       sbx stop hookrun-R   (when ctx ends: ending sbx exec does not end
//	                             the command inside the sandbox)
//	Close: git -C WORKSPACE fetch sandbox-hookrun-R
//	       git -C WORKSPACE branch --no-track -f hookrun/R sandbox-hookrun-R/BRANCH
//	       sbx rm --force hookrun-R                 (always, also after failures and cancel)
//	       git -C WORKSPACE remote remove sandbox-hookrun-R   (when sbx left it)
//
// R is the run id in lowercase (contract.SandboxName). A stopped sandbox
// is started again by the next sbx exec, and before collecting (its git
// daemon runs only while it does); `sbx stop` halts every command of the
// sandbox, so a step stopped while others run in the same sandbox stops
// them too.
//
// BRANCH is the sandbox's current branch as its remote advertises it
// (`git ls-remote --symref`); when the sandbox is on a detached HEAD, that
// commit is fetched and hookrun/R points at it.
//
// With an event file (OpenRequest.EventFile), Open copies it into the new
// sandbox at contract.SandboxEventPath, WORKSPACE/.git/hookrun/event.json
// in the sandbox's clone (never in its working tree): `sbx exec -i
// hookrun-R sh -c SCRIPT hookrun-event PATH` with the file on stdin, SCRIPT
// fixed text and PATH an argument.
//
// With a results folder (OpenRequest.Results), Open creates
// contract.SandboxResultsPath, WORKSPACE/.git/hookrun/results, in the
// sandbox, and every Exec given ExecRequest.Results copies it back to that
// host folder once its command has ended (whatever its exit): `sbx exec
// hookrun-R sh -c SCRIPT hookrun-results PATH` writes it as a tar stream,
// which hookrun unpacks with regular files and directories only (symlinks,
// links and devices are skipped), at most 11 MiB, each path component
// opened O_NOFOLLOW on the host so that a symlink there is never written
// through. Files removed in the sandbox stay on the host.
//
// Environment variables reach the sandbox by bare name (`-e NAME`), their
// values set in the sbx process's own environment, so no value is ever on a
// command line. Secrets (ExecRequest.SecretNames) are not forwarded into the
// sandbox at all: an agent in a sandbox authenticates through sbx's own
// credential proxy (`sbx secret`), and hookrun keeps the runner's secrets
// out of the microVM. Host-specific variables (PATH, HOME, ...) are not
// forwarded either: the sandbox has its own.
//
// ExecRequest.Dir is a path inside the sandbox; "" runs in sbx exec's start
// directory, the workspace's absolute path, where the clone is.
//
// The six messages of the sbx page's troubleshooting table (not signed in,
// global network policy not initialized, the agent not logged in, sandbox
// not found, sandbox already exists, a blocked request) are returned as a
// *KnownError wrapping ErrNotSignedIn, ErrPolicyNotInitialized,
// ErrAgentNotLoggedIn, ErrSandboxNotFound, ErrSandboxExists or
// ErrRequestBlocked, carrying the table's fix. Any other failure keeps
// sbx's own text.
//
// The tests run against a simulator (internal/sbxsim) that behaves as the
// page says sbx does, on git clones in private mount namespaces.
package sbx
