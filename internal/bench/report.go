package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hookrun/hookrun/queue"
)

// webhookReference is the deliveries per second that adnanh/webhook (a
// command-per-request webhook server) reaches on the same payload on this
// machine, as issue 9 states it; it is not measured by this bench.
const webhookReference = 1000

// judge evaluates the targets against rep.
func judge(rep *Report) []Target {
	var ts []Target
	add := func(name, target string, measured float64, unit string, met bool) {
		ts = append(ts, Target{Name: name, Target: target, Measured: measured, Unit: unit, Met: met})
	}
	ran := func(phase string) bool { return slices.Contains(rep.Phases, phase) }
	if ran("ingest") {
		maxPerSec := 0.0
		for _, r := range rep.Ingest {
			if r.Concurrency >= 8 {
				add(fmt.Sprintf("ingest b/a at concurrency %d", r.Concurrency), ">= 0.5", r.Ratio, "ratio", r.Ratio >= 0.5)
			}
			maxPerSec = max(maxPerSec, r.PerSec)
		}
		add("ingest vs a command-per-request server (adnanh/webhook ~1000/s here, per the issue)",
			fmt.Sprintf(">= %d/s", 5*webhookReference), maxPerSec, "deliveries/s", maxPerSec >= 5*webhookReference)
		add(fmt.Sprintf("open loop %d/s p99", rep.OpenLoop.RatePerSec), "< 10 ms", float64(rep.OpenLoop.P99), "ms", rep.OpenLoop.P99 < 10)
		add(fmt.Sprintf("open loop %d/s refused", rep.OpenLoop.RatePerSec), "0", float64(rep.OpenLoop.Refused), "deliveries", rep.OpenLoop.Refused == 0)
	}
	if ran("durability") {
		// The rule of the default: write through unless that halves ingest.
		d := rep.Durability
		alwaysIsDefault := d.Default == queue.SyncAlways
		add(fmt.Sprintf("nats.sync default %q: always unless always/%s ingest at c=%d < 0.5", d.Default, syncInterval, d.Concurrency),
			"default follows the ratio", d.Ratio, "ratio", alwaysIsDefault == (d.Ratio >= 0.5))
	}
	if ran("dispatch") {
		add("dispatch in process p99", "< 50 ms", float64(rep.Dispatch.InProcess.P99), "ms", rep.Dispatch.InProcess.P99 < 50)
	}
	if ran("engine") {
		add("engine overhead (10 x true vs plain Go loop)", "<= 1.2x", rep.Engine.Ratio, "ratio", rep.Engine.Ratio <= 1.2)
	}
	if ran("run_cli") {
		add("hookrun run wall time vs shell loop", "<= 2x", rep.RunCLI.Ratio, "ratio", rep.RunCLI.Ratio <= 2)
	}
	if ran("memory") {
		add("idle rss of hookrun serve", "< 32 MiB", rep.Memory.IdleRSSMiB, "MiB", rep.Memory.IdleRSSMiB < 32)
		add(fmt.Sprintf("rss after %d runs vs idle", rep.Memory.Runs), "<= 1.5x", rep.Memory.Ratio, "ratio", rep.Memory.Ratio <= 1.5)
	}
	return ts
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(&b, "hookrun bench (%s, %d CPUs, payload %d bytes, load avg %.2f → %.2f%s)\n%s\n",
		r.Machine.GoVersion, r.Machine.CPUs, r.Machine.PayloadSize, r.Machine.LoadStart, r.Machine.LoadEnd, quickNote(r.Quick), r.Machine.scratchNote())

	if slices.Contains(r.Phases, "ingest") {
		fmt.Fprintln(&b, "Ingest: (a) raw synchronous JetStream publish of the body, in-process like ingress (a' over loopback TCP);")
		fmt.Fprintln(&b, "        (b) signed delivery through HTTP ingress")
		fmt.Fprintln(tw, "conc\tops\ta/s\ta p50 ms\ta p99 ms\ta'/s\tb/s\tb p50 ms\tb p99 ms\tb p99.9 ms\tb/a\tb/a'\terrors\tmsg bytes\t")
		for _, x := range r.Ingest {
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.2f\t%.2f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t\n",
				x.Concurrency, x.Ops, x.FloorPerSec, x.FloorP50, x.FloorP99, x.FloorTCPPerSec, x.PerSec, x.P50, x.P99, x.P999, x.Ratio, x.RatioTCP, x.Errors+x.FloorErrors, x.BytesPerRun)
		}
		tw.Flush()
		o := r.OpenLoop
		fmt.Fprintf(&b, "\nOpen loop: %d deliveries at %d/s over %.1fs: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms, refused %d\n",
			o.Sent, o.RatePerSec, o.Duration, o.P50, o.P99, o.P999, o.Max, o.Refused)
	}
	if slices.Contains(r.Phases, "dispatch") {
		d := r.Dispatch
		fmt.Fprintln(&b, "\nDispatch (HTTP send → first step's process start):")
		fmt.Fprintf(&b, "  in process:       %d runs, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", d.InProcess.Runs, d.InProcess.P50, d.InProcess.P99, d.InProcess.Max)
		fmt.Fprintf(&b, "  separate process: %d runs, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", d.SeparateProcess.Runs, d.SeparateProcess.P50, d.SeparateProcess.P99, d.SeparateProcess.Max)
	}
	if slices.Contains(r.Phases, "engine") {
		e := r.Engine
		fmt.Fprintf(&b, "\nEngine: %d-step chain of `true` %.1f ms vs plain Go loop %.1f ms: %.2fx (medians of %d)\n", e.Steps, e.EngineMs, e.LoopMs, e.Ratio, e.Repeats)
	}
	if slices.Contains(r.Phases, "durability") {
		d := r.Durability
		fmt.Fprintf(&b, "Durability (ingest, c=%d, two runs each): sync every %s %.0f/s (p99 %.1f ms), sync always %.0f/s (p99 %.1f ms): %.2fx; default (%s) %.0f/s\n",
			d.Concurrency, syncInterval, d.IntervalPerSec, float64(d.IntervalP99), d.AlwaysPerSec, float64(d.AlwaysP99), d.Ratio, d.Default, d.DefaultPerSec)
	}
	if slices.Contains(r.Phases, "run_cli") {
		c := r.RunCLI
		fmt.Fprintf(&b, "hookrun run: %.1f ms vs shell loop %.1f ms: %.2fx (medians of %d)\n", c.RunMs, c.ShellMs, c.Ratio, c.Repeats)
	}
	if slices.Contains(r.Phases, "memory") {
		m := r.Memory
		fmt.Fprintf(&b, "\nMemory of hookrun serve (each read after 20 s quiet): idle %.1f MiB, after %d runs %.1f MiB: %.2fx (%.0f runs/s end to end)\n",
			m.IdleRSSMiB, m.Runs, m.SettledRSSMiB, m.Ratio, m.RunsPerSec)
		fmt.Fprintf(&b, "  anonymous / mapped files (the binary): idle %.1f / %.1f MiB, after the runs %.1f / %.1f MiB\n",
			m.IdleAnonMiB, m.IdleFileMiB, m.SettledAnonMiB, m.SettledFileMiB)
		fmt.Fprintf(&b, "  3 s after the last run: rss %.1f MiB, live Go heap at the last GC %.0f MiB\n", m.AfterRunsRSSMiB, m.LiveHeapMiB)
		if m.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", m.Note)
		}
	}
	fmt.Fprintln(&b, "\nTargets:")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, t := range r.Targets {
		mark := "MET"
		if !t.Met {
			mark = "NOT MET"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.2f %s\t%s\n", t.Name, t.Target, t.Measured, t.Unit, mark)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nbench took %.1fs\n", r.Elapsed)
	_, err := io.WriteString(w, b.String())
	return err
}

func quickNote(q bool) string {
	if q {
		return "; QUICK: small counts, not a measurement"
	}
	return ""
}
