package engine

import (
	"maps"
	"slices"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// baseEnvNames are the only variables a host step inherits from the runner's
// environment. The runner's environment as a whole is never passed on: it
// may hold tokens (a forge token, the NATS credentials, ...).
var baseEnvNames = []string{"PATH", "HOME", "LANG", "TMPDIR", "USER"}

// containerWorkspace is where containers see the run's workspace.
const containerWorkspace = "/workspace"

// envList is an ordered environment in which a later Set of a name replaces
// the value in place. It also serves as the lookup for workflows.Expand, so
// that an env value written by the workflow author may reference any name
// set before it.
//
// A step's list starts from its run's prefix (derive): a copy of the
// prefix's variables, whose positions it looks up in the prefix's index,
// which no list ever writes to once the prefix is built; the names the
// step adds have an index of the step's own.
type envList struct {
	vars  []workflows.EnvVar
	index map[string]int // position in vars of each name added here; nil until one is
	base  map[string]int // position in vars of each name of the prefix vars started from; read only
}

func newEnvList(capacity int) *envList {
	return &envList{vars: make([]workflows.EnvVar, 0, capacity), index: make(map[string]int, capacity)}
}

// derive returns a list of its own that starts with l's variables, with
// room for n more; l is not changed by what is set in it, nor it by what
// is set in l (which must not be set any more while its derived lists
// are used: the run's prefixes are complete before any step starts).
func (l *envList) derive(n int) *envList {
	d := &envList{vars: make([]workflows.EnvVar, len(l.vars), len(l.vars)+n), base: l.index}
	copy(d.vars, l.vars)
	if l.base != nil { // derived itself: its own index and its base make one
		d.base = make(map[string]int, len(l.base)+len(l.index))
		maps.Copy(d.base, l.base)
		maps.Copy(d.base, l.index)
	}
	return d
}

// pos is the position of name in l.vars.
func (l *envList) pos(name string) (int, bool) {
	if i, ok := l.index[name]; ok {
		return i, true
	}
	i, ok := l.base[name]
	return i, ok
}

// set adds or replaces name.
func (l *envList) set(name, value string) {
	if i, ok := l.pos(name); ok {
		l.vars[i].Value = value
		return
	}
	if l.index == nil {
		l.index = make(map[string]int)
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
	if i, ok := l.pos(name); ok {
		return l.vars[i].Value, true
	}
	return "", false
}

// withSecrets returns l's variables with secrets set over them (as setAll
// would, in a copy: l keeps the values without the secrets, for its
// lookup); l's own variables when there are no secrets.
func (l *envList) withSecrets(secrets []workflows.EnvVar) []workflows.EnvVar {
	if len(secrets) == 0 {
		return l.vars
	}
	n := len(l.vars)
	vars := make([]workflows.EnvVar, n, n+len(secrets))
	copy(vars, l.vars)
	for _, s := range secrets {
		i, ok := l.pos(s.Name)
		if !ok {
			i = slices.IndexFunc(vars[n:], func(v workflows.EnvVar) bool { return v.Name == s.Name })
			if ok = i >= 0; ok {
				i += n
			}
		}
		if ok {
			vars[i].Value = s.Value
		} else {
			vars = append(vars, s)
		}
	}
	return vars
}

// runSecrets are the workflow's secrets as found in the runner's
// environment.
type runSecrets struct {
	vars    []workflows.EnvVar // the secrets that are set, last in every step's environment
	names   []string           // their names (contract.ExecRequest.SecretNames)
	missing []string           // names not set in the runner's environment
}

// loadSecrets reads the workflow's secrets (names) from the runner's
// environment and makes the run's redactor: the secrets' values and
// Config.Redact (also). A secret that is not set is in missing, which the
// run log reports; steps see it unset.
func loadSecrets(names []string, lookup func(string) (string, bool), also []string) (runSecrets, *Redactor) {
	var s runSecrets
	var values []string
	for _, name := range names {
		v, ok := lookup(name)
		if !ok {
			s.missing = append(s.missing, name)
			continue
		}
		s.vars = append(s.vars, workflows.EnvVar{Name: name, Value: v})
		s.names = append(s.names, name)
		values = append(values, v)
	}
	return s, NewRedactor(append(values, also...)...)
}

// prefix returns the environment every step of the run at p starts from.
func (x *execution) prefix(p place) *envList {
	x.prefixOnce.Do(func() {
		for i := range x.prefixes {
			x.prefixes[i] = x.buildPrefix(place(i))
		}
	})
	return x.prefixes[p]
}

// buildPrefix is the environment of a step at p before outputs and the
// step's own env: the base environment (host only), the workflow's env and
// params, then the run's variables.
func (x *execution) buildPrefix(p place) *envList {
	evEnv := x.ev.Env()
	run := newEnvList(len(evEnv) + 6)
	x.setRunVars(run, evEnv, p)
	l := newEnvList(len(baseEnvNames) + len(x.wf.Env) + len(x.wf.Params) + len(evEnv) + 6)
	if p == placeHost || p == placeHostSbx {
		x.setBaseEnv(l)
	}
	if p == placeHostSbx {
		l.setAll(x.e.cfg.SbxHostEnv)
	}
	l.expandAllWith(x.wf.Env, run)
	l.expandAllWith(x.wf.Params, run)
	l.setAll(x.spec.Params) // given at run time: data, not expanded
	l.setAll(run.vars)
	return l
}

// setBaseEnv sets what a host step inherits: baseEnvNames from the
// runner's environment, and the run's own HOME and TMPDIR.
func (x *execution) setBaseEnv(l *envList) {
	for _, n := range baseEnvNames {
		if v, ok := x.e.cfg.LookupEnv(n); ok {
			l.set(n, v)
		}
	}
	if x.spec.Home != "" {
		l.set("HOME", x.spec.Home)
	}
	if x.spec.TmpDir != "" {
		l.set("TMPDIR", x.spec.TmpDir)
	}
}

// placed is path ("" stays "") as a step at p sees it: inContainer in a
// container, inSandbox of the workspace in a sandbox.
func (x *execution) placed(path string, p place, inContainer string, inSandbox func(workspace string) string) string {
	switch {
	case path == "":
		return path
	case p == placeContainer:
		return inContainer
	case p == placeSandbox:
		return inSandbox(x.spec.Workspace)
	}
	return path
}

// setRunVars sets the event's HOOKRUN_* variables (evEnv) and the run's
// own, with the paths as a step at p sees them.
func (x *execution) setRunVars(run *envList, evEnv []workflows.EnvVar, p place) {
	workspace, eventPath, resultsPath := x.spec.Workspace, x.eventFile, x.resultsDir.path
	resultsPath = x.placed(resultsPath, p, contract.ContainerResultsPath, contract.SandboxResultsPath)
	eventPath = x.placed(eventPath, p, contract.ContainerEventPath, contract.SandboxEventPath)
	if p == placeContainer && workspace != "" {
		workspace = containerWorkspace
	}
	run.setAll(evEnv)
	run.set("HOOKRUN_RUN_ID", x.spec.ID)
	run.set("HOOKRUN_WORKFLOW", x.wf.Name)
	run.set("HOOKRUN_WORKSPACE", workspace)
	run.set("HOOKRUN_EVENT_PATH", eventPath)
	run.set("HOOKRUN_RESULTS", resultsPath)
	run.set("HOOKRUN_SANDBOX", x.sandboxName)
	if x.spec.HeadSHA != "" {
		run.set("HOOKRUN_HEAD_SHA", x.spec.HeadSHA)
	}
}

// stepEnv is the environment of one step.
type stepEnv struct {
	vars   []workflows.EnvVar          // the complete environment, secrets last
	lookup func(string) (string, bool) // ${NAME} in harness prompts and argv: vars without the secrets
}

// stepEnv builds the environment of one step: the run prefix, outputs of
// earlier steps, the step's env (which may reference all of these), extra
// (HOOKRUN_RUN_STATUS for handlers), then the secrets.
func (x *execution) stepEnv(st *workflows.Step, r route, extra []workflows.EnvVar) stepEnv {
	pre := x.prefix(r.place)
	x.mu.Lock()
	l := pre.derive(len(x.outputs) + len(st.Env) + len(extra))
	l.setAll(x.outputs)
	x.mu.Unlock()
	if r.place == placeContainer && st.Container != nil {
		l.expandAll(st.Container.Env)
	}
	l.expandAll(st.Env)
	l.setAll(extra)
	return stepEnv{vars: l.withSecrets(x.secrets.vars), lookup: l.lookup}
}

// reportLookup resolves ${NAME} in report.body: step outputs, the run's
// HOOKRUN_* variables and HOOKRUN_RUN_STATUS. Secrets are not resolvable.
func (x *execution) reportLookup(status workflows.Status) func(string) (string, bool) {
	l := x.prefix(placeHost).derive(len(x.outputs) + 1)
	x.mu.Lock()
	l.setAll(x.outputs)
	x.mu.Unlock()
	l.set("HOOKRUN_RUN_STATUS", string(status))
	return func(name string) (string, bool) {
		if !strings.HasPrefix(name, "HOOKRUN_") && !x.isOutput(name) && !x.isWorkflowVar(name) {
			return "", false
		}
		return l.lookup(name)
	}
}

func (x *execution) isOutput(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, o := range x.outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

func (x *execution) isWorkflowVar(name string) bool {
	for _, list := range [][]workflows.EnvVar{x.wf.Env, x.wf.Params} {
		for _, v := range list {
			if v.Name == name {
				return true
			}
		}
	}
	return false
}
