// Explanations: which call paths carry a function's change (Explanation, PathChange), built as a tree of paths per row.

package diff

import (
	"math"
	"sort"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// Explanation splits the change of one regressed or improved function
// over the call paths it comes through: its callers when self time is
// compared (which callers now spend more time in it), its callees when
// total time is (which part of the work below it grew).
//
// Paths are grouped so that the explanation stays short: the call tree is
// cut where it branches, and the branch carrying the largest change is
// split further while at most four paths result; what is left over is
// summed in one entry. Each path is judged as if it were a function of its
// own, from its per-run values taken exactly as the function's are, with
// the same test (see Compare) and the Benjamini–Hochberg adjustment over
// the function's paths; a path is changed when its adjusted p-value is
// below Alpha and it changed by at least the minimum relative change.
//
// A path's Delta is taken from the means over runs (the report's values
// are medians), so that the paths' deltas add up to the function's.
type Explanation struct {
	// By is "callers" (self time) or "callees" (total time).
	By string `json:"by"`
	// Delta is the function's change measured as the sum of its paths':
	// head - Scale*base of the means over runs.
	Delta float64 `json:"delta"`
	// Summary says it in one sentence: "+21.0 of the +23.0 points come
	// through Render → writeRow → parseLine; the path Load → parseLine is
	// unchanged".
	Summary string `json:"summary"`
	// Paths, largest change first; an entry with Others > 0 comes last.
	Paths []PathChange `json:"paths"`
}

// PathChange is the part of a function's change that comes through one
// call path.
type PathChange struct {
	// Path names the functions of the path. By callers: outermost caller
	// first, ending with the function. By callees: the function first,
	// then its callees down to the path's end. Empty when Others > 0.
	Path []string `json:"path"`
	// End says the path is the whole stack on its open side: no caller
	// above Path[0] (callers), or the last function of Path is the leaf,
	// its own self time (callees).
	End bool `json:"end,omitempty"`
	// Others is the number of paths summed in this entry, which then has
	// no Path.
	Others int `json:"others,omitempty"`
	// Base and Head are the path's metric as Row.Base and Row.Head give a
	// function's (the fitted values; medians over runs for a path absent
	// from some runs).
	Base float64 `json:"base"`
	Head float64 `json:"head"`
	// BaseMean and HeadMean are the path's metric over each side's runs
	// taken as the function's shown value is (Report.shownValues): in
	// Share mode the path's real share of the side's time, which the
	// reports show beside the function's share.
	BaseMean float64 `json:"base_mean"`
	HeadMean float64 `json:"head_mean"`
	// Relative is the path's change computed as Row.Relative is (0 when
	// the path is absent from the base). Delta is that change in the
	// base's units (Base*Relative; a new path's head mean over Row.Scale),
	// so that a path shown unchanged takes no part of the function's
	// change; the paths' deltas add up to Explanation.Delta.
	Delta    float64 `json:"delta"`
	Relative float64 `json:"relative"`
	// Share is the part of the function's change that comes through the
	// path: Delta / Explanation.Delta (0 when that is 0).
	Share float64 `json:"share"`
	// P, Q and Test as in Row; Q is adjusted over the function's paths.
	P       float64 `json:"p"`
	Q       float64 `json:"q"`
	Test    string  `json:"test"`
	Verdict Verdict `json:"verdict"` // regressed, improved or unchanged
}

// maxPaths bounds the paths an explanation lists, the summed rest included.
const maxPaths = 4

// pnode is a node of one function's caller (or callee) tree: the path from
// the function to it. Per-run arrays hold base runs, then head runs.
type pnode struct {
	name     string
	parent   *pnode
	children map[int32]*pnode // by matching key id
	val      []float64        // metric through this path, per run
	term     []float64        // of which the stack ends here
	termN    []int64          // samples of the stacks that end here
}

func newPnode(name string, parent *pnode, runs int) *pnode {
	return &pnode{name: name, parent: parent, val: make([]float64, runs),
		term: make([]float64, runs), termN: make([]int64, runs)}
}

func (p *pnode) child(key int32, name string) *pnode {
	c := p.children[key]
	if c == nil {
		if p.children == nil {
			p.children = map[int32]*pnode{}
		}
		c = newPnode(name, p, len(p.val))
		p.children[key] = c
	}
	return c
}

func (p *pnode) hasTerm() bool {
	for _, n := range p.termN {
		if n != 0 {
			return true
		}
	}
	for _, v := range p.term {
		if v != 0 {
			return true
		}
	}
	return false
}

// sortedChildren returns the children in name order.
func (p *pnode) sortedChildren() []*pnode {
	out := make([]*pnode, 0, len(p.children))
	for _, c := range p.children {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// explain is the last stage. In: the decided rows, the function columns,
// the runs' stacks, the noise model. Out: Row.Explain of every regressed
// and improved row, and the data the HTML report's flame graph is drawn
// from (Report.flame), both plain data: the report keeps no run, index or
// engine.
func explain(c *comparison) {
	stacks := c.readStacks()
	pj := newPathJudge(c)
	c.explainRows(&pj, stacks)
	c.rep.flame = c.flameData(&pj, stacks)
}

// explainRows fills Row.Explain of every regressed and improved row from
// the runs' stacks.
func (c *comparison) explainRows(pj *pathJudge, stacks []runStacks) {
	r, s := c.rep, c.eng
	roots := map[int32]*pnode{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Verdict == Regressed || row.Verdict == Improved {
			roots[c.fns[row.idx].id] = newPnode(row.Name, nil, len(c.runs))
		}
	}
	if len(roots) == 0 {
		return
	}
	var seen map[int32]int
	if s.Metric == Total {
		seen = map[int32]int{}
	}
	for col, run := range c.runs {
		rs := &stacks[col]
		for _, st := range rs.stacks {
			v := float64(st.Value) / run.unit
			fr := st.Frames
			if s.Metric == Self {
				root := roots[rs.keys[fr[0]]]
				if root == nil {
					continue
				}
				// Callers: up the stack from the leaf.
				node := root
				node.add(col, v)
				for _, f := range fr[1:] {
					node = node.child(rs.keys[f], rs.table.Functions[f].Name)
					node.add(col, v)
				}
				node.term[col] += v
				node.termN[col] += st.Samples
				continue
			}
			// Callees: down the stack from the function's outermost
			// frame, once per sample as total time counts it.
			clear(seen)
			for j := len(fr) - 1; j >= 0; j-- {
				k := rs.keys[fr[j]]
				if _, ok := roots[k]; ok {
					if _, dup := seen[k]; !dup {
						seen[k] = j
					}
				}
			}
			for k, j := range seen {
				node := roots[k]
				node.add(col, v)
				for x := j - 1; x >= 0; x-- {
					node = node.child(rs.keys[fr[x]], rs.table.Functions[fr[x]].Name)
					node.add(col, v)
				}
				node.term[col] += v
				node.termN[col] += st.Samples
			}
		}
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		if root := roots[c.fns[row.idx].id]; root != nil {
			row.Explain = c.explainRow(pj, row, root)
		}
	}
}

func (p *pnode) add(col int, v float64) { p.val[col] += v }

// group is one entry of an explanation: a path of the tree (its subtree,
// or only the stacks that end at it) or the sum of several.
type group struct {
	node   *pnode
	end    bool // only the stacks ending at node
	others int
	val    []float64
	delta  float64
}

// explainRow groups the paths of one function's tree and judges each.
func (c *comparison) explainRow(pj *pathJudge, row *Row, root *pnode) *Explanation {
	r, s := c.rep, c.eng
	nb := pj.nb
	n := c.normOf(pj, row.idx)
	scale := n.scale
	mk := func(node *pnode, end bool) *group {
		g := &group{node: node, end: end, val: node.val}
		if end {
			g.val = node.term
		}
		g.delta = mean(g.val[nb:]) - scale*mean(g.val[:nb])
		return g
	}
	// descend follows the tree while it does not branch.
	descend := func(node *pnode) *group {
		for len(node.children) == 1 && !node.hasTerm() {
			for _, c := range node.children {
				node = c
			}
		}
		// A callee without callees of its own is its self time.
		return mk(node, len(node.children) == 0 && s.Metric == Total)
	}
	parts := func(g *group) []*group {
		var out []*group
		for _, c := range g.node.sortedChildren() {
			out = append(out, descend(c))
		}
		if g.node.hasTerm() {
			out = append(out, mk(g.node, true))
		}
		return out
	}
	byDelta := func(gs []*group) {
		sort.SliceStable(gs, func(i, j int) bool { return math.Abs(gs[i].delta) > math.Abs(gs[j].delta) })
	}
	groups := []*group{descend(root)}
	for range 32 {
		byDelta(groups)
		var split *group
		for _, g := range groups {
			if !g.end && len(g.node.children) > 0 {
				split = g
				break
			}
		}
		if split == nil {
			break
		}
		ps := parts(split)
		if len(groups) > 1 && len(groups)-1+len(ps) > maxPaths {
			break
		}
		var next []*group
		for _, g := range groups {
			if g == split {
				next = append(next, ps...)
			} else {
				next = append(next, g)
			}
		}
		groups = next
		if len(groups) >= maxPaths {
			break
		}
	}
	byDelta(groups)
	if len(groups) > maxPaths {
		rest := &group{others: len(groups) - (maxPaths - 1), val: make([]float64, len(root.val))}
		for _, g := range groups[maxPaths-1:] {
			for j := range rest.val {
				rest.val[j] += g.val[j]
			}
			rest.delta += g.delta
		}
		groups = append(groups[:maxPaths-1], rest)
	}

	ex := &Explanation{By: "callers"}
	if s.Metric == Total {
		ex.By = "callees"
	}
	for _, g := range groups {
		bvals, hvals := g.val[:nb], g.val[nb:]
		pc := PathChange{Others: g.others, Base: stats.Median(bvals), Head: stats.Median(hvals), Delta: g.delta, End: g.end}
		if g.node != nil {
			// Up the tree from the path's end: for callers that is the
			// outermost caller first, for callees the deepest callee.
			for x := g.node; x != nil; x = x.parent {
				pc.Path = append(pc.Path, x.name)
			}
			if ex.By == "callees" {
				for a, b := 0, len(pc.Path)-1; a < b; a, b = a+1, b-1 {
					pc.Path[a], pc.Path[b] = pc.Path[b], pc.Path[a]
				}
			}
		}
		pc.Relative = pathRelative(bvals, hvals, n)
		t := pj.pathSignificance(bvals, hvals, n)
		pc.P, pc.Test = t.p, t.test
		if t.fitted {
			// As the function's: the fitted change, from the geometric
			// mean of the base runs.
			pc.Base, pc.Head, pc.Relative = t.base, t.base*math.Exp(t.lfc), math.Expm1(t.lfc)
		}
		pc.BaseMean, pc.HeadMean = pooled(bvals, pj.unit[:nb]), pooled(hvals, pj.unit[nb:])
		// The path's part of the change from the figures it is judged
		// and shown by, not from means the table does not show: a path
		// shown "+0.0%" took no part of the change, a path of "0 ms ->
		// 0 ms" none either.
		switch {
		case pc.Base > 0:
			pc.Delta = pc.Base * pc.Relative
		case pc.HeadMean > 0 && scale > 0:
			pc.Delta = pc.HeadMean / scale
		default:
			pc.Delta = 0
		}
		ex.Paths = append(ex.Paths, pc)
		ex.Delta += pc.Delta
	}
	if ex.Delta != 0 {
		for i := range ex.Paths {
			ex.Paths[i].Share = ex.Paths[i].Delta / ex.Delta
		}
	}
	ps := make([]float64, len(ex.Paths))
	for i := range ex.Paths {
		ps[i] = ex.Paths[i].P
	}
	for i, q := range stats.BH(ps) {
		pc := &ex.Paths[i]
		pc.Q = q
		big := math.Abs(pc.Relative) >= s.MinRelative || (pc.Base == 0 && pc.Head > 0)
		switch {
		case q >= s.Alpha || !big || pc.Delta == 0:
			pc.Verdict = Unchanged
		case pc.Delta > 0:
			pc.Verdict = Regressed
		default:
			pc.Verdict = Improved
		}
	}
	ex.Summary = r.explainSummary(row, ex)
	return ex
}

// finite returns a copy of ex with non-finite numbers written as 0, for
// JSON.
func (ex *Explanation) finite() *Explanation {
	if ex == nil {
		return nil
	}
	cp := *ex
	cp.Delta = finite(cp.Delta)
	cp.Paths = append([]PathChange(nil), ex.Paths...)
	for i := range cp.Paths {
		pc := &cp.Paths[i]
		pc.Base, pc.Head, pc.Delta, pc.Relative = finite(pc.Base), finite(pc.Head), finite(pc.Delta), finite(pc.Relative)
		pc.P, pc.Q = finite(pc.P), finite(pc.Q)
		if pc.Path == nil {
			pc.Path = []string{}
		}
	}
	return &cp
}
