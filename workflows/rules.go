package workflows

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The rules between fields of a trigger, and between triggers and the
// rest of a workflow, as data: the parser applies them (checkTriggerRules,
// checkWorkflowRules) and the schema prints them (triggerRuleSchemas,
// workflowRuleSchemas), so that both say the same.

// triggerRule ties a key of an entry of `on:` to its event.
type triggerRule struct {
	key    string // the trigger's key
	events []Kind // the events the rule is about
	// required: with these events the key must be there. Otherwise only
	// these events take the key (a list key counts when it has an item, a
	// boolean when true).
	required bool
	msg      string // the parser's problem; {key} and {event} name the key and the trigger's event
}

var (
	commentOrChat = []Kind{KindComment, KindChat}
	changeEvents  = []Kind{KindPullRequest, KindPush} // events with changed files
	chatOnly      = []Kind{KindChat}
	scheduleOnly  = []Kind{KindSchedule}
	repoEvents    = []Kind{KindChat, KindSchedule} // events that name the repository their runs act on
)

// triggerRules are the rules between a trigger's event and its other keys.
var triggerRules = []triggerRule{
	{key: "command", events: commentOrChat, msg: "on: command is only for event: comment or chat"},
	{key: "branches", events: []Kind{KindPullRequest, KindComment, KindPush}, msg: "on: {event} events have no branch; remove branches"},
	{key: "labels", events: []Kind{KindPullRequest, KindComment, KindIssue}, msg: "on: {event} events carry no labels; remove labels"},
	{key: "paths", events: changeEvents, msg: "on: {key} is only for event: pull_request or push (the files a change touches)"},
	{key: "paths_ignore", events: changeEvents, msg: "on: {key} is only for event: pull_request or push (the files a change touches)"},
	{key: "deleted", events: []Kind{KindPush}, msg: "on: deleted is only for event: push"},
	{key: "repo", events: repoEvents, msg: "on: {key} is only for event: chat or schedule (other events come from their repository)"},
	{key: "forge", events: repoEvents, msg: "on: {key} is only for event: chat or schedule (other events come from their repository)"},
	{key: "repos", events: []Kind{KindPullRequest, KindComment, KindIssue, KindPush}, msg: "on: a {event} trigger names its one repository with repo:, not repos:"},
	{key: "schedule", events: scheduleOnly, msg: "on: schedule is only for event: schedule (leave event out)"},
	{key: "timezone", events: scheduleOnly, msg: "on: timezone is only for a schedule trigger"},
	{key: "command", events: chatOnly, required: true, msg: "on: a chat trigger needs command: the word after the slash command (deploy for /hookrun deploy)"},
	{key: "repo", events: repoEvents, required: true, msg: "on: a {event} trigger needs repo: the repository (owner/name) its runs act on"},
	{key: "schedule", events: scheduleOnly, required: true, msg: "on: a schedule trigger needs schedule: a 5-field cron (0 3 * * *), @every 30m, @hourly or @daily"},
}

// commandWords are how each event that takes a command writes it.
var commandWords = []struct {
	event Kind
	word  *pattern
}{
	{KindComment, commentCommand},
	{KindChat, chatCommandWord},
}

// flagConflict: a workflow whose boolean key is true has no trigger whose
// boolean key is true.
type flagConflict struct {
	workflowKey, triggerKey string
	msg                     string
}

var flagConflicts = []flagConflict{
	// a deleted branch has no commit to check out
	{"checkout", "deleted", "on: a push that deletes a branch has no commit to check out; deleted: true needs checkout: false"},
}

// authorizeNeed: a workflow with a trigger of event needs these lists of
// `authorize:`, not empty.
type authorizeNeed struct {
	event Kind
	keys  []string
	msg   string
}

var authorizeNeeds = []authorizeNeed{
	{KindChat, []string{"slack_users", "slack_channels"},
		"authorize: a workflow with a chat trigger needs slack_users and slack_channels (the Slack user and channel ids allowed); without them no chat command would run"},
}

// slotOf is the slot of key in fs; nil when fs has no such key.
func slotOf(fs []field, key string) any {
	for _, f := range fs {
		if f.key == key {
			return f.to
		}
	}
	return nil
}

// present reports whether a slot holds a value a rule counts (a list with
// an item, a true boolean, a string written) and the node to blame.
func present(slot any) (bool, *yaml.Node) {
	switch v := slot.(type) {
	case *list[string]:
		if len(v.v) > 0 {
			return true, v.v[0].n
		}
	case *val[bool]:
		return v.set() && v.v, v.n
	case *val[string]:
		return v.set(), v.n
	}
	return false, nil
}

// checkTriggerRules applies triggerRules and commandWords to rt, whose
// event is ev (a known one).
func (r *reader) checkTriggerRules(rt *rawTrigger, ev Kind) {
	fs := rt.fields()
	for _, rule := range triggerRules {
		there, at := present(slotOf(fs, rule.key))
		about := slices.Contains(rule.events, ev)
		msg := strings.NewReplacer("{key}", rule.key, "{event}", string(ev)).Replace(rule.msg)
		switch {
		case rule.required && about && !there:
			r.errf(rt.node, "%s", msg)
		case !rule.required && !about && there:
			r.errf(at, "%s", msg)
		}
	}
	if !rt.command.set() || rt.command.n.ShortTag() != "!!str" || !commandWord.matches(rt.command.v) {
		return // checkFields said why
	}
	for _, c := range commandWords {
		if c.event == ev && !c.word.matches(rt.command.v) {
			r.errf(rt.command.n, "on: command %q %s", rt.command.v, c.word.fails)
		}
	}
}

