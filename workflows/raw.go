package workflows

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file is the first layer of the parser: it walks the yaml.Node tree and
// fills raw structs exactly as written, each value with the node it came
// from, so that the second layer (validate.go) can report positions. Shape
// problems (unknown fields, wrong types, unparsable durations and sizes) are
// reported here; meaning (enums, references, cycles) is checked there.

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
	timeout        val[time.Duration]
	env            []rawEnv
	params         []rawEnv
	secrets        []val[string]
	checkout       val[bool]
	sandbox        *rawSandbox
	container      *rawContainer
	harnesses      []rawHarness
	steps          []rawStep
	stepsNode      *yaml.Node
	handlerOn      []rawHandler
	report         *rawReport
}

type rawTrigger struct {
	node     *yaml.Node
	event    val[string]
	actions  []val[string]
	branches []val[string]
	command  val[string]
	labels   []val[string]
	repos    []val[string]
	ifExpr   val[string]
}

type rawAuthorize struct {
	node       *yaml.Node
	assoc      []val[string]
	assocSet   bool
	users      []val[string]
	allowForks val[bool]
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
}

type rawContainer struct {
	node       *yaml.Node
	image      val[string]
	pullPolicy val[string]
	workingDir val[string]
	volumes    []val[string]
	env        []rawEnv
	user       val[string]
	network    val[string]
	memory     val[int64]
	cpus       val[float64]
	pids       val[int64]
}

type rawHarness struct {
	node       *yaml.Node
	name       val[string]
	binary     val[string]
	prefixArgs []val[string]
	promptMode val[string]
	promptFlag val[string]
}

type rawEnv struct {
	name  val[string]
	value val[string]
}

type rawStep struct {
	node        *yaml.Node
	id          val[string]
	name        val[string]
	description val[string]
	run         val[string]
	action      val[string]
	with        *rawWith
	depends     []val[string]
	output      val[string]
	env         []rawEnv
	workingDir  val[string]
	container   *rawContainer
	retry       *rawRetry
	continueOn  val[ContinueOn]
	timeout     val[time.Duration]
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
	exitCodes   []val[int]
}

type rawHandler struct {
	key  val[string]
	step rawStep
}

type rawReport struct {
	node    *yaml.Node
	comment val[string]
	body    val[string]
	status  val[bool]
}

// maxDepth bounds recursion through aliases and nesting.
const maxDepth = 64

// maxVisits bounds the nodes walked: aliases let a small file describe a
// huge tree ("billion laughs"), and the walk follows them.
const maxVisits = 200_000

