// Command hookrun-step-init is the init of an isolated host step: hookrun
// starts it as PID 1 of the step's own PID and mount namespaces, it hides
// what hookrun must keep from the step, starts the step as the step user and
// reaps it (package providers/host/stepinit). It is not meant to be run by
// hand. hookrun uses it when it lies beside the hookrun binary (make build
// puts it there) and otherwise re-executes itself for the same job, which
// costs hookrun's own start-up per step. On Linux 6.18 or later, on amd64,
// hookrun needs no init (providers/host, direct.go).
package main

import (
	"os"

	"github.com/hookrun/hookrun/providers/host/stepinit"
)

func main() {
	os.Exit(stepinit.Main())
}
