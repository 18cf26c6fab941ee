package runner

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// maxConditionOutput caps what a `command` in a value condition may print.
const maxConditionOutput = 1 << 20

// conditionCheck is where a list of preconditions is checked: the
// executor, the request its commands are run with (environment, directory,
// container) and the lookup of ${NAME} in value conditions.
type conditionCheck struct {
	exec   contract.Executor
	req    contract.ExecRequest
	lookup func(string) (string, bool)
}

// unmet checks conds in order, as Dagu does (all must hold), and returns
// why the first one that does not hold fails, or "". An error is a check
// that could not be evaluated (the run or step ended meanwhile, a regular
// expression that does not compile): the owner fails instead of being
// skipped.
//
// Untrusted text never becomes shell source here: a value condition's
// ${NAME} references are substituted by workflows.Expand (no shell) and
// each `command` in it runs as the author wrote it, with the environment
// as data; a command condition runs as written, as `run:` does.
func (c *conditionCheck) unmet(ctx context.Context, conds []workflows.Condition) (string, error) {
	for _, cond := range conds {
		held, detail, err := c.holds(ctx, cond)
		if err != nil {
			return "", err
		}
		if cond.Negate {
			held = !held
			detail += " (negate: true)"
		}
		if !held {
			return "precondition not met: " + detail, nil
		}
	}
	return "", nil
}

// holds evaluates one condition before negation; detail says what was
// found.
func (c *conditionCheck) holds(ctx context.Context, cond workflows.Condition) (bool, string, error) {
	if cond.Expected == "" {
		cmd := cond.Condition
		if t := strings.TrimSpace(cmd); len(t) > 1 && strings.HasPrefix(t, "`") && strings.HasSuffix(t, "`") && strings.Count(t, "`") == 2 {
			cmd = t[1 : len(t)-1] // Dagu's "`test -f x`": the command itself
		}
		code, err := c.run(ctx, cmd, io.Discard)
		if err != nil {
			return false, "", err
		}
		return code == 0, fmt.Sprintf("%q exited %d", cond.Condition, code), nil
	}
	value, err := c.value(ctx, cond.Condition)
	if err != nil {
		return false, "", err
	}
	ok, err := matches(value, cond.Expected)
	if err != nil {
		return false, "", err
	}
	return ok, fmt.Sprintf("%q is %q, want %q", cond.Condition, value, cond.Expected), nil
}

// value is a value condition's text: ${NAME} substituted from the lookup
// outside backticks, each `command` replaced by its output (trailing
// newlines trimmed, as a shell's command substitution does).
func (c *conditionCheck) value(ctx context.Context, text string) (string, error) {
	var b strings.Builder
	parts := strings.Split(text, "`")
	for i, part := range parts {
		unpaired := i == len(parts)-1 && len(parts)%2 == 0 // after a last backtick without its pair
		if i%2 == 0 || unpaired {
			if unpaired {
				b.WriteString("`")
			}
			b.WriteString(workflows.Expand(part, c.lookup))
			continue
		}
		out := &cappedBuffer{limit: maxConditionOutput}
		if _, err := c.run(ctx, part, out); err != nil {
			return "", err
		}
		b.WriteString(strings.TrimRight(out.String(), "\n"))
	}
	return b.String(), nil
}

// run runs one command of a condition with `sh -c` and returns its exit
// code. A command that cannot start counts as failing (Dagu: not met);
// only the context ending is an error.
func (c *conditionCheck) run(ctx context.Context, cmd string, stdout io.Writer) (int, error) {
	req := c.req
	req.Argv = []string{"sh", "-c", cmd}
	req.Stdin, req.Stdout, req.Stderr = nil, stdout, io.Discard
	res, err := c.exec.Exec(ctx, req)
	if ctx.Err() != nil {
		return 0, fmt.Errorf("checking preconditions: %w", context.Cause(ctx))
	}
	if err != nil {
		return -1, nil
	}
	return res.ExitCode, nil
}

// matches reports whether value is expected (literally, or as re:REGEXP),
// as a whole or on one of its lines.
func matches(value, expected string) (bool, error) {
	lines := append([]string{value}, strings.Split(value, "\n")...)
	if pat, ok := strings.CutPrefix(expected, "re:"); ok {
		re, err := regexp.Compile(pat)
		if err != nil {
			return false, fmt.Errorf("checking preconditions: expected %q: %w", expected, err)
		}
		for _, l := range lines {
			if re.MatchString(l) {
				return true, nil
			}
		}
		return false, nil
	}
	for _, l := range lines {
		if l == expected {
			return true, nil
		}
	}
	return false, nil
}

// rootConditions is where the workflow's own preconditions are checked:
// before the sandbox or root container opens, on the host, in the root
// working_dir, with the run's environment (no step's own) and its secrets.
func (x *execution) rootConditions() *conditionCheck {
	env := x.prefix(placeHost).clone(len(x.secrets.vars))
	lookup := env.clone(0).lookup
	env.setAll(x.secrets.vars)
	st := &workflows.Step{ID: "preconditions"}
	return &conditionCheck{
		exec:   x.e.cfg.Providers.Host,
		lookup: lookup,
		req: contract.ExecRequest{
			RunID:       x.spec.ID,
			StepID:      "preconditions",
			Env:         env.vars,
			SecretNames: x.secrets.names,
			Dir:         x.stepDir(st, route{place: placeHost}),
			Workspace:   x.spec.Workspace,
			Home:        x.spec.Home,
			TmpDir:      x.spec.TmpDir,
			Grace:       x.e.cfg.Grace,
		},
	}
}
