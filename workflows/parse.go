package workflows

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/bmatcuk/doublestar/v4"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// ParseOptions say where a workflow will run, for the rules that depend on
// it.
type ParseOptions struct {
	// Server: the workflow runs in `serve` (or `runner`), in a per-run
	// workspace, for events from others. A root working_dir must then stay
	// inside the workspace. `hookrun run` and `hookrun validate` without
	// --server leave it false: any path is allowed.
	Server bool
}

// Parse reads one workflow file's content. file is used in problem positions
// and as the default name (its base name without extension). On failure the
// error is Problems, with every problem found in the file.
func Parse(file string, data []byte) (*Workflow, error) {
	return ParseWith(file, data, ParseOptions{})
}

// ParseWith is Parse with options.
func ParseWith(file string, data []byte, opts ParseOptions) (*Workflow, error) {
	r := &reader{file: file, opts: opts}
	root, ok := r.decode(data)
	if !ok {
		return nil, r.probs.orNil()
	}
	raw := readInto(r, &rawWorkflow{node: root}, root, "workflow", "")
	w := r.build(raw)
	if err := r.probs.orNil(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	w.File = file
	w.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return w, nil
}

// ParseFile reads and parses one workflow file.
func ParseFile(path string) (*Workflow, error) {
	return ParseFileWith(path, ParseOptions{})
}

// ParseFileWith is ParseFile with options.
func ParseFileWith(path string, opts ParseOptions) (*Workflow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Problems{{File: path, Msg: readingMsg(err)}}
	}
	return ParseWith(path, data, opts)
}

// Load parses workflow files and directories (their *.yaml and *.yml files,
// not recursively, in name order) and checks that names are unique across
// everything loaded. It returns the good workflows and, as the error, the
// Problems of the bad ones; a workflow whose name is already taken is
// reported and left out.
func Load(paths ...string) ([]*Workflow, error) {
	return LoadWith(ParseOptions{}, paths...)
}

// LoadWith is Load with options.
func LoadWith(opts ParseOptions, paths ...string) ([]*Workflow, error) {
	var files []string
	var probs Problems
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			probs = append(probs, Problem{File: p, Msg: readingMsg(err)})
			continue
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			probs = append(probs, Problem{File: p, Msg: readingMsg(err)})
			continue
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	var out []*Workflow
	byName := map[string]*Workflow{}
	seenFile := map[string]bool{}
	for _, f := range files {
		if seenFile[filepath.Clean(f)] {
			continue // given twice, e.g. as a file and through its directory
		}
		seenFile[filepath.Clean(f)] = true
		w, err := ParseFileWith(f, opts)
		if err != nil {
			var ps Problems
			if errors.As(err, &ps) {
				probs = append(probs, ps...)
			} else {
				probs = append(probs, Problem{File: f, Msg: err.Error()})
			}
			continue
		}
		if prev, dup := byName[w.Name]; dup {
			p := Problem{File: f, Msg: fmt.Sprintf("workflow name %q is already used by %s", w.Name, prev.File)}
			p.Line, p.Col = w.namePos[0], w.namePos[1]
			probs = append(probs, p)
			continue
		}
		byName[w.Name] = w
		out = append(out, w)
	}
	return out, probs.orNil()
}

// readingMsg words a file system error without repeating the path.
func readingMsg(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return "reading: " + err.Error()
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decode parses the YAML text into a node tree; syntax errors become
// problems at yaml.v3's line.
func (r *reader) decode(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.probs = append(r.probs, Problem{File: r.file, Msg: "empty file: a workflow needs at least steps"})
			return nil, false
		}
		r.yamlError(err)
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		r.errf(&extra, "only one YAML document per workflow file")
	} else if !errors.Is(err, io.EOF) {
		r.yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		r.probs = append(r.probs, Problem{File: r.file, Msg: "empty file: a workflow needs at least steps"})
		return nil, false
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		r.errf(root, "workflow: expected a mapping, got %s", kindName(root))
		return nil, false
	}
	return root, len(r.probs) == 0
}

