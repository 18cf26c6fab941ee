package workflows

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file is the first layer of the parser: it walks the yaml.Node tree and
// fills raw structs exactly as written, each value with the node it came
// from, so that the second layer (parse.go) can report positions. Each
// mapping is read by its field table (fields.go). Shape problems (unknown
// fields, wrong types, unparsable durations and sizes) are reported here;
// meaning (enums, patterns, references, cycles) is checked there.

// val is a value as read plus the node it came from; n is nil when the field
// was absent.
type val[T any] struct {
	v T
	n *yaml.Node
}

// set reports whether the field was present.
func (x val[T]) set() bool { return x.n != nil }

type rawWorkflow struct {
	node           *yaml.Node
	name           val[string]
	description    val[string]
	on             []rawTrigger
	authorize      *rawAuthorize
	concurrency    *rawConcurrency
	typ            val[string]
	maxActiveSteps val[int]
	workingDir     val[string]
	timeout        val[time.Duration]
	preconditions  []rawCondition
	env            envList
	params         envList
	secrets        list[string]
	checkout       val[bool]
	sandbox        *rawSandbox
	container      *rawContainer
	harnesses      []rawHarness
	steps          []rawStep
	stepsNode      *yaml.Node
	handlerOn      []rawHandler
	report         *rawReport
	permissions    *rawPermissions
	schedule       list[string] // Dagu's top-level schedule: on repo
	repo           val[string]  // the repository of schedule
	forge          val[string]  // its forge
}

type rawTrigger struct {
	node     *yaml.Node
	event    val[string]
	actions  list[string]
	branches list[string]
	command  val[string]
	labels   list[string]
	repos    list[string]
	deleted  val[bool]
	paths    list[string]
	ignore   list[string] // paths_ignore
	repo     val[string]  // chat, schedule: the repository a run acts on
	forge    val[string]  // chat, schedule: its forge
	schedule val[string]  // when a schedule trigger fires
	timezone val[string]  // the zone of its times
	ifExpr   val[string]
}

type rawAuthorize struct {
	node       *yaml.Node
	assoc      list[string]
	users      list[string]
	allowForks val[bool]
	slackUsers list[string]
	slackChans list[string] // slack_channels
}

type rawConcurrency struct {
	node   *yaml.Node
	group  val[string]
	cancel val[bool]
}

type rawSandbox struct {
	node     *yaml.Node
	provider val[string]
	agent    val[string]
	push     val[string]
}

type rawContainer struct {
	node       *yaml.Node
	image      val[string]
	pullPolicy val[string]
	workingDir val[string]
	volumes    list[string]
	env        envList
	user       val[string]
	network    val[string]
	caps       *rawCapabilities
	memory     val[int64]
	cpus       val[float64]
	pids       val[int64]
}

type rawCapabilities struct {
	node *yaml.Node
	add  list[string]
}

type rawHarness struct {
	node       *yaml.Node
	name       val[string]
	binary     val[string]
	prefixArgs list[string]
	promptMode val[string]
	promptFlag val[string]
}

// envList is an env as read: its variables and its node.
type envList = val[[]rawEnv]

type rawEnv struct {
	name  val[string]
	value val[string]
}

type rawStep struct {
	node          *yaml.Node
	id            val[string]
	name          val[string]
	description   val[string]
	run           val[string]
	action        val[string]
	with          *rawWith
	depends       list[string]
	output        val[string]
	env           envList
	workingDir    val[string]
	container     *rawContainer
	retry         *rawRetry
	continueOn    val[ContinueOn]
	preconditions []rawCondition
	timeout       val[time.Duration]
}

type rawWith struct {
	node     *yaml.Node
	provider val[string]
	model    val[string]
	prompt   val[string]
	flags    []rawEnv
	fallback []rawWith
}

type rawRetry struct {
	node        *yaml.Node
	limit       val[int]
	interval    val[time.Duration]
	backoff     val[float64]
	maxInterval val[time.Duration]
	exitCodes   list[int]
}

type rawHandler struct {
	key  val[string]
	step rawStep
}

