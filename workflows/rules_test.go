package workflows

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// ruleDoc is a valid workflow with one trigger of ev (the keys a chat or
// schedule trigger needs included), for a rule to break.
func ruleDoc(ev Kind) (doc, trigger map[string]any) {
	trigger = map[string]any{"event": string(ev)}
	doc = map[string]any{"on": []any{trigger}, "steps": []any{map[string]any{"id": "a", "run": "x"}}}
	switch ev {
	case KindChat:
		trigger["command"], trigger["repo"] = "deploy", "o/r"
		doc["authorize"] = map[string]any{"slack_users": []any{"U0123ABCD"}, "slack_channels": []any{"C0123ABCD"}}
	case KindSchedule:
		trigger["schedule"], trigger["repo"] = "@daily", "o/r"
	}
	return doc, trigger
}

// sample is a value of key that breaks nothing but a rule between fields.
func sample(key string) any {
	switch slotOf(new(rawTrigger).fields(), key).(type) {
	case *list[string]:
		return []any{"x"}
	case *val[bool]:
		return true
	}
	return map[string]string{"command": "/x", "repo": "o/r", "forge": "github", "schedule": "@daily", "timezone": "UTC"}[key]
}

// judge is what the parser and the schema say of doc.
func judge(t *testing.T, sch *jsonschema.Schema, doc map[string]any) (parsed error, schema error) {
	t.Helper()
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, parsed = Parse("a.yaml", data)
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return parsed, sch.Validate(inst)
}

// enforcedByBoth: doc breaks exactly the rule worded want: the parser says
// so, and the schema refuses it; fix, applied to doc, mends it for both.
func enforcedByBoth(t *testing.T, sch *jsonschema.Schema, doc map[string]any, want string, fix func()) {
	t.Helper()
	p, s := judge(t, sch, doc)
	if p == nil || !strings.Contains(p.Error(), want) {
		t.Errorf("parser: %v, want %q", p, want)
	}
	if s == nil {
		t.Error("the schema accepts it")
	}
	fix()
	if p, s := judge(t, sch, doc); p != nil || s != nil {
		t.Errorf("without the break: parser %v, schema %v", p, s)
	}
}

// TestRulesEnforcedByParserAndSchema: every rule of the tables in rules.go
// refuses, in the parser and in the schema, a file that breaks it alone.
func TestRulesEnforcedByParserAndSchema(t *testing.T) {
	sch := compileSchema(t)
	for _, rule := range triggerRules {
		ev := rule.events[0]
		if !rule.required {
			ev = Kinds[slices.IndexFunc(Kinds, func(k Kind) bool { return !slices.Contains(rule.events, k) })]
		}
		t.Run(rule.key+"/"+string(ev), func(t *testing.T) {
			doc, trigger := ruleDoc(ev)
			want := strings.NewReplacer("{key}", rule.key, "{event}", string(ev)).Replace(rule.msg)
			if rule.required {
				v := trigger[rule.key]
				delete(trigger, rule.key)
				enforcedByBoth(t, sch, doc, want, func() { trigger[rule.key] = v })
				return
			}
			trigger[rule.key] = sample(rule.key)
			enforcedByBoth(t, sch, doc, want, func() { delete(trigger, rule.key) })
		})
	}
	for _, c := range commandWords {
		t.Run("command word/"+string(c.event), func(t *testing.T) {
			doc, trigger := ruleDoc(c.event)
			good := map[Kind]string{KindComment: "/deploy", KindChat: "deploy"}[c.event]
			trigger["command"] = map[Kind]string{KindComment: "deploy", KindChat: "/deploy"}[c.event]
			enforcedByBoth(t, sch, doc, c.word.fails, func() { trigger["command"] = good })
		})
	}
	for _, c := range flagConflicts {
		t.Run(c.workflowKey+" and "+c.triggerKey, func(t *testing.T) {
			ev := Kinds[slices.IndexFunc(Kinds, func(k Kind) bool { return takes(k, c.triggerKey) })]
			doc, trigger := ruleDoc(ev)
			doc[c.workflowKey], trigger[c.triggerKey] = true, true
			enforcedByBoth(t, sch, doc, c.msg, func() { doc[c.workflowKey] = false })
		})
	}
	for _, need := range authorizeNeeds {
		for _, key := range need.keys {
			t.Run(string(need.event)+" needs "+key, func(t *testing.T) {
				doc, _ := ruleDoc(need.event)
				auth := doc["authorize"].(map[string]any)
				v := auth[key]
				delete(auth, key)
				enforcedByBoth(t, sch, doc, need.msg, func() { auth[key] = v })
			})
		}
	}
}
