package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/moby/sys/reexec"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// exitUsage is the exit code for usage and validation errors.
const exitUsage = 2

func commands() []command {
	return []command{
		{"validate", "check workflow files and print every problem as file:line:col: message", cmdValidate},
		{"schema", "print the JSON Schema (draft 2020-12) of the workflow format", cmdSchema},
		{"serve", "run everything in one process: embedded NATS, ingress, API and a runner", cmdServe},
		{"ingress", "run the webhook ingress and API against an external NATS", cmdIngress},
		{"runner", "run a runner against an external NATS", cmdRunner},
		{"run", "run one workflow once on this machine, without a server", cmdRun},
		{"recover", "ask GitHub to redeliver webhook deliveries that failed while hookrun was down", cmdRecover},
		{"bench", "measure ingest, dispatch, engine overhead and memory against their floors", cmdBench},
		{"version", "print the version", cmdVersion},
	}
}

func main() {
	stopHeapSampling()
	// An isolated host step starts as a re-execution of this binary: run
	// its init instead of a command (providers/host).
	if reexec.Init() {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// dispatch runs the command args names and returns the process's exit
// code. The command tree is spf13/cobra's (cli.go); the commands of
// commands() keep parsing their own flags as they always did.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")) {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	return execute(ctx, args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "hookrun turns GitHub, GitLab and Gitea webhooks and Slack commands into sandboxed workflow runs.")
	fmt.Fprintln(w, "\nUsage: hookrun <command> [flags]\n\nCommands:")
	cs := commands()
	for _, c := range clientCommands() {
		cs = append(cs, command{name: c.name, summary: c.summary})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'hookrun <command> --help' for the flags of a command.")
}

// newFlagSet returns a flag set whose --help prints the command's synopsis,
// description and flags.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: hookrun %s %s\n\n%s\n", name, synopsis, description)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args and maps -h to exit 0 and bad flags to exitUsage.
// ok is false when the caller should return code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return exitUsage, false
	}
	return 0, true
}

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", "Print the version of this hookrun binary (set at build time from git describe;\n\"dev\" for a plain go build).", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fmt.Fprintf(stdout, "hookrun %s\n", version)
	return 0
}

// flagSpec is what a command's --help prints (its synopsis and
// description) and the positional arguments it takes: minArgs to maxArgs
// (-1: any number), among its flags when interspersed.
type flagSpec struct {
	name, synopsis, description string
	minArgs, maxArgs            int
	interspersed                bool
}

// commandFunc runs a command on its positional arguments once its flags
// parsed.
type commandFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// flagCommand is the run function of a command whose flags define
// registers on the command's flag set: -h exits 0, a bad flag or a wrong
// number of arguments prints the usage and exits exitUsage; otherwise the
// commandFunc define returned runs. The commands' flag handling, written
// once.
func flagCommand(spec flagSpec, define func(fs *flag.FlagSet) commandFunc) func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		fs := newFlagSet(spec.name, spec.synopsis, spec.description, stderr)
		run := define(fs)
		positional, code, ok := parseArgs(fs, args, spec.interspersed)
		if !ok {
			return code
		}
		if len(positional) < spec.minArgs || (spec.maxArgs >= 0 && len(positional) > spec.maxArgs) {
			fs.Usage()
			return exitUsage
		}
		return run(ctx, positional, stdout, stderr)
	}
}

// parseArgs parses args (parseInterspersed when interspersed) and returns
// the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string, interspersed bool) (positional []string, code int, ok bool) {
	if interspersed {
		return parseInterspersed(fs, args)
	}
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	return fs.Args(), 0, true
}
