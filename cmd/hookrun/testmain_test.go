package main

import (
	"os"
	"testing"

	"github.com/moby/sys/reexec"
)

// The test binary doubles as the hookrun binary: tests that need real
// processes (end-to-end, scale-out) re-execute it with HOOKRUN_AS_MAIN=1.
func TestMain(m *testing.M) {
	if reexec.Init() { // an isolated host step's init (providers/host)
		return
	}
	if os.Getenv("HOOKRUN_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}