func (r *reader) yamlError(err error) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		r.probs = append(r.probs, Problem{File: r.file, Line: line, Col: 1, Msg: "invalid YAML: " + m[2]})
		return
	}
	r.probs = append(r.probs, Problem{File: r.file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
}

// defaultName derives a workflow name from a file name: the base name without
// extension, lowercased, with '_', '.' and spaces turned into '-'.
func defaultName(file string) string {
	base := filepath.Base(file)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return strings.Map(func(c rune) rune {
		switch c {
		case '_', '.', ' ':
			return '-'
		}
		return c
	}, strings.ToLower(base))
}

// scope names a mapping in the problems checkFields reports: name with sep
// before each key. A path (sep ".", or the top level) words a bad value as
// `container.pull_policy "x" must be always, missing or never`; a place
// (sep ": ") as `on: unknown event "x" (pull_request, ...)`.
type scope struct {
	name string // "container", "on", `step "lint"`; "" at the top level
	sep  string // "." or ": "
}

// path names key in messages.
func (s scope) path(key string) string {
	if s.name == "" {
		return key
	}
	return s.name + s.sep + key
}

// checkFields applies the rules of a mapping's field table (fields.go) to
// the values read, except for the fields marked own and those read by their
// own read, and fills in the default of every field left out. n is the
// mapping's node, where a missing key is reported. A value of the wrong type
// was reported by the raw layer; its rule is not checked.
func (r *reader) checkFields(n *yaml.Node, at scope, fs []field) {
	for i := range fs {
		f := &fs[i]
		if f.own || f.to == nil {
			continue
		}
		if !slotSet(f.to) {
			if f.required {
				r.missing(n, at, f)
			}
			setDefault(f)
			continue
		}
		switch to := f.to.(type) {
		case *val[string]:
			if to.n.ShortTag() == "!!str" {
				r.checkText(to.n, at, f, to.v, false)
			}
		case *list[string]:
			for _, item := range to.v {
				if item.n.ShortTag() == "!!str" {
					r.checkText(item.n, at, f, item.v, true)
				}
			}
		case *envList:
			for _, e := range to.v {
				if e.name.n.ShortTag() == "!!str" && !envName.matches(e.name.v) {
					r.errf(e.name.n, "%s: %q %s", at.path(f.key), e.name.v, envName.fails)
				}
			}
		case *val[int]:
			if to.n.ShortTag() == "!!int" {
				r.checkNumber(to.n, at, f, float64(to.v), false)
			}
		case *val[int64]:
			if f.form == formSize || to.n.ShortTag() == "!!int" { // a size sets n only when it is valid
				r.checkNumber(to.n, at, f, float64(to.v), false)
			}
		case *val[float64]:
			if tag := to.n.ShortTag(); tag == "!!int" || tag == "!!float" {
				r.checkNumber(to.n, at, f, to.v, false)
			}
		case *list[int]:
			for _, item := range to.v {
				if item.n.ShortTag() == "!!int" {
					r.checkNumber(item.n, at, f, float64(item.v), true)
				}
			}
		}
	}
}

// slotSet reports whether the key of a slot was in the file.
func slotSet(to any) bool {
	return to.(interface{ set() bool }).set()
}

// setDefault puts f's default into its slot (its node stays nil).
func setDefault(f *field) {
	switch def := f.def.(type) {
	case nil:
	case string:
		f.to.(*val[string]).v = def
	case bool:
		f.to.(*val[bool]).v = def
	case int:
		f.to.(*val[int]).v = def
	case []string:
		items := make([]val[string], len(def))
		for i, s := range def {
			items[i] = val[string]{v: s}
		}
		f.to.(*list[string]).v = items
	default:
		panic(fmt.Sprintf("workflows: field %q has a default of type %T", f.key, f.def))
	}
}

// missing reports a required key that is not there.
func (r *reader) missing(n *yaml.Node, at scope, f *field) {
	hint := f.example
	if hint == "" {
		hint = strings.Join(f.enum, ", ")
	}
	if hint != "" {
		hint = " (" + hint + ")"
	}
	r.errf(n, "%s: %s is required%s", at.name, f.key, hint)
}

// checkText applies f's enum, pattern and nonEmpty to a string value, or
// to one item of a list of strings.
func (r *reader) checkText(n *yaml.Node, at scope, f *field, v string, item bool) {
	path := at.path(f.key)
	switch {
	case f.enum != nil && !slices.Contains(f.enum, v):
		switch {
		case at.sep == ": ":
			r.errf(n, "%s: unknown %s %q (%s)", at.name, f.key, v, strings.Join(f.enum, ", "))
		case len(f.enum) == 1:
			r.errf(n, "%s %q is not supported (%s)", path, v, f.enum[0])
		default:
			r.errf(n, "%s %q must be %s", path, v, orList(f.enum))
		}
	case f.nonEmpty && v == "", f.pattern != nil && f.pattern.bare && !f.pattern.matches(v):
		if item {
			path += " entries"
		}
		r.errf(n, "%s must not be empty", path)
	case f.pattern != nil && !f.pattern.matches(v):
		if item {
			path += ":"
		}
		r.errf(n, "%s %q %s", path, v, f.pattern.problem(v))
	}
}

// checkNumber applies f's bounds to a number, or to one item of a list.
func (r *reader) checkNumber(n *yaml.Node, at scope, f *field, x float64, item bool) {
	b := f.bounds
	if b == nil || b.has(x) {
		return
	}
	path := at.path(f.key)
	switch {
	case item:
		fails := b.fails
		if fails == "" {
			fails = fmt.Sprintf("must be between %v and %v", b.min, b.max)
		}
		r.errf(n, "%s: %v %s", path, x, fails)
	case b.capped:
		r.errf(n, "%s %v must be between %v and %v", path, x, b.min, b.max)
	case b.open:
		r.errf(n, "%s must be more than %v", path, b.min)
	default:
		r.errf(n, "%s must be at least %v", path, b.min)
	}
}

// orList words a list of choices: "a, b or c".
func orList(list []string) string {
	if len(list) < 2 {
		return strings.Join(list, "")
	}
	return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1]
}

