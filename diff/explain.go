package diff

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
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
	// Base and Head are the path's normalised metric, medians over runs
	// as in Value.Metric.
	Base float64 `json:"base"`
	Head float64 `json:"head"`
	// Delta is head - Row.Scale*base of the means over runs, so that the
	// paths' deltas add up to Explanation.Delta. Relative is the path's
	// change computed as Row.Relative is (0 when the path is absent from
	// the base).
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
// and flame graphs count exactly what the verdicts counted.
type inputs struct {
	base, head []*profile.Profile
	b, h       *side
	normFor    func(key string) norm
	multi      bool
	exact      bool
	stacks     [2][]*runStacks // by side, then run; filled on demand
}

// runStacks are one run's samples as analysis.Stacks gives them.
type runStacks struct {
	table  *analysis.Table
	stacks []analysis.Stack
	keys   []string // matching key of each table row (Settings.key)
}

// runs returns the runs of one side (0 base, 1 head).
func (in *inputs) side(sd int) *side {
	if sd == 0 {
		return in.b
	}
	return in.h
}

// runStacks returns the stacks of run i of side sd, under the report's
// selection.
func (in *inputs) runStacks(s *Settings, sd, i int) (*runStacks, error) {
	if in.stacks[sd] == nil {
		in.stacks[sd] = make([]*runStacks, len(in.side(sd).runs))
	}
	if rs := in.stacks[sd][i]; rs != nil {
		return rs, nil
	}
	ps := in.base
	name := "base"
	if sd == 1 {
		ps, name = in.head, "head"
	}
	t, st, err := analysis.Stacks(ps[i], s.analysisOptions()...)
	if err != nil {
		return nil, fmt.Errorf("diff: %s profile %d: %w", name, i+1, err)
	}
	rs := &runStacks{table: t, stacks: st, keys: make([]string, len(t.Functions))}
	for j := range t.Functions {
		rs.keys[j] = s.key(&t.Functions[j])
	}
	in.stacks[sd][i] = rs
	return rs, nil
}

// pathValues are one call path's measurements, taken exactly as row takes
// a function's: per run, the compared metric over the run's unit (before
// the yardstick's per-run factor), and the samples behind them.
type pathValues struct {
	base, head []float64
	bk, hk     int64 // samples summed over the runs of each side
}

// pathTest is what pathSignificance found.
type pathTest struct {
	p     float64 // p-value of the test named by test
	poolP float64 // several sampled runs: the sampling test on pooled samples
	test  string
}

// pathSignificance judges a call path of a function as if it were a
// function of its own, with the noise model of the verdicts: it is the one
// place where explanations (and the flame graph's per-frame p-values) meet
// that model. pv holds the path's per-run values and samples, n the
// function's normalisation (its yardstick in share mode). It mirrors the
// significance part of row: several runs a side, compareRuns on the
// normalised per-run values and, for sampled data, the sampling test on the
// pooled samples; exact data, any change; one run a side, the sampling
// test. When the noise model changes, repoint this function at it: its
// callers only read p, poolP and test.
func (s *Settings) pathSignificance(in *inputs, pv pathValues, n norm) pathTest {
	bvals := append([]float64(nil), pv.base...)
	hvals := append([]float64(nil), pv.head...)
	testScale := n.scale
	if n.rest {
		testScale = 1
	} else {
		for i := range bvals {
			bvals[i] /= n.base[i]
		}
		for i := range hvals {
			hvals[i] /= n.head[i]
		}
	}
	var bw, hw float64
	for _, r := range in.b.runs {
		bw += r.weight
	}
	for _, r := range in.h.runs {
		hw += r.weight
	}
	switch {
	case in.multi:
		test, c := s.compareRuns(bvals, hvals)
		t := pathTest{p: c.P, test: test}
		if !in.exact {
			t.poolP = s.sampling(pv.bk, pv.hk, bw, hw, testScale, n)
		}
		return t
	case in.exact:
		t := pathTest{p: 1, test: "exact"}
		if mean(pv.head) != n.scale*mean(pv.base) {
			t.p = 0
		}
		return t
	}
	return pathTest{p: s.sampling(pv.bk, pv.hk, bw, hw, testScale, n), test: "sampling"}
}

// pathRelative is a path's relative change from its per-run values,
// computed as row computes a function's, so that a path that is the whole
// function shows the function's change.
func (s *Settings) pathRelative(bvals, hvals []float64, n norm) float64 {
	if n.rest {
		return s.relative(median(bvals), median(hvals), n.scale)
	}
	nbv, nhv := make([]float64, len(bvals)), make([]float64, len(hvals))
	for i := range bvals {
		nbv[i] = bvals[i] / n.base[i]
	}
	for i := range hvals {
		nhv[i] = hvals[i] / n.head[i]
	}
	return s.relative(median(nbv), median(nhv), 1)
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
	children map[string]*pnode
	val      []float64 // metric through this path, per run
	n        []int64   // samples through it
	term     []float64 // of which the stack ends here
	termN    []int64
}

func newPnode(name string, parent *pnode, runs int) *pnode {
	return &pnode{name: name, parent: parent, val: make([]float64, runs), n: make([]int64, runs),
		term: make([]float64, runs), termN: make([]int64, runs)}
}

