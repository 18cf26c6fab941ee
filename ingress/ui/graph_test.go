package ui

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// -update rewrites the golden files in testdata/ (queuetest.Golden reads it).
var _ = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

// at is t0 plus d, as a step's timestamp.
func at(d time.Duration) *time.Time {
	t := t0.Add(d)
	return &t
}

// graphUI renders with a clock stopped at t0+10s.
func graphUI(t *testing.T) *ui {
	t.Helper()
	u := &ui{cfg: Config{Now: func() time.Time { return t0.Add(10 * time.Second) }}}
	pages, err := parsePages(u.duration)
	if err != nil {
		t.Fatal(err)
	}
	u.pages = pages
	return u
}

func parseWorkflow(t *testing.T, yaml string) *workflows.Workflow {
	t.Helper()
	wf, err := workflows.Parse("w.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("parsing:\n%s\n%v", yaml, err)
	}
	return wf
}

const diamondWorkflow = `name: diamond
steps:
  - id: checkout
    run: "true"
  - id: lint
    depends: [checkout]
    run: "true"
  - id: test
    depends: [checkout]
    run: "true"
  - id: publish
    depends: [lint, test]
    run: "true"
`

const chainWorkflow = `name: chain
type: chain
steps:
  - id: fetch
    run: "true"
  - id: build
    run: "true"
  - id: deploy-to-the-staging-cluster
    run: "true"
`

const handlersWorkflow = `name: handled
steps:
  - id: lint
    run: "true"
  - id: test
    depends: [lint]
    run: "false"
handler_on:
  success:
    run: echo ok
  failure:
    id: page-someone
    run: echo failed
  exit:
    run: echo bye
`

// graphCases are the golden graphs: each a workflow and a run of it.
var graphCases = []struct {
	name string
	wf   string
	rec  stores.RunRecord
}{
	{"diamond", diamondWorkflow, stores.RunRecord{Status: workflows.StatusRunning, Steps: []workflows.StepState{
		{ID: "checkout", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(1500 * time.Millisecond)},
		{ID: "lint", Status: workflows.StatusSucceeded, StartedAt: at(2 * time.Second), FinishedAt: at(5 * time.Second)},
		{ID: "test", Status: workflows.StatusRunning, StartedAt: at(2 * time.Second)},
		{ID: "publish", Status: workflows.StatusPending},
	}}},
	{"chain", chainWorkflow, stores.RunRecord{Status: workflows.StatusPartiallySucceeded, Steps: []workflows.StepState{
		{ID: "fetch", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(time.Second)},
		{ID: "build", Status: workflows.StatusFailed, StartedAt: at(time.Second), FinishedAt: at(4 * time.Second)},
		{ID: "deploy-to-the-staging-cluster", Status: workflows.StatusSucceeded, StartedAt: at(4 * time.Second), FinishedAt: at(9 * time.Second)},
	}}},
	{"handlers", handlersWorkflow, stores.RunRecord{Status: workflows.StatusFailed, Steps: []workflows.StepState{
		{ID: "lint", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(time.Second)},
		{ID: "test", Status: workflows.StatusFailed, StartedAt: at(time.Second), FinishedAt: at(3 * time.Second)},
		{ID: "page-someone", Status: workflows.StatusSucceeded, StartedAt: at(3 * time.Second), FinishedAt: at(3200 * time.Millisecond)},
		{ID: "on_exit", Status: workflows.StatusSucceeded, StartedAt: at(3200 * time.Millisecond), FinishedAt: at(3300 * time.Millisecond)},
	}}},
}

func renderGraph(t *testing.T, u *ui, g *runGraph) string {
	t.Helper()
	var b bytes.Buffer
	if err := u.pages["run"].ExecuteTemplate(&b, "graph", g); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGraphGolden: the SVG of a diamond DAG, a chain and a workflow with
// handlers (go test -run TestGraphGolden -update rewrites them).
func TestGraphGolden(t *testing.T) {
	u := graphUI(t)
	for _, tc := range graphCases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec
			got := renderGraph(t, u, buildGraph(&rec, parseWorkflow(t, tc.wf), u.duration))
			queuetest.Golden(t, "graph-"+tc.name+".svg.golden", []byte(got))
		})
	}
}