// build is the second layer: defaults and every rule of DESIGN.md §3.
func (r *reader) build(raw *rawWorkflow) *Workflow {
	r.checkFields(raw.node, scope{}, raw.fields())
	w := &Workflow{
		Name:           raw.name.v,
		Description:    raw.description.v,
		Type:           raw.typ.v,
		MaxActiveSteps: raw.maxActiveSteps.v,
		WorkingDir:     raw.workingDir.v,
		Timeout:        raw.timeout.v,
		Env:            envVars(raw.env.v),
		Params:         envVars(raw.params.v),
		Checkout:       raw.checkout.v,
	}
	r.buildName(raw, w)
	r.checkWorkingDir(raw.workingDir)
	w.Preconditions = r.buildConditions(raw.preconditions)
	w.On = r.buildTriggers(raw.on)
	w.On = append(w.On, r.buildSchedules(raw)...)
	r.checkSchedulesTwice(w.On, scheduleNodes(raw))
	w.Authorization = r.buildAuthorize(raw.authorize)
	r.checkWorkflowRules(raw, w)

	if c := raw.concurrency; c != nil {
		r.checkFields(c.node, scope{"concurrency", "."}, c.fields())
		w.Concurrency = &Concurrency{Group: c.group.v, CancelInProgress: c.cancel.v}
	}
	w.Secrets = r.buildSecrets(raw.secrets)
	if s := raw.sandbox; s != nil {
		r.checkFields(s.node, scope{"sandbox", "."}, s.fields())
		w.Sandbox = &Sandbox{Provider: s.provider.v, Agent: s.agent.v, Push: s.push.v}
	}
	w.Container = r.buildContainer(raw.container, "container")
	for _, h := range raw.harnesses {
		if w.Harnesses == nil {
			w.Harnesses = map[string]Harness{}
		}
		w.Harnesses[h.name.v] = r.buildHarness(h)
		r.checkSbxEnvSecrets(h, w.Secrets) // all of secrets: is read already, wherever it stands in the file
	}
	ids := r.buildSteps(raw, w)
	r.checkDepends(w, raw, ids)
	r.buildHandlers(raw, w, ids)
	w.Report = r.buildReport(raw.report)
	w.Permissions = r.buildPermissions(raw.permissions)
	return w
}

// buildName: the file's base name by default.
func (r *reader) buildName(raw *rawWorkflow, w *Workflow) {
	if raw.name.set() {
		w.namePos = [2]int{raw.name.n.Line, raw.name.n.Column}
		return
	}
	w.Name = defaultName(r.file)
	w.namePos = [2]int{1, 1}
	if !workflowName.matches(w.Name) {
		r.errf(raw.node, "name %q (from the file name) must match %s; set name:", w.Name, workflowName.hint())
	}
}

// buildSecrets checks `secrets:`: names, each once.
func (r *reader) buildSecrets(raws list[string]) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range raws.v {
		switch {
		case !secretName.matches(s.v):
			r.errf(s.n, "secret name %q %s", s.v, secretName.fails)
		case seen[s.v]:
			r.errf(s.n, "secret %q listed twice", s.v)
		}
		seen[s.v] = true
		out = append(out, s.v)
	}
	return out
}

// buildSteps builds `steps:` into w (a chain's steps each depending on the
// one before); ids are the steps' ids and where each stands.
func (r *reader) buildSteps(raw *rawWorkflow, w *Workflow) (ids map[string]*yaml.Node) {
	if raw.stepsNode == nil {
		r.errf(raw.node, "steps: at least one step is required")
	} else if len(raw.steps) == 0 && deref(raw.stepsNode).Kind == yaml.SequenceNode {
		r.errf(raw.stepsNode, "steps: at least one step is required")
	}
	ids = map[string]*yaml.Node{}
	for i := range raw.steps {
		s := r.buildStep(w, &raw.steps[i], "step")
		r.uniqueID(ids, s.ID, &raw.steps[i])
		if w.Type == TypeChain && len(s.Depends) == 0 && i > 0 {
			s.Depends = []string{w.Steps[i-1].ID}
		}
		w.Steps = append(w.Steps, s)
	}
	return ids
}

// uniqueID adds a step's id to ids, or says it is there already.
func (r *reader) uniqueID(ids map[string]*yaml.Node, id string, raw *rawStep) {
	if id == "" {
		return
	}
	if prev, dup := ids[id]; dup {
		r.errf(stepIDNode(raw), "duplicate step id %q (first at line %d)", id, prev.Line)
		return
	}
	ids[id] = stepIDNode(raw)
}

