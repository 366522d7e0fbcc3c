package diff

import (
	"math"
	"strings"

	"github.com/hotbudget/hotbudget/internal/htmlreport"
)

// allocFlameTree is the differential flame graph of an allocation
// comparison: every call path's bytes per unit of work on both sides
// (widths add up), each frame's change the relative change of its total
// bytes, counted (Significant) when its self bytes moved beyond the
// tolerance; the functions with a verdict are marked. Exact values: P and
// Q are 0 for every frame (no statistics: a count is certain).
func (r *AllocReport) allocFlameTree() *htmlreport.Tree {
	if r.base == nil || r.head == nil {
		return nil
	}
	b := htmlreport.NewTreeBuilder("all")
	var path []int32
	for sd, t := range []*AllocTable{r.base, r.head} {
		for k, c := range t.Stacks {
			if c.Bytes <= 0 {
				continue // a difference of two runs may be negative: nothing to draw
			}
			path = path[:0]
			for _, name := range strings.Split(k, stackSep) {
				path = append(path, b.Name(name))
			}
			b.Add(sd, path, c.Bytes/t.Work)
		}
	}
	b.Build()
	tol := r.Tolerance
	t := b.Tree(flameMaxNodes, func(id int32, n *htmlreport.Node) {
		bv, hv := b.Values(id)
		// Every frame is "tested": its values are counts, certain (p 0),
		// and its change counts when beyond the tolerance.
		n.P, n.Q = 0, 0
		switch {
		case bv.Total > 0:
			n.Change = hv.Total/bv.Total - 1
		case hv.Total > 0:
			n.Change = math.Inf(1)
		}
		n.Significant = math.Abs(hv.Self-bv.Self) > max(tol.Bytes, tol.Relative*bv.Self)
	})
	t.Diff = true
	t.Scale = 1
	t.Metric = "self"
	t.Unit = "bytes"
	t.MinChange = tol.Relative
	t.Runs = 1
	t.Marks = map[string]string{}
	for _, row := range r.Rows {
		switch row.Verdict {
		case Regressed, Improved, New, Gone:
			t.Marks[row.Name] = string(row.Verdict)
		}
	}
	return t
}
