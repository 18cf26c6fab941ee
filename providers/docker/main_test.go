package docker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

// runPrefix starts every run id these tests use, so the leftover check
// below only looks at this package's containers (other packages' tests may
// run at the same time).
const runPrefix = "dockertest-"

// dockerErr is why the Docker tests skip; nil when the engine answers.
var dockerErr error

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cli, err := dockertest.Client(ctx)
	if err == nil {
		err = dockertest.Ensure(ctx, cli)
	}
	cancel()
	if err != nil {
		dockerErr = err
		fmt.Fprintf(os.Stderr, "\n!!! WARNING: Docker tests SKIPPED: %v !!!\n\n", err)
		os.Exit(m.Run())
	}
	code := m.Run()

	// No container of this package's runs may outlive the tests, including
	// those stopped by a timeout or a cancel.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, err := dockertest.Leftovers(ctx, cli)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checking leftover containers:", err)
		os.Exit(1)
	}
	var mine []string
	for _, l := range left {
		if strings.Contains(l, "run="+runPrefix) {
			mine = append(mine, l)
		}
	}
	if len(mine) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: containers labelled hookrun.run left behind:\n  %s\n", strings.Join(mine, "\n  "))
		code = 1
	}
	// Nor any network of them.
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelRun))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "checking leftover networks:", err)
		os.Exit(1)
	}
	var mineNets []string
	for _, n := range nets {
		if strings.HasPrefix(n.Labels[LabelRun], runPrefix) {
			mineNets = append(mineNets, n.Name)
		}
	}
	if len(mineNets) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: networks labelled hookrun.run left behind:\n  %s\n", strings.Join(mineNets, "\n  "))
		code = 1
	}
	os.Exit(code)
}

// needDocker skips (loudly) when no engine answers.
func needDocker(t testing.TB) {
	t.Helper()
	if dockerErr != nil {
		t.Skipf("!!! Docker engine unreachable, test skipped: %v", dockerErr)
	}
}

// newDocker returns a Docker for the tests with short timeouts.
func newDocker(t testing.TB, cfg Config) *Docker {
	t.Helper()
	needDocker(t)
	if cfg.PullTimeout == 0 {
		cfg.PullTimeout = 30 * time.Second
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
