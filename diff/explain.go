package diff

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
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
	// taken as the function's shown value is (Report.ShownValues): in
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

// inputs is what Compare judged, kept on its Report so that explanations
// and flame graphs count exactly what the verdicts counted, and judge with
// the same model.
type inputs struct {
	eng          *engine // the engine that judged: its settings and runOps
	b, h         *side
	runs         []*run // base runs, then head runs
	head         []bool
	multi, exact bool
	model        *model          // the noise model the functions were judged with
	expo, ev     [][]float64     // per function (index into the measures): exposures and their log variance
	scale        []float64       // per function: how the rest of the profile moved
	general      []float64       // exposures of a function outside the yardstick
	stacks       [2][]*runStacks // by side, then run; filled on demand
}

// norm is how one function's per-run values (its metric over the run's
// unit) are normalised: divided by the run's factor (the yardstick in share
// mode, 1 otherwise); e and ev are the model's exposures for it.
type norm struct {
	base, head []float64
	e, ev      []float64
	scale      float64
}

// normFor returns the normalisation of the function with index i among
// the comparison's measures (Row.idx), or, for -1, that of a function
// outside the yardstick.
func (in *inputs) normFor(i int) norm {
	n := len(in.runs)
	e, ev := in.general, make([]float64, n)
	sc := math.NaN()
	if i >= 0 {
		e, ev, sc = in.expo[i], in.ev[i], in.scale[i]
	}
	f := make([]float64, n)
	var lb, lh float64
	for j, r := range in.runs {
		f[j] = e[j] * r.period / r.unit
		if in.head[j] {
			lh += math.Log(f[j])
		} else {
			lb += math.Log(f[j])
		}
	}
	nb := len(in.b.runs)
	if math.IsNaN(sc) {
		sc = math.Exp(lh/float64(n-nb) - lb/float64(nb))
	}
	return norm{base: f[:nb], head: f[nb:], e: e, ev: ev, scale: sc}
}

// runStacks are one run's samples as analysis.Stacks gives them.
type runStacks struct {
	table  *analysis.Table
	stacks []analysis.Stack
	keys   []int32 // matching key id of each table row
}

// runs returns the runs of one side (0 base, 1 head).
func (in *inputs) side(sd int) *side {
	if sd == 0 {
		return in.b
	}
	return in.h
}

// runStacks returns the stacks of run i of side sd, under the report's
// selection, from the run's index.
func (in *inputs) runStacks(s *engine, sd, i int) (*runStacks, error) {
	if in.stacks[sd] == nil {
		in.stacks[sd] = make([]*runStacks, len(in.side(sd).runs))
	}
	if rs := in.stacks[sd][i]; rs != nil {
		return rs, nil
	}
	name := "base"
	if sd == 1 {
		name = "head"
	}
	r := in.side(sd).runs[i]
	t, st, err := r.index.Stacks(s.analysisOptions()...)
	if err != nil {
		return nil, fmt.Errorf("diff: %s run %d: %w", name, i+1, err)
	}
	// The table is the run's own, row for row: the same index and options.
	rs := &runStacks{table: t, stacks: st, keys: r.rowKey}
	if len(t.Functions) != len(r.rowKey) {
		return nil, fmt.Errorf("diff: %s run %d: the stacks' table differs from the run's", name, i+1)
	}
	in.stacks[sd][i] = rs
	return rs, nil
}

// pathTest is what pathSignificance found.
type pathTest struct {
	p    float64 // p-value of the test named by test
	test string
	// fitted says lfc is the model's fitted change (every run has the
	// path), base its geometric mean over the base runs: a path that is
	// the whole function shows the function's values.
	fitted    bool
	lfc, base float64
}

