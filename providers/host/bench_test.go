package host_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// BenchmarkExec measures what one trivial host step costs: as hookrun's own
// user, directly and contained (the init in its own namespaces), and
// isolated (its namespaces, the mounts, and an init: a
// re-execution of this test binary, or hookrun-step-init). Run without
// -race: the race runtime's start-up dominates an isolated step there. The
// test binary starts faster than hookrun does, so re-exec here understates
// what it costs hookrun.
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
		{"isolated-re-exec", isolated(ws + "-hidden")},
		{"isolated-step-init", isolatedWith(init, ws+"-hidden")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if strings.HasPrefix(bc.name, "isolated") && os.Geteuid() != 0 {
				b.Fatal("isolated steps need root")
			}
			req := contract.ExecRequest{Argv: []string{"sh", "-c", "true"}, Env: []workflows.EnvVar{pathEnv}, Dir: ws, Workspace: ws}
			for b.Loop() {
				if res, err := bc.exec.Exec(context.Background(), req); err != nil || res.ExitCode != 0 {
					b.Fatalf("exit %d, err %v", res.ExitCode, err)
				}
			}
		})
	}
}
