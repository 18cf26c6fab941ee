package workflows

import (
	"encoding/json"
	"time"
)

// SchemaID is the $id of the workflow JSON Schema.
const SchemaID = "https://hookrun.dev/schema/workflow.json"

// Schema returns the JSON Schema (draft 2020-12) of a workflow file,
// indented, for editors (`hookrun schema`). It prints the field tables the
// parser reads and checks by (fields.go): the same keys, types, enums,
// patterns, bounds and defaults, unknown fields rejected wherever the parser
// rejects them. The rules between fields that JSON Schema can say are added
// here; the rules it cannot say (unique step ids, existing depends targets,
// cycles, known providers, compiling `if:`, ...) are left to the parser.
func Schema() []byte {
	b, err := json.MarshalIndent(schemaDoc(), "", "  ")
	if err != nil {
		panic("marshaling the workflow schema: " + err.Error()) // static data: cannot happen
	}
	return append(b, '\n')
}

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/$defs/" + name} }

// refTo is a field's schema: a reference to a $defs entry.
func refTo(name string) func() obj { return func() obj { return ref(name) } }

// arrayOf is a field's schema: a list of a $defs entry.
func arrayOf(name string) func() obj {
	return func() obj { return obj{"type": "array", "items": ref(name)} }
}

// inline is a field's schema: the closed object of a nested table.
func inline[T any](fields func(*T) []field) func() obj {
	return func() obj { return closedFields(fields(new(T))) }
}

func strs(list ...string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// closed is an object schema that rejects unknown properties.
func closed(props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = strs(required...)
	}
	return o
}

// closedFields is the closed object schema of a field table.
func closedFields(fs []field) obj {
	var required []string
	for _, f := range fs {
		if f.required {
			required = append(required, f.key)
		}
	}
	return closed(properties(fs), required...)
}

// properties are the schemas of a table's fields, by key.
func properties(fs []field) obj {
	props := obj{}
	for i := range fs {
		props[fs[i].key] = fieldSchema(&fs[i])
	}
	return props
}

// fieldSchema is the schema of one field: its own, or the one its slot and
// rules say; with its description and default.
func fieldSchema(f *field) obj {
	var s obj
	if f.schema != nil {
		s = f.schema()
	} else {
		s = slotSchema(f)
	}
	if f.doc != "" {
		s["description"] = f.doc
	}
	if f.def != nil {
		s["default"] = f.def
	}
	return s
}

// slotSchema types a field by its slot and form, with its rules.
func slotSchema(f *field) obj {
	switch f.to.(type) {
	case *val[string]:
		return textSchema(f)
	case *val[bool]:
		return obj{"type": "boolean"}
	case *val[int]:
		return boundsSchema("integer", f.bounds)
	case *val[int64]:
		if f.form == formSize {
			return obj{"oneOf": []any{boundsSchema("integer", f.bounds), obj{"type": "string", "pattern": sizeSyntax.src}}}
		}
		return boundsSchema("integer", f.bounds)
	case *val[float64]:
		return boundsSchema("number", f.bounds)
	case *val[time.Duration]:
		if f.form == formSeconds {
			return boundsSchema("integer", atLeast(0))
		}
		return ref("duration")
	case *list[string]:
		if f.form == formOneOrList {
			return stringOrListOf(textSchema(f))
		}
		s := obj{"type": "array", "items": textSchema(f)}
		if f.unique {
			s["uniqueItems"] = true
		}
		return s
	case *list[int]:
		return obj{"type": "array", "items": boundsSchema("integer", f.bounds)}
	case *envList:
		if f.form == formParams {
			return obj{"anyOf": []any{ref("env"), obj{"type": "string", "pattern": paramsString.src}}}
		}
		return ref("env")
	}
	panic("workflows: no schema for field " + f.key)
}