// rawContinueMap is continue_on written as a mapping.
type rawContinueMap struct {
	failed      val[bool]
	failure     val[bool]
	skipped     val[bool]
	exitCodes   list[int]
	markSuccess val[bool]
}

// rawCondition is one entry of `preconditions:`.
type rawCondition struct {
	node      *yaml.Node
	condition val[string]
	expected  val[string]
	negate    val[bool]
}

// rawPermissions is `permissions:`: what a run may ask hookrun to do on
// the forge (actions.json).
type rawPermissions struct {
	node         *yaml.Node
	labels       list[string]
	assignees    val[bool]    // assignees: true
	assigneeList list[string] // assignees: [logins]
	state        list[string]
	comment      val[bool]
	targets      val[bool]
	createLabels val[bool] // create_labels
}

// readAssignees reads `permissions.assignees`: true (anyone), false, or a
// list of logins.
func (p *rawPermissions) readAssignees(r *reader, _ *field, _, v *yaml.Node) {
	v = deref(v)
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
		p.assignees = r.boolean(v, "permissions.assignees")
		return
	}
	if v.Kind != yaml.SequenceNode {
		r.errf(v, "permissions.assignees: expected true, false or a list of logins, got %s", kindName(v))
		return
	}
	p.assigneeList = r.strs(v, "permissions.assignees", false)
}

type rawReport struct {
	node    *yaml.Node
	comment val[string]
	body    val[string]
	status  val[bool]
	review  *rawReview
}

// rawReview is `report.review:`, true/false or a mapping of options.
type rawReview struct {
	node        *yaml.Node
	enabled     bool // true, or a mapping
	filter      val[string]
	maxComments val[int]
}

// readReview reads `report.review:`: a boolean, or the mapping of its
// options (which turns reviews on).
func (p *rawReport) readReview(r *reader, v *yaml.Node) {
	v = deref(v)
	rv := &rawReview{node: v}
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
		rv.enabled = r.boolean(v, "report.review").v
	case v.Kind == yaml.MappingNode:
		r.object(v, "report.review", "report.review.", rv.fields())
		rv.enabled = true
	default:
		r.errf(v, "report.review: expected true, false or a mapping (filter, max_comments), got %s", kindName(v))
		return
	}
	p.review = rv
}

// maxDepth bounds recursion through aliases and nesting.
const maxDepth = 64

// maxVisits bounds the nodes walked: aliases let a small file describe a
// huge tree ("billion laughs"), and the walk follows them.
const maxVisits = 200_000

// reader collects problems while walking one file.
type reader struct {
	file   string
	opts   ParseOptions
	probs  Problems
	depth  int
	visits int
}

// visit counts n's children against maxVisits; false means stop walking.
func (r *reader) visit(n *yaml.Node) bool {
	r.visits += len(n.Content) + 1
	if r.visits > maxVisits {
		if r.visits-len(n.Content)-1 <= maxVisits {
			r.errf(n, "document too large: aliases expand to more than %d nodes", maxVisits)
		}
		return false
	}
	return true
}

// errf records a problem at n's position (the whole file when n is nil).
func (r *reader) errf(n *yaml.Node, format string, args ...any) {
	p := Problem{File: r.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	r.probs = append(r.probs, p)
}

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is an explicit null (`key:` or `key: ~`).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName describes a node for "expected X, got Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a " + strings.TrimPrefix(n.ShortTag(), "!!")
	}
	return "nothing"
}

// object reads the mapping n by its field table: each key into its
// field's slot, every other key an unknown field. what names the mapping in
// messages ("step", "container", ...); prefix goes before a key to name its
// value ("container." gives container.image).
func (r *reader) object(n *yaml.Node, what, prefix string, fs []field) {
	r.mapping(n, what, func(k, v *yaml.Node) {
		f := lookupField(fs, k.Value)
		if f == nil {
			r.errf(k, "unknown field %q in %s", k.Value, what)
			return
		}
		r.field(f, k, v, prefix+f.key)
	})
}

// lookupField finds key in a field table.
func lookupField(fs []field, key string) *field {
	for i := range fs {
		if fs[i].key == key {
			return &fs[i]
		}
	}
	return nil
}

