package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/moby/sys/reexec"
)

// The test binary doubles as the hookrun binary: tests that need real
// processes (end-to-end, scale-out) re-execute it with HOOKRUN_AS_MAIN=1.
// Beside it goes hookrun-step-init, as `make build` puts it beside hookrun,
// so that isolated host steps start through the small init rather than a
// re-execution of this (race-instrumented, much larger) binary; the
// re-execution path has its own tests in providers/host.
func TestMain(m *testing.M) {
	if reexec.Init() { // an isolated host step's init (providers/host)
		return
	}
	if os.Getenv("HOOKRUN_AS_MAIN") == "1" {
		main()
		return
	}
	if err := buildStepInit(); err != nil {
		fmt.Fprintf(os.Stderr, "building hookrun-step-init beside the test binary: %v (isolated steps re-execute the test binary instead)\n", err)
	}
	os.Exit(m.Run())
}

func buildStepInit() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(exe), "hookrun-step-init"),
		"github.com/hookrun/hookrun/cmd/hookrun-step-init").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}
