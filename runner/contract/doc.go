// Package contract defines what the runner engine needs from the outside
// world, as database/sql/driver does for database/sql: Executor (run one
// command), Sandbox and Session (a per-run environment), Reporter (show a run
// on the forge), and their request and result types. Providers implement
// these; the conformance suite in contracttest checks every Executor.
package contract