// field reads the value v of key k into f's slot; label names it in
// messages.
func (r *reader) field(f *field, k, v *yaml.Node, label string) {
	if f.read != nil {
		f.read(r, f, k, v)
		return
	}
	r.value(f, v, label)
}

// value reads v into f's slot by the slot's type and f's form.
func (r *reader) value(f *field, v *yaml.Node, label string) {
	switch to := f.to.(type) {
	case *val[string]:
		*to = r.str(v, label)
	case *val[bool]:
		*to = r.boolean(v, label)
	case *val[int]:
		*to = r.integer(v, label)
	case *val[int64]:
		if f.form == formSize {
			*to = r.size(v, label)
			return
		}
		i := r.integer(v, label)
		*to = val[int64]{v: int64(i.v), n: i.n}
	case *val[float64]:
		*to = r.number(v, label)
	case *val[time.Duration]:
		if f.form == formSeconds {
			*to = r.seconds(v, label)
			return
		}
		*to = r.duration(v, label)
	case *list[string]:
		*to = r.strs(v, label, f.form == formOneOrList)
	case *list[int]:
		*to = list[int]{n: deref(v)}
		r.seq(v, label, func(item *yaml.Node) { to.v = append(to.v, r.integer(item, label)) })
	case *envList:
		*to = envList{v: r.env(v, label, f.form == formParams), n: v}
	default:
		panic(fmt.Sprintf("workflows: field %q has a slot of type %T", f.key, f.to))
	}
}

// mapping walks the pairs of a mapping node, calling f for each; duplicate
// keys are problems. what names the mapping in messages.
func (r *reader) mapping(n *yaml.Node, what string, f func(k, v *yaml.Node)) bool {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		r.errf(n, "%s: expected a mapping, got %s", what, kindName(n))
		return false
	}
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > maxDepth {
		r.errf(n, "%s: nested too deeply", what)
		return false
	}
	return r.eachPair(n, what, "field", f)
}

// eachPair calls f for each key/value pair of the mapping node n (merge keys
// resolved); keys that are not strings, or repeat, are problems instead.
// noun names the keys in messages ("field", "key").
func (r *reader) eachPair(n *yaml.Node, what, noun string, f func(k, v *yaml.Node)) bool {
	if !r.visit(n) {
		return false
	}
	seen := map[string]bool{}
	for _, e := range r.entries(n, what) {
		k, v := e[0], e[1]
		if k.Kind != yaml.ScalarNode {
			r.errf(k, "%s: keys must be strings", what)
			continue
		}
		if seen[k.Value] {
			r.errf(k, "%s: duplicate %s %q", what, noun, k.Value)
			continue
		}
		seen[k.Value] = true
		f(k, v)
	}
	return true
}

// entries lists a mapping's key/value pairs with YAML merge keys
// (`<<: *defaults`) resolved: explicit keys win over merged ones and, among
// merged mappings, the first wins.
func (r *reader) entries(n *yaml.Node, what string) [][2]*yaml.Node {
	var explicit, merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge" {
			explicit = append(explicit, [2]*yaml.Node{k, v})
			continue
		}
		srcs := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			srcs = v.Content
		}
		for _, src := range srcs {
			src = deref(src)
			if src.Kind != yaml.MappingNode {
				r.errf(src, "%s: << merges a mapping or a list of mappings, got %s", what, kindName(src))
				continue
			}
			if r.depth >= maxDepth || !r.visit(src) {
				return nil
			}
			r.depth++
			merged = append(merged, r.entries(src, what)...)
			r.depth--
		}
	}
	have := map[string]bool{}
	for _, e := range explicit {
		have[e[0].Value] = true
	}
	out := explicit
	for _, e := range merged {
		if !have[e[0].Value] {
			have[e[0].Value] = true
			out = append(out, e)
		}
	}
	return out
}

// pairs walks a mapping whose keys are names (env, harnesses, with).
func (r *reader) pairs(n *yaml.Node, what string, f func(k, v *yaml.Node)) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		r.errf(n, "%s: expected a mapping, got %s", what, kindName(n))
		return
	}
	r.eachPair(n, what, "key", f)
}