// reNode is one node's group in the SVG: its step, status and texts.
var reNode = regexp.MustCompile(`(?s)<g class="node ([a-z]+)" data-step="([^"]+)" data-status="([^"]+)"[^>]*>.*?<text class="state"[^>]*>([^<]*)</text>\s*<text class="dur"[^>]*>([^<]*)</text>`)

// TestGraphNodeShowsStatusAndDuration: each node carries its step's
// status (as the presentation table labels and tones it) and duration;
// a running step's duration runs to now; a handler whose condition did
// not hold shows skipped once the run ended; edges follow depends, and a
// chain's run from each step to the next.
func TestGraphNodeShowsStatusAndDuration(t *testing.T) {
	u := graphUI(t)
	type shown struct{ tone, status, label, dur string }
	want := map[string]map[string]shown{
		"diamond": {
			"checkout": {"ok", "succeeded", "succeeded", "1.5s"},
			"test":     {"live", "running", "running", "8s"},
			"publish":  {"wait", "pending", "pending", ""},
		},
		"chain": {
			"build": {"bad", "failed", "failed", "3s"},
		},
		"handlers": {
			"page-someone": {"ok", "succeeded", "succeeded", "200ms"},
			"on_success":   {"off", "skipped", "skipped", "on success"},
		},
	}
	edges := map[string][]string{
		"diamond":  {"checkout>lint", "checkout>test", "lint>publish", "test>publish"},
		"chain":    {"fetch>build", "build>deploy-to-the-staging-cluster"},
		"handlers": {"lint>test"},
	}
	for _, tc := range graphCases {
		rec := tc.rec
		svg := renderGraph(t, u, buildGraph(&rec, parseWorkflow(t, tc.wf), u.duration))
		got := map[string]shown{}
		for _, m := range reNode.FindAllStringSubmatch(svg, -1) {
			got[m[2]] = shown{m[1], m[3], m[4], m[5]}
		}
		if len(got) != len(rec.Steps)+map[string]int{"handlers": 1}[tc.name] {
			t.Errorf("%s: %d nodes: %v", tc.name, len(got), got)
		}
		for id, w := range want[tc.name] {
			if got[id] != w {
				t.Errorf("%s: node %s shows %+v, want %+v", tc.name, id, got[id], w)
			}
		}
		var es []string
		for _, m := range regexp.MustCompile(`data-from="([^"]+)" data-to="([^"]+)"`).FindAllStringSubmatch(svg, -1) {
			es = append(es, m[1]+">"+m[2])
		}
		if fmt.Sprint(es) != fmt.Sprint(edges[tc.name]) {
			t.Errorf("%s: edges %v, want %v", tc.name, es, edges[tc.name])
		}
		if strings.Contains(svg, "style=") {
			t.Errorf("%s: an inline style (the CSP refuses it):\n%s", tc.name, svg)
		}
	}
	// The handlers sit in their box, below every step.
	rec := graphCases[2].rec
	g := buildGraph(&rec, parseWorkflow(t, handlersWorkflow), u.duration)
	if g.Box == nil || len(g.Handlers) != 3 {
		t.Fatalf("handlers box %+v, handlers %+v", g.Box, g.Handlers)
	}
	for _, h := range g.Handlers {
		if !inside(h, *g.Box) {
			t.Errorf("handler %s at %d,%d is outside its box %+v", h.ID, h.X, h.Y, *g.Box)
		}
	}
	for _, n := range g.Nodes {
		if n.Y+n.H >= g.Box.Y {
			t.Errorf("step %s reaches into the handlers box", n.ID)
		}
	}
}

func inside(n graphNode, r rect) bool {
	return n.X >= r.X && n.Y >= r.Y && n.X+n.W <= r.X+r.W && n.Y+n.H <= r.Y+r.H
}

