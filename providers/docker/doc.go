// Package docker runs steps in Docker (or Podman through its Docker API):
// a fresh container per step, or execs inside one root container kept alive
// for the whole run. It implements contract.Executor and contract.Sandbox and
// removes orphaned containers labelled hookrun.run.
package docker