// seq walks a list.
func (r *reader) seq(n *yaml.Node, what string, f func(item *yaml.Node)) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		r.errf(n, "%s: expected a list, got %s", what, kindName(n))
		return
	}
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > maxDepth {
		r.errf(n, "%s: nested too deeply", what)
		return
	}
	if !r.visit(n) {
		return
	}
	for _, item := range n.Content {
		f(deref(item))
	}
}

func (r *reader) str(n *yaml.Node, what string) val[string] {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		r.errf(n, "%s: expected a string, got %s", what, kindName(n))
		return val[string]{n: n}
	}
	return val[string]{v: n.Value, n: n}
}

// scalar accepts any scalar but null and returns its text (env values, with flags).
func (r *reader) scalar(n *yaml.Node, what string) val[string] {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		r.errf(n, "%s: expected a string, number or boolean, got %s", what, kindName(n))
		return val[string]{n: n}
	}
	return val[string]{v: n.Value, n: n}
}

func (r *reader) boolean(n *yaml.Node, what string) val[bool] {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		r.errf(n, "%s: expected a boolean, got %s", what, kindName(n))
	}
	return val[bool]{v: b, n: n}
}

func (r *reader) integer(n *yaml.Node, what string) val[int] {
	var i int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		r.errf(n, "%s: expected an integer, got %s", what, kindName(n))
	}
	return val[int]{v: i, n: n}
}

func (r *reader) number(n *yaml.Node, what string) val[float64] {
	var f float64
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		r.errf(n, "%s: expected a number, got %s", what, kindName(n))
	}
	return val[float64]{v: f, n: n}
}

// strs reads a list of strings; a single string is accepted as a list of one
// when single is true (Dagu's `depends: a`).
func (r *reader) strs(n *yaml.Node, what string, single bool) list[string] {
	n = deref(n)
	out := list[string]{n: n}
	if single && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		out.v = []val[string]{{v: n.Value, n: n}}
		return out
	}
	r.seq(n, what, func(item *yaml.Node) { out.v = append(out.v, r.str(item, what)) })
	return out
}

// duration reads "30m", "5s" (time.ParseDuration) or an integer number of
// seconds.
func (r *reader) duration(n *yaml.Node, what string) val[time.Duration] {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		return r.seconds(n, what)
	}
	s := r.str(n, what)
	if s.v == "" {
		if n.ShortTag() == "!!str" {
			r.errf(n, "%s: empty duration", what)
		}
		return val[time.Duration]{n: n}
	}
	d, err := time.ParseDuration(s.v)
	switch {
	case err == nil && d < 0:
		r.errf(n, "%s: duration %q is negative", what, s.v)
	case err != nil || !durationSyntax.matches(s.v):
		r.errf(n, "%s: invalid duration %q (use a number and a unit: 90s, 30m, 1h30m)", what, s.v)
		return val[time.Duration]{n: n}
	}
	return val[time.Duration]{v: d, n: n}
}

// seconds reads Dagu's integer-seconds form of a duration (interval_sec).
func (r *reader) seconds(n *yaml.Node, what string) val[time.Duration] {
	i := r.integer(n, what)
	switch {
	case i.v < 0:
		r.errf(n, "%s: %d seconds is negative", what, i.v)
		return val[time.Duration]{n: n}
	case int64(i.v) > math.MaxInt64/int64(time.Second):
		r.errf(n, "%s: %d seconds is out of range", what, i.v)
		return val[time.Duration]{n: n}
	}
	return val[time.Duration]{v: time.Duration(i.v) * time.Second, n: n}
}

