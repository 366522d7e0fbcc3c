package diff

import (
	"fmt"
	"math"
	"sort"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/htmlreport"
	"github.com/hotbudget/hotbudget/internal/stats"
)

// flameMaxNodes bounds the frames of the HTML report's flame graph; the
// smaller ones are summed per parent (htmlreport.TreeBuilder.Tree).
const flameMaxNodes = 50000

// flameMaxTested bounds the frames whose paths are tested, the largest
// first: each test costs about what a function's does.
const flameMaxTested = 5000

// flameData is what the HTML report's flame graph is drawn from, kept on
// the Report as plain data: every run's stacks over the names of its
// functions, and what judges a call path as the functions were judged.
type flameData struct {
	judge pathJudge
	// norm is the normalisation of a function outside the yardstick, the
	// one a frame is measured against.
	norm norm
	runs []flameRun // base runs, then head runs
}

// flameRun is one run's stacks: Frames index names, the names of the
// run's functions (analysis.Table.Functions) as the report shows them.
type flameRun struct {
	names  []string
	stacks []analysis.RowStack
}

// flameData keeps what the flame graph needs of the comparison's stacks.
func (c *comparison) flameData(pj *pathJudge, stacks []runStacks) *flameData {
	fd := &flameData{judge: *pj, norm: c.normOf(pj, -1), runs: make([]flameRun, len(stacks))}
	for j := range stacks {
		rs := &stacks[j]
		names := make([]string, len(rs.table.Functions))
		for i := range rs.table.Functions {
			names[i] = c.eng.name(rs.table.Functions[i].Name)
		}
		fd.runs[j] = flameRun{names: names, stacks: rs.stacks}
	}
	return fd
}