// TestGraphLayout: on DAGs of many shapes no two nodes overlap, every
// node fits the viewBox, every edge goes down from the bottom of a step
// to the top of one that depends on it, and layers follow the longest
// path (a step sits below all it depends on).
func TestGraphLayout(t *testing.T) {
	shapes := map[string][]graphStep{
		"one":     {{ID: "a"}},
		"fan-out": {{ID: "a"}, {ID: "b", Depends: []string{"a"}}, {ID: "c", Depends: []string{"a"}}, {ID: "d", Depends: []string{"a"}}, {ID: "e", Depends: []string{"a"}}},
		"skip":    {{ID: "a"}, {ID: "b", Depends: []string{"a"}}, {ID: "c", Depends: []string{"b"}}, {ID: "d", Depends: []string{"a", "c"}}},
		"forward": {{ID: "late", Depends: []string{"early"}}, {ID: "early"}},
		"roots":   {{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "x", Depends: []string{"c", "a"}}},
		"unknown": {{ID: "a", Depends: []string{"gone"}}},
		"cycle":   {{ID: "a", Depends: []string{"b"}}, {ID: "b", Depends: []string{"a"}}},
	}
	// And pseudo-random DAGs: step i depends on some earlier steps.
	for n := 2; n < 30; n += 3 {
		var s []graphStep
		for i := range n {
			st := graphStep{ID: fmt.Sprintf("s%d", i)}
			for j := range i {
				if (i*7+j*13)%5 == 0 {
					st.Depends = append(st.Depends, fmt.Sprintf("s%d", j))
				}
			}
			s = append(s, st)
		}
		shapes[fmt.Sprintf("random-%d", n)] = s
	}
	for name, steps := range shapes {
		g := &runGraph{}
		g.place(steps, func(s graphStep) graphNode { return graphNode{ID: s.ID, W: nodeW, H: nodeH} })
		g.placeHandlers([]graphStep{{ID: "h1", Handler: "success"}, {ID: "h2", Handler: "failure"}, {ID: "h3", Handler: "exit"}},
			func(s graphStep) graphNode { return graphNode{ID: s.ID, W: nodeW, H: nodeH} })
		all := append(append([]graphNode{}, g.Nodes...), g.Handlers...)
		for i, a := range all {
			if a.X < 0 || a.Y < 0 || a.X+a.W > g.W || a.Y+a.H > g.H {
				t.Errorf("%s: %s at %d,%d outside the %dx%d viewBox", name, a.ID, a.X, a.Y, g.W, g.H)
			}
			for _, b := range all[i+1:] {
				if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
					t.Errorf("%s: %s (%d,%d) and %s (%d,%d) overlap", name, a.ID, a.X, a.Y, b.ID, b.X, b.Y)
				}
			}
		}
		pos := map[string]graphNode{}
		for _, n := range g.Nodes {
			pos[n.ID] = n
		}
		for _, e := range g.Edges {
			from, to := pos[e.From], pos[e.To]
			if to.Y <= from.Y+from.H {
				t.Errorf("%s: edge %s→%s does not go down (%d → %d)", name, e.From, e.To, from.Y+from.H, to.Y)
			}
			var x1, y1, x2, y2 int
			if _, err := fmt.Sscanf(e.Path, "M%d %d", &x1, &y1); err != nil || x1 != from.X+nodeW/2 || y1 != from.Y+nodeH {
				t.Errorf("%s: edge %s→%s starts at %q, not the bottom of %s", name, e.From, e.To, e.Path, e.From)
			}
			f := strings.Fields(e.Path)
			fmt.Sscanf(f[len(f)-2]+" "+f[len(f)-1], "%d %d", &x2, &y2)
			if strings.Contains(e.Path, "V") {
				x2, y2 = x1, 0
				fmt.Sscanf(f[len(f)-1], "V%d", &y2)
			}
			if x2 != to.X+nodeW/2 || y2 != to.Y {
				t.Errorf("%s: edge %s→%s ends at %d,%d, not the top of %s", name, e.From, e.To, x2, y2, e.To)
			}
		}
	}
}

