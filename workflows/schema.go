package workflows

import (
	"encoding/json"
	"sort"
)

// SchemaID is the $id of the workflow JSON Schema.
const SchemaID = "https://hookrun.dev/schema/workflow.json"

// Schema returns the JSON Schema (draft 2020-12) of a workflow file,
// indented, for editors (`hookrun schema`). It is built from the same tables
// the parser uses (Kinds, Actions, AuthorAssociations, ...) and rejects
// unknown fields wherever the parser does. Rules the schema cannot say
// (unique step ids, existing depends targets, cycles, known providers,
// compiling `if:`) are left to the parser.
func Schema() []byte {
	b, err := json.MarshalIndent(schemaDoc(), "", "  ")
	if err != nil {
		panic("marshaling the workflow schema: " + err.Error()) // static data: cannot happen
	}
	return append(b, '\n')
}

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/$defs/" + name} }

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

const (
	nonBlank       = `\S`
	envNamePattern = `^[A-Za-z_][A-Za-z0-9_]*$`
	durPattern     = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	sizePattern    = `^[0-9]+\s*([kKmMgGtT][iI]?[bB]?|[bB])?$`
	volumePattern  = `^[^:]+:/[^:]*(:(ro|rw))?$`
)

func schemaDoc() obj {
	kinds := make([]string, len(Kinds))
	for i, k := range Kinds {
		kinds[i] = string(k)
	}
	// actions per kind, as if/then clauses on a trigger
	var actionRules []any
	for _, k := range Kinds {
		actionRules = append(actionRules, obj{
			"if":   obj{"properties": obj{"event": obj{"const": string(k)}}, "required": strs("event")},
			"then": obj{"properties": obj{"actions": stringOrListOf(obj{"enum": strs(Actions[k]...)})}},
		})
	}
	actionRules = append(actionRules,
		obj{ // command only for comments
			"if":   obj{"properties": obj{"event": obj{"not": obj{"const": string(KindComment)}}}, "required": strs("event")},
			"then": obj{"not": obj{"required": strs("command")}},
		},
		obj{ // issues have no branch
			"if":   obj{"properties": obj{"event": obj{"const": string(KindIssue)}}, "required": strs("event")},
			"then": obj{"not": obj{"required": strs("branches")}},
		},
		obj{ // pushes carry no labels
			"if":   obj{"properties": obj{"event": obj{"const": string(KindPush)}}, "required": strs("event")},
			"then": obj{"not": obj{"required": strs("labels")}},
		},
	)
	builtins := make([]string, 0, len(BuiltinHarnesses))
	for n := range BuiltinHarnesses {
		builtins = append(builtins, n)
	}
	sort.Strings(builtins)

	stepProps := func(handler bool) obj {
		p := obj{
			"id":           obj{"type": "string", "pattern": `^[A-Za-z0-9_-]+$`, "description": "unique step id; depends and logs refer to it"},
			"name":         obj{"type": "string", "description": "display name; default: id (a Dagu name that is a valid id serves as the id)"},
			"description":  obj{"type": "string"},
			"run":          obj{"type": "string", "pattern": nonBlank, "description": "handed to sh -c as written; ${VAR} is expanded by the shell"},
			"action":       obj{"const": ActionHarnessRun},
			"with":         ref("with"),
			"output":       obj{"type": "string", "pattern": envNamePattern, "description": "variable receiving the step's trimmed stdout"},
			"env":          ref("env"),
			"working_dir":  obj{"type": "string"},
			"dir":          obj{"type": "string", "description": "Dagu alias of working_dir"},
			"container":    ref("container"),
			"retry_policy": ref("retryPolicy"),
			"continue_on":  ref("continueOn"),
			"timeout":      ref("duration"),
		}
		if !handler {
			p["depends"] = stringOrListOf(obj{"type": "string"})
		}
		return p
	}
	step := func(handler bool) obj {
		s := closed(stepProps(handler))
		allOf := []any{
			obj{"oneOf": []any{obj{"required": strs("run")}, obj{"required": strs("action")}}},
			obj{"if": obj{"required": strs("action")}, "then": obj{"required": strs("with")}},
			obj{"if": obj{"not": obj{"required": strs("action")}}, "then": obj{"not": obj{"required": strs("with")}}},
			obj{"not": obj{"required": strs("working_dir", "dir")}},
		}
		if !handler {
			allOf = append(allOf, obj{"anyOf": []any{
				obj{"required": strs("id")},
				obj{"required": strs("name"), "properties": obj{"name": obj{"pattern": `^[A-Za-z0-9_-]+$`}}},
			}})
		} else {
			allOf = append(allOf, obj{"anyOf": []any{
				obj{"required": strs("id")},
				obj{"not": obj{"required": strs("name")}},
				obj{"properties": obj{"name": obj{"pattern": `^[A-Za-z0-9_-]+$`}}},
			}})
		}
		s["allOf"] = allOf
		return s
	}
	withProps := func(top bool) obj {
		p := obj{
			"provider": obj{"type": "string", "description": "built-in (" + joinComma(builtins) + ") or a harnesses: key"},
			"model":    obj{"type": "string", "description": "becomes --model M"},
			"prompt":   obj{"type": "string", "description": "${VAR} substituted by hookrun, never by a shell; for a shell harness (sh -c, the built-in shell) it is the script and the shell expands ${VAR} from the environment"},
		}
		if top {
			p["fallback"] = obj{"type": "array", "items": ref("fallback"), "description": "tried in order after a failure; inherits prompt"}
		}
		return p
	}
	flagValue := obj{"type": strs("string", "number", "boolean")}

	return obj{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  SchemaID,
		"title":                "hookrun workflow",
		"description":          "A hookrun workflow file (docs/workflows.md).",
		"type":                 "object",
		"additionalProperties": false,
		"required":             strs("steps"),
		"properties": obj{
			"name":             obj{"type": "string", "pattern": "^[a-z0-9-]+$", "description": "unique across loaded files; default: the file's base name"},
			"description":      obj{"type": "string"},
			"on":               obj{"type": "array", "items": ref("trigger"), "description": "any matching entry triggers a run; none: only `hookrun run` or the API"},
			"authorize":        ref("authorize"),
			"concurrency":      closed(obj{"group": obj{"type": "string", "pattern": nonBlank}, "cancel_in_progress": obj{"type": "boolean"}}, "group"),
			"type":             obj{"enum": strs(TypeGraph, TypeChain), "default": TypeGraph},
			"max_active_steps": obj{"type": "integer", "minimum": 1, "default": DefaultMaxActiveSteps},
			"timeout":          ref("duration"),
			"env":              ref("env"),
			"params": obj{"anyOf": []any{ref("env"), obj{
				"type": "string", "pattern": `^\s*([A-Za-z_][A-Za-z0-9_]*=\S*\s*)*$`,
			}}},
			"secrets":    obj{"type": "array", "uniqueItems": true, "items": obj{"type": "string", "pattern": `^[A-Z_][A-Z0-9_]*$`}},
			"checkout":   obj{"type": "boolean", "default": false},
			"sandbox":    closed(obj{"provider": obj{"const": "sbx"}, "agent": obj{"type": "string", "pattern": nonBlank}}, "provider", "agent"),
			"container":  ref("container"),
			"harnesses":  obj{"type": "object", "propertyNames": obj{"pattern": `^[A-Za-z0-9_-]+$`}, "additionalProperties": ref("harness")},
			"steps":      obj{"type": "array", "minItems": 1, "items": ref("step")},
			"handler_on": closed(obj{"success": ref("handler"), "failure": ref("handler"), "cancel": ref("handler"), "exit": ref("handler")}),
			"report": closed(obj{
				"comment": obj{"enum": strs(CommentSticky, CommentNew, CommentNone), "default": CommentSticky},
				"body":    obj{"type": "string"},
				"status":  obj{"type": "boolean", "default": true},
			}),
		},
		"$defs": obj{
			"duration": obj{"oneOf": []any{
				obj{"type": "string", "pattern": durPattern},
				obj{"type": "integer", "minimum": 0, "description": "seconds"},
			}},
			"envValue": flagValue,
			"env": obj{"anyOf": []any{
				obj{"type": "object", "propertyNames": obj{"pattern": envNamePattern}, "additionalProperties": ref("envValue")},
				obj{"type": "array", "items": obj{"anyOf": []any{
					obj{"type": "object", "minProperties": 1, "maxProperties": 1,
						"propertyNames": obj{"pattern": envNamePattern}, "additionalProperties": ref("envValue")},
					obj{"type": "string", "pattern": `^[A-Za-z_][A-Za-z0-9_]*=`},
				}}},
			}},
			"trigger": func() obj {
				actions := stringOrListOf(obj{"type": "string"})
				actions["description"] = "normalized actions; empty: any, but a trigger with command: matches only created (new comments) unless actions names others"
				t := closed(obj{
					"event":    obj{"enum": strs(kinds...)},
					"actions":  actions,
					"branches": stringOrListOf(obj{"type": "string", "minLength": 1}),
					"command":  obj{"type": "string", "pattern": `^/\S+$`, "description": "the first line of a new comment starts with it (edited or deleted comments only if actions: names them); the rest of the line is HOOKRUN_COMMAND_ARGS"},
					"labels":   stringOrListOf(obj{"type": "string"}),
					"repos":    stringOrListOf(obj{"type": "string", "minLength": 1}),
					"if":       obj{"type": "string", "pattern": nonBlank, "description": "expr-lang expression over `event`"},
				}, "event")
				t["allOf"] = actionRules
				return t
			}(),
			"authorize": closed(obj{
				"author_association": obj{"type": "array", "items": obj{"enum": strs(AuthorAssociations...)},
					"default": strs(DefaultAuthorAssociations...), "description": "[] lets any association through (forks then need allow_forks)"},
				"users":       obj{"type": "array", "items": obj{"type": "string", "pattern": nonBlank}},
				"allow_forks": obj{"type": "boolean", "default": false},
			}),
			"container": closed(obj{
				"image":       obj{"type": "string", "pattern": nonBlank},
				"pull_policy": obj{"enum": strs(PullAlways, PullMissing, PullNever), "default": PullMissing},
				"working_dir": obj{"type": "string", "pattern": "^/", "default": "/workspace"},
				"volumes":     obj{"type": "array", "items": obj{"type": "string", "pattern": volumePattern}},
				"env":         ref("env"),
				"user":        obj{"type": "string"},
				"network":     obj{"type": "string"},
				"memory": obj{"oneOf": []any{
					obj{"type": "integer", "minimum": 1},
					obj{"type": "string", "pattern": sizePattern},
				}},
				"cpus": obj{"type": "number", "exclusiveMinimum": 0},
				"pids": obj{"type": "integer", "minimum": 1},
			}, "image"),
			"harness": func() obj {
				h := closed(obj{
					"binary":      obj{"type": "string", "pattern": nonBlank},
					"prefix_args": obj{"type": "array", "items": obj{"type": "string"}},
					"prompt_mode": obj{"enum": strs(PromptArg, PromptFlag, PromptStdin), "default": PromptArg},
					"prompt_flag": obj{"type": "string"},
				}, "binary")
				h["if"] = obj{"properties": obj{"prompt_mode": obj{"const": PromptFlag}}, "required": strs("prompt_mode")}
				h["then"] = obj{"required": strs("prompt_flag"), "properties": obj{"prompt_flag": obj{"pattern": nonBlank}}}
				return h
			}(),
			"with": obj{
				"type": "object", "properties": withProps(true), "required": strs("provider", "prompt"),
				"propertyNames": obj{"pattern": `^[A-Za-z0-9][A-Za-z0-9_-]*$`}, "additionalProperties": flagValue,
			},
			"fallback": obj{
				"type": "object", "properties": withProps(false), "required": strs("provider"),
				"propertyNames":        obj{"pattern": `^[A-Za-z0-9][A-Za-z0-9_-]*$`, "not": obj{"const": "fallback"}},
				"additionalProperties": flagValue,
			},
			"retryPolicy": withAllOf(closed(obj{
				"limit":            obj{"type": "integer", "minimum": 0, "maximum": 100},
				"interval":         ref("duration"),
				"interval_sec":     obj{"type": "integer", "minimum": 0},
				"max_interval":     ref("duration"),
				"max_interval_sec": obj{"type": "integer", "minimum": 0},
				"backoff": obj{"anyOf": []any{
					obj{"type": "boolean"}, obj{"const": 0}, obj{"type": "number", "minimum": 1},
				}},
				"exit_codes": obj{"type": "array", "items": obj{"type": "integer", "minimum": 0, "maximum": 255}},
			}), obj{"not": obj{"required": strs("interval", "interval_sec")}},
				obj{"not": obj{"required": strs("max_interval", "max_interval_sec")}}),
			"continueOn": obj{"anyOf": []any{
				obj{"enum": strs("failed", "failure", "skipped")},
				obj{"type": "array", "items": obj{"enum": strs("failed", "failure", "skipped")}},
				closed(obj{"failed": obj{"type": "boolean"}, "skipped": obj{"type": "boolean"}}),
			}},
			"step":    step(false),
			"handler": step(true),
		},
	}
}

func withAllOf(o obj, rules ...any) obj {
	o["allOf"] = rules
	return o
}

func stringOrListOf(item obj) obj {
	return obj{"anyOf": []any{item, obj{"type": "array", "items": item}}}
}

func joinComma(list []string) string {
	out := ""
	for i, s := range list {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
