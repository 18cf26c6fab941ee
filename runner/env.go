package runner

import "github.com/hookrun/hookrun/workflows"

// baseEnvNames are the only variables a host step inherits from the runner's
// environment. The runner's environment as a whole is never passed on: it
// may hold tokens (GITHUB_TOKEN, the NATS credentials, ...).
var baseEnvNames = []string{"PATH", "HOME", "LANG", "TMPDIR", "USER"}

// containerWorkspace is where containers see the run's workspace.
const containerWorkspace = "/workspace"

// envList is an ordered environment in which a later Set of a name replaces
// the value in place. It also serves as the lookup for workflows.Expand, so
// that an env value written by the workflow author may reference any name
// set before it.
type envList struct {
	vars  []workflows.EnvVar
	index map[string]int
}

func newEnvList(capacity int) *envList {
	return &envList{vars: make([]workflows.EnvVar, 0, capacity), index: make(map[string]int, capacity)}
}

// clone returns an independent copy with room for n more variables.
func (l *envList) clone(n int) *envList {
	c := &envList{vars: make([]workflows.EnvVar, len(l.vars), len(l.vars)+n), index: make(map[string]int, len(l.vars)+n)}
	copy(c.vars, l.vars)
	for k, v := range l.index {
		c.index[k] = v
	}
	return c
}

// set adds or replaces name.
func (l *envList) set(name, value string) {
	if i, ok := l.index[name]; ok {
		l.vars[i].Value = value
		return
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, workflows.EnvVar{Name: name, Value: value})
}

// setAll adds vars as they are: their values are data (event text, step
// outputs, secrets) and are never expanded.
func (l *envList) setAll(vars []workflows.EnvVar) {
	for _, v := range vars {
		l.set(v.Name, v.Value)
	}
}

// expandAll adds vars written by the workflow author (env, params): each
// value may reference, as ${NAME}, any variable set before it. Substituted
// values are not expanded again and no shell is involved.
func (l *envList) expandAll(vars []workflows.EnvVar) {
	l.expandAllWith(vars, nil)
}

// expandAllWith is expandAll where names not set yet are also looked up in
// fallback (the run's HOOKRUN_* variables, which are set after the workflow
// env so that a workflow cannot override them, but may be referenced by it).
func (l *envList) expandAllWith(vars []workflows.EnvVar, fallback *envList) {
	lookup := l.lookup
	if fallback != nil {
		lookup = func(name string) (string, bool) {
			if v, ok := l.lookup(name); ok {
				return v, true
			}
			return fallback.lookup(name)
		}
	}
	for _, v := range vars {
		l.set(v.Name, workflows.Expand(v.Value, lookup))
	}
}

func (l *envList) lookup(name string) (string, bool) {
	if i, ok := l.index[name]; ok {
		return l.vars[i].Value, true
	}
	return "", false
}
