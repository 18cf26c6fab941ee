package sbx

import (
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// HostEnv picks from environ (as os.Environ returns it) what the sbx CLI
// needs to find its login state and its container engine when a step runs
// it on the host (a harness whose binary is sbx): HOME, PATH, and the XDG_*
// and DOCKER_* variables, except those whose names say they hold a
// credential (…TOKEN…, …PASSWORD…, …SECRET…, …AUTH…, …KEY…,
// …CREDENTIAL…). It is the one rule for that environment; nothing else of
// the runner's environment is in it.
func HostEnv(environ []string) []workflows.EnvVar {
	var out []workflows.EnvVar
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !workflows.IsEnvName(name) {
			continue
		}
		switch {
		case name == "HOME" || name == "PATH":
		case strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "DOCKER_"):
			if credentialName(name) {
				continue
			}
		default:
			continue
		}
		out = append(out, workflows.EnvVar{Name: name, Value: value})
	}
	return out
}

// credentialName reports whether a variable's name says it holds a
// credential.
func credentialName(name string) bool {
	for _, part := range strings.Split(name, "_") {
		if part == "PAT" {
			return true
		}
		for _, w := range []string{"TOKEN", "PASSWORD", "PASSWD", "SECRET", "AUTH", "KEY", "CREDENTIAL"} {
			if strings.HasPrefix(part, w) {
				return true
			}
		}
	}
	return false
}
