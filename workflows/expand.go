package workflows

import "strings"

// Expand replaces every ${NAME} in s with lookup(NAME). NAME is an
// environment variable name ([A-Za-z_][A-Za-z0-9_]*: the rule of env keys
// and outputs, envName in fields.go). Names the lookup does not know, `$NAME`
// without braces and malformed references are left exactly as written. Substituted values are never expanded again and
// nothing is shell-parsed: this is the only interpolation hookrun does itself,
// for prompts, harness argv elements and report bodies (DESIGN.md §3).
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		end := strings.IndexByte(rest, '}')
		if end < 0 || !envName.matches(rest[:end]) {
			b.WriteString("${")
			s = rest
			continue
		}
		name := rest[:end]
		if v, ok := lookup(name); ok {
			b.WriteString(v)
		} else {
			b.WriteString("${" + name + "}")
		}
		s = rest[end+1:]
	}
}

// EnvLookup returns a lookup for Expand over a list of variables; a later
// entry wins over an earlier one of the same name.
func EnvLookup(vars ...[]EnvVar) func(string) (string, bool) {
	m := map[string]string{}
	for _, list := range vars {
		for _, v := range list {
			m[v.Name] = v.Value
		}
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