// size reads a byte count: an integer, or a number with a unit
// (512m, 1g, 256MiB, 1024k, 100b).
func (r *reader) size(n *yaml.Node, what string) val[int64] {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		var i int64
		if n.Decode(&i) != nil {
			r.errf(n, "%s: invalid size %q", what, n.Value)
			return val[int64]{}
		}
		return val[int64]{v: i, n: n}
	}
	s := r.str(n, what)
	if n.ShortTag() != "!!str" {
		return val[int64]{} // reported by str
	}
	if !sizeSyntax.matches(s.v) {
		r.errf(n, "%s: invalid size %q (use bytes or a unit: 512m, 1g)", what, s.v)
		return val[int64]{}
	}
	digits := strings.TrimRight(s.v, "bBkKmMgGtTiI \t\n\f\r")
	num, err := strconv.ParseInt(digits, 10, 64)
	mult := int64(1)
	switch unit := strings.ToLower(strings.TrimSpace(s.v[len(digits):])); {
	case unit == "" || unit == "b":
	case unit[0] == 'k':
		mult = 1 << 10
	case unit[0] == 'm':
		mult = 1 << 20
	case unit[0] == 'g':
		mult = 1 << 30
	case unit[0] == 't':
		mult = 1 << 40
	}
	if err != nil || num > math.MaxInt64/mult {
		r.errf(n, "%s: size %q is out of range", what, s.v)
		return val[int64]{}
	}
	return val[int64]{v: num * mult, n: n}
}

// env reads `env:` as Dagu writes it, a list of one-key maps (or of
// "NAME=value" strings), or as a plain map.
// With params, Dagu's string form "A=1 B=two" is accepted too.
func (r *reader) env(n *yaml.Node, what string, params bool) []rawEnv {
	n = deref(n)
	var out []rawEnv
	add := func(k, v *yaml.Node) {
		name := r.str(k, what+" name")
		value := r.scalar(v, what+" "+k.Value)
		out = append(out, rawEnv{name: name, value: value})
	}
	switch n.Kind {
	case yaml.MappingNode:
		r.pairs(n, what, add)
	case yaml.SequenceNode:
		r.seq(n, what, func(item *yaml.Node) {
			switch {
			case item.Kind == yaml.MappingNode && len(item.Content) == 2:
				add(deref(item.Content[0]), deref(item.Content[1]))
			case item.Kind == yaml.ScalarNode && item.ShortTag() == "!!str" && strings.Contains(item.Value, "="):
				name, value, _ := strings.Cut(item.Value, "=")
				out = append(out, rawEnv{name: val[string]{v: name, n: item}, value: val[string]{v: value, n: item}})
			default:
				r.errf(item, "%s: expected NAME: value or \"NAME=value\", got %s", what, kindName(item))
			}
		})
	case yaml.ScalarNode:
		if params && n.ShortTag() == "!!str" {
			for _, f := range strings.Fields(n.Value) {
				name, value, ok := strings.Cut(f, "=")
				if !ok {
					r.errf(n, "%s: %q is not NAME=value", what, f)
					continue
				}
				out = append(out, rawEnv{name: val[string]{v: name, n: n}, value: val[string]{v: value, n: n}})
			}
			return out
		}
		fallthrough
	default:
		r.errf(n, "%s: expected a mapping or a list of NAME: value, got %s", what, kindName(n))
	}
	return out
}

// readInto reads the mapping n by x's field table and returns x, which
// holds n as its node.
func readInto[T interface{ fields() []field }](r *reader, x T, n *yaml.Node, what, prefix string) T {
	r.object(n, what, prefix, x.fields())
	return x
}

// readOn reads the triggers of `on:`.
func (w *rawWorkflow) readOn(r *reader, v *yaml.Node) {
	r.seq(v, "on", func(item *yaml.Node) {
		w.on = append(w.on, *readInto(r, &rawTrigger{node: item}, item, "on entry", ""))
	})
}

// readHarnesses reads `harnesses:`, a mapping of names to harnesses.
func (w *rawWorkflow) readHarnesses(r *reader, v *yaml.Node) {
	r.pairs(v, "harnesses", func(k, hv *yaml.Node) {
		what := "harnesses." + k.Value
		h := readInto(r, &rawHarness{node: hv, name: val[string]{v: k.Value, n: k}}, hv, what, what+".")
		w.harnesses = append(w.harnesses, *h)
	})
}

// readSteps reads `steps:`.
func (w *rawWorkflow) readSteps(r *reader, v *yaml.Node) {
	w.stepsNode = v
	r.seq(v, "steps", func(item *yaml.Node) {
		w.steps = append(w.steps, *readInto(r, &rawStep{node: item}, item, "step", ""))
	})
}

