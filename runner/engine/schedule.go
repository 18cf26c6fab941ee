package engine

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// dependencies returns, for each step, the indexes of the steps it waits
// for. A chain runs in file order whatever `depends` says; a graph follows
// `depends` (unknown ids were rejected by validation and are ignored here).
func dependencies(w *workflows.Workflow) [][]int {
	deps := make([][]int, len(w.Steps))
	if w.Type == workflows.TypeChain {
		for i := 1; i < len(w.Steps); i++ {
			deps[i] = []int{i - 1}
		}
		return deps
	}
	index := make(map[string]int, len(w.Steps))
	for i, st := range w.Steps {
		index[st.ID] = i
	}
	for i, st := range w.Steps {
		for _, d := range st.Depends {
			if j, ok := index[d]; ok && j != i && !slices.Contains(deps[i], j) {
				deps[i] = append(deps[i], j)
			}
		}
	}
	return deps
}

// maxActive is how many steps of w may run at once: one in a chain, else
// max_active_steps (workflows.DefaultMaxActiveSteps when unset).
func maxActive(w *workflows.Workflow) int {
	if w.Type == workflows.TypeChain {
		return 1
	}
	if w.MaxActiveSteps <= 0 {
		return workflows.DefaultMaxActiveSteps
	}
	return w.MaxActiveSteps
}

// schedule is the DAG's bookkeeping: which steps wait for which, and which
// are ready to start.
type schedule struct {
	deps       [][]int // by step: the steps it waits for
	dependents [][]int // by step: the steps waiting for it
	waiting    []int   // by step: how many of its dependencies have not ended
	ready      []int   // steps whose dependencies have all ended, in file order
}

func newSchedule(w *workflows.Workflow) schedule {
	n := len(w.Steps)
	s := schedule{deps: dependencies(w), dependents: make([][]int, n), waiting: make([]int, n)}
	for i, ds := range s.deps {
		s.waiting[i] = len(ds)
		for _, d := range ds {
			s.dependents[d] = append(s.dependents[d], i)
		}
	}
	for i := range n {
		if s.waiting[i] == 0 {
			s.ready = append(s.ready, i)
		}
	}
	return s
}

// next takes the first ready step.
func (s *schedule) next() int {
	i := s.ready[0]
	s.ready = s.ready[1:]
	return i
}

// release records that step i ended: dependents with nothing left to wait
// for become ready, in file order.
func (s *schedule) release(i int) {
	for _, d := range s.dependents[i] {
		s.waiting[d]--
		if s.waiting[d] == 0 {
			pos, _ := slices.BinarySearch(s.ready, d)
			s.ready = slices.Insert(s.ready, pos, d)
		}
	}
}

// runDAG runs the workflow's steps: each as soon as its dependencies have
// ended, at most max_active_steps at a time, ready steps in file order. A
// step whose dependency failed (or was skipped) is skipped unless that
// dependency's continue_on tolerates it (failed or exit_code; skipped).
// When ctx ends, running steps
// are stopped and nothing new starts.
func (x *execution) runDAG(ctx context.Context) {
	n := len(x.wf.Steps)
	if n == 0 {
		return
	}
	s, limit := newSchedule(x.wf), maxActive(x.wf)
	done := make(chan int, n)
	running, finished := 0, 0
	for finished < n {
		for len(s.ready) > 0 && running < limit && ctx.Err() == nil {
			i := s.next()
			if reason := x.skipReason(i, s.deps[i]); reason != "" {
				x.setSkipped(i, reason)
				finished++
				s.release(i)
				continue
			}
			running++
			go func() {
				x.execStep(ctx, i, x.wf.Steps[i], nil)
				done <- i
			}()
		}
		if running == 0 {
			// Cancelled (or nothing runnable): what never started is
			// marked by markUnfinished.
			return
		}
		i := <-done
		running--
		finished++
		s.release(i)
	}
}

// skipReason says why step i must not run, or "".
func (x *execution) skipReason(i int, deps []int) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, d := range deps {
		dep := x.wf.Steps[d]
		switch x.states[d].Status {
		case workflows.StatusFailed:
			if !dep.ContinueOn.Tolerates(x.states[d].ExitCode) {
				return "dependency " + dep.ID + " failed"
			}
		case workflows.StatusSkipped:
			if !dep.ContinueOn.Skipped {
				return "dependency " + dep.ID + " was skipped"
			}
		case workflows.StatusCancelled:
			return "dependency " + dep.ID + " was cancelled"
		}
	}
	return ""
}

func (x *execution) setSkipped(i int, reason string) {
	x.mu.Lock()
	x.states[i].Status = workflows.StatusSkipped
	x.states[i].Error = reason
	x.mu.Unlock()
	x.stepSysf(x.wf.Steps[i].ID, "skipped: %s", reason)
	x.changed()
}

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
	env := x.prefix(placeHost).derive(0) // its own copy: the executor gets its vars
	st := &workflows.Step{ID: "preconditions"}
	return &conditionCheck{
		exec:   x.e.cfg.Providers.Host,
		lookup: env.lookup,
		req: contract.ExecRequest{
			RunID:       x.spec.ID,
			StepID:      "preconditions",
			Env:         env.withSecrets(x.secrets.vars),
			SecretNames: x.secrets.names,
			Dir:         x.stepDir(st, route{place: placeHost}),
			Workspace:   x.spec.Workspace,
			Home:        x.spec.Home,
			TmpDir:      x.spec.TmpDir,
			Grace:       x.e.cfg.Grace,
		},
	}
}
