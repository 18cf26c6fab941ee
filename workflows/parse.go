package workflows

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse reads one workflow file's content. file is used in problem positions
// and as the default name (its base name without extension). On failure the
// error is Problems, with every problem found in the file.
func Parse(file string, data []byte) (*Workflow, error) {
	r := &reader{file: file}
	root, ok := r.decode(data)
	if !ok {
		return nil, r.probs.orNil()
	}
	raw := r.readWorkflow(root)
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Problems{{File: path, Msg: readingMsg(err)}}
	}
	return Parse(path, data)
}

// Load parses workflow files and directories (their *.yaml and *.yml files,
// not recursively, in name order) and checks that names are unique across
// everything loaded. It returns the good workflows and, as the error, the
// Problems of the bad ones; a workflow whose name is already taken is
// reported and left out.
func Load(paths ...string) ([]*Workflow, error) {
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
		w, err := ParseFile(f)
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

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9-]+$`)
	stepIDRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	secretRE  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	flagRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
)

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

// build is the second layer: defaults and every rule of DESIGN.md §3.
func (r *reader) build(raw *rawWorkflow) *Workflow {
	w := &Workflow{
		Type:           TypeGraph,
		MaxActiveSteps: DefaultMaxActiveSteps,
		Authorization:  Authorize{AuthorAssociation: append([]string(nil), DefaultAuthorAssociations...)},
		Report:         Report{Comment: CommentSticky, Status: true},
	}

	// name
	if raw.name.set() {
		w.Name = raw.name.v
		w.namePos = [2]int{raw.name.n.Line, raw.name.n.Column}
		if raw.name.n.ShortTag() == "!!str" && !nameRE.MatchString(w.Name) {
			r.errf(raw.name.n, "name %q must match [a-z0-9-]+", w.Name)
		}
	} else {
		w.Name = defaultName(r.file)
		w.namePos = [2]int{1, 1}
		if !nameRE.MatchString(w.Name) {
			r.errf(raw.node, "name %q (from the file name) must match [a-z0-9-]+; set name:", w.Name)
		}
	}
	w.Description = raw.description.v

	w.On = r.buildTriggers(raw.on)
	r.buildAuthorize(raw.authorize, &w.Authorization)

	if c := raw.concurrency; c != nil {
		w.Concurrency = &Concurrency{Group: c.group.v, CancelInProgress: c.cancel.v}
		if !c.group.set() {
			r.errf(c.node, "concurrency: group is required")
		} else if strings.TrimSpace(c.group.v) == "" && c.group.n.ShortTag() == "!!str" {
			r.errf(c.group.n, "concurrency.group must not be empty")
		}
	}

	if raw.typ.set() {
		w.Type = raw.typ.v
		if w.Type != TypeGraph && w.Type != TypeChain && raw.typ.n.ShortTag() == "!!str" {
			r.errf(raw.typ.n, "type %q must be graph or chain", w.Type)
		}
	}
	if raw.maxActiveSteps.set() {
		w.MaxActiveSteps = raw.maxActiveSteps.v
		if w.MaxActiveSteps < 1 && raw.maxActiveSteps.n.ShortTag() == "!!int" {
			r.errf(raw.maxActiveSteps.n, "max_active_steps must be at least 1")
		}
	}
	w.Timeout = raw.timeout.v
	w.Env = r.buildEnv(raw.env, "env")
	w.Params = r.buildEnv(raw.params, "params")
	seenSecret := map[string]bool{}
	for _, s := range raw.secrets {
		switch {
		case !secretRE.MatchString(s.v):
			r.errf(s.n, "secret name %q must match [A-Z_][A-Z0-9_]*", s.v)
		case seenSecret[s.v]:
			r.errf(s.n, "secret %q listed twice", s.v)
		}
		seenSecret[s.v] = true
		w.Secrets = append(w.Secrets, s.v)
	}
	w.Checkout = raw.checkout.v

	if s := raw.sandbox; s != nil {
		w.Sandbox = &Sandbox{Provider: s.provider.v, Agent: s.agent.v}
		switch {
		case !s.provider.set():
			r.errf(s.node, "sandbox: provider is required (sbx)")
		case s.provider.v != "sbx":
			r.errf(s.provider.n, "sandbox.provider %q is not supported (sbx)", s.provider.v)
		}
		switch {
		case !s.agent.set():
			r.errf(s.node, "sandbox: agent is required (claude, codex, ...)")
		case strings.TrimSpace(s.agent.v) == "":
			r.errf(s.agent.n, "sandbox.agent must not be empty")
		}
	}
	w.Container = r.buildContainer(raw.container, "container")

	for _, h := range raw.harnesses {
		if w.Harnesses == nil {
			w.Harnesses = map[string]Harness{}
		}
		w.Harnesses[h.name.v] = r.buildHarness(h)
		r.checkSbxEnvSecrets(h, w.Secrets) // all of secrets: is read already, wherever it stands in the file
	}

	// steps
	if raw.stepsNode == nil {
		r.errf(raw.node, "steps: at least one step is required")
	} else if len(raw.steps) == 0 && deref(raw.stepsNode).Kind == yaml.SequenceNode {
		r.errf(raw.stepsNode, "steps: at least one step is required")
	}
	ids := map[string]*yaml.Node{}
	for i := range raw.steps {
		s := r.buildStep(w, &raw.steps[i], "step")
		if s.ID != "" {
			if prev, dup := ids[s.ID]; dup {
				r.errf(stepIDNode(&raw.steps[i]), "duplicate step id %q (first at line %d)", s.ID, prev.Line)
			} else {
				ids[s.ID] = stepIDNode(&raw.steps[i])
			}
		}
		if w.Type == TypeChain && len(s.Depends) == 0 && i > 0 {
			s.Depends = []string{w.Steps[i-1].ID}
		}
		w.Steps = append(w.Steps, s)
	}
	r.checkDepends(w, raw, ids)

	for _, h := range raw.handlerOn {
		key := h.key.v
		var slot **Step
		switch key {
		case "success":
			slot = &w.HandlerOn.Success
		case "failure":
			slot = &w.HandlerOn.Failure
		case "cancel":
			slot = &w.HandlerOn.Cancel
		case "exit":
			slot = &w.HandlerOn.Exit
		default:
			r.errf(h.key.n, "handler_on: unknown handler %q (success, failure, cancel, exit)", key)
			continue
		}
		if !h.step.id.set() && !h.step.name.set() {
			h.step.id = val[string]{v: "on_" + key, n: h.step.node}
		}
		s := r.buildStep(w, &h.step, "handler_on."+key)
		if len(h.step.depends) > 0 {
			r.errf(h.step.depends[0].n, "handler_on.%s: a handler cannot depend on steps", key)
		}
		if prev, dup := ids[s.ID]; dup && s.ID != "" {
			r.errf(stepIDNode(&h.step), "duplicate step id %q (first at line %d)", s.ID, prev.Line)
		} else if s.ID != "" {
			ids[s.ID] = stepIDNode(&h.step)
		}
		*slot = &s
	}

	if p := raw.report; p != nil {
		if p.comment.set() {
			w.Report.Comment = p.comment.v
			switch p.comment.v {
			case CommentSticky, CommentNew, CommentNone:
			default:
				if p.comment.n.ShortTag() == "!!str" {
					r.errf(p.comment.n, "report.comment %q must be sticky, new or none", p.comment.v)
				}
			}
		}
		w.Report.Body = p.body.v
		if p.status.set() {
			w.Report.Status = p.status.v
		}
	}
	return w
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
		t := Trigger{Event: Kind(rt.event.v), Command: rt.command.v, If: rt.ifExpr.v}
		known := false
		switch {
		case !rt.event.set():
			r.errf(rt.node, "on: event is required (%s)", kindList())
		case rt.event.n.ShortTag() != "!!str":
		default:
			for _, k := range Kinds {
				known = known || k == t.Event
			}
			if !known {
				r.errf(rt.event.n, "on: unknown event %q (%s)", rt.event.v, kindList())
			}
		}
		for _, a := range rt.actions {
			if known && !contains(Actions[t.Event], a.v) {
				r.errf(a.n, "on: unknown action %q for event %s (%s)", a.v, t.Event, strings.Join(Actions[t.Event], ", "))
			}
			t.Actions = append(t.Actions, a.v)
		}
		t.Branches = r.globs(rt.branches, "branches")
		if len(rt.branches) > 0 && known && t.Event == KindIssue {
			r.errf(rt.branches[0].n, "on: issue events have no branch; remove branches")
		}
		if rt.command.set() && rt.command.n.ShortTag() == "!!str" {
			switch c := rt.command.v; {
			case !strings.HasPrefix(c, "/") || len(c) < 2:
				r.errf(rt.command.n, "on: command %q must start with / and a word, like /deploy", c)
			case strings.ContainsAny(c, " \t\n"):
				r.errf(rt.command.n, "on: command %q must be one word; arguments come after it in the comment", c)
			}
			if known && t.Event != KindComment {
				r.errf(rt.command.n, "on: command is only for event: comment")
			}
		}
		for _, l := range rt.labels {
			t.Labels = append(t.Labels, l.v)
		}
		if len(rt.labels) > 0 && known && t.Event == KindPush {
			r.errf(rt.labels[0].n, "on: push events carry no labels; remove labels")
		}
		t.Repos = r.globs(rt.repos, "repos")
		if rt.ifExpr.set() && rt.ifExpr.n.ShortTag() == "!!str" {
			if strings.TrimSpace(t.If) == "" {
				r.errf(rt.ifExpr.n, "on: if must not be empty")
			} else if prog, err := compileIf(t.If); err != nil {
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

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// globs checks path.Match patterns.
func (r *reader) globs(raws []val[string], what string) []string {
	var out []string
	for _, g := range raws {
		if g.v == "" {
			r.errf(g.n, "on: %s entries must not be empty", what)
		} else if _, err := filepath.Match(g.v, ""); err != nil {
			r.errf(g.n, "on: %s pattern %q is malformed", what, g.v)
		}
		out = append(out, g.v)
	}
	return out
}

func (r *reader) buildAuthorize(raw *rawAuthorize, a *Authorize) {
	if raw == nil {
		return
	}
	if raw.assocSet {
		a.AuthorAssociation = []string{} // explicit empty list: any association
		for _, v := range raw.assoc {
			if !contains(AuthorAssociations, v.v) {
				r.errf(v.n, "authorize: unknown author_association %q (%s)", v.v, strings.Join(AuthorAssociations, ", "))
			}
			a.AuthorAssociation = append(a.AuthorAssociation, v.v)
		}
	}
	for _, u := range raw.users {
		if strings.TrimSpace(u.v) == "" {
			r.errf(u.n, "authorize: users entries must not be empty")
		}
		a.Users = append(a.Users, u.v)
	}
	a.AllowForks = raw.allowForks.v
}

func (r *reader) buildEnv(raws []rawEnv, what string) []EnvVar {
	var out []EnvVar
	for _, e := range raws {
		if e.name.n != nil && !envNameRE.MatchString(e.name.v) {
			r.errf(e.name.n, "%s: %q is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)", what, e.name.v)
		}
		out = append(out, EnvVar{Name: e.name.v, Value: e.value.v})
	}
	return out
}

var volumeRE = regexp.MustCompile(`^([^:]+):(/[^:]*)(?::(ro|rw))?$`)

func (r *reader) buildContainer(raw *rawContainer, what string) *Container {
	if raw == nil {
		return nil
	}
	c := &Container{
		Image:      raw.image.v,
		PullPolicy: PullMissing,
		WorkingDir: "/workspace",
		User:       raw.user.v,
		Network:    raw.network.v,
		Memory:     raw.memory.v,
		CPUs:       raw.cpus.v,
		PIDs:       raw.pids.v,
	}
	switch {
	case !raw.image.set():
		r.errf(raw.node, "%s: image is required", what)
	case strings.TrimSpace(raw.image.v) == "" && raw.image.n.ShortTag() == "!!str":
		r.errf(raw.image.n, "%s.image must not be empty", what)
	}
	if raw.pullPolicy.set() {
		c.PullPolicy = raw.pullPolicy.v
		switch c.PullPolicy {
		case PullAlways, PullMissing, PullNever:
		default:
			if raw.pullPolicy.n.ShortTag() == "!!str" {
				r.errf(raw.pullPolicy.n, "%s.pull_policy %q must be always, missing or never", what, c.PullPolicy)
			}
		}
	}
	if raw.workingDir.set() {
		c.WorkingDir = raw.workingDir.v
		if !strings.HasPrefix(c.WorkingDir, "/") && raw.workingDir.n.ShortTag() == "!!str" {
			r.errf(raw.workingDir.n, "%s.working_dir %q must be an absolute path", what, c.WorkingDir)
		}
	}
	for _, v := range raw.volumes {
		if !volumeRE.MatchString(v.v) {
			r.errf(v.n, "%s.volumes: %q must be host:container[:ro|rw] with an absolute container path", what, v.v)
		}
		c.Volumes = append(c.Volumes, v.v)
	}
	c.Env = r.buildEnv(raw.env, what+".env")
	if raw.memory.set() && raw.memory.v <= 0 && raw.memory.n.Kind == yaml.ScalarNode {
		r.errf(raw.memory.n, "%s.memory must be more than 0", what)
	}
	if raw.cpus.set() && c.CPUs <= 0 {
		r.errf(raw.cpus.n, "%s.cpus must be more than 0", what)
	}
	if raw.pids.set() && c.PIDs <= 0 {
		r.errf(raw.pids.n, "%s.pids must be more than 0", what)
	}
	return c
}

func (r *reader) buildHarness(raw rawHarness) Harness {
	what := "harnesses." + raw.name.v
	h := Harness{Binary: raw.binary.v, PromptMode: PromptArg, PromptFlag: raw.promptFlag.v}
	if !stepIDRE.MatchString(raw.name.v) {
		r.errf(raw.name.n, "harnesses: name %q must match [A-Za-z0-9_-]+", raw.name.v)
	}
	switch {
	case !raw.binary.set():
		r.errf(raw.node, "%s: binary is required", what)
	case strings.TrimSpace(raw.binary.v) == "" && raw.binary.n.ShortTag() == "!!str":
		r.errf(raw.binary.n, "%s.binary must not be empty", what)
	}
	for _, a := range raw.prefixArgs {
		h.PrefixArgs = append(h.PrefixArgs, a.v)
	}
	if raw.promptMode.set() {
		h.PromptMode = raw.promptMode.v
		switch h.PromptMode {
		case PromptArg, PromptStdin:
		case PromptFlag:
			if strings.TrimSpace(h.PromptFlag) == "" {
				r.errf(raw.promptMode.n, "%s: prompt_mode flag needs prompt_flag (for example -p)", what)
			}
		default:
			if raw.promptMode.n.ShortTag() == "!!str" {
				r.errf(raw.promptMode.n, "%s.prompt_mode %q must be arg, flag or stdin", what, h.PromptMode)
			}
		}
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
	args := raw.prefixArgs
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
		if contains(secrets, name) {
			r.errf(at.n, "harnesses.%s.prefix_args: %s would pass the secret %s into the sandbox, where the agent can read it; "+
				"store it with sbx secret set instead (e.g. echo \"$%s\" | sbx secret set %s)", raw.name.v, written, name, name, sbxService(name))
		}
	}
}

// sbxServices maps well-known key variables to their `sbx secret set`
// service, for the hint in checkSbxEnvSecrets.
var sbxServices = map[string]string{
	"ANTHROPIC_API_KEY":    "anthropic",
	"OPENAI_API_KEY":       "openai",
	"GEMINI_API_KEY":       "google",
	"GOOGLE_API_KEY":       "google",
	"GITHUB_TOKEN":         "github",
	"GH_TOKEN":             "github",
	"COPILOT_GITHUB_TOKEN": "copilot",
}

// sbxService names the sbx secret service for a variable, or a placeholder.
func sbxService(name string) string {
	if s, ok := sbxServices[name]; ok {
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
		Output:     raw.output.v,
		WorkingDir: raw.workingDir.v,
		ContinueOn: raw.continueOn.v,
		Timeout:    raw.timeout.v,
	}
	// id: required, or taken from a Dagu-style name
	switch {
	case raw.id.set():
		if raw.id.n.ShortTag() == "!!str" && !stepIDRE.MatchString(s.ID) {
			r.errf(raw.id.n, "%s: id %q must match [A-Za-z0-9_-]+", what, s.ID)
		}
	case raw.name.set() && stepIDRE.MatchString(s.Name):
		s.ID = s.Name
	case raw.name.set():
		r.errf(raw.name.n, "%s: id is required (name %q cannot serve as one: [A-Za-z0-9_-]+)", what, s.Name)
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
	for _, d := range raw.depends {
		s.Depends = append(s.Depends, d.v)
	}
	if raw.output.set() && raw.output.n.ShortTag() == "!!str" && !envNameRE.MatchString(s.Output) {
		r.errf(raw.output.n, "%s: output %q is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)", label, s.Output)
	}
	s.Env = r.buildEnv(raw.env, label+": env")
	s.Container = r.buildContainer(raw.container, "container")

	switch {
	case raw.run.set() && raw.action.set():
		r.errf(raw.action.n, "%s: run and action are mutually exclusive; use one", label)
	case !raw.run.set() && !raw.action.set():
		r.errf(raw.node, "%s: needs run or action", label)
	case raw.run.set() && strings.TrimSpace(s.Run) == "" && raw.run.n.ShortTag() == "!!str":
		r.errf(raw.run.n, "%s: run must not be empty", label)
	case raw.action.set() && s.Action != ActionHarnessRun && raw.action.n.ShortTag() == "!!str":
		r.errf(raw.action.n, "%s: unknown action %q (harness.run)", label, s.Action)
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
		rp := &RetryPolicy{Limit: p.limit.v, Interval: p.interval.v, Backoff: p.backoff.v, MaxInterval: p.maxInterval.v}
		if p.limit.set() && (rp.Limit < 0 || rp.Limit > 100) {
			r.errf(p.limit.n, "%s: retry_policy.limit %d must be between 0 and 100", label, rp.Limit)
		}
		if p.backoff.set() && rp.Backoff != 0 && rp.Backoff < 1 {
			r.errf(p.backoff.n, "%s: retry_policy.backoff %v must be at least 1 (or 0 for a constant interval)", label, rp.Backoff)
		}
		if p.maxInterval.set() && rp.MaxInterval > 0 && rp.MaxInterval < rp.Interval {
			r.errf(p.maxInterval.n, "%s: retry_policy.max_interval is shorter than interval", label)
		}
		for _, c := range p.exitCodes {
			if c.v < 0 || c.v > 255 {
				r.errf(c.n, "%s: retry_policy.exit_codes: %d is not an exit code (0..255)", label, c.v)
			}
			rp.ExitCodes = append(rp.ExitCodes, c.v)
		}
		s.RetryPolicy = rp
	}
	return s
}

// buildHarnessRun validates a `with:` (or a fallback entry) against the
// known providers. parentPrompt is inherited by fallbacks without a prompt.
func (r *reader) buildHarnessRun(w *Workflow, raw *rawWith, label, parentPrompt string, stepContainer bool) HarnessRun {
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
		if !flagRE.MatchString(f.name.v) {
			r.errf(f.name.n, "%s: with key %q is not a valid flag name", label, f.name.v)
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
		for _, d := range raw.steps[i].depends {
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
				if k < len(raw.steps[i].depends) {
					at = raw.steps[i].depends[k].n
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
