package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

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

// runSecrets are the workflow's secrets as found in the runner's
// environment.
type runSecrets struct {
	vars    []workflows.EnvVar // the secrets that are set, last in every step's environment
	names   []string           // their names (contract.ExecRequest.SecretNames)
	missing []string           // names not set in the runner's environment
}

// loadSecrets reads the workflow's secrets from the runner's environment
// and makes the run's redactor: the secrets' values and EngineConfig.Redact.
// A secret that is not set is reported in the run log; steps see it unset.
func (x *execution) loadSecrets() {
	var values []string
	for _, name := range x.wf.Secrets {
		v, ok := x.e.cfg.LookupEnv(name)
		if !ok {
			x.secrets.missing = append(x.secrets.missing, name)
			continue
		}
		x.secrets.vars = append(x.secrets.vars, workflows.EnvVar{Name: name, Value: v})
		x.secrets.names = append(x.secrets.names, name)
		values = append(values, v)
	}
	x.red = NewRedactor(append(values, x.e.cfg.Redact...)...)
}

// eventName is the event file's name in its directory.
const eventName = "event.json"

// writeEventFile writes the raw payload for HOOKRUN_EVENT_PATH into
// RunSpec.EventDir, or, when the run has none, into a directory of its own
// that the run removes at its end (removeEventFile). Either lies outside
// the workspace: the payload never shows in a checkout's `git status`.
// The file, and the directory the run makes, are readable by everyone and
// writable only by hookrun, so that host steps running as another user
// read it and cannot change it (RunSpec.EventDir is its preparer's to make
// so: contract.Workspace.EventDir).
func (x *execution) writeEventFile() error {
	raw := []byte(x.ev.Raw)
	if len(raw) == 0 {
		ev := *x.ev
		if ev.Chat != nil { // a chat command's response_url is hookrun's to post to, not the steps'
			c := *ev.Chat
			c.ResponseURL = ""
			ev.Chat = &c
		}
		var err error
		if raw, err = json.Marshal(&ev); err != nil {
			return fmt.Errorf("encoding event: %w", err)
		}
	}
	dir := x.spec.EventDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "hookrun-event-")
		if err != nil {
			return fmt.Errorf("creating event file directory: %w", err)
		}
		x.eventTmp, dir = tmp, tmp
		if err := os.Chmod(dir, 0o755); err != nil { // MkdirTemp makes it 0700
			return fmt.Errorf("creating event file directory: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating event file directory: %w", err)
	}
	file := filepath.Join(dir, eventName)
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		return fmt.Errorf("writing event file: %w", err)
	}
	x.eventFile = file
	return nil
}

// removeEventFile removes the directory writeEventFile made (not
// RunSpec.EventDir, which belongs to whoever prepared the run).
func (x *execution) removeEventFile() {
	if x.eventTmp == "" {
		return
	}
	if err := os.RemoveAll(x.eventTmp); err != nil {
		x.e.cfg.Logger.Warn("removing the event file", "run", x.spec.ID, "err", err)
	}
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

// setRunVars sets the event's HOOKRUN_* variables (evEnv) and the run's
// own, with the paths as a step at p sees them.
func (x *execution) setRunVars(run *envList, evEnv []workflows.EnvVar, p place) {
	workspace, eventPath, resultsPath := x.spec.Workspace, x.eventFile, x.resultsDir
	switch {
	case resultsPath == "":
	case p == placeContainer:
		resultsPath = contract.ContainerResultsPath
	case p == placeSandbox:
		resultsPath = contract.SandboxResultsPath(x.spec.Workspace)
	}
	switch {
	case eventPath == "":
	case p == placeContainer:
		eventPath = contract.ContainerEventPath
	case p == placeSandbox:
		eventPath = contract.SandboxEventPath(x.spec.Workspace)
	}
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
	l := pre.clone(len(x.outputs) + len(st.Env) + len(extra) + len(x.secrets.vars))
	l.setAll(x.outputs)
	x.mu.Unlock()
	if r.place == placeContainer && st.Container != nil {
		l.expandAll(st.Container.Env)
	}
	l.expandAll(st.Env)
	l.setAll(extra)
	lookup := l.clone(0).lookup
	l.setAll(x.secrets.vars)
	return stepEnv{vars: l.vars, lookup: lookup}
}

// reportLookup resolves ${NAME} in report.body: step outputs, the run's
// HOOKRUN_* variables and HOOKRUN_RUN_STATUS. Secrets are not resolvable.
func (x *execution) reportLookup(status workflows.Status) func(string) (string, bool) {
	l := x.prefix(placeHost).clone(len(x.outputs) + 1)
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
