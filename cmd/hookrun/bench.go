package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/hookrun/hookrun/internal/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "peer" {
		return cmdBenchPeer(ctx, args[1:], stdout, stderr)
	}
	return cmdBenchPhases(ctx, args, stdout, stderr)
}

var cmdBenchPhases = flagCommand(flagSpec{name: "bench", synopsis: "[--json] [--quick] [--only PHASES] [--cpuprofile FILE] | peer --webhook BINARY", maxArgs: 0,
	description: `Measure ingest throughput against the raw JetStream floor, dispatch latency,
engine overhead, ` + "`" + `hookrun run` + "`" + ` wall time and the memory of ` + "`" + `hookrun serve` + "`" + `,
and judge them against the targets of docs/performance.md. Progress goes to
stderr, the table (or --json) to stdout. Takes 2 to 3 minutes; --quick takes
seconds and only checks that every phase works. ` + "`" + `hookrun bench peer` + "`" + ` compares
` + "`" + `hookrun serve` + "`" + ` with adnanh/webhook (see ` + "`" + `hookrun bench peer -h` + "`" + `).`},
	func(fs *flag.FlagSet) commandFunc {
		asJSON := fs.Bool("json", false, "print the results as JSON")
		quick := fs.Bool("quick", false, "small counts: a smoke check, not a measurement")
		only := fs.String("only", "", "comma-separated phases to run (ingest, durability, dispatch, engine, run_cli, memory); default all")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the in-process ingest, dispatch and engine phases) to FILE")
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			self, err := os.Executable()
			if err != nil {
				fmt.Fprintf(stderr, "hookrun bench: finding this executable: %v\n", err)
				return 1
			}
			if *cpuProfile != "" {
				f, err := os.Create(*cpuProfile)
				if err != nil {
					fmt.Fprintf(stderr, "hookrun bench: creating cpu profile: %v\n", err)
					return 1
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					fmt.Fprintf(stderr, "hookrun bench: starting cpu profile: %v\n", err)
					return 1
				}
				defer pprof.StopCPUProfile()
			}
			(&gcPacing{}).start(ctx) // the in-process phases run ingress and runner as serve does
			rep, err := bench.Run(ctx, bench.Config{Binary: self, Quick: *quick, Only: splitList(*only), Progress: stderr})
			if err != nil {
				fmt.Fprintf(stderr, "hookrun bench: %v\n", err)
				return 1
			}
			return writeReport(rep, *asJSON, "hookrun bench", stdout, stderr)
		}
	})

// cmdBenchPeer runs `hookrun bench peer`: this executable's `serve`
// against adnanh/webhook.
var cmdBenchPeer = flagCommand(flagSpec{name: "bench peer", synopsis: "--webhook BINARY [--json] [--quick] [--rounds N]", maxArgs: 0,
	description: `Compare ` + "`" + `hookrun serve` + "`" + ` (its defaults, as root with host steps isolated) with
adnanh/webhook, started fresh in turn (rounds alternate which goes first), on the
same signed 28 KB pull_request deliveries, each running a one-line shell command:
CPU per delivery including the run, runs drained at concurrency 8, deliveries/s
at concurrency 1, dispatch latency, deliveries/s and p99 at concurrency 64.
Loopback only; a few minutes (` + "`" + `make bench-peer` + "`" + ` builds webhook from a checkout).`},
	func(fs *flag.FlagSet) commandFunc {
		webhook := fs.String("webhook", "", "the adnanh/webhook executable (required)")
		asJSON := fs.Bool("json", false, "print the results as JSON")
		quick := fs.Bool("quick", false, "small counts: a smoke check, not a measurement")
		rounds := fs.Int("rounds", 2, "rounds of both servers")
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if *webhook == "" {
				fs.Usage()
				return exitUsage
			}
			self, err := os.Executable()
			if err != nil {
				fmt.Fprintf(stderr, "hookrun bench peer: finding this executable: %v\n", err)
				return 1
			}
			rep, err := bench.RunPeer(ctx, bench.PeerConfig{Binary: self, Webhook: *webhook, Quick: *quick, Rounds: *rounds, Progress: stderr})
			if err != nil {
				fmt.Fprintf(stderr, "hookrun bench peer: %v\n", err)
				return 1
			}
			return writeReport(rep, *asJSON, "hookrun bench peer", stdout, stderr)
		}
	})

// writeReport prints a bench report as JSON or as its table.
func writeReport(rep interface{ WriteTable(io.Writer) error }, asJSON bool, name string, stdout, stderr io.Writer) int {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "%s: writing json: %v\n", name, err)
			return 1
		}
		return 0
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "%s: writing table: %v\n", name, err)
		return 1
	}
	return 0
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
