package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hookrun/hookrun/lines"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// LocalOptions configures RunLocal (`hookrun run`).
type LocalOptions struct {
	Workflow  *workflows.Workflow         // validated workflow to run; required
	Event     *workflows.Event            // the event it runs for; nil: an empty event
	Dir       string                      // workspace; "" = the current directory (unless checkout with Workspaces)
	RunID     string                      // default local-<unix nanos>
	JSON      bool                        // print the result as JSON on Stdout (step logs go to Stderr)
	Stdout    io.Writer                   // default os.Stdout
	Stderr    io.Writer                   // default os.Stderr
	Providers Providers                   // Host is required
	LookupEnv func(string) (string, bool) // secrets and base env; default os.LookupEnv
	Params    []workflows.EnvVar          // values for the workflow's params (Workflow.SetParams), `-p NAME=VALUE`
	// Workspaces, when set and the workflow has `checkout: true`, prepares
	// a checkout of the event's head instead of using Dir.
	Workspaces contract.Workspaces
	// SbxHostEnv is Config.SbxHostEnv: what a harness that runs sbx
	// itself gets of the invoking user's environment.
	SbxHostEnv []workflows.EnvVar
}

// Exit codes of RunLocal.
const (
	ExitSucceeded = 0
	ExitFailed    = 1
	ExitUsage     = 2
)

// LocalResult is what `hookrun run --json` prints.
type LocalResult struct {
	RunID    string  `json:"run_id"`
	Workflow string  `json:"workflow"`
	Duration float64 `json:"duration_seconds"`
	*Result
}

// RunLocal runs a workflow once on this machine, without queue, server or
// reporter. It prints each step's log lines prefixed with `[step-id] `
// (stdout lines on Stdout, stderr and hookrun's own lines on Stderr), then a
// summary table, or with JSON the result as JSON on Stdout and the logs on
// Stderr. It returns 0 when the run succeeded (also partially, or was
// skipped by its preconditions), 1 when it failed or was cancelled, 2 when
// it could not start.
func RunLocal(ctx context.Context, o LocalOptions) int {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Workflow == nil {
		fmt.Fprintln(o.Stderr, "hookrun run: no workflow")
		return ExitUsage
	}
	if o.RunID == "" {
		o.RunID = "local-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	ev := o.Event
	if ev == nil {
		ev = &workflows.Event{}
	}
	dir, headSHA, eventFile, resultsDir := o.Dir, "", "", ""
	if o.Workflow.Checkout && o.Workspaces != nil {
		ws, err := o.Workspaces.Prepare(ctx, o.RunID, ev, contract.PrepareOptions{Checkout: true, HostSteps: o.Workflow.Sandbox == nil})
		if err != nil {
			fmt.Fprintf(o.Stderr, "hookrun run: preparing workspace: %v\n", err)
			return ExitFailed
		}
		defer o.Workspaces.Remove(o.RunID) //nolint:errcheck // best effort cleanup of a local checkout
		// HOME and TMPDIR stay the invoking user's: a local run is theirs.
		dir, headSHA, eventFile, resultsDir = ws.Dir, ws.HeadSHA, ws.EventFile, ws.Results
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintf(o.Stderr, "hookrun run: finding the current directory: %v\n", err)
			return ExitUsage
		}
		dir = wd
	}

	logOut := o.Stdout
	if o.JSON {
		logOut = o.Stderr
	}
	sink := &printSink{stdout: logOut, stderr: o.Stderr}
	eng, err := New(Config{
		Providers:  o.Providers,
		Logs:       sink,
		LookupEnv:  o.LookupEnv,
		SbxHostEnv: o.SbxHostEnv,
	})
	if err != nil {
		fmt.Fprintf(o.Stderr, "hookrun run: %v\n", err)
		return ExitUsage
	}
	// The event file lies outside dir (a file of the run's own in TMPDIR
	// without a checkout): the user's directory stays as it was.
	res := eng.Run(ctx, RunSpec{ID: o.RunID, Attempt: 1, Workflow: o.Workflow, Event: ev, Workspace: dir, HeadSHA: headSHA, Params: o.Params, EventFile: eventFile, Results: resultsDir})

	if o.JSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(LocalResult{RunID: o.RunID, Workflow: o.Workflow.Name, Duration: res.Duration().Seconds(), Result: res}); err != nil {
			fmt.Fprintf(o.Stderr, "hookrun run: encoding result: %v\n", err)
		}
	} else {
		PrintFindings(o.Stdout, res.Results)
		PrintSummary(o.Stdout, res)
	}
	if res.Status.Passed() {
		return ExitSucceeded
	}
	return ExitFailed
}

