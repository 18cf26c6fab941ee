// Package host is the executor that runs steps as `sh -c` processes on the
// runner's own machine, each in its own process group so that a timeout or
// cancel stops every child. It implements contract.Executor.
package host
