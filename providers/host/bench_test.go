package host_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// BenchmarkExec measures what one trivial host step costs: as hookrun's own
// user, directly and contained (the init in its own namespaces), and
// isolated (its namespaces and the mounts: as a server does it, directly
// where the kernel allows, or through an init: a re-execution of this test
// binary, or hookrun-step-init). Run without
// -race: the race runtime's start-up dominates an isolated step there. The
// test binary starts faster than hookrun does, so re-exec here understates
// what it costs hookrun. cpu-ns/op is the CPU this process and the
// step's processes used per step, which a loaded machine inflates less
// than ns/op: compare variants by it.
func BenchmarkExec(b *testing.B) {
	ws, err := os.MkdirTemp("", "hookrun-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(ws)
	if err := os.Chown(ws, stepUID, stepUID); err != nil {
		b.Fatal(err)
	}
	init, err := buildInit()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		exec *host.Executor
	}{
		{"same_user", host.New(host.Config{})},
		{"contained", host.New(host.Config{Contain: true})},
		{"isolated", isolated(ws + "-hidden")},
		{"isolated-re-exec", isolatedWith("", ws+"-hidden")},
		{"isolated-step-init", isolatedWith(init, ws+"-hidden")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if strings.HasPrefix(bc.name, "isolated") && os.Geteuid() != 0 {
				b.Fatal("isolated steps need root")
			}
			req := contract.ExecRequest{Argv: []string{"sh", "-c", "true"}, Env: []workflows.EnvVar{pathEnv}, Dir: ws, Workspace: ws}
			before := cpuTime(b)
			for b.Loop() {
				if res, err := bc.exec.Exec(context.Background(), req); err != nil || res.ExitCode != 0 {
					b.Fatalf("exit %d, err %v", res.ExitCode, err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time this process and its waited-for children have
// used: a step's cost that the load of a shared machine does not inflate
// the way it does wall time.
func cpuTime(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}
