package host_test

import (
	"os"
	"testing"

	"github.com/moby/sys/reexec"
)

// The test binary doubles as the init of isolated steps, as hookrun does.
func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	if os.Getenv(mqueueChildEnv) != "" {
		os.Exit(mqueueChild())
	}
	if key := os.Getenv(shmKeyEnv); key != "" {
		os.Exit(shmCreate(key))
	}
	if mark := os.Getenv("HOOKRUN_TEST_RUNNER_CHILD"); mark != "" {
		runnerChild(mark)
		return
	}
	os.Exit(m.Run())
}
