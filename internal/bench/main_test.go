package bench

import (
	"os"
	"testing"

	"github.com/moby/sys/reexec"
)

// The test binary doubles as the init of isolated host steps, which the
// in-process dispatch phase runs as `hookrun serve` does when the tests run
// as root.
func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	os.Exit(m.Run())
}
