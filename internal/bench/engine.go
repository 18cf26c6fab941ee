package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/workflows"
)

// chainSteps is the length of the `true` chain.
const chainSteps = 10

// chainWorkflow is a chain of chainSteps host steps running `true`.
func chainWorkflow() string {
	var b strings.Builder
	b.WriteString("name: bench-chain\ntype: chain\nsteps:\n")
	for i := 1; i <= chainSteps; i++ {
		fmt.Fprintf(&b, "  - id: s%d\n    run: \"true\"\n", i)
	}
	return b.String()
}

// runEngine times engine.Engine on the chain against a plain Go loop that
// starts `sh -c true` chainSteps times, alternating, and compares medians.
func runEngine(ctx context.Context, cfg *Config, _ string, rep *Report) error {
	wf, err := workflows.Parse("bench-chain.yaml", []byte(chainWorkflow()))
	if err != nil {
		return fmt.Errorf("parsing the chain: %w", err)
	}
	eng, err := engine.New(engine.Config{
		Providers: engine.Providers{Host: host.New(host.Config{})},
		Logger:    cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("configuring engine: %w", err)
	}
	var engineT, loopT []time.Duration
	for i := 0; i < cfg.EngineRepeats+1; i++ { // the first round warms up
		t0 := time.Now()
		res := eng.Run(ctx, engine.RunSpec{ID: fmt.Sprintf("bench-%d", i), Workflow: wf})
		de := time.Since(t0)
		if res.Status != workflows.StatusSucceeded {
			return fmt.Errorf("the chain ended %s: %s", res.Status, res.Error)
		}
		t0 = time.Now()
		for j := 0; j < chainSteps; j++ {
			if err := exec.CommandContext(ctx, "sh", "-c", "true").Run(); err != nil {
				return fmt.Errorf("running sh -c true: %w", err)
			}
		}
		dl := time.Since(t0)
		if i > 0 {
			engineT, loopT = append(engineT, de), append(loopT, dl)
		}
	}
	e, l := median(engineT), median(loopT)
	rep.Engine = Engine{Steps: chainSteps, Repeats: cfg.EngineRepeats, EngineMs: msf(e), LoopMs: msf(l), Ratio: ratio(e, l)}
	return nil
}

// runCLI times the whole `hookrun run chain.yaml` against a shell loop of
// `sh -c true`, alternating, and compares medians.
func runCLI(ctx context.Context, cfg *Config, dir string, rep *Report) error {
	path := filepath.Join(dir, "chain.yaml")
	if err := os.WriteFile(path, []byte(chainWorkflow()), 0o644); err != nil {
		return fmt.Errorf("writing the chain: %w", err)
	}
	loop := "for i in" + strings.Repeat(" x", chainSteps) + "; do sh -c true; done"
	var runT, shT []time.Duration
	for i := 0; i < cfg.CLIRepeats+1; i++ {
		cmd := exec.CommandContext(ctx, cfg.Binary, "run", "--dir", dir, path)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		dr := time.Since(t0)
		if err != nil {
			return fmt.Errorf("running hookrun run: %w: %s", err, tailString(string(out), 2000))
		}
		t0 = time.Now()
		if out, err := exec.CommandContext(ctx, "sh", "-c", loop).CombinedOutput(); err != nil {
			return fmt.Errorf("running the shell loop: %w: %s", err, out)
		}
		ds := time.Since(t0)
		if i > 0 {
			runT, shT = append(runT, dr), append(shT, ds)
		}
	}
	r, s := median(runT), median(shT)
	rep.RunCLI = RunCLI{Repeats: cfg.CLIRepeats, RunMs: msf(r), ShellMs: msf(s), Ratio: ratio(r, s)}
	return nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