// buildHandlers builds `handler_on:` into w; a handler's id (on_<key> by
// default) is unique among the steps' (ids).
func (r *reader) buildHandlers(raw *rawWorkflow, w *Workflow, ids map[string]*yaml.Node) {
	handlers := w.HandlerOn.handlers()
	for _, h := range raw.handlerOn {
		key := h.key.v
		i := slices.IndexFunc(handlers, func(x handler) bool { return x.key == key })
		if i < 0 {
			keys := make([]string, len(handlers))
			for j, x := range handlers {
				keys[j] = x.key
			}
			r.errf(h.key.n, "handler_on: unknown handler %q (%s)", key, strings.Join(keys, ", "))
			continue
		}
		if !h.step.id.set() && !h.step.name.set() {
			h.step.id = val[string]{v: "on_" + key, n: h.step.node}
		}
		s := r.buildStep(w, &h.step, "handler_on."+key)
		if len(h.step.depends.v) > 0 {
			r.errf(h.step.depends.v[0].n, "handler_on.%s: a handler cannot depend on steps", key)
		}
		r.uniqueID(ids, s.ID, &h.step)
		*handlers[i].slot = &s
	}
}

// buildReport checks `report:` (its defaults when absent).
func (r *reader) buildReport(p *rawReport) Report {
	if p == nil {
		p = &rawReport{} // the defaults
	}
	r.checkFields(p.node, scope{"report", "."}, p.fields())
	rep := Report{Comment: p.comment.v, Body: p.body.v, Status: p.status.v}
	if rv := p.review; rv != nil {
		fs := rv.fields()
		if rv.node.Kind == yaml.MappingNode {
			r.checkFields(rv.node, scope{"report.review", "."}, fs)
		} else {
			for i := range fs {
				setDefault(&fs[i])
			}
		}
		if rv.enabled {
			rep.Review = &ReviewOptions{Filter: rv.filter.v, MaxComments: rv.maxComments.v}
		}
	}
	return rep
}

// buildPermissions checks `permissions:`; nil when absent.
func (r *reader) buildPermissions(p *rawPermissions) *Permissions {
	if p == nil {
		return nil
	}
	r.checkFields(p.node, scope{"permissions", "."}, p.fields())
	for _, l := range p.labels.v {
		if _, err := path.Match(l.v, ""); err != nil {
			r.errf(l.n, "permissions.labels: %q is not a valid glob: %v", l.v, err)
		}
	}
	for _, a := range p.assigneeList.v {
		if strings.TrimSpace(a.v) == "" {
			r.errf(a.n, "permissions.assignees: a login must not be empty")
		}
	}
	return &Permissions{Labels: texts(p.labels), AnyAssignee: p.assignees.v, Assignees: texts(p.assigneeList),
		State: texts(p.state), Comment: p.comment.v, Targets: p.targets.v, CreateLabels: p.createLabels.v}
}

// texts are the values of a list of strings: nil when the key was absent
// (and has no default), empty (not nil) when the list was.
func texts(l list[string]) []string {
	if !l.set() && l.v == nil {
		return nil
	}
	out := make([]string, 0, len(l.v))
	for _, s := range l.v {
		out = append(out, s.v)
	}
	return out
}

func stepIDNode(s *rawStep) *yaml.Node {
	if s.id.set() {
		return s.id.n
	}
	if s.name.set() {
		return s.name.n
	}
	return s.node
}

func (r *reader) buildTriggers(raws []rawTrigger) []Trigger {
	var out []Trigger
	for _, rt := range raws {
		r.checkFields(rt.node, scope{"on", ": "}, rt.fields())
		t := rt.trigger()
		if known := r.triggerEvent(&rt, &t); known {
			for _, a := range rt.actions.v {
				if !slices.Contains(Actions[t.Event], a.v) {
					r.errf(a.n, "on: unknown action %q for event %s (%s)", a.v, t.Event, strings.Join(Actions[t.Event], ", "))
				}
			}
			r.checkTriggerRules(&rt, t.Event)
		}
		if (t.Event == KindChat || t.Event == KindSchedule) && t.Forge == "" {
			t.Forge = DefaultChatForge()
		}
		r.globs(rt.branches, "branches")
		r.scheduleTrigger(&rt, &t)
		for _, ps := range []struct {
			l    list[string]
			what string
		}{{rt.paths, "paths"}, {rt.ignore, "paths_ignore"}} {
			for _, g := range ps.l.v {
				if g.v != "" && !doublestar.ValidatePattern(g.v) {
					r.errf(g.n, "on: %s pattern %q is malformed", ps.what, g.v)
				}
			}
		}
		r.globs(rt.repos, "repos")
		if rt.ifExpr.set() && rt.ifExpr.n.ShortTag() == "!!str" && nonBlank.matches(t.If) {
			if prog, err := compileIf(t.If); err != nil {
				msg, _, _ := strings.Cut(err.Error(), "\n")
				r.errf(rt.ifExpr.n, "on: if %q does not compile: %s", t.If, msg)
			} else {
				t.program = prog
			}
		}
		out = append(out, t)
	}
	return out
}

