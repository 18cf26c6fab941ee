package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// probeTable is one field table with a valid mapping of it and the file
// that holds that mapping.
type probeTable struct {
	name   string
	fields []field
	base   map[string]any
	bases  map[string]map[string]any // instead of base, when probing a key
	file   func(m map[string]any) map[string]any
}

func probeTables() []probeTable {
	step := func() map[string]any { return map[string]any{"id": "a", "run": "x"} }
	file := func(key string, v any) map[string]any { return map[string]any{"steps": []any{step()}, key: v} }
	inStep := func(key string, v any) map[string]any {
		s := step()
		s[key] = v
		return map[string]any{"steps": []any{s}}
	}
	with := map[string]any{"provider": "claude", "prompt": "p"}
	chat := func() map[string]any { return map[string]any{"event": "chat", "command": "deploy", "repo": "o/r"} }
	sched := func() map[string]any { return map[string]any{"schedule": "@daily", "repo": "o/r"} }
	scheduled := func() map[string]any {
		return map[string]any{"steps": []any{step()}, "schedule": "@daily", "repo": "o/r"}
	}
	return []probeTable{
		{name: "workflow", fields: new(rawWorkflow).fields(), base: map[string]any{"steps": []any{step()}},
			bases: map[string]map[string]any{"schedule": scheduled(), "repo": scheduled(), "forge": scheduled()},
			file:  func(m map[string]any) map[string]any { return m }},
		{name: "trigger", fields: new(rawTrigger).fields(), base: map[string]any{"event": "comment"},
			bases: map[string]map[string]any{"paths": {"event": "pull_request"}, "paths_ignore": {"event": "push"},
				"command": chat(), "repo": chat(), "forge": chat(), "schedule": sched(), "timezone": sched()},
			file: func(m map[string]any) map[string]any {
				f := file("on", []any{m})
				f["authorize"] = map[string]any{"slack_users": []any{"U1"}, "slack_channels": []any{"C1"}} // what a chat trigger needs
				return f
			}},
		{name: "authorize", fields: new(rawAuthorize).fields(), base: map[string]any{},
			file: func(m map[string]any) map[string]any { return file("authorize", m) }},
		{name: "concurrency", fields: new(rawConcurrency).fields(), base: map[string]any{"group": "g"},
			file: func(m map[string]any) map[string]any { return file("concurrency", m) }},
		{name: "sandbox", fields: new(rawSandbox).fields(), base: map[string]any{"provider": "sbx", "agent": "claude"},
			file: func(m map[string]any) map[string]any { return file("sandbox", m) }},
		{name: "container", fields: new(rawContainer).fields(), base: map[string]any{"image": "alpine"},
			file: func(m map[string]any) map[string]any { return file("container", m) }},
		{name: "harness", fields: new(rawHarness).fields(), base: map[string]any{"binary": "my-agent"},
			file: func(m map[string]any) map[string]any { return file("harnesses", map[string]any{"h": m}) }},
		{name: "step", fields: new(rawStep).fields(), base: step(),
			bases: map[string]map[string]any{"action": {"id": "a", "with": with}},
			file:  func(m map[string]any) map[string]any { return map[string]any{"steps": []any{m}} }},
		{name: "with", fields: new(rawWith).fields("with", true), base: with,
			file: func(m map[string]any) map[string]any {
				return map[string]any{"steps": []any{map[string]any{"id": "a", "action": ActionHarnessRun, "with": m}}}
			}},
		{name: "retry_policy", fields: new(rawRetry).fields(), base: map[string]any{},
			file: func(m map[string]any) map[string]any { return inStep("retry_policy", m) }},
		{name: "continue_on", fields: new(rawContinueMap).fields(), base: map[string]any{},
			file: func(m map[string]any) map[string]any { return inStep("continue_on", m) }},
		{name: "precondition", fields: new(rawCondition).fields(), base: map[string]any{"condition": "test -f x"},
			file: func(m map[string]any) map[string]any { return file("preconditions", []any{m}) }},
		{name: "step precondition", fields: new(rawCondition).fields(), base: map[string]any{"condition": "test -f x"},
			file: func(m map[string]any) map[string]any { return inStep("preconditions", []any{m}) }},
		{name: "report", fields: new(rawReport).fields(), base: map[string]any{},
			file: func(m map[string]any) map[string]any { return file("report", m) }},
		{name: "permissions", fields: new(rawPermissions).fields(), base: map[string]any{},
			file: func(m map[string]any) map[string]any { return file("permissions", m) }},
	}
}

