package workflows

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// compileSchema compiles Schema() with a real JSON Schema validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("compiling the schema: %v", err)
	}
	return sch
}

// yamlInstance turns a YAML file into the JSON value an editor would check.
func yamlInstance(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: not representable as JSON: %v", path, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// How each broken file relates to the schema.
const (
	schemaLevel = "schema" // unknown field, wrong type, bad enum, missing required, pattern: schema and parser both reject it
	semantic    = "parser" // only the parser can tell (references, cycles, providers, compiling if:): the schema accepts it
	syntax      = "syntax" // not YAML at all: nothing to validate
)

// invalidKinds classifies every file under testdata/invalid.
var invalidKinds = map[string]string{
	"bad-action.yaml":               schemaLevel, // const harness.run; with without action
	"bad-association.yaml":          schemaLevel, // enum; boolean type
	"bad-container.yaml":            schemaLevel, // required image; patterns; minimums
	"bad-duration.yaml":             schemaLevel, // duration pattern
	"bad-glob.yaml":                 semantic,    // malformed path.Match pattern
	"bad-handler.yaml":              schemaLevel, // unknown handler key; depends in a handler
	"bad-if.yaml":                   semantic,    // expression does not compile
	"bad-name.yaml":                 schemaLevel, // name pattern
	"bad-output.yaml":               schemaLevel, // env name and output patterns
	"bad-permissions.yaml":          schemaLevel, // enum; boolean and assignees types; additionalProperties false (and a glob)
	"bad-pull-policy.yaml":          schemaLevel, // enum
	"bad-report-comment.yaml":       schemaLevel, // enum
	"bad-retry.yaml":                schemaLevel, // maximum, minimum
	"bad-sandbox.yaml":              schemaLevel, // const sbx; required agent
	"bad-secrets.yaml":              schemaLevel, // pattern; uniqueItems
	"bad-type.yaml":                 schemaLevel, // enum; minimum
	"bad-yaml.yaml":                 syntax,
	"chat-trigger.yaml":             schemaLevel, // chat: command word, repo, allowlists; repo/forge only for chat
	"command-not-comment.yaml":      schemaLevel, // command only for comments; pattern
	"paths-not-change.yaml":         schemaLevel, // paths only for pull requests and pushes
	"cycle.yaml":                    semantic,    // dependency cycle
	"deleted-trigger.yaml":          schemaLevel, // deleted only for pushes; not with checkout: true
	"duplicate-step-id.yaml":        semantic,    // uniqueness across steps
	"dupnames":                      semantic,    // uniqueness across files
	"flag-without-prompt-flag.yaml": schemaLevel, // if prompt_mode flag then required prompt_flag; enum
	"missing-provider.yaml":         schemaLevel, // required provider and prompt
	"no-steps.yaml":                 schemaLevel, // required steps
	"run-and-action.yaml":           schemaLevel, // oneOf run/action
	"schedule-trigger.yaml":         schemaLevel, // schedule needs repo; no branches, labels, repos; schedule only for event schedule
	"sbx-env-secret.yaml":           semantic,    // sbx harness passing a declared secret with -e
	"sbx-harness-container.yaml":    semantic,    // harness binary sbx with a container
	"sbx-relative-binary.yaml":      semantic,    // harness binary sbx by a relative path (the workspace)
	"shell-harness-model.yaml":      semantic,    // model or flags on a shell harness (Harness.ShellScript)
	"unknown-action.yaml":           schemaLevel, // per-kind action enum
	"unknown-depends.yaml":          semantic,    // depends target does not exist
	"unknown-event.yaml":            schemaLevel, // enum
	"unknown-field.yaml":            schemaLevel, // additionalProperties false
	"unknown-provider.yaml":         semantic,    // provider neither built in nor declared
	"wrong-types.yaml":              schemaLevel, // boolean, integer, array, string types
}

// TestSchemaAgreesWithParser: every example and valid file passes both the
// schema and the parser; every schema-level broken file fails both; every
// broken file the schema cannot judge passes the schema and fails the parser.
func TestSchemaAgreesWithParser(t *testing.T) {
	sch := compileSchema(t)

	good, _ := filepath.Glob("../examples/*.yaml")
	valid, _ := filepath.Glob("testdata/valid/*.yaml")
	good = append(good, valid...)
	if len(good) < 10 {
		t.Fatalf("only %d good files", len(good))
	}
	for _, f := range good {
		t.Run(f, func(t *testing.T) {
			if err := sch.Validate(yamlInstance(t, f)); err != nil {
				t.Errorf("schema rejects a good file: %v", err)
			}
			if _, err := ParseFile(f); err != nil {
				t.Errorf("parser rejects a good file:\n%v", err)
			}
		})
	}

	entries, err := os.ReadDir("testdata/invalid")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() && filepath.Ext(name) != ".yaml" {
			continue
		}
		kind, ok := invalidKinds[name]
		if !ok {
			t.Errorf("%s is not classified in invalidKinds", name)
			continue
		}
		path := filepath.Join("testdata/invalid", name)
		t.Run(name, func(t *testing.T) {
			if _, err := Load(path); err == nil {
				t.Error("parser accepts a broken file")
			}
			files := []string{path}
			if e.IsDir() {
				files, _ = filepath.Glob(filepath.Join(path, "*.y*ml"))
			}
			for _, f := range files {
				switch kind {
				case schemaLevel:
					if err := sch.Validate(yamlInstance(t, f)); err == nil {
						t.Errorf("%s: schema accepts a schema-level error", f)
					}
				case semantic:
					if err := sch.Validate(yamlInstance(t, f)); err != nil {
						t.Errorf("%s: schema rejects a file only the parser should: %v", f, err)
					}
				}
			}
		})
	}
}

