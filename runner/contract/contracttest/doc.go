// Package contracttest is the conformance suite every contract.Executor
// passes (host, docker per-step, docker root, sbx): exit codes, stdout and
// stderr kept apart, environment, working directory, timeout kill, cancel
// and output capture. Provider tests call Run with their executor.
package contracttest
