package main

import (
	"os"
	"testing"
)

// The test binary doubles as the hookrun binary: tests that need real
// processes (end-to-end, scale-out) re-execute it with HOOKRUN_AS_MAIN=1.
func TestMain(m *testing.M) {
	if os.Getenv("HOOKRUN_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}
