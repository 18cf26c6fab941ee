// Package contract defines what the runner engine needs from the outside
// world, as database/sql/driver does for database/sql: Executor (run one
// command), Sandbox and Session (a per-run environment), Workspaces (per-run
// directories), HarnessRunner (agent CLIs), LogSink (step output), Reporter
// (show a run on the forge), Collector, Deliverer and DraftOpener (hand on
// the commits an agent made in a sandbox: push them, open a draft pull
// request), WorkflowSource (loaded workflows), their request and result
// types, and the sentinel errors the engine and its providers share
// (ErrCancelled, ErrAbandoned, ErrRefused). Providers implement these, each
// with an interface guard; the conformance suites in contracttest check
// every Executor, Sandbox and Workspaces.
package contract
