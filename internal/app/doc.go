// Package app is hookrun's composition root: from the server configuration
// (Config, the file of DESIGN.md §6) it builds and starts the stack a mode
// runs, in one place for `hookrun serve`, `hookrun ingress`, `hookrun
// runner` and the bench (internal/bench, which cannot import package main):
// data_dir made private, the queue, the workflow set, one client per forge
// (reports, clone credentials, ingress's trust lookups), how host steps
// run (isolated as runner.step_user by default), the workspaces, the
// executors, the engine, the runner and the ingress server with the API. It
// also stops them again, each provider closed as an io.Closer, in reverse
// order.
//
// Each default and rule of the file has one owner: the package the value
// goes to (its exported Default* constants; its Validate, which Validate
// runs on the configurations packages.go builds), or this package for the
// values no package has a default for. TestDefaultsAreTheOwnersDefaults
// fails when a key's default differs from its package's.
//
// It sits at the top of the flow, under cmd/hookrun, and is the only
// package besides cmd that imports both the engine (runner) and the
// providers: cmd keeps the flags, reading the configuration file and the
// process concerns (signals, GC, idle memory).
package app