// trigger is the Trigger as written, before the rules.
func (rt *rawTrigger) trigger() Trigger {
	return Trigger{
		Event:       Kind(rt.event.v),
		Actions:     texts(rt.actions),
		Branches:    texts(rt.branches),
		Command:     rt.command.v,
		Labels:      texts(rt.labels),
		Repos:       texts(rt.repos),
		Deleted:     rt.deleted.v,
		Paths:       texts(rt.paths),
		PathsIgnore: texts(rt.ignore),
		Repo:        rt.repo.v,
		Forge:       Forge(rt.forge.v),
		Schedule:    rt.schedule.v,
		Timezone:    rt.timezone.v,
		If:          rt.ifExpr.v,
	}
}

// triggerEvent reports whether the trigger's event is a known kind: the
// one written, or schedule for a trigger with schedule: and no event.
// Without either, event is missing.
func (r *reader) triggerEvent(rt *rawTrigger, t *Trigger) bool {
	switch {
	case !rt.event.set() && rt.schedule.set():
		t.Event = KindSchedule // a schedule's event goes without saying
		return true
	case !rt.event.set():
		r.missing(rt.node, scope{"on", ": "}, lookupField(rt.fields(), "event"))
		return false
	}
	return rt.event.n.ShortTag() == "!!str" && slices.Contains(kindNames, rt.event.v)
}

// keyed is a string field with its key, for a rule over several fields.
type keyed struct {
	v   val[string]
	key string
}

// notHere reports each of fs that is set, where it is, with format (which
// takes the key).
func (r *reader) notHere(format string, fs ...keyed) {
	for _, f := range fs {
		if f.v.set() {
			r.errf(f.v.n, format, f.key)
		}
	}
}

// scheduleTrigger checks a schedule trigger's schedule (CheckSchedule)
// and timezone (CheckTimezone); which keys it takes is triggerRules'.
func (r *reader) scheduleTrigger(rt *rawTrigger, t *Trigger) {
	if t.Event != KindSchedule || !rt.schedule.set() {
		return
	}
	r.checkSchedule(rt.schedule, "on: ")
	if rt.timezone.set() && rt.timezone.n.ShortTag() == "!!str" {
		if err := CheckTimezone(t.Timezone, t.Schedule); err != nil {
			r.errf(rt.timezone.n, "on: %v", err)
		}
	}
}

// checkSchedule reports a schedule CheckSchedule refuses; prefix places
// it ("on: ", "schedule: ").
func (r *reader) checkSchedule(s val[string], prefix string) {
	if s.n.ShortTag() != "!!str" {
		return // not a string: said by the raw layer
	}
	if err := CheckSchedule(s.v); err != nil {
		r.errf(s.n, "%s%v", prefix, err)
	}
}

// buildSchedules reads Dagu's top-level schedule: with the workflow's
// repo: (and forge:) into schedule triggers, appended to on:. repo and
// forge are only for it.
func (r *reader) buildSchedules(raw *rawWorkflow) []Trigger {
	if !raw.schedule.set() {
		r.notHere("%s: only with schedule: (triggers name their own repositories)", keyed{raw.repo, "repo"}, keyed{raw.forge, "forge"})
		return nil
	}
	if !raw.repo.set() {
		r.errf(raw.schedule.n, "schedule: a scheduled workflow needs repo: the repository (owner/name) its runs act on")
	}
	forge := Forge(raw.forge.v)
	if forge == "" {
		forge = DefaultChatForge()
	}
	if len(raw.schedule.v) == 0 {
		r.errf(raw.schedule.n, "schedule: at least one schedule is required")
	}
	var out []Trigger
	for _, s := range raw.schedule.v {
		r.checkSchedule(s, "schedule: ")
		out = append(out, Trigger{Event: KindSchedule, Schedule: s.v, Repo: raw.repo.v, Forge: forge})
	}
	return out
}

// scheduleNodes are the nodes of the triggers build makes, in w.On's
// order: on:'s entries, then the top-level schedule's.
func scheduleNodes(raw *rawWorkflow) []*yaml.Node {
	var out []*yaml.Node
	for _, rt := range raw.on {
		out = append(out, rt.node)
	}
	for _, s := range raw.schedule.v {
		out = append(out, s.n)
	}
	return out
}

// checkSchedulesTwice reports a schedule trigger that is another's (the
// same schedule, zone and repository): each would start a run per tick.
// nodes[i] is where w.On[i] was written.
func (r *reader) checkSchedulesTwice(on []Trigger, nodes []*yaml.Node) {
	first := map[[4]string]int{}
	for i, t := range on {
		if t.Event != KindSchedule || i >= len(nodes) {
			continue
		}
		key := [4]string{strings.Join(strings.Fields(t.Schedule), " "), t.Timezone, t.Repo, string(t.Forge)}
		if j, dup := first[key]; dup {
			r.errf(nodes[i], "schedule %q on %s is there twice (first at line %d): each would start a run per tick", t.Schedule, t.Repo, nodes[j].Line)
			continue
		}
		first[key] = i
	}
}

// globs reports malformed path.Match patterns (empty ones are checkFields').
func (r *reader) globs(raws list[string], what string) {
	for _, g := range raws.v {
		if _, err := filepath.Match(g.v, ""); g.v != "" && err != nil {
			r.errf(g.n, "on: %s pattern %q is malformed", what, g.v)
		}
	}
}