// pathSignificance judges a call path of a function as if it were a
// function of its own, with the model that judged the functions (their
// noise, its moderation): the one place where explanations and the flame
// graph's per-frame p-values meet the verdicts' statistics. base and head
// hold the path's per-run values, taken exactly as row takes a
// function's (its metric over the run's unit, before the yardstick's
// per-run factor), n the function's normalisation. p is one-sided in the
// direction of the path's change, as Row.P is.
func (s *engine) pathSignificance(in *inputs, base, head []float64, n norm) pathTest {
	vals := append(append([]float64(nil), base...), head...)
	if in.exact && !in.multi {
		t := pathTest{p: 1, test: "exact"}
		if mean(head) != n.scale*mean(base) {
			t.p = 0
		}
		return t
	}
	k := make([]float64, len(vals))
	for j, r := range in.runs {
		k[j] = vals[j] * r.unit / r.period
	}
	f := in.model.judge(&feature{k: k, e: n.e, ev: n.ev})
	test := "moderated-t"
	if !in.multi {
		test = "pair-t"
	}
	// One-sided in the direction of the change, as a function's P.
	p := f.pUp
	if f.lfc < 0 {
		p = f.pDwn
	}
	t := pathTest{p: p, test: test, lfc: f.lfc, fitted: true}
	var lb float64
	nb := len(base)
	for j := range vals {
		if k[j] <= 0 {
			t.fitted = false
		}
		if j < nb {
			lb += math.Log(vals[j])
		}
	}
	t.base = math.Exp(lb / float64(nb))
	return t
}

// relative is the change h/(scale*b) - 1, 0 when b or scale is not
// positive.
func (s *engine) relative(b, h, scale float64) float64 {
	if b <= 0 || scale <= 0 {
		return 0
	}
	return h/(scale*b) - 1
}

// pathRelative is a path's relative change from its per-run values,
// computed as row computes a function's, so that a path that is the whole
// function shows the function's change.
func (s *engine) pathRelative(bvals, hvals []float64, n norm) float64 {
	nbv, nhv := make([]float64, len(bvals)), make([]float64, len(hvals))
	for i := range bvals {
		nbv[i] = bvals[i] / n.base[i]
	}
	for i := range hvals {
		nhv[i] = hvals[i] / n.head[i]
	}
	return s.relative(stats.Median(nbv), stats.Median(nhv), 1)
}

