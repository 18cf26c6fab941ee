package git_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// BenchmarkRunDirs is the directory work of one run without a checkout, as
// a runner does it (Prepare for host steps, the engine's event file of the
// bench's 28 KB payload at EventFile, Remove), handed to a step user when
// the benchmark runs as root (as `serve` does), and, in the same run, its
// floor: one directory made and removed (os.Mkdir, os.Remove), the least
// any per-run workspace costs. Compare the two as a ratio
// (docs/performance.md, "hookrun's own cost per run"): of cpu-ns/op, the
// process's CPU (user and system) per run, rather than of wall time, which
// on a shared virtual disk is mostly waits for the disk.
// HOOKRUN_BENCH_DATA_PARENT puts the data dir on another file system.
func BenchmarkRunDirs(b *testing.B) {
	payload, err := os.ReadFile("../../internal/bench/testdata/pull_request.opened.json")
	if err != nil {
		b.Fatal(err)
	}
	data := b.TempDir()
	if parent := os.Getenv("HOOKRUN_BENCH_DATA_PARENT"); parent != "" { // another file system
		if data, err = os.MkdirTemp(parent, "rundirs-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(data) })
	}
	cfg := git.Config{DataDir: data}
	if os.Geteuid() == 0 {
		cfg.Owner = &git.Owner{UID: 65534, GID: 65534}
	}
	w, err := git.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ev := &workflows.Event{}
	b.Run("run", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		start := cpuTime(b)
		for b.Loop() {
			i++
			id := fmt.Sprintf("01JDQ5Z8W6N4D4Q3G8M2X7T%03d", i%1000)
			ws, err := w.Prepare(context.Background(), id, ev, contract.PrepareOptions{HostSteps: true})
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(ws.EventFile, payload, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := w.Remove(id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		dir := filepath.Join(cfg.DataDir, "workspaces")
		i := 0
		start := cpuTime(b)
		for b.Loop() {
			i++
			d := filepath.Join(dir, fmt.Sprintf("01JDQ5Z8W6N4D4Q3G8M2X7T%03d", i%1000))
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.Remove(d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	})
}

// cpuTime is the user and system CPU this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