func (r *reader) buildAuthorize(raw *rawAuthorize) Authorize {
	if raw == nil {
		raw = &rawAuthorize{} // the defaults
	}
	r.checkFields(raw.node, scope{"authorize", ": "}, raw.fields())
	return Authorize{AuthorAssociation: texts(raw.assoc), Users: texts(raw.users), AllowForks: raw.allowForks.v,
		SlackUsers: texts(raw.slackUsers), SlackChannels: texts(raw.slackChans)}
}

// envVars are the variables read (their names are checkFields').
func envVars(raws []rawEnv) []EnvVar {
	var out []EnvVar
	for _, e := range raws {
		out = append(out, EnvVar{Name: e.name.v, Value: e.value.v})
	}
	return out
}

func (r *reader) buildContainer(raw *rawContainer, what string) *Container {
	if raw == nil {
		return nil
	}
	r.checkFields(raw.node, scope{what, "."}, raw.fields())
	var capAdd []string
	if raw.caps != nil {
		r.checkFields(raw.caps.node, scope{what + ".capabilities", "."}, raw.caps.fields())
		capAdd = texts(raw.caps.add)
	}
	return &Container{
		Image:      raw.image.v,
		PullPolicy: raw.pullPolicy.v,
		WorkingDir: raw.workingDir.v,
		Volumes:    texts(raw.volumes),
		Env:        envVars(raw.env.v),
		User:       raw.user.v,
		Network:    raw.network.v,
		CapAdd:     capAdd,
		Memory:     raw.memory.v,
		CPUs:       raw.cpus.v,
		PIDs:       raw.pids.v,
	}
}

func (r *reader) buildHarness(raw rawHarness) Harness {
	what := "harnesses." + raw.name.v
	if !stepID.matches(raw.name.v) {
		r.errf(raw.name.n, "harnesses: name %q %s", raw.name.v, stepID.fails)
	}
	r.checkFields(raw.node, scope{what, "."}, raw.fields())
	h := Harness{Binary: raw.binary.v, PrefixArgs: texts(raw.prefixArgs), PromptMode: raw.promptMode.v, PromptFlag: raw.promptFlag.v}
	if h.PromptMode == PromptFlag && !nonBlank.matches(h.PromptFlag) {
		r.errf(raw.promptMode.n, "%s: prompt_mode flag needs prompt_flag (for example -p)", what)
	}
	if h.RunsSbx() && strings.Contains(h.Binary, "/") && !filepath.IsAbs(h.Binary) {
		// Resolved in the workspace, which the pull request controls; the
		// runner also refuses an absolute one inside the workspace.
		r.errf(raw.binary.n, "%s: binary %s is a relative path: it would run a file of the workspace, which the pull request controls, on the host with sbx's login; use sbx (from PATH) or an absolute path", what, h.Binary)
	}
	return h
}

// checkSbxEnvSecrets reports each prefix arg of an sbx harness that passes a
// declared secret into the sandbox with -e: `-e NAME`, `-eNAME`, `--env NAME`,
// `--env=NAME`, each also as NAME=value. sbx copies such a variable into the
// sandbox, where the agent and everything it runs can read it; sbx secret set
// keeps the key on the host and lets sbx's proxy inject it into requests
// instead. The problem sits at the arg that names the secret. Every prefix
// arg is checked, not only sbx's own options: a false alarm on an inner
// command's -e is cheaper than a leaked key.
func (r *reader) checkSbxEnvSecrets(raw rawHarness, secrets []string) {
	if !(Harness{Binary: raw.binary.v}).RunsSbx() || len(secrets) == 0 {
		return
	}
	args := raw.prefixArgs.v
	for i := 0; i < len(args); i++ {
		a, at := args[i].v, args[i]
		var value, written string
		switch {
		case a == "-e" || a == "--env":
			if i+1 == len(args) {
				continue
			}
			i++
			at, value, written = args[i], args[i].v, a+" "+args[i].v
		case strings.HasPrefix(a, "--env="):
			value, written = strings.TrimPrefix(a, "--env="), a
		case strings.HasPrefix(a, "-e") && !strings.HasPrefix(a, "--"):
			value, written = strings.TrimPrefix(strings.TrimPrefix(a, "-e"), "="), a
		default:
			continue
		}
		name, _, _ := strings.Cut(value, "=")
		if slices.Contains(secrets, name) {
			r.errf(at.n, "harnesses.%s.prefix_args: %s would pass the secret %s into the sandbox, where the agent can read it; "+
				"store it with sbx secret set instead (e.g. echo \"$%s\" | sbx secret set %s)", raw.name.v, written, name, name, sbxService(name))
		}
	}
}

// sbxServices maps well-known key variables to their `sbx secret set`
// service, for the hint in checkSbxEnvSecrets: the model providers' here,
// a forge's from its package (RegisterSbxService).
var sbxServices = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{
	"ANTHROPIC_API_KEY": "anthropic",
	"OPENAI_API_KEY":    "openai",
	"GEMINI_API_KEY":    "google",
	"GOOGLE_API_KEY":    "google",
}}