// TestSchemaShape checks the document itself: draft, id, closed root.
func TestSchemaShape(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["$id"] != SchemaID {
		t.Errorf("$schema %v $id %v", doc["$schema"], doc["$id"])
	}
	if doc["additionalProperties"] != false {
		t.Error("root accepts unknown fields")
	}
	if !strings.Contains(string(Schema()), "\n  \"$defs\"") {
		t.Error("schema is not indented")
	}
}

// parserOnly lists every rule the schema cannot say, each with a file only
// the parser refuses (docs/workflows.md#checking-files lists them too).
// Names unique across files are the one more: see testdata/invalid/dupnames.
var parserOnly = []struct{ rule, file, src string }{
	{"unique step ids", "a.yaml", "steps: [{id: a, run: x}, {id: a, run: y}]"},
	{"depends targets exist", "a.yaml", "steps: [{id: a, run: x, depends: b}]"},
	{"no dependency cycle", "a.yaml", "steps: [{id: a, run: x, depends: a}]"},
	{"known harness provider", "a.yaml", "steps: [{id: a, action: harness.run, with: {provider: nope, prompt: p}}]"},
	{"no model or flags on a shell harness", "a.yaml", "steps: [{id: a, action: harness.run, with: {provider: shell, prompt: p, model: m}}]"},
	{"an sbx harness not in a container", "a.yaml",
		"harnesses: {s: {binary: sbx}}\ncontainer: {image: alpine}\nsteps: [{id: a, action: harness.run, with: {provider: s, prompt: p}}]"},
	{"no secret passed to sbx with -e", "a.yaml",
		"secrets: [KEY]\nharnesses: {s: {binary: sbx, prefix_args: [-e, KEY]}}\nsteps: [{id: a, run: x}]"},
	{"if: compiles", "a.yaml", "on: [{event: push, if: 'event.Nope'}]\nsteps: [{id: a, run: x}]"},
	{"globs are well formed", "a.yaml", "on: [{event: push, branches: ['[a']}]\nsteps: [{id: a, run: x}]"},
	{"paths globs are well formed", "a.yaml", "on: [{event: push, paths: ['src/{a']}]\nsteps: [{id: a, run: x}]"},
	{"max_interval not shorter than interval", "a.yaml", "steps: [{id: a, run: x, retry_policy: {interval: 10s, max_interval: 5s}}]"},
	{"a name from the file name is a name", "Not A Name!.yaml", "steps: [{id: a, run: x}]"},
	{"with.prompt not empty", "a.yaml", "steps: [{id: a, action: harness.run, with: {provider: claude, prompt: ''}}]"},
	{"memory more than 0 with a unit too", "a.yaml", "container: {image: alpine, memory: 0m}\nsteps: [{id: a, run: x}]"},
	{"sizes within range", "a.yaml", "container: {image: alpine, memory: 99999999999t}\nsteps: [{id: a, run: x}]"},
	{"durations within range", "a.yaml", "timeout: 9999999999h\nsteps: [{id: a, run: x}]"},
	{"an expected re: compiles", "a.yaml", "preconditions: [{condition: x, expected: 're:('}]\nsteps: [{id: a, run: x}]"},
	{"integers within range", "a.yaml", "max_active_steps: 99999999999999999999\nsteps: [{id: a, run: x}]"},
	{"cron fields within range", "a.yaml", "on: [{schedule: '61 3 * * *', repo: o/r}]\nsteps: [{id: a, run: x}]"},
	{"a cron day some month has", "a.yaml", "on: [{schedule: '0 3 30 2 *', repo: o/r}]\nsteps: [{id: a, run: x}]"},
	{"@every at least 1s", "a.yaml", "schedule: '@every 500ms'\nrepo: o/r\nsteps: [{id: a, run: x}]"},
	{"a known timezone", "a.yaml", "on: [{schedule: '@daily', repo: o/r, timezone: Mars/Olympus}]\nsteps: [{id: a, run: x}]"},
	{"no timezone with @every", "a.yaml", "on: [{schedule: '@every 1h', repo: o/r, timezone: UTC}]\nsteps: [{id: a, run: x}]"},
	{"a schedule not twice", "a.yaml", "schedule: '@daily'\nrepo: o/r\non: [{schedule: '@daily', repo: o/r}]\nsteps: [{id: a, run: x}]"},
}

// TestParserOnlyRules: the schema accepts each file of parserOnly, the
// parser refuses it.
func TestParserOnlyRules(t *testing.T) {
	sch := compileSchema(t)
	dir := t.TempDir()
	for _, c := range parserOnly {
		t.Run(c.rule, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(yamlInstance(t, path)); err != nil {
				t.Errorf("the schema refuses it, so it is not parser-only: %v", err)
			}
			if _, err := ParseFile(path); err == nil {
				t.Error("the parser accepts it")
			}
		})
	}
}
