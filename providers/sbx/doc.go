// Package sbx runs a workflow inside a fresh Docker Sandboxes microVM per
// run: `sbx create --clone`, steps through `sbx exec`, the agent's commits
// collected from the sandbox-<name> git remote, `sbx rm --force` always.
// It implements contract.Sandbox.
package sbx