// reader collects problems while walking one file.
type reader struct {
	file   string
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

// mapping walks the pairs of a mapping node, calling fields[key] for each
// known key; unknown and duplicate keys are problems. what names the mapping
// in messages ("step", "container", ...).
func (r *reader) mapping(n *yaml.Node, what string, fields map[string]func(k, v *yaml.Node)) bool {
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
	return r.eachPair(n, what, "field", func(k, v *yaml.Node) {
		f, ok := fields[k.Value]
		if !ok {
			r.errf(k, "unknown field %q in %s", k.Value, what)
			return
		}
		f(k, v)
	})
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
func (r *reader) strs(n *yaml.Node, what string, single bool) []val[string] {
	n = deref(n)
	if single && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return []val[string]{{v: n.Value, n: n}}
	}
	var out []val[string]
	r.seq(n, what, func(item *yaml.Node) {
		if s := r.str(item, what); s.set() {
			out = append(out, s)
		}
	})
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
	if err != nil {
		r.errf(n, "%s: invalid duration %q (use a number and a unit: 90s, 30m, 1h30m)", what, s.v)
		return val[time.Duration]{n: n}
	}
	if d < 0 {
		r.errf(n, "%s: duration %q is negative", what, s.v)
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

var sizeRE = regexp.MustCompile(`^(?i)([0-9]+)\s*([kmgt]i?b?|b)?$`)

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
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s.v))
	if m == nil {
		r.errf(n, "%s: invalid size %q (use bytes or a unit: 512m, 1g)", what, s.v)
		return val[int64]{}
	}
	num, err := strconv.ParseInt(m[1], 10, 64)
	mult := int64(1)
	switch unit := strings.ToLower(m[2]); {
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
func (r *reader) env(n *yaml.Node, what string) []rawEnv {
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
		if what == "params" && n.ShortTag() == "!!str" {
			for _, f := range strings.Fields(n.Value) {
				name, value, ok := strings.Cut(f, "=")
				if !ok {
					r.errf(n, "params: %q is not NAME=value", f)
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

// readWorkflow is the entry of the raw layer.
func (r *reader) readWorkflow(root *yaml.Node) *rawWorkflow {
	w := &rawWorkflow{node: root}
	r.mapping(root, "workflow", map[string]func(k, v *yaml.Node){
		"name":        func(_, v *yaml.Node) { w.name = r.str(v, "name") },
		"description": func(_, v *yaml.Node) { w.description = r.str(v, "description") },
		"on": func(_, v *yaml.Node) {
			r.seq(v, "on", func(item *yaml.Node) { w.on = append(w.on, r.readTrigger(item)) })
		},
		"authorize":        func(_, v *yaml.Node) { w.authorize = r.readAuthorize(v) },
		"concurrency":      func(_, v *yaml.Node) { w.concurrency = r.readConcurrency(v) },
		"type":             func(_, v *yaml.Node) { w.typ = r.str(v, "type") },
		"max_active_steps": func(_, v *yaml.Node) { w.maxActiveSteps = r.integer(v, "max_active_steps") },
		"timeout":          func(_, v *yaml.Node) { w.timeout = r.duration(v, "timeout") },
		"env":              func(_, v *yaml.Node) { w.env = r.env(v, "env") },
		"params":           func(_, v *yaml.Node) { w.params = r.env(v, "params") },
		"secrets":          func(_, v *yaml.Node) { w.secrets = r.strs(v, "secrets", false) },
		"checkout":         func(_, v *yaml.Node) { w.checkout = r.boolean(v, "checkout") },
		"sandbox":          func(_, v *yaml.Node) { w.sandbox = r.readSandbox(v) },
		"container":        func(_, v *yaml.Node) { w.container = r.readContainer(v, "container") },
		"harnesses": func(_, v *yaml.Node) {
			r.pairs(v, "harnesses", func(k, hv *yaml.Node) {
				h := r.readHarness(hv, k.Value)
				h.name = val[string]{v: k.Value, n: k}
				w.harnesses = append(w.harnesses, h)
			})
		},
		"steps": func(_, v *yaml.Node) {
			w.stepsNode = v
			r.seq(v, "steps", func(item *yaml.Node) { w.steps = append(w.steps, r.readStep(item, "step")) })
		},
		"handler_on": func(_, v *yaml.Node) {
			r.pairs(v, "handler_on", func(k, sv *yaml.Node) {
				w.handlerOn = append(w.handlerOn, rawHandler{
					key:  val[string]{v: k.Value, n: k},
					step: r.readStep(sv, "handler_on."+k.Value),
				})
			})
		},
		"report": func(_, v *yaml.Node) { w.report = r.readReport(v) },
	})
	return w
}

func (r *reader) readTrigger(n *yaml.Node) rawTrigger {
	t := rawTrigger{node: n}
	r.mapping(n, "on entry", map[string]func(k, v *yaml.Node){
		"event":    func(_, v *yaml.Node) { t.event = r.str(v, "event") },
		"actions":  func(_, v *yaml.Node) { t.actions = r.strs(v, "actions", true) },
		"branches": func(_, v *yaml.Node) { t.branches = r.strs(v, "branches", true) },
		"command":  func(_, v *yaml.Node) { t.command = r.str(v, "command") },
		"labels":   func(_, v *yaml.Node) { t.labels = r.strs(v, "labels", true) },
		"repos":    func(_, v *yaml.Node) { t.repos = r.strs(v, "repos", true) },
		"if":       func(_, v *yaml.Node) { t.ifExpr = r.str(v, "if") },
	})
	return t
}

func (r *reader) readAuthorize(n *yaml.Node) *rawAuthorize {
	a := &rawAuthorize{node: n}
	r.mapping(n, "authorize", map[string]func(k, v *yaml.Node){
		"author_association": func(_, v *yaml.Node) {
			a.assocSet = true
			a.assoc = r.strs(v, "author_association", false)
		},
		"users":       func(_, v *yaml.Node) { a.users = r.strs(v, "users", false) },
		"allow_forks": func(_, v *yaml.Node) { a.allowForks = r.boolean(v, "allow_forks") },
	})
	return a
}

func (r *reader) readConcurrency(n *yaml.Node) *rawConcurrency {
	c := &rawConcurrency{node: n}
	r.mapping(n, "concurrency", map[string]func(k, v *yaml.Node){
		"group":              func(_, v *yaml.Node) { c.group = r.str(v, "concurrency.group") },
		"cancel_in_progress": func(_, v *yaml.Node) { c.cancel = r.boolean(v, "concurrency.cancel_in_progress") },
	})
	return c
}

func (r *reader) readSandbox(n *yaml.Node) *rawSandbox {
	s := &rawSandbox{node: n}
	r.mapping(n, "sandbox", map[string]func(k, v *yaml.Node){
		"provider": func(_, v *yaml.Node) { s.provider = r.str(v, "sandbox.provider") },
		"agent":    func(_, v *yaml.Node) { s.agent = r.str(v, "sandbox.agent") },
	})
	return s
}

func (r *reader) readContainer(n *yaml.Node, what string) *rawContainer {
	c := &rawContainer{node: n}
	r.mapping(n, what, map[string]func(k, v *yaml.Node){
		"image":       func(_, v *yaml.Node) { c.image = r.str(v, what+".image") },
		"pull_policy": func(_, v *yaml.Node) { c.pullPolicy = r.str(v, what+".pull_policy") },
		"working_dir": func(_, v *yaml.Node) { c.workingDir = r.str(v, what+".working_dir") },
		"volumes":     func(_, v *yaml.Node) { c.volumes = r.strs(v, what+".volumes", false) },
		"env":         func(_, v *yaml.Node) { c.env = r.env(v, what+".env") },
		"user":        func(_, v *yaml.Node) { c.user = r.str(v, what+".user") },
		"network":     func(_, v *yaml.Node) { c.network = r.str(v, what+".network") },
		"memory":      func(_, v *yaml.Node) { c.memory = r.size(v, what+".memory") },
		"cpus":        func(_, v *yaml.Node) { c.cpus = r.number(v, what+".cpus") },
		"pids": func(_, v *yaml.Node) {
			i := r.integer(v, what+".pids")
			c.pids = val[int64]{v: int64(i.v), n: i.n}
		},
	})
	return c
}

func (r *reader) readHarness(n *yaml.Node, name string) rawHarness {
	h := rawHarness{node: n}
	what := "harnesses." + name
	r.mapping(n, what, map[string]func(k, v *yaml.Node){
		"binary":      func(_, v *yaml.Node) { h.binary = r.str(v, what+".binary") },
		"prefix_args": func(_, v *yaml.Node) { h.prefixArgs = r.strs(v, what+".prefix_args", false) },
		"prompt_mode": func(_, v *yaml.Node) { h.promptMode = r.str(v, what+".prompt_mode") },
		"prompt_flag": func(_, v *yaml.Node) { h.promptFlag = r.str(v, what+".prompt_flag") },
	})
	return h
}

func (r *reader) readStep(n *yaml.Node, what string) rawStep {
	s := rawStep{node: n}
	r.mapping(n, what, map[string]func(k, v *yaml.Node){
		"id":           func(_, v *yaml.Node) { s.id = r.str(v, "id") },
		"name":         func(_, v *yaml.Node) { s.name = r.str(v, "name") },
		"description":  func(_, v *yaml.Node) { s.description = r.str(v, "description") },
		"run":          func(_, v *yaml.Node) { s.run = r.str(v, "run") },
		"action":       func(_, v *yaml.Node) { s.action = r.str(v, "action") },
		"with":         func(_, v *yaml.Node) { w := r.readWith(v, "with", true); s.with = &w },
		"depends":      func(_, v *yaml.Node) { s.depends = r.strs(v, "depends", true) },
		"output":       func(_, v *yaml.Node) { s.output = r.str(v, "output") },
		"env":          func(_, v *yaml.Node) { s.env = r.env(v, "env") },
		"working_dir":  func(k, v *yaml.Node) { r.workingDir(&s, k, v) },
		"dir":          func(k, v *yaml.Node) { r.workingDir(&s, k, v) },
		"container":    func(_, v *yaml.Node) { s.container = r.readContainer(v, "container") },
		"retry_policy": func(_, v *yaml.Node) { s.retry = r.readRetry(v) },
		"continue_on":  func(_, v *yaml.Node) { s.continueOn = r.continueOn(v) },
		"timeout":      func(_, v *yaml.Node) { s.timeout = r.duration(v, "timeout") },
	})
	return s
}

// workingDir reads `working_dir` or its Dagu alias `dir`.
func (r *reader) workingDir(s *rawStep, k, v *yaml.Node) {
	if s.workingDir.set() {
		r.errf(k, "%s and working_dir are the same field; use one", k.Value)
		return
	}
	s.workingDir = r.str(v, k.Value)
}

// readWith reads the `with:` of a harness.run step, or one fallback entry
// (top is false: no nested fallback).
func (r *reader) readWith(n *yaml.Node, what string, top bool) rawWith {
	w := rawWith{node: n}
	r.pairs(n, what, func(k, v *yaml.Node) {
		switch k.Value {
		case "provider":
			w.provider = r.str(v, what+".provider")
		case "model":
			w.model = r.str(v, what+".model")
		case "prompt":
			w.prompt = r.str(v, what+".prompt")
		case "fallback":
			if !top {
				r.errf(k, "%s: a fallback cannot have its own fallback", what)
				return
			}
			r.seq(v, what+".fallback", func(item *yaml.Node) {
				w.fallback = append(w.fallback, r.readWith(item, "fallback entry", false))
			})
		default:
			w.flags = append(w.flags, rawEnv{name: val[string]{v: k.Value, n: k}, value: r.scalar(v, what+"."+k.Value)})
		}
	})
	return w
}

func (r *reader) readRetry(n *yaml.Node) *rawRetry {
	p := &rawRetry{node: n}
	interval := func(field string, dst *val[time.Duration], sec bool) func(k, v *yaml.Node) {
		return func(k, v *yaml.Node) {
			if dst.set() {
				r.errf(k, "retry_policy: set %s only once (as a duration or in seconds)", field)
				return
			}
			if sec {
				*dst = r.seconds(v, "retry_policy."+k.Value)
			} else {
				*dst = r.duration(v, "retry_policy."+k.Value)
			}
		}
	}
	r.mapping(n, "retry_policy", map[string]func(k, v *yaml.Node){
		"limit":            func(_, v *yaml.Node) { p.limit = r.integer(v, "retry_policy.limit") },
		"interval":         interval("interval", &p.interval, false),
		"interval_sec":     interval("interval", &p.interval, true),
		"max_interval":     interval("max_interval", &p.maxInterval, false),
		"max_interval_sec": interval("max_interval", &p.maxInterval, true),
		"backoff": func(_, v *yaml.Node) {
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
				b := r.boolean(v, "retry_policy.backoff")
				p.backoff = val[float64]{n: v}
				if b.v {
					p.backoff.v = 2 // Dagu: `backoff: true` doubles the interval
				}
				return
			}
			p.backoff = r.number(v, "retry_policy.backoff")
		},
		"exit_codes": func(_, v *yaml.Node) {
			r.seq(v, "retry_policy.exit_codes", func(item *yaml.Node) {
				p.exitCodes = append(p.exitCodes, r.integer(item, "retry_policy.exit_codes"))
			})
		},
	})
	return p
}

// continueOn reads `failed`, `skipped`, a list of them, or the map
// {failed: bool, skipped: bool}.
func (r *reader) continueOn(n *yaml.Node) val[ContinueOn] {
	out := val[ContinueOn]{n: n}
	set := func(item *yaml.Node, word string, on bool) {
		switch word {
		case "failed", "failure":
			out.v.Failed = on
		case "skipped":
			out.v.Skipped = on
		default:
			r.errf(item, "continue_on: unknown condition %q (failed or skipped)", word)
		}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if s := r.str(n, "continue_on"); s.v != "" {
			set(n, s.v, true)
		}
	case yaml.SequenceNode:
		r.seq(n, "continue_on", func(item *yaml.Node) {
			if s := r.str(item, "continue_on"); s.v != "" {
				set(item, s.v, true)
			}
		})
	case yaml.MappingNode:
		r.mapping(n, "continue_on", map[string]func(k, v *yaml.Node){
			"failed":  func(k, v *yaml.Node) { set(k, "failed", r.boolean(v, "continue_on.failed").v) },
			"skipped": func(k, v *yaml.Node) { set(k, "skipped", r.boolean(v, "continue_on.skipped").v) },
		})
	default:
		r.errf(n, "continue_on: expected failed, skipped, a list or a mapping, got %s", kindName(n))
	}
	return out
}

func (r *reader) readReport(n *yaml.Node) *rawReport {
	p := &rawReport{node: n}
	r.mapping(n, "report", map[string]func(k, v *yaml.Node){
		"comment": func(_, v *yaml.Node) { p.comment = r.str(v, "report.comment") },
		"body":    func(_, v *yaml.Node) { p.body = r.str(v, "report.body") },
		"status":  func(_, v *yaml.Node) { p.status = r.boolean(v, "report.status") },
	})
	return p
}
