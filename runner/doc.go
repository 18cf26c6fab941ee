// Package runner claims run requests from the queue and executes them: claim
// by compare-and-set, heartbeat, workspace, the DAG engine, reporting, ack.
// It uses executors, sandboxes and reporters only through the interfaces in
// runner/contract; cmd/hookrun hands it the implementations from providers/.
package runner