// textSchema is the schema of a string (or of each item): its enum, or its
// pattern and length.
func textSchema(f *field) obj {
	switch {
	case len(f.enum) == 1:
		return obj{"const": f.enum[0]}
	case f.enum != nil:
		return obj{"enum": strs(f.enum...)}
	}
	s := obj{"type": "string"}
	if f.pattern != nil {
		s["pattern"] = f.pattern.src
	}
	if f.nonEmpty {
		s["minLength"] = 1
	}
	return s
}

// boundsSchema is the schema of an integer or a number within b.
func boundsSchema(typ string, b *bounds) obj {
	s := obj{"type": typ}
	switch {
	case b == nil:
	case b.open && typ == "integer":
		s["minimum"] = b.min + 1
	case b.open:
		s["exclusiveMinimum"] = b.min
	default:
		s["minimum"] = b.min
	}
	if b != nil && b.capped {
		s["maximum"] = b.max
	}
	return s
}

func schemaDoc() obj {
	doc := closedFields(new(rawWorkflow).fields())
	doc["not"] = obj{"required": strs("timeout", "timeout_sec")}
	doc["allOf"] = workflowRuleSchemas()
	// Dagu's schedule: names its repository with repo: (and forge:), which
	// are for it alone
	doc["dependentRequired"] = obj{"schedule": strs("repo"), "repo": strs("schedule"), "forge": strs("schedule")}
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	doc["$id"] = SchemaID
	doc["title"] = "hookrun workflow"
	doc["description"] = "A hookrun workflow file (docs/workflows.md)."
	doc["$defs"] = schemaDefs()
	return doc
}

// schemaDefs are the definitions the document refers to.
func schemaDefs() obj {
	// with: and its fallback entries; other keys are flags
	withProps := properties(new(rawWith).fields("with", true))
	fallbackProps := properties(new(rawWith).fields("fallback entry", false))
	delete(fallbackProps, "fallback")
	flagValue := obj{"type": strs("string", "number", "boolean")}
	condition := closedFields(new(rawCondition).fields())
	conditionString := obj{"type": "string", "pattern": nonBlank.src}
	return obj{
		"duration": obj{"oneOf": []any{
			obj{"type": "string", "pattern": durationSyntax.src},
			obj{"type": "integer", "minimum": 0, "description": "seconds"},
		}},
		"envValue": flagValue,
		"env": obj{"anyOf": []any{
			obj{"type": "object", "propertyNames": obj{"pattern": envName.src}, "additionalProperties": ref("envValue")},
			obj{"type": "array", "items": obj{"anyOf": []any{
				obj{"type": "object", "minProperties": 1, "maxProperties": 1,
					"propertyNames": obj{"pattern": envName.src}, "additionalProperties": ref("envValue")},
				obj{"type": "string", "pattern": envItemString.src},
			}}},
		}},
		"trigger":   triggerSchema(),
		"authorize": closedFields(new(rawAuthorize).fields()),
		"container": closedFields(new(rawContainer).fields()),
		"harness":   harnessSchema(),
		"with": obj{
			"type": "object", "properties": withProps, "required": strs("provider", "prompt"),
			"propertyNames": obj{"pattern": flagName.src}, "additionalProperties": flagValue,
		},
		"fallback": obj{
			"type": "object", "properties": fallbackProps, "required": strs("provider"),
			"propertyNames":        obj{"pattern": flagName.src, "not": obj{"const": "fallback"}},
			"additionalProperties": flagValue,
		},
		"retryPolicy": retrySchema(),
		"continueOn":  continueOnSchema(),
		"preconditions": obj{"anyOf": []any{
			conditionString,
			obj{"type": "array", "items": obj{"anyOf": []any{conditionString, condition}}},
		}},
		"step":    stepSchema(false),
		"handler": stepSchema(true),
	}
}

// triggerSchema is an entry of `on:`: its fields, the actions of each
// kind, and triggerRules.
func triggerSchema() obj {
	var rules []any
	for _, k := range Kinds {
		rules = append(rules, obj{
			"if":   eventIs([]Kind{k}),
			"then": obj{"properties": obj{"actions": stringOrListOf(obj{"enum": strs(Actions[k]...)})}},
		})
	}
	trigger := closedFields(new(rawTrigger).fields())
	trigger["allOf"] = append(rules, triggerRuleSchemas()...)
	// event is required, but for a schedule's trigger (triggerEvent)
	trigger["anyOf"] = []any{obj{"required": strs("event")}, obj{"required": strs("schedule")}}
	return trigger
}