// PrintSummary writes the table of steps (step, status, exit, attempts,
// duration) and the run's outcome.
func PrintSummary(w io.Writer, res *Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSTEP\tSTATUS\tEXIT\tATTEMPTS\tDURATION")
	for _, s := range res.Steps {
		exit := "-"
		if s.ExitCode != nil {
			exit = strconv.Itoa(*s.ExitCode)
		}
		dur := "-"
		if s.StartedAt != nil && s.FinishedAt != nil {
			dur = s.FinishedAt.Sub(*s.StartedAt).Round(time.Millisecond).String()
		}
		attempts := "-"
		if s.Attempts > 0 {
			attempts = strconv.Itoa(s.Attempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Status, exit, attempts, dur)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nrun %s in %s", res.Status, res.Duration().Round(time.Millisecond))
	if res.Error != "" {
		fmt.Fprintf(w, ": %s", res.Error)
	}
	fmt.Fprintln(w)
}

// PrintFindings writes the findings the steps left in $HOOKRUN_RESULTS,
// one a line as compilers write them (path:line: level rule: message),
// then what was dropped or cut; nothing when there are none.
func PrintFindings(w io.Writer, r *contract.Results) {
	if r == nil || len(r.Findings) == 0 && len(r.Notes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nFINDINGS (%d)\n", len(r.Findings))
	for _, f := range r.Findings {
		where := f.Path
		if where == "" {
			where = "(no file)"
		}
		if f.StartLine > 0 {
			where += ":" + strconv.Itoa(f.StartLine)
		}
		rule := ""
		if f.Rule != "" {
			rule = " " + f.Rule
		}
		msg := strings.ReplaceAll(f.Message, "\n", " ")
		fmt.Fprintf(w, "%s: %s%s: %s\n", where, f.Level, rule, msg)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// printSink prints log lines prefixed with their step id.
type printSink struct {
	mu     sync.Mutex // one line at a time across steps
	stdout io.Writer
	stderr io.Writer
}

func (s *printSink) Writer(_, stepID, stream string) io.WriteCloser {
	dst := s.stdout
	prefix := "[" + stepID + "] "
	switch {
	case stepID == contract.RunLogStep:
		dst, prefix = s.stderr, "[hookrun] "
	case stream == contract.StreamStderr:
		dst = s.stderr
	case stream == contract.StreamSystem:
		dst = s.stderr
		prefix += "hookrun: "
	}
	w := &prefixWriter{mu: &s.mu, dst: dst, prefix: []byte(prefix)}
	w.Init(w, lines.Options{})
	return w
}

// prefixWriter prints each line written to it (package lines) with its
// prefix, one line at a time across the sink's writers.
type prefixWriter struct {
	lines.Writer
	mu     *sync.Mutex
	dst    io.Writer
	prefix []byte
	buf    []byte
}

// WriteLines prints one line, newline added when it has none.
func (w *prefixWriter) WriteLines(line []byte) error {
	w.buf = append(append(w.buf[:0], w.prefix...), line...)
	if line[len(line)-1] != '\n' {
		w.buf = append(w.buf, '\n')
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.dst.Write(w.buf)
	return err
}

var _ contract.LogSink = (*printSink)(nil)