func (p *pnode) child(key, name string) *pnode {
	c := p.children[key]
	if c == nil {
		if p.children == nil {
			p.children = map[string]*pnode{}
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

// explain fills Row.Explain of every regressed and improved row.
func (r *Report) explain() error {
	in := r.in
	s := &r.Settings
	nb, nh := len(in.b.runs), len(in.h.runs)
	roots := map[string]*pnode{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Verdict == Regressed || row.Verdict == Improved {
			roots[row.key] = newPnode(row.Name, nil, nb+nh)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	var seen map[string]int
	if s.Metric == Total {
		seen = map[string]int{}
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
					node.add(col, v, st.Samples)
					for _, f := range fr[1:] {
						node = node.child(rs.keys[f], rs.table.Functions[f].Name)
						node.add(col, v, st.Samples)
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
					node.add(col, v, st.Samples)
					for x := j - 1; x >= 0; x-- {
						node = node.child(rs.keys[fr[x]], rs.table.Functions[fr[x]].Name)
						node.add(col, v, st.Samples)
					}
					node.term[col] += v
					node.termN[col] += st.Samples
				}
			}
		}
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		if root := roots[row.key]; root != nil {
			row.Explain = r.explainRow(row, root)
		}
	}
	return nil
}

func (p *pnode) add(col int, v float64, n int64) {
	p.val[col] += v
	p.n[col] += n
}

// group is one entry of an explanation: a path of the tree (its subtree,
// or only the stacks that end at it) or the sum of several.
type group struct {
	node   *pnode
	end    bool // only the stacks ending at node
	others int
	val    []float64
	n      []int64
	delta  float64
}

// explainRow groups the paths of one function's tree and judges each.
func (r *Report) explainRow(row *Row, root *pnode) *Explanation {
	s := &r.Settings
	in := r.in
	nb := len(in.b.runs)
	n := in.normFor(row.key)
	scale := n.scale
	mk := func(node *pnode, end bool) *group {
		g := &group{node: node, end: end, val: node.val, n: node.n}
		if end {
			g.val, g.n = node.term, node.termN
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
		rest := &group{others: len(groups) - (maxPaths - 1), val: make([]float64, len(root.val)), n: make([]int64, len(root.n))}
		for _, g := range groups[maxPaths-1:] {
			for j := range rest.val {
				rest.val[j] += g.val[j]
				rest.n[j] += g.n[j]
			}
			rest.delta += g.delta
		}
		groups = append(groups[:maxPaths-1], rest)
	}

	ex := &Explanation{By: "callers"}
	if s.Metric == Total {
		ex.By = "callees"
	}
	poolP := make([]float64, len(groups))
	for gi, g := range groups {
		bvals, hvals := g.val[:nb], g.val[nb:]
		pc := PathChange{Others: g.others, Base: median(bvals), Head: median(hvals), Delta: g.delta, End: g.end}
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
		var bk, hk int64
		for j, c := range g.n {
			if j < nb {
				bk += c
			} else {
				hk += c
			}
		}
		t := s.pathSignificance(in, pathValues{base: bvals, head: hvals, bk: bk, hk: hk}, n)
		pc.P, pc.Test, poolP[gi] = t.p, t.test, t.poolP
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
	for i, q := range adjustBH(ps) {
		pc := &ex.Paths[i]
		pc.Q = q
		big := math.Abs(pc.Relative) >= s.MinRelative || (pc.Base == 0 && pc.Head > 0)
		switch {
		case q >= s.Alpha || poolP[i] >= s.Alpha || !big || pc.Delta == 0:
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

// adjustBH returns the Benjamini–Hochberg adjusted p-values of ps.
func adjustBH(ps []float64) []float64 {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	out := make([]float64, len(ps))
	m := float64(len(ps))
	q := 1.0
	for j := len(idx) - 1; j >= 0; j-- {
		q = math.Min(q, ps[idx[j]]*m/float64(j+1))
		out[idx[j]] = math.Min(q, 1)
	}
	return out
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
	if base <= 0 || row.Scale <= 0 {
		return 0
	}
	return pc.Delta / (row.Scale * base)
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
		fmt.Fprintf(w, "%s: %s\n", row.Name, ex.Summary)
		if len(ex.Paths) == 1 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  of change\tpath change\tp\tverdict\t\t%s path\n", strings.TrimSuffix(ex.By, "s"))
		for _, pc := range ex.Paths {
			fmt.Fprintf(tw, "  %s\t%s\tp=%.3g\t%s\t\t%s\n", pct(contribution(row, ex, pc)), r.pathChange(pc), pc.P, pc.Verdict, ex.describePath(pc))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

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
		fmt.Fprintf(w, "<details><summary><code>%s</code>: %s</summary>\n\n", html.EscapeString(row.Name), html.EscapeString(ex.Summary))
		fmt.Fprintf(w, "| %s path | base | head | path change | of change | p | verdict |\n|:--|--:|--:|--:|--:|--:|:--|\n", strings.TrimSuffix(ex.By, "s"))
		for _, pc := range ex.Paths {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | p=%.3g | %s |\n", mdEscape(ex.describePath(pc)),
				r.formatMetric(*row, pc.Base), r.formatMetric(*row, pc.Head), r.pathChange(pc), pct(contribution(row, ex, pc)), pc.P, pc.Verdict)
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