// pooled is a path's values over runs as the function's shown value is
// taken (Report.ShownValues): each run's value in its unit, summed, over
// the runs' units summed; in Share mode the path's time over the side's.
func pooled(v []float64, runs []*run) float64 {
	var num, den float64
	for j, x := range v {
		num += x * runs[j].unit
		den += runs[j].unit
	}
	if den <= 0 {
		return 0
	}
	return num / den
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

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

// engine is the engine of the comparison that made r, for its judgements
// (with the operations a run did, which WithOps' minimum change needs).
func (r *Report) engine() *engine {
	if r.in != nil && r.in.eng != nil {
		return r.in.eng
	}
	return &engine{Settings: r.Settings}
}

// explain fills Row.Explain of every regressed and improved row.
func (r *Report) explain() error {
	in := r.in
	s := r.engine()
	nb, nh := len(in.b.runs), len(in.h.runs)
	roots := map[int32]*pnode{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Verdict == Regressed || row.Verdict == Improved {
			roots[row.id] = newPnode(row.Name, nil, nb+nh)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	var seen map[int32]int
	if s.Metric == Total {
		seen = map[int32]int{}
	}
	for sd := 0; sd < 2; sd++ {
		for i, run := range in.side(sd).runs {
			rs, err := in.runStacks(s, sd, i)
			if err != nil {
				return err
			}
			col := i
			if sd == 1 {
				col = nb + i
			}
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
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		if root := roots[row.id]; root != nil {
			row.Explain = r.explainRow(row, root)
		}
	}
	return nil
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
func (r *Report) explainRow(row *Row, root *pnode) *Explanation {
	s := r.engine()
	in := r.in
	nb := len(in.b.runs)
	n := in.normFor(row.idx)
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
		pc.Relative = s.pathRelative(bvals, hvals, n)
		t := s.pathSignificance(in, bvals, hvals, n)
		pc.P, pc.Test = t.p, t.test
		if t.fitted {
			// As the function's: the fitted change, from the geometric
			// mean of the base runs.
			pc.Base, pc.Head, pc.Relative = t.base, t.base*math.Exp(t.lfc), math.Expm1(t.lfc)
		}
		pc.BaseMean, pc.HeadMean = pooled(bvals, in.b.runs), pooled(hvals, in.h.runs)
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

// pathString names a path for people: long paths keep their two ends.
func pathString(path []string) string {
	if len(path) > 6 {
		path = append(append(append([]string(nil), path[:2]...), "…"), path[len(path)-3:]...)
	}
	return strings.Join(path, " → ")
}

// describePath names one entry of an explanation.
func (ex *Explanation) describePath(pc PathChange) string {
	if pc.Others > 0 {
		return fmt.Sprintf("%d other paths", pc.Others)
	}
	s := pathString(pc.Path)
	switch {
	case pc.End && ex.By == "callees":
		s += " (self)"
	case pc.End:
		s += " (stack root)"
	}
	return s
}

// contribution is the part of the function's change, as the report's
// change column shows it (Row.Relative), that comes through the path: its
// Share of it. When the means over runs and the report's medians disagree
// in direction, it is the path's change relative to the function's base.
func contribution(row *Row, ex *Explanation, pc PathChange) float64 {
	if ex.Delta != 0 && (ex.Delta > 0) == (row.Relative > 0) {
		return row.Relative * pc.Share
	}
	var base float64
	for _, p := range ex.Paths {
		base += p.Base
	}
	if base <= 0 {
		return 0
	}
	return pc.Delta / base
}

func pct(v float64) string { return fmt.Sprintf("%+.1f%%", v*100) }

// explainSummary says in one sentence where the change comes from.
func (r *Report) explainSummary(row *Row, ex *Explanation) string {
	total := pct(row.Relative)
	if ex.Delta != 0 && (ex.Delta > 0) != (row.Relative > 0) {
		total = "change"
	}
	if len(ex.Paths) == 1 {
		if pc := ex.Paths[0]; pc.End && len(pc.Path) == 1 && ex.By == "callees" {
			return fmt.Sprintf("all of the %s is its own (self) time", total)
		}
		return fmt.Sprintf("all of the %s comes through %s, its only %s path", total, ex.describePath(ex.Paths[0]), strings.TrimSuffix(ex.By, "s"))
	}
	var with, against, same []PathChange
	for _, pc := range ex.Paths {
		switch {
		case pc.Verdict == Unchanged:
			same = append(same, pc)
		case (pc.Delta > 0) == (ex.Delta > 0):
			with = append(with, pc)
		default:
			against = append(against, pc)
		}
	}
	kind := strings.TrimSuffix(ex.By, "s")
	for _, pc := range with {
		if pc.Others == 0 || math.Abs(pc.Share) < 0.5 {
			continue
		}
		// Most of it comes through paths too many to list: spread thin.
		n, largest := 0, 0.0
		for _, p := range ex.Paths {
			n += max(p.Others, 1)
			if p.Others == 0 && math.Abs(contribution(row, ex, p)) > math.Abs(largest) {
				largest = contribution(row, ex, p)
			}
		}
		return fmt.Sprintf("the %s is spread over %d %s paths, none of which carries more than %s of it", total, n, kind, pct(largest))
	}
	var parts []string
	if len(with) == 0 {
		big := ex.Paths[0]
		parts = append(parts, fmt.Sprintf("no path changed significantly on its own: the %s is spread over %d paths, the largest part (%s) through %s",
			total, len(ex.Paths), pct(contribution(row, ex, big)), ex.describePath(big)))
	} else {
		var through []string
		for i, pc := range with {
			if i == 0 {
				through = append(through, fmt.Sprintf("%s of the %s comes through %s", pct(contribution(row, ex, pc)), total, ex.describePath(pc)))
			} else {
				through = append(through, fmt.Sprintf("%s through %s", pct(contribution(row, ex, pc)), ex.describePath(pc)))
			}
		}
		parts = append(parts, strings.Join(through, ", "))
	}
	for _, pc := range against {
		parts = append(parts, fmt.Sprintf("%s through %s, the other way", pct(contribution(row, ex, pc)), ex.describePath(pc)))
	}
	if len(with) > 0 && len(same) > 0 {
		// The largest unchanged path is the one worth naming.
		sort.SliceStable(same, func(i, j int) bool {
			return math.Max(same[i].Base, same[i].Head) > math.Max(same[j].Base, same[j].Head)
		})
		what, verb := "the path "+ex.describePath(same[0]), "is"
		if same[0].Others > 0 {
			what, verb = "the "+ex.describePath(same[0]), "are"
		}
		if len(same) > 1 {
			what += fmt.Sprintf(" (and %d more)", len(same)-1)
			verb = "are"
		}
		parts = append(parts, fmt.Sprintf("%s %s unchanged", what, verb))
	}
	return strings.Join(parts, "; ")
}

// writeExplanations appends the explanations to the text report.
func (r *Report) writeExplanations(w io.Writer) error {
	first := true
	for i := range r.Rows {
		row := &r.Rows[i]
		ex := row.Explain
		if ex == nil {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nwhere the changes come from (%s time split over %s):\n", r.Settings.Metric, ex.By)
			first = false
		}
		fmt.Fprintf(w, "%s: %s\n", textfmt.Name(row.Name), textfmt.Line(ex.Summary))
		if len(ex.Paths) == 1 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  of change\t%s\tp\tverdict\t\t%s path\n", r.pathHeader(), strings.TrimSuffix(ex.By, "s"))
		for _, pc := range ex.Paths {
			fmt.Fprintf(tw, "  %s\t%s\tp=%.3g\t%s\t\t%s\n", pct(contribution(row, ex, pc)), r.pathChange(pc), pc.P, pc.Verdict, textfmt.Line(ex.describePath(pc)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// ShownPath formats a call path's base and head as the reports show them
// beside the function's Figures: in Share mode the path's real shares
// (BaseMean, HeadMean), else the fitted values.
func (r *Report) ShownPath(pc PathChange) (base, head string) {
	if r.Settings.Mode == Share {
		return r.FormatMetric(pc.BaseMean), r.FormatMetric(pc.HeadMean)
	}
	return r.FormatMetric(pc.Base), r.FormatMetric(pc.Head)
}

// pathHeader names the column of a path's change as ChangeHeader names
// a function's.
func (r *Report) pathHeader() string { return "path " + r.ChangeHeader() }

// pathChange is a path's relative change as the table shows a function's.
func (r *Report) pathChange(pc PathChange) string {
	switch {
	case pc.Base == 0 && pc.Head > 0:
		return "new"
	case pc.Base > 0 && pc.Head == 0:
		return "gone"
	}
	return fmt.Sprintf("%+.1f%%", pc.Relative*100)
}

// writeMarkdownExplanations appends one collapsed section per explained
// function to the Markdown report.
func (r *Report) writeMarkdownExplanations(w io.Writer) {
	for i := range r.Rows {
		row := &r.Rows[i]
		ex := row.Explain
		if ex == nil {
			continue
		}
		fmt.Fprintf(w, "<details><summary><code>%s</code>: %s</summary>\n\n", textfmt.HTML(textfmt.Shorten(row.Name, textfmt.MaxName)), textfmt.HTML(ex.Summary))
		fmt.Fprintf(w, "| %s path | base | head | %s | of change | p | verdict |\n|:--|--:|--:|--:|--:|--:|:--|\n", strings.TrimSuffix(ex.By, "s"), r.pathHeader())
		for _, pc := range ex.Paths {
			b, h := r.ShownPath(pc)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | p=%.3g | %s |\n", textfmt.MarkdownEscape(ex.describePath(pc)),
				b, h, r.pathChange(pc), pct(contribution(row, ex, pc)), pc.P, pc.Verdict)
		}
		fmt.Fprint(w, "\n</details>\n\n")
	}
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
