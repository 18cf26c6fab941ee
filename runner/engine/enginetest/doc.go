// Package enginetest holds what the tests of the engine (runner/engine) and
// of the runner that drives it share: an in-memory log sink, a recording
// reporter, a fake runner environment and a one-call way to run a workflow
// on the real host executor in a temporary workspace. The events and
// environments the tests run with are their own. Only tests import it.
package enginetest