// RegisterSbxService names the `sbx secret set` service of the key
// variable name, for the hint of a workflow that passes it into an sbx
// sandbox: a forge's package registers the variables its tokens are read
// from.
func RegisterSbxService(name, service string) {
	sbxServices.Lock()
	defer sbxServices.Unlock()
	sbxServices.m[name] = service
}

// sbxService names the sbx secret service for a variable, or a placeholder.
func sbxService(name string) string {
	sbxServices.RLock()
	defer sbxServices.RUnlock()
	if s, ok := sbxServices.m[name]; ok {
		return s
	}
	return "<service>"
}

func (r *reader) buildStep(w *Workflow, raw *rawStep, what string) Step {
	s := Step{
		ID:         raw.id.v,
		Name:       raw.name.v,
		Run:        raw.run.v,
		Action:     raw.action.v,
		Depends:    texts(raw.depends),
		Output:     raw.output.v,
		Env:        envVars(raw.env.v),
		WorkingDir: raw.workingDir.v,
		ContinueOn: raw.continueOn.v,
		Timeout:    raw.timeout.v,
	}
	s.Preconditions = r.buildConditions(raw.preconditions)
	// id: required, or taken from a Dagu-style name
	switch {
	case raw.id.set():
		if raw.id.n.ShortTag() == "!!str" && !stepID.matches(s.ID) {
			r.errf(raw.id.n, "%s: id %q %s", what, s.ID, stepID.fails)
		}
	case raw.name.set() && stepID.matches(s.Name):
		s.ID = s.Name
	case raw.name.set():
		r.errf(raw.name.n, "%s: id is required (name %q cannot serve as one: %s)", what, s.Name, stepID.hint())
	default:
		r.errf(raw.node, "%s: id is required", what)
	}
	if s.Name == "" {
		s.Name = s.ID
	}
	label := what
	if s.ID != "" {
		label = fmt.Sprintf("step %q", s.ID)
	}
	r.checkFields(raw.node, scope{label, ": "}, raw.fields())
	s.Container = r.buildContainer(raw.container, "container")

	switch {
	case raw.run.set() && raw.action.set():
		r.errf(raw.action.n, "%s: run and action are mutually exclusive; use one", label)
	case !raw.run.set() && !raw.action.set():
		r.errf(raw.node, "%s: needs run or action", label)
	}
	if raw.with != nil && s.Action != ActionHarnessRun && !raw.action.set() {
		r.errf(raw.with.node, "%s: with is only for action: harness.run", label)
	}
	if s.Action == ActionHarnessRun {
		if raw.with == nil {
			r.errf(raw.action.n, "%s: harness.run needs with: {provider, prompt}", label)
		} else {
			hr := r.buildHarnessRun(w, raw.with, label, "", s.Container != nil)
			s.Harness = &hr
		}
	}

	if p := raw.retry; p != nil {
		r.checkFields(p.node, scope{label + ": retry_policy", "."}, p.fields())
		rp := &RetryPolicy{Limit: p.limit.v, Interval: p.interval.v, Backoff: p.backoff.v, MaxInterval: p.maxInterval.v}
		if p.backoff.set() && rp.Backoff != 0 && rp.Backoff < backoffMin {
			r.errf(p.backoff.n, "%s: retry_policy.backoff %v must be at least %v (or 0 for a constant interval)", label, rp.Backoff, backoffMin)
		}
		if p.maxInterval.set() && rp.MaxInterval > 0 && rp.MaxInterval < rp.Interval {
			r.errf(p.maxInterval.n, "%s: retry_policy.max_interval is shorter than interval", label)
		}
		for _, c := range p.exitCodes.v {
			rp.ExitCodes = append(rp.ExitCodes, c.v)
		}
		s.RetryPolicy = rp
	}
	return s
}