// flameTree builds the differential flame graph of a Compare report: the
// stacks of every run merged by the path of function names from the root,
// each frame's values the means over the runs of its time normalised as the
// report's metric is (a share of the profile by default), so that widths
// add up. Its change is head/(scale*base) - 1 of those means, with the
// yardstick's scale; for tested frames it is computed from the per-run
// values as a function's (pathRelative). Frames whose
// compared metric is large enough for a verdict (Settings.MinShare or
// MinAbsolute) are tested as call paths with pathSignificance, with the
// Benjamini–Hochberg adjustment over the tested frames (slower and faster
// apart), and their change counts when it is beyond the noise and reaches
// both minimum changes, as a function's must.
func (r *Report) flameTree() *htmlreport.Tree {
	fd := r.flame
	pj := &fd.judge
	s, min := r.Settings, r.minimum()
	nb := pj.nb
	nh := len(fd.runs) - nb
	b := htmlreport.NewTreeBuilder("all")
	leaves := make([][]int, len(fd.runs)) // by run and stack: index in b, then its leaf node
	var path []int32
	for col := range fd.runs {
		fr := &fd.runs[col]
		sd, runs := 0, nb
		if pj.head[col] {
			sd, runs = 1, nh
		}
		ids := make([]int32, len(fr.names))
		for j, name := range fr.names {
			ids[j] = b.Name(name)
		}
		leaf := make([]int, len(fr.stacks))
		per := 1 / (pj.unit[col] * float64(runs))
		for j, st := range fr.stacks {
			path = path[:0]
			for k := len(st.Frames) - 1; k >= 0; k-- {
				path = append(path, ids[st.Frames[k]])
			}
			leaf[j] = b.Add(sd, path, float64(st.Value)*per)
		}
		leaves[col] = leaf
	}
	b.Build()
	for _, leaf := range leaves {
		for j, e := range leaf {
			leaf[j] = int(b.Leaf(e))
		}
	}
	metric := func(id int32) (float64, float64) {
		bv, hv := b.Values(id)
		if s.Metric == Total {
			return bv.Total, hv.Total
		}
		return bv.Self, hv.Self
	}

	// The frames large enough to test, of the functions the table judged
	// (--only, the gate), the largest first: a frame's colour is never
	// judged in a family the table's verdicts were not.
	rowOf := map[string]*Row{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if _, ok := rowOf[row.Name]; !ok && row.Test != "none" && !row.Ungated {
			rowOf[row.Name] = row
		}
	}
	var tested []int32
	for id := int32(1); int(id) < b.Len(); id++ {
		bv, hv := metric(id)
		if rowOf[b.NameOf(id)] != nil && min.sizeable(math.Max(bv, hv)) {
			tested = append(tested, id)
		}
	}
	sort.Slice(tested, func(x, y int) bool {
		bx, hx := metric(tested[x])
		by, hy := metric(tested[y])
		return math.Max(bx, hx) > math.Max(by, hy)
	})
	if len(tested) > flameMaxTested {
		tested = tested[:flameMaxTested]
	}
	slot := make(map[int32]int, len(tested))
	for k, id := range tested {
		slot[id] = k
	}
	vals := make([][]float64, len(tested))
	for k := range tested {
		vals[k] = make([]float64, nb+nh)
	}
	for col, leaf := range leaves {
		unit := pj.unit[col]
		for j, st := range fd.runs[col].stacks {
			v := float64(st.Value) / unit
			for id := int32(leaf[j]); id > 0; id = b.Parent(id) {
				if k, ok := slot[id]; ok {
					vals[k][col] += v
				}
				if s.Metric == Self {
					break // self time is the leaf's only
				}
			}
		}
	}
	// The frames are measured against the yardstick of the functions at
	// large (the one used for functions that are not part of it).
	n := fd.norm
	type stat struct {
		p, q, delta, rel float64
	}
	judged := make([]stat, len(tested))
	var up, down []int
	for k := range tested {
		t := pj.pathSignificance(vals[k][:nb], vals[k][nb:], n)
		bv, hv := metric(tested[k])
		st := stat{p: t.p, q: t.p, delta: hv - n.scale*bv, rel: pathRelative(vals[k][:nb], vals[k][nb:], n)}
		if bv <= 0 {
			st.rel = math.Inf(1)
		}
		judged[k] = st
		if st.delta > 0 {
			up = append(up, k)
		} else {
			down = append(down, k)
		}
	}
	// As the explanations judge a function's call paths: the paths of one
	// function are one family (slower and faster apart), and a path counts
	// only within a function the table judged changed the same way.
	fam := map[string][2][]int{}
	for _, g := range [][]int{up, down} {
		dir := 0
		if len(g) > 0 && judged[g[0]].delta <= 0 {
			dir = 1
		}
		for _, k := range g {
			name := b.NameOf(tested[k])
			f := fam[name]
			f[dir] = append(f[dir], k)
			fam[name] = f
		}
	}
	for _, f := range fam {
		for _, g := range f {
			ps := make([]float64, len(g))
			for x, k := range g {
				ps[x] = judged[k].p
			}
			for x, q := range stats.BH(ps) {
				judged[g[x]].q = q
			}
		}
	}
	t := b.Tree(flameMaxNodes, func(id int32, node *htmlreport.Node) {
		k, ok := slot[id]
		if !ok {
			return
		}
		st := judged[k]
		row := rowOf[b.NameOf(id)]
		node.Change, node.P, node.Q = st.rel, st.p, st.q
		big := math.Abs(st.rel) >= s.MinRelative && min.sizeable(math.Abs(st.delta))
		path := st.q < s.Alpha && big && st.delta != 0
		agrees := (row.Verdict == Regressed && st.delta > 0) || (row.Verdict == Improved && st.delta < 0)
		node.Significant = path && agrees
		switch {
		case node.Significant:
		case row.Verdict == Regressed || row.Verdict == Improved:
			node.Note = fmt.Sprintf("the function %s as a whole (see the table); this call path alone is not beyond the noise and the minimum change (q=%.3g, change %+.1f%%)",
				row.Verdict, st.q, 100*st.rel)
		case path:
			node.Note = "this call path alone moved beyond the noise, but the table judges the function unchanged as a whole: not counted"
		}
	})
	t.Diff = true
	t.Scale = n.scale
	t.Metric = string(s.Metric)
	t.Unit = r.flameUnit()
	t.MinChange = s.MinRelative
	t.Runs = max(nb, nh)
	t.Marks = map[string]string{}
	for _, row := range r.Rows {
		switch row.Verdict {
		case Regressed, Improved, New, Gone:
			// Several rows of one name (name+file keys): the first, as
			// rows come regressions first.
			if _, ok := t.Marks[row.Name]; !ok {
				t.Marks[row.Name] = string(row.Verdict)
			}
		}
	}
	return t
}

// flameUnit names the unit of the report's normalised values.
func (r *Report) flameUnit() string {
	switch {
	case r.Settings.Mode == Share:
		return "share"
	case r.Settings.Mode == PerAnchor:
		return "x"
	}
	return "ns"
}
