package diff

import (
	"fmt"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// MovedIn is the time per unit of work of a function that did not fail
// although its sampled time grew significantly, beside its whole
// program's (the headline's): the function grew by less than the program
// got faster. Times are nanoseconds, means over runs.
type MovedIn struct {
	Per       string  `json:"per"` // the unit of work: "op", "iteration", "run"
	Base      float64 `json:"base"`
	Head      float64 `json:"head"`
	WholeBase float64 `json:"whole_base"`
	WholeHead float64 `json:"whole_head"`
}

// paidBack keeps from failing the gate a function whose sampled time grew
// by less than its whole program (its benchmark) got faster: time that
// moved into it when the change removed other work. Sampled time is not
// additive at the scale of nanoseconds an operation: removing an
// allocation from google/uuid's Parse made its benchmark 67.5% faster (60
// to 20 ns an op) and Parse's own samples 72% more (8 to 14 ns an op)
// while Parse executed the same instructions (most likely stalls the
// allocator used to absorb, now charged to Parse's loads); by its share,
// Parse regressed +216%. A change that trades a little time in one function for
// more elsewhere in the same operation made the operation faster: the
// function is shown as a near miss, not failed. The rule needs the
// headline: the work per run known (operations, iterations, WithSameWork)
// and the time per unit of work judged improved; counts (exact) are not
// sampled and are never judged by it.
//
// The cost: a real slowdown of one function hidden by a larger saving
// elsewhere in the same operation is shown, not failed. Another operation
// that runs the function without the saving still catches it, and
// counted instructions judge each function exactly.
func (c *comparison) paidBack() {
	s, rep := c.eng, c.rep
	hl := rep.Headline
	if c.exact || !hl.Judged || hl.Verdict != Improved || unitOf(rep.Base) != analysis.UnitTime {
		return
	}
	// Means over runs of a time per unit of work, base and head, in the
	// headline's units.
	perWork := func(v func(j int) float64) (b, h float64) {
		var n [2]float64
		var sum [2]float64
		for j, r := range c.runs {
			w := r.work
			if s.SameWork {
				w = 1
			}
			if !(w > 0) {
				return 0, 0
			}
			g := grp(c.head[j])
			sum[g] += v(j) / w
			n[g]++
		}
		return sum[0] / n[0], sum[1] / n[1]
	}
	wb, wh := perWork(func(j int) float64 { return c.runs[j].cpu })
	saved := wb - wh
	if !(saved > 0) {
		return
	}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if row.Verdict != Regressed || row.presence != "" {
			continue
		}
		t := c.fns[row.idx].t
		fb, fh := perWork(func(j int) float64 { return t[j] })
		grew := fh - fb
		if !(grew < saved) || !(fb > 0) {
			continue
		}
		row.Verdict = Unchanged
		row.MovedIn = &MovedIn{Per: hl.Per, Base: fb, Head: fh, WholeBase: wb, WholeHead: wh}
		row.NearMiss = fmt.Sprintf("%s (q=%.3g), but its %s per %s grew %s (%s -> %s, %s) while the whole %s got %s faster (%s -> %s, %s): time that moved into it from work the change removed, not failed (counted instructions judge it exactly)",
			pct(row.Relative), row.Q, quantity(analysis.UnitTime), textfmt.Name(hl.Per), textfmt.Nanos(grew), textfmt.Nanos(fb), textfmt.Nanos(fh), pct(fh/fb-1),
			textfmt.Name(hl.Per), textfmt.Nanos(saved), textfmt.Nanos(wb), textfmt.Nanos(wh), pct(wh/wb-1))
	}
}