// takes reports whether a trigger of the known event ev takes key by
// triggerRules.
func takes(ev Kind, key string) bool {
	if !slices.Contains(Kinds, ev) {
		return false
	}
	for _, rule := range triggerRules {
		if rule.key == key && !rule.required && !slices.Contains(rule.events, ev) {
			return false
		}
	}
	return true
}

// checkWorkflowRules applies flagConflicts and authorizeNeeds to raw, whose
// triggers are w.On.
func (r *reader) checkWorkflowRules(raw *rawWorkflow, w *Workflow) {
	wfs := raw.fields()
	for _, c := range flagConflicts {
		if on, _ := present(slotOf(wfs, c.workflowKey)); !on {
			continue
		}
		for i := range raw.on {
			rt := &raw.on[i]
			if !takes(Kind(rt.event.v), c.triggerKey) {
				continue // triggerRules said so
			}
			if there, at := present(slotOf(rt.fields(), c.triggerKey)); there {
				r.errf(at, "%s", c.msg)
			}
		}
	}
	auth := raw.authorize
	if auth == nil || auth.node == nil {
		auth = &rawAuthorize{node: raw.node}
	}
	afs := auth.fields()
	for _, need := range authorizeNeeds {
		if !w.Listens(need.event) {
			continue
		}
		for _, key := range need.keys {
			if there, _ := present(slotOf(afs, key)); !there {
				r.errf(auth.node, "%s", need.msg)
				break
			}
		}
	}
}

// eventIs is the schema's condition "a trigger whose event is one of ks"
// (a trigger with schedule: and no event is a schedule's).
func eventIs(ks []Kind) obj {
	is := obj{"properties": obj{"event": eventEnum(ks)}, "required": strs("event")}
	if slices.Contains(ks, KindSchedule) {
		return obj{"anyOf": []any{is, impliedSchedule}}
	}
	return is
}

// eventIsNot is the schema's condition "a trigger whose event is none of ks".
func eventIsNot(ks []Kind) obj {
	not := obj{"properties": obj{"event": obj{"not": eventEnum(ks)}}, "required": strs("event")}
	if !slices.Contains(ks, KindSchedule) {
		return obj{"anyOf": []any{not, impliedSchedule}}
	}
	return not
}

// impliedSchedule is the schema's "a trigger with schedule: and no event".
var impliedSchedule = obj{"required": strs("schedule"), "not": obj{"required": strs("event")}}

// eventEnum is the schema of an event that is one of ks.
func eventEnum(ks []Kind) obj {
	names := stringsOf(ks)
	if len(names) == 1 {
		return obj{"const": names[0]}
	}
	return obj{"enum": strs(names...)}
}

// absent is the schema's "the key is not there" for the slot's kind (a
// boolean: not true).
func absent(slot any, key string) obj {
	if _, ok := slot.(*val[bool]); ok {
		return obj{"properties": obj{key: obj{"const": false}}}
	}
	return obj{"not": obj{"required": strs(key)}}
}

// triggerRuleSchemas are triggerRules and commandWords as if/then
// clauses on a trigger.
func triggerRuleSchemas() []any {
	fs := new(rawTrigger).fields()
	var out []any
	for _, rule := range triggerRules {
		if rule.required {
			out = append(out, obj{"if": eventIs(rule.events), "then": obj{"required": strs(rule.key)}})
			continue
		}
		out = append(out, obj{"if": eventIsNot(rule.events), "then": absent(slotOf(fs, rule.key), rule.key)})
	}
	for _, c := range commandWords {
		out = append(out, obj{"if": eventIs([]Kind{c.event}), "then": obj{"properties": obj{"command": obj{"pattern": c.word.src}}}})
	}
	return out
}

// workflowRuleSchemas are flagConflicts and authorizeNeeds as if/then
// clauses on a workflow.
func workflowRuleSchemas() []any {
	var out []any
	tfs := new(rawTrigger).fields()
	for _, c := range flagConflicts {
		out = append(out, obj{
			"if":   obj{"properties": obj{c.workflowKey: obj{"const": true}}, "required": strs(c.workflowKey)},
			"then": obj{"properties": obj{"on": obj{"items": absent(slotOf(tfs, c.triggerKey), c.triggerKey)}}},
		})
	}
	nonEmptyList := obj{"type": "array", "minItems": 1}
	for _, need := range authorizeNeeds {
		lists := obj{}
		for _, k := range need.keys {
			lists[k] = nonEmptyList
		}
		out = append(out, obj{
			"if":   obj{"properties": obj{"on": obj{"contains": eventIs([]Kind{need.event})}}, "required": strs("on")},
			"then": obj{"required": strs("authorize"), "properties": obj{"authorize": obj{"required": strs(need.keys...), "properties": lists}}},
		})
	}
	return out
}