// probeStrings are tried, in order, as a string that fails a pattern and
// as one that matches it ("true" also compiles as an if:).
var probeStrings = []string{"", " ", "true", "a", "A", "/a", "a:/b", "bad value!"}

// probes are the good and the bad values of a field's rules: every good
// value must pass both the schema and the parser, every bad one fail both.
func probes(f *field) (good, bad []any) {
	str := func(keep func(string) bool) (string, bool) {
		for _, s := range probeStrings {
			if keep(s) {
				return s, true
			}
		}
		return "", false
	}
	switch {
	case f.enum != nil:
		good, bad = []any{f.enum[0]}, []any{"not-" + f.enum[0]}
	case f.pattern != nil:
		if s, ok := str(f.pattern.matches); ok {
			good = append(good, s)
		}
		if s, ok := str(func(s string) bool { return !f.pattern.matches(s) }); ok {
			bad = append(bad, s)
		}
	case f.nonEmpty:
		good, bad = []any{"a"}, []any{""}
	case f.bounds != nil:
		b := f.bounds
		lo := b.min
		if b.open {
			lo++
		}
		good, bad = []any{lo}, []any{lo - 1}
		if b.capped {
			good, bad = append(good, b.max), append(bad, b.max+1)
		}
	}
	switch f.to.(type) {
	case *list[string], *list[int]:
		for i := range good {
			good[i] = []any{good[i]}
		}
		for i := range bad {
			bad[i] = []any{bad[i]}
		}
	}
	return good, bad
}

// TestFieldRulesReachBoth: every rule a field table declares is enforced by
// the parser and by the schema alike, as is every required key; so a rule
// added to a table reaches both or this fails.
func TestFieldRulesReachBoth(t *testing.T) {
	sch := compileSchema(t)
	check := func(t *testing.T, doc map[string]any, want bool) {
		t.Helper()
		src, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(doc)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		schemaErr := sch.Validate(inst)
		_, parseErr := Parse("probe.yaml", src)
		if (schemaErr == nil) != want || (parseErr == nil) != want {
			t.Errorf("want accepted %v:\n%s\nschema: %v\nparser: %v", want, src, schemaErr, parseErr)
		}
	}
	n := 0
	for _, tb := range probeTables() {
		for i := range tb.fields {
			f := &tb.fields[i]
			base := tb.base
			if b, ok := tb.bases[f.key]; ok {
				base = b
			}
			if f.required {
				t.Run(tb.name+"."+f.key+"/required", func(t *testing.T) {
					check(t, tb.file(maps.Clone(base)), true)
					m := maps.Clone(base)
					delete(m, f.key)
					check(t, tb.file(m), false)
				})
				n++
			}
			good, bad := probes(f)
			for _, vs := range []struct {
				values []any
				want   bool
			}{{good, true}, {bad, false}} {
				for _, v := range vs.values {
					t.Run(fmt.Sprintf("%s.%s=%v", tb.name, f.key, v), func(t *testing.T) {
						m := maps.Clone(base)
						m[f.key] = v
						check(t, tb.file(m), vs.want)
					})
					n++
				}
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d probes", n)
	}
}

// TestFieldTables: keys are unique in each table and every field can be
// read and described.
func TestFieldTables(t *testing.T) {
	for _, tb := range probeTables() {
		seen := map[string]bool{}
		for _, f := range tb.fields {
			if seen[f.key] {
				t.Errorf("%s: key %q twice", tb.name, f.key)
			}
			seen[f.key] = true
			if f.to == nil && (f.read == nil || f.schema == nil) {
				t.Errorf("%s.%s: no slot, and no read and schema of its own", tb.name, f.key)
			}
		}
	}
}
