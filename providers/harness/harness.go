package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Argv builds the command of one harness.run attempt: the provider's binary
// and prefix_args, prompt_flag and the prompt (prompt_mode flag), then
// `--model M` and the other `with` keys as flags (in name order; "true"
// gives a bare flag, "false" leaves the flag out), then the prompt as the
// last argument (prompt_mode arg), or as stdin (stdin). That is the order
// of the command the sbx page says Dagu runs: `sbx exec dagu-claude claude
// --dangerously-skip-permissions -p "Review ..." --model sonnet`.
//
// ${VAR} in the prompt, prefix_args, model and flag values is substituted
// through lookup, once, and the result is one argv element: it is never shell
// source. The exception is a shell harness (workflows.Harness.ShellScript:
// the built-in `shell` provider, or a custom harness such as `binary: sh,
// prefix_args: [-c]`), whose prompt and prefix_args are shell source like
// `run:`: they are handed to the shell as written and the shell expands
// ${VAR} from the environment, so event text never becomes source. Model and
// flags do not apply to a shell harness and are an error. A positional prompt
// that starts with "-" is preceded by "--" so that no CLI reads it as an
// option.
func Argv(w *workflows.Workflow, run *workflows.HarnessRun, lookup func(string) (string, bool)) (argv []string, stdin string, err error) {
	if run == nil {
		return nil, "", errors.New("building harness argv: no harness")
	}
	h, ok := w.LookupHarness(run.Provider)
	if !ok {
		return nil, "", fmt.Errorf("building harness argv: unknown provider %q", run.Provider)
	}
	if h.Binary == "" {
		return nil, "", fmt.Errorf("building harness argv for %s: no binary", run.Provider)
	}
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	shell := h.ShellScript()
	expand := func(s string) string {
		if shell {
			return s // the shell expands it, from the environment
		}
		return workflows.Expand(s, lookup)
	}
	if shell && (run.Model != "" || len(run.Flags) > 0) {
		return nil, "", fmt.Errorf("building harness argv for %s: model and flags do not apply to a shell harness", run.Provider)
	}

	argv = append(argv, h.Binary)
	for _, a := range h.PrefixArgs {
		argv = append(argv, expand(a))
	}
	prompt := expand(run.Prompt)
	if h.PromptMode == workflows.PromptFlag {
		if h.PromptFlag == "" {
			return nil, "", fmt.Errorf("building harness argv for %s: prompt_mode flag needs prompt_flag", run.Provider)
		}
		argv = append(argv, h.PromptFlag, prompt)
	}
	if run.Model != "" {
		argv = append(argv, "--model", expand(run.Model))
	}
	flags := append([]workflows.Flag(nil), run.Flags...)
	sort.SliceStable(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		name := f.Name
		if name == "" {
			return nil, "", fmt.Errorf("building harness argv for %s: flag without a name", run.Provider)
		}
		if !strings.HasPrefix(name, "-") {
			name = "--" + name
		}
		switch f.Value {
		case "true":
			argv = append(argv, name)
		case "false":
		default:
			argv = append(argv, name, expand(f.Value))
		}
	}

	switch h.PromptMode {
	case workflows.PromptArg, "":
		if !shell && strings.HasPrefix(prompt, "-") {
			argv = append(argv, "--")
		}
		argv = append(argv, prompt)
	case workflows.PromptFlag: // above
	case workflows.PromptStdin:
		stdin = prompt
	default:
		return nil, "", fmt.Errorf("building harness argv for %s: unknown prompt_mode %q", run.Provider, h.PromptMode)
	}
	return argv, stdin, nil
}

// Attempts lists what Run tries, in order: run, then each fallback with the
// run's prompt when it has none of its own.
func Attempts(run *workflows.HarnessRun) []workflows.HarnessRun {
	if run == nil {
		return nil
	}
	first := *run
	first.Fallback = nil
	out := []workflows.HarnessRun{first}
	for _, fb := range run.Fallback {
		fb.Fallback = nil
		if fb.Prompt == "" {
			fb.Prompt = run.Prompt
		}
		out = append(out, fb)
	}
	return out
}

// Run executes a harness.run step: run first, then each fallback in order,
// but only after a failure (a non-zero exit, or an error that is not the
// end of ctx). Each attempt runs where route says its own harness runs, so
// a built-in fallback of an sbx-binary harness runs in the run's sandbox
// and an sbx-binary fallback is never wrapped in it. Before each fallback
// it writes a line saying so to the attempt's Stderr. It returns the result
// of the last attempt made; the output of every attempt, failed ones
// included, reaches the attempt's Stdout and Stderr.
func Run(ctx context.Context, route contract.HarnessRoute, w *workflows.Workflow, run *workflows.HarnessRun) (contract.ExecResult, error) {
	attempts := Attempts(run)
	if len(attempts) == 0 {
		return contract.ExecResult{ExitCode: -1}, errors.New("running harness: no harness")
	}
	var (
		res = contract.ExecResult{ExitCode: -1}
		err error
	)
	for i := range attempts {
		a := &attempts[i]
		if i > 0 && ctx.Err() != nil {
			break
		}
		h, ok := w.LookupHarness(a.Provider)
		var at contract.Attempt
		var routeErr error
		if !ok {
			routeErr = fmt.Errorf("unknown provider %q", a.Provider)
		} else {
			at, routeErr = route(h)
		}
		if i > 0 {
			var stderr io.Writer = io.Discard
			if at.Base.Stderr != nil {
				stderr = at.Base.Stderr
			}
			fmt.Fprintf(stderr, "hookrun: harness %s %s; trying fallback %s (%d of %d)\n",
				attempts[i-1].Provider, failure(res, err), a.Provider, i, len(attempts)-1)
		}
		if routeErr != nil {
			res, err = contract.ExecResult{ExitCode: -1}, fmt.Errorf("running harness %s: %w", a.Provider, routeErr)
			continue
		}
		var argv []string
		var stdin string
		argv, stdin, err = Argv(w, a, at.Lookup)
		if err != nil {
			res = contract.ExecResult{ExitCode: -1}
			continue
		}
		req := at.Base
		req.Argv = argv
		if h.PromptMode == workflows.PromptStdin {
			req.Stdin = strings.NewReader(stdin)
		}
		res, err = at.Exec.Exec(ctx, req)
		if err != nil {
			err = fmt.Errorf("running harness %s: %w", a.Provider, err)
		}
		if err == nil && res.ExitCode == 0 {
			return res, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil && (err == nil || errors.Is(err, ctxErr)) {
			break // stopped, not failed: no fallback
		}
	}
	return res, err
}

// failure describes a failed attempt for the fallback line.
func failure(res contract.ExecResult, err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return fmt.Sprintf("failed with exit code %d", res.ExitCode)
}

var _ contract.HarnessRunner = contract.HarnessFunc(Run)