// readHandlers reads `handler_on:`, a mapping of handler keys to steps.
func (w *rawWorkflow) readHandlers(r *reader, v *yaml.Node) {
	r.pairs(v, "handler_on", func(k, sv *yaml.Node) {
		s := readInto(r, &rawStep{node: sv}, sv, "handler_on."+k.Value, "")
		w.handlerOn = append(w.handlerOn, rawHandler{key: val[string]{v: k.Value, n: k}, step: *s})
	})
}

// readWith reads the `with:` of a harness.run step, or one fallback entry
// (top is false: no nested fallback). Keys not in its table are the
// harness's flags.
func (r *reader) readWith(n *yaml.Node, what string, top bool) rawWith {
	w := rawWith{node: n}
	fs := w.fields(what, top)
	r.pairs(n, what, func(k, v *yaml.Node) {
		if f := lookupField(fs, k.Value); f != nil {
			r.field(f, k, v, what+"."+k.Value)
			return
		}
		w.flags = append(w.flags, rawEnv{name: val[string]{v: k.Value, n: k}, value: r.scalar(v, what+"."+k.Value)})
	})
	return w
}

// readFallback reads `fallback:`, the list of a top `with:`'s fallback
// entries (a fallback entry has none).
func (w *rawWith) readFallback(r *reader, k, v *yaml.Node, what string, top bool) {
	if !top {
		r.errf(k, "%s: a fallback cannot have its own fallback", what)
		return
	}
	r.seq(v, what+".fallback", func(item *yaml.Node) {
		w.fallback = append(w.fallback, r.readWith(item, "fallback entry", false))
	})
}

// readBackoff reads a multiplier, or Dagu's boolean.
func (p *rawRetry) readBackoff(r *reader, v *yaml.Node) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
		b := r.boolean(v, "retry_policy.backoff")
		p.backoff = val[float64]{n: v}
		if b.v {
			p.backoff.v = 2 // Dagu: `backoff: true` doubles the interval
		}
		return
	}
	p.backoff = r.number(v, "retry_policy.backoff")
}

// continueOn reads a condition word (continueWords), a list of them, or
// the map {failed: bool, skipped: bool}.
func (r *reader) continueOn(n *yaml.Node) val[ContinueOn] {
	out := val[ContinueOn]{n: n}
	word := func(item *yaml.Node) {
		s := r.str(item, "continue_on")
		if s.v == "" {
			return
		}
		for _, w := range continueWords {
			if w.word == s.v {
				w.set(&out.v, true)
				return
			}
		}
		r.errf(item, "continue_on: unknown condition %q (failed or skipped)", s.v)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		word(n)
	case yaml.SequenceNode:
		r.seq(n, "continue_on", word)
	case yaml.MappingNode:
		var m rawContinueMap
		fs := m.fields()
		r.object(n, "continue_on", "continue_on.", fs)
		r.checkFields(n, scope{"continue_on", "."}, fs)
		out.v = ContinueOn{Failed: m.failed.v || m.failure.v, Skipped: m.skipped.v, MarkSuccess: m.markSuccess.v}
		for _, c := range m.exitCodes.v {
			out.v.ExitCodes = append(out.v.ExitCodes, c.v)
		}
	default:
		r.errf(n, "continue_on: expected failed, skipped, a list or a mapping, got %s", kindName(n))
	}
	return out
}

// readPreconditions reads `preconditions:` as Dagu writes it: one condition
// string, or a list of condition strings and {condition, expected, negate}
// mappings.
func (r *reader) readPreconditions(n *yaml.Node, what string) []rawCondition {
	n = deref(n)
	var out []rawCondition
	one := func(item *yaml.Node) {
		switch {
		case item.Kind == yaml.ScalarNode:
			out = append(out, rawCondition{node: item, condition: r.str(item, what)})
		case item.Kind == yaml.MappingNode:
			out = append(out, *readInto(r, &rawCondition{node: item}, item, what+" entry", what+"."))
		default:
			r.errf(item, "%s: expected a condition string or {condition, expected}, got %s", what, kindName(item))
		}
	}
	if n.Kind == yaml.SequenceNode {
		r.seq(n, what, one)
		return out
	}
	one(n)
	return out
}