// stepSchema is a step, or a handler (whose id defaults to on_<key> and
// which depends on nothing).
func stepSchema(handler bool) obj {
	s := closedFields(new(rawStep).fields())
	if handler {
		delete(s["properties"].(obj), "depends")
	}
	idName := obj{"properties": obj{"name": obj{"pattern": stepID.src}}}
	allOf := []any{
		obj{"oneOf": []any{obj{"required": strs("run")}, obj{"required": strs("action")}}},
		obj{"if": obj{"required": strs("action")}, "then": obj{"required": strs("with")}},
		obj{"if": obj{"not": obj{"required": strs("action")}}, "then": obj{"not": obj{"required": strs("with")}}},
		obj{"not": obj{"required": strs("working_dir", "dir")}},
		obj{"not": obj{"required": strs("timeout", "timeout_sec")}},
	}
	if !handler { // an id, or a name that is one
		idName["required"] = strs("name")
		allOf = append(allOf, obj{"anyOf": []any{obj{"required": strs("id")}, idName}})
	} else { // handlers default to on_<key>
		allOf = append(allOf, obj{"anyOf": []any{obj{"required": strs("id")}, obj{"not": obj{"required": strs("name")}}, idName}})
	}
	s["allOf"] = allOf
	return s
}

// harnessSchema is a harness: prompt_mode flag needs prompt_flag.
func harnessSchema() obj {
	harness := closedFields(new(rawHarness).fields())
	harness["if"] = obj{"properties": obj{"prompt_mode": obj{"const": PromptFlag}}, "required": strs("prompt_mode")}
	harness["then"] = obj{"required": strs("prompt_flag"), "properties": obj{"prompt_flag": obj{"pattern": nonBlank.src}}}
	return harness
}

// retrySchema is a retry policy: each interval in one spelling.
func retrySchema() obj {
	retry := closedFields(new(rawRetry).fields())
	retry["allOf"] = []any{obj{"not": obj{"required": strs("interval", "interval_sec")}},
		obj{"not": obj{"required": strs("max_interval", "max_interval_sec")}}}
	return retry
}

// continueOnSchema is continue_on: a word, a list of words, or a mapping.
func continueOnSchema() obj {
	words := make([]string, len(continueWords))
	for i, w := range continueWords {
		words[i] = w.word
	}
	return obj{"anyOf": []any{
		obj{"enum": strs(words...)},
		obj{"type": "array", "items": obj{"enum": strs(words...)}},
		closedFields(new(rawContinueMap).fields()),
	}}
}

// harnessesSchema: names to harnesses.
func harnessesSchema() obj {
	return obj{"type": "object", "propertyNames": obj{"pattern": stepID.src}, "additionalProperties": ref("harness")}
}

// stepsSchema: at least one step.
func stepsSchema() obj { return obj{"type": "array", "minItems": 1, "items": ref("step")} }

// handlerOnSchema: a step for each handler key.
func handlerOnSchema() obj {
	props := obj{}
	for _, h := range new(HandlerOn).handlers() {
		props[h.key] = ref("handler")
	}
	return closed(props)
}

// backoffSchema: a boolean, 0, or a multiplier of at least backoffMin.
// reviewSchema is report.review's: a boolean or the closed mapping of its
// options.
func reviewSchema() obj {
	return obj{"anyOf": []any{obj{"type": "boolean"}, closedFields(new(rawReview).fields())}}
}

func backoffSchema() obj {
	return obj{"anyOf": []any{obj{"type": "boolean"}, obj{"const": 0}, obj{"type": "number", "minimum": backoffMin}}}
}

func stringOrListOf(item obj) obj {
	return obj{"anyOf": []any{item, obj{"type": "array", "items": item}}}
}