// TestGraphBarycenter: a layer is ordered by where its steps' dependencies
// sit, so that a file listing children in the opposite order of their
// parents draws no crossing.
func TestGraphBarycenter(t *testing.T) {
	steps := []graphStep{{ID: "a"}, {ID: "b"}, {ID: "under-b", Depends: []string{"b"}}, {ID: "under-a", Depends: []string{"a"}},
		{ID: "last", Depends: []string{"under-b"}}, {ID: "first", Depends: []string{"under-a"}}}
	pos, _ := layers(steps)
	order := func(i int) int { return pos[i].Order }
	if order(3) != 0 || order(2) != 1 || order(5) != 0 || order(4) != 1 {
		t.Errorf("layers %v: want under-a before under-b and first before last", pos)
	}
	if pos[0].Layer != 0 || pos[2].Layer != 1 || pos[4].Layer != 2 {
		t.Errorf("layers %v", pos)
	}
}

// TestGraphShapeless: a run of a workflow that changed since (another
// digest) or is not loaded is drawn from its record, without edges, and
// says so.
func TestGraphShapeless(t *testing.T) {
	u := graphUI(t)
	wf := parseWorkflow(t, diamondWorkflow)
	wf.Digest = "sha256:now"
	rec := graphCases[0].rec
	rec.WorkflowDigest = "sha256:then"
	for name, w := range map[string]*workflows.Workflow{"changed": wf, "gone": nil} {
		g := buildGraph(&rec, w, u.duration)
		if !g.Shapeless || len(g.Edges) != 0 || len(g.Nodes) != 4 {
			t.Errorf("%s: %+v", name, g)
		}
		if svg := renderGraph(t, u, g); !strings.Contains(svg, "drawn without their dependencies") {
			t.Errorf("%s: no caption:\n%s", name, svg)
		}
	}
	rec.WorkflowDigest = "sha256:now"
	if g := buildGraph(&rec, wf, u.duration); g.Shapeless || len(g.Edges) != 4 {
		t.Errorf("same digest: %+v", g)
	}
	if g := buildGraph(&stores.RunRecord{Status: workflows.StatusQueued}, nil, u.duration); g != nil {
		t.Errorf("no steps and no workflow: %+v", g)
	}
}

type workflowList []*workflows.Workflow

func (l workflowList) Workflows() []*workflows.Workflow { return l }

// TestRunPageGraph: the run page and the summary block its script
// refreshes while the run is live carry the graph in the shape of the
// loaded workflow, with each step's current state: a queued run's steps
// pending, then the states the record gains.
func TestRunPageGraph(t *testing.T) {
	wf := parseWorkflow(t, diamondWorkflow)
	e := newEnv(t, envOpts{workflows: workflowList{wf}})
	c := e.client()
	e.login(c)
	rec := e.putRecord(&stores.RunRecord{Workflow: "diamond", Status: workflows.StatusQueued})
	page := e.do(c, http.MethodGet, "/runs/"+rec.ID, nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, `<figure class="graph" id="graph">`) ||
		!strings.Contains(page.body, `data-step="publish" data-status="pending"`) || !strings.Contains(page.body, `data-from="lint" data-to="publish"`) {
		t.Fatalf("run page: %d\n%s", page.code, page.body)
	}
	now := time.Now().UTC()
	cur, rev, err := e.q.Runs().Get(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	cur.Status = workflows.StatusRunning
	cur.Steps = []workflows.StepState{{ID: "checkout", Status: workflows.StatusFailed, StartedAt: &now, FinishedAt: &now}}
	if _, err := e.q.Runs().Update(context.Background(), cur, rev); err != nil {
		t.Fatal(err)
	}
	sum := e.do(c, http.MethodGet, "/runs/"+rec.ID+"/summary", nil)
	if sum.code != http.StatusOK || !strings.Contains(sum.body, `<g class="node bad" data-step="checkout" data-status="failed">`) {
		t.Errorf("summary after checkout failed: %d\n%s", sum.code, sum.body)
	}
}
