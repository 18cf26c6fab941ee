package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/hookrun/hookrun/internal/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench", "[--json] [--quick] [--only PHASES] [--cpuprofile FILE]",
		"Measure ingest throughput against the raw JetStream floor, dispatch latency,\n"+
			"engine overhead, `hookrun run` wall time and the memory of `hookrun serve`,\n"+
			"and judge them against the targets of docs/performance.md. Progress goes to\n"+
			"stderr, the table (or --json) to stdout. Takes 2 to 3 minutes; --quick takes\n"+
			"seconds and only checks that every phase works.", stderr)
	asJSON := fs.Bool("json", false, "print the results as JSON")
	quick := fs.Bool("quick", false, "small counts: a smoke check, not a measurement")
	only := fs.String("only", "", "comma-separated phases to run (ingest, durability, dispatch, engine, run_cli, memory); default all")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the in-process ingest, dispatch and engine phases) to FILE")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
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
	tuneGC() // the in-process phases run ingress and runner as serve does
	rep, err := bench.Run(ctx, bench.Config{Binary: self, Quick: *quick, Only: splitList(*only), Progress: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "hookrun bench: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "hookrun bench: writing json: %v\n", err)
			return 1
		}
		return 0
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "hookrun bench: writing table: %v\n", err)
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
