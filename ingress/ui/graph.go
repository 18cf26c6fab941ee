package ui

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// WorkflowSource is where the run page finds the workflow a run ran, for
// the shape of its graph (workflows.WorkflowSet).
type WorkflowSource interface {
	Workflows() []*workflows.Workflow
}

// Sizes of the run graph, in SVG user units (CSS pixels at scale 1): two
// columns fit a 390 px phone's page (8+160+16+160+8 = 352).
const (
	nodeW, nodeH = 160, 58 // a node: id, status, duration
	colGap       = 16      // between nodes of a layer
	rowGap       = 34      // between layers: the edges
	graphMargin  = 8
	boxTitle     = 22 // the handlers box's label
	boxGap       = 20 // between the DAG and the handlers box
	idChars      = 17 // of a step id in a node (13 px monospace); longer ones end in "…"
)

// runGraph is a run's steps drawn as a DAG, its handlers in a box apart.
type runGraph struct {
	Nodes    []graphNode
	Edges    []graphEdge
	Handlers []graphNode
	Box      *rect // around the handlers; nil without any
	W, H     int   // the viewBox
	// Shapeless: the workflow is not loaded or changed since the run, so
	// the nodes are the record's steps without their dependencies.
	Shapeless bool
}

type rect struct{ X, Y, W, H int }

// graphNode is a step (or handler) placed in the graph.
type graphNode struct {
	ID, Label  string // Label: ID cut to idChars
	Handler    string // handler_on key; "" for a step
	Status     workflows.Status
	Present    workflows.Presentation
	Duration   string
	X, Y, W, H int
}

// graphEdge runs from the bottom of a step to the top of one that depends
// on it; Path is the SVG path.
type graphEdge struct {
	From, To string
	Path     string
}

// graphStep is one step to draw: its id and the steps it waits for.
type graphStep struct {
	ID      string
	Depends []string
	Handler string
}

// slot is a node's place: its layer (row) and its order in the layer.
type slot struct{ Layer, Order int }