// buildHarnessRun validates a `with:` (or a fallback entry) against the
// known providers. parentPrompt is inherited by fallbacks without a prompt.
func (r *reader) buildHarnessRun(w *Workflow, raw *rawWith, label, parentPrompt string, stepContainer bool) HarnessRun {
	r.checkFields(raw.node, scope{label + ": with", "."}, raw.fields("", true))
	hr := HarnessRun{Provider: raw.provider.v, Model: raw.model.v, Prompt: raw.prompt.v}
	switch {
	case !raw.provider.set():
		r.errf(raw.node, "%s: with.provider is required", label)
	case raw.provider.n.ShortTag() != "!!str":
	default:
		h, ok := w.LookupHarness(hr.Provider)
		switch {
		case !ok:
			r.errf(raw.provider.n, "%s: unknown provider %q (built-in: %s; or declare it under harnesses:)", label, hr.Provider, builtinList())
		case h.RunsSbx() && (stepContainer || w.Container != nil):
			r.errf(raw.provider.n, "%s: harness %q runs sbx on the host and cannot run inside a container", label, hr.Provider)
		case h.ShellScript() && raw.model.set():
			r.errf(raw.model.n, "%s: model does not apply to the shell harness %q: its prompt is a shell script", label, hr.Provider)
		case h.ShellScript() && len(raw.flags) > 0:
			r.errf(raw.flags[0].name.n, "%s: with key %q does not apply to the shell harness %q: its prompt is a shell script", label, raw.flags[0].name.v, hr.Provider)
		}
	}
	if hr.Prompt == "" {
		if parentPrompt == "" {
			r.errf(raw.node, "%s: with.prompt is required", label)
		}
		hr.Prompt = parentPrompt
	}
	for _, f := range raw.flags {
		if !flagName.matches(f.name.v) {
			r.errf(f.name.n, "%s: with key %q %s", label, f.name.v, flagName.fails)
			continue
		}
		if f.value.n != nil && f.value.n.ShortTag() == "!!bool" && f.value.v == "false" {
			continue // a false boolean flag is simply not passed
		}
		hr.Flags = append(hr.Flags, Flag{Name: f.name.v, Value: f.value.v})
	}
	sort.Slice(hr.Flags, func(i, j int) bool { return hr.Flags[i].Name < hr.Flags[j].Name })
	for i := range raw.fallback {
		hr.Fallback = append(hr.Fallback, r.buildHarnessRun(w, &raw.fallback[i], label, hr.Prompt, stepContainer))
	}
	return hr
}

func builtinList() string {
	names := make([]string, 0, len(BuiltinHarnesses))
	for n := range BuiltinHarnesses {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// checkDepends reports unknown targets and cycles. A cycle is printed from
// the first step (in file order) on it that the search reaches, at the
// depends entry that closes it.
func (r *reader) checkDepends(w *Workflow, raw *rawWorkflow, ids map[string]*yaml.Node) {
	index := map[string]int{}
	for i, s := range w.Steps {
		if _, ok := index[s.ID]; !ok && s.ID != "" {
			index[s.ID] = i
		}
	}
	for i := range raw.steps {
		for _, d := range raw.steps[i].depends.v {
			if _, ok := index[d.v]; !ok {
				r.errf(d.n, "step %q: depends on unknown step %q", w.Steps[i].ID, d.v)
			}
		}
	}
	const (
		white = iota
		gray
		black
	)
	color := make([]int, len(w.Steps))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		color[i] = gray
		stack = append(stack, i)
		for k, d := range w.Steps[i].Depends {
			j, ok := index[d]
			if !ok {
				continue
			}
			switch color[j] {
			case white:
				visit(j)
			case gray:
				var path []string
				start := 0
				for p, s := range stack {
					if s == j {
						start = p
					}
				}
				for _, s := range stack[start:] {
					path = append(path, w.Steps[s].ID)
				}
				path = append(path, w.Steps[j].ID)
				var at *yaml.Node = raw.steps[i].node
				if k < len(raw.steps[i].depends.v) {
					at = raw.steps[i].depends.v[k].n
				}
				r.errf(at, "dependency cycle: %s", strings.Join(path, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range w.Steps {
		if color[i] == white {
			visit(i)
		}
	}
}

// checkWorkingDir applies the rule of the root working_dir: in server mode
// (ParseOptions.Server) it must stay inside the run's workspace, so it is
// relative and does not climb out with "..".
func (r *reader) checkWorkingDir(wd val[string]) {
	if !wd.set() || wd.n.ShortTag() != "!!str" {
		return
	}
	if !nonBlank.matches(wd.v) {
		r.errf(wd.n, "working_dir must not be empty")
		return
	}
	if !r.opts.Server {
		return
	}
	switch clean := filepath.Clean(wd.v); {
	case filepath.IsAbs(wd.v):
		r.errf(wd.n, "working_dir %q is outside the run's workspace: the server runs steps in a fresh workspace per run; use a path relative to it", wd.v)
	case clean == ".." || strings.HasPrefix(clean, "../"):
		r.errf(wd.n, "working_dir %q climbs out of the run's workspace; use a path inside it", wd.v)
	}
}

// buildConditions checks preconditions: an expected written re:REGEXP must
// compile (the other rules are the condition table's).
func (r *reader) buildConditions(raws []rawCondition) []Condition {
	var out []Condition
	for i := range raws {
		c := &raws[i]
		if c.expected.n == nil && c.negate.n == nil && c.condition.n == c.node {
			// the string form: its one rule, a condition that is not blank
			if c.condition.n.ShortTag() == "!!str" && !nonBlank.matches(c.condition.v) {
				r.errf(c.node, "preconditions: a condition must not be empty")
			}
		} else {
			r.checkFields(c.node, scope{"preconditions", "."}, c.fields())
		}
		if re, ok := strings.CutPrefix(c.expected.v, "re:"); ok {
			if _, err := regexp.Compile(re); err != nil {
				r.errf(c.expected.n, "preconditions.expected %q is not a valid regular expression: %v", c.expected.v, err)
			}
		}
		out = append(out, Condition{Condition: c.condition.v, Expected: c.expected.v, Negate: c.negate.v})
	}
	return out
}
