// Package host is the executor that runs steps as `sh -c` processes on the
// runner's own machine, each in its own process group so that a timeout or
// cancel stops every child. It implements contract.Executor.
//
// How far a step's processes are kept from outliving it and the runner:
// with Isolation (isolate.go) and with Contain (contain.go) every process
// of the step lives in a PID namespace whose init dies with the runner, so
// nothing survives, setsid or not, and in IPC and UTS namespaces of its
// own, so that no SysV IPC object or POSIX message queue of one step
// reaches the next (isolated steps also get their own /dev/shm and host
// name); with LeftoversDir the step's process
// group is recorded and ReapLeftovers kills it at the next start; with none
// of them (`hookrun run`) a step's children survive a kill -9 of its runner.
package host