// layers places steps by the longest path from a root (a step without
// depends): layer 0 holds the roots, a step sits one layer below its
// deepest dependency. Within a layer, steps keep their file order, then
// one top-down barycenter pass sorts each layer by the mean centre of its
// steps' dependencies, which undoes most crossings of a layered DAG.
// Unknown depends are ignored; a cycle (the parser refuses them) is cut.
func layers(steps []graphStep) ([]slot, [][]int) {
	index := make(map[string]int, len(steps))
	for i, s := range steps {
		index[s.ID] = i
	}
	layer := make([]int, len(steps))
	state := make([]byte, len(steps)) // 0 new, 1 visiting, 2 done
	var depth func(i int) int
	depth = func(i int) int {
		if state[i] != 0 {
			return layer[i] // done, or a cycle cut at 0
		}
		state[i] = 1
		for _, d := range steps[i].Depends {
			if j, ok := index[d]; ok {
				layer[i] = max(layer[i], depth(j)+1)
			}
		}
		state[i] = 2
		return layer[i]
	}
	var rows [][]int
	for i := range steps {
		l := depth(i)
		for len(rows) <= l {
			rows = append(rows, nil)
		}
		rows[l] = append(rows[l], i)
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	// centre is a step's horizontal centre in columns, its layer centred.
	pos := make([]slot, len(steps))
	centre := func(i int) float64 {
		return float64(width-len(rows[pos[i].Layer]))/2 + float64(pos[i].Order)
	}
	for l, r := range rows {
		if l > 0 {
			bary := make(map[int]float64, len(r))
			for _, i := range r {
				sum, n := 0.0, 0
				for _, d := range steps[i].Depends {
					if j, ok := index[d]; ok {
						sum, n = sum+centre(j), n+1
					}
				}
				bary[i] = sum / float64(max(n, 1))
			}
			slices.SortStableFunc(r, func(a, b int) int { return cmp.Compare(bary[a], bary[b]) })
		}
		for o, i := range r {
			pos[i] = slot{l, o}
		}
	}
	return pos, rows
}

// buildGraph draws rec's steps in the shape of wf when wf is the workflow
// the run ran (its digest matches, or either is unknown); otherwise, or
// without wf, the record's steps without edges. A step the record has no
// state for is pending while the run is live and skipped once it ended:
// it never ran (a handler whose condition did not hold, a run cancelled
// before it started).
func buildGraph(rec *stores.RunRecord, wf *workflows.Workflow, duration func(start, end *time.Time) string) *runGraph {
	var steps, handlers []graphStep
	g := &runGraph{}
	if wf != nil && (wf.Digest == "" || rec.WorkflowDigest == "" || wf.Digest == rec.WorkflowDigest) {
		for _, s := range wf.Steps {
			steps = append(steps, graphStep{ID: s.ID, Depends: s.Depends})
		}
		for _, h := range wf.HandlerOn.Set() {
			handlers = append(handlers, graphStep{ID: h.Step.ID, Handler: h.Key})
		}
	} else {
		g.Shapeless = true
		for _, s := range rec.Steps {
			steps = append(steps, graphStep{ID: s.ID})
		}
	}
	if len(steps) == 0 {
		return nil
	}
	states := make(map[string]workflows.StepState, len(rec.Steps))
	for _, s := range rec.Steps {
		states[s.ID] = s
	}
	node := func(s graphStep) graphNode {
		st, ok := states[s.ID]
		if !ok {
			st.Status = workflows.StatusPending
			if rec.Status.Terminal() {
				st.Status = workflows.StatusSkipped
			}
		}
		label := s.ID
		if r := []rune(label); len(r) > idChars {
			label = string(r[:idChars-1]) + "…"
		}
		return graphNode{ID: s.ID, Label: label, Handler: s.Handler, Status: st.Status, Present: st.Status.Present(),
			Duration: duration(st.StartedAt, st.FinishedAt), W: nodeW, H: nodeH}
	}
	g.place(steps, node)
	g.placeHandlers(handlers, node)
	return g
}

// place lays the steps out in layers and draws their edges.
func (g *runGraph) place(steps []graphStep, node func(graphStep) graphNode) {
	pos, rows := layers(steps)
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	g.W = 2*graphMargin + cols*nodeW + (cols-1)*colGap
	g.H = 2*graphMargin + len(rows)*nodeH + (len(rows)-1)*rowGap
	g.Nodes = make([]graphNode, len(steps))
	for i, s := range steps {
		n := node(s)
		p := pos[i]
		n.X = graphMargin + (cols-len(rows[p.Layer]))*(nodeW+colGap)/2 + p.Order*(nodeW+colGap)
		n.Y = graphMargin + p.Layer*(nodeH+rowGap)
		g.Nodes[i] = n
	}
	at := make(map[string]*graphNode, len(steps))
	for i := range g.Nodes {
		at[g.Nodes[i].ID] = &g.Nodes[i]
	}
	for i, s := range steps {
		for _, d := range s.Depends {
			from, ok := at[d]
			if !ok {
				continue
			}
			to := &g.Nodes[i]
			if to.Y <= from.Y {
				continue // the edge layers cut from a cycle
			}
			g.Edges = append(g.Edges, graphEdge{From: d, To: s.ID, Path: edgePath(from.X+nodeW/2, from.Y+nodeH, to.X+nodeW/2, to.Y)})
		}
	}
}

// placeHandlers puts the handlers in rows of as many as the DAG's widest
// layer (at least two) inside a labelled box below it.
func (g *runGraph) placeHandlers(handlers []graphStep, node func(graphStep) graphNode) {
	if len(handlers) == 0 {
		return
	}
	perRow := max((g.W-2*graphMargin+colGap)/(nodeW+colGap), 2)
	hrows := (len(handlers) + perRow - 1) / perRow
	inRow := min(len(handlers), perRow)
	g.W = max(g.W, 2*graphMargin+inRow*nodeW+(inRow-1)*colGap)
	top := g.H - graphMargin + boxGap
	g.Box = &rect{X: graphMargin / 4, Y: top, W: g.W - graphMargin/2, H: boxTitle + hrows*nodeH + (hrows-1)*colGap + graphMargin}
	for i, h := range handlers {
		n := node(h)
		n.X = graphMargin + (i%perRow)*(nodeW+colGap)
		n.Y = top + boxTitle + (i/perRow)*(nodeH+colGap)
		g.Handlers = append(g.Handlers, n)
	}
	g.H = g.Box.Y + g.Box.H + graphMargin
}

// edgePath is a line from (x1,y1) down to (x2,y2): straight when they are
// one above the other, else an S curve.
func edgePath(x1, y1, x2, y2 int) string {
	if x1 == x2 {
		return fmt.Sprintf("M%d %d V%d", x1, y1, y2)
	}
	ym := (y1 + y2) / 2
	return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1, ym, x2, ym, x2, y2)
}
