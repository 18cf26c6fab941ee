package runner

import (
	"context"
	"slices"

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
