// Explanations: judging a call path's change between the runs of the two sides (its significance and size).

package diff

import (
	"math"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/stats"
)

// How a call path is judged as a function of its own (explanations, the
// flame graph), and the runs' stacks the paths come from.

// pathJudge judges a call path as the comparison judged its functions:
// the runs' units and sampling periods, which are head's, and the noise
// model that judged the functions. It is plain data, kept on the Report
// for the flame graph (flameData).
type pathJudge struct {
	head         []bool    // by run: base runs, then head runs
	unit, period []float64 // by run: run.unit and run.period
	nb           int       // base runs
	multi, exact bool
	model        model // the noise model the functions were judged with
}

// newPathJudge is the path judge of comparison c.
func newPathJudge(c *comparison) pathJudge {
	pj := pathJudge{head: c.head, nb: len(c.b.runs), multi: c.multi, exact: c.exact,
		unit: make([]float64, len(c.runs)), period: make([]float64, len(c.runs))}
	for j, r := range c.runs {
		pj.unit[j], pj.period[j] = r.unit, r.period
	}
	if c.model != nil {
		pj.model = *c.model
		// A path is judged at the prior's scale for its samples, never a
		// fitted function's own: those per-function columns are not kept.
		pj.model.prior.Scale, pj.model.prior.Outlier = nil, nil
	}
	return pj
}

// norm is how one function's per-run values (its metric over the run's
// unit) are normalised: divided by the run's factor (the yardstick in share
// mode, 1 otherwise); e and ev are the model's exposures for it.
type norm struct {
	base, head []float64
	e, ev      []float64
	scale      float64
}

// normFor returns the normalisation of the function with exposures e, ev
// and scale sc; NaN for sc is the scale the exposures themselves give (a
// function outside the yardstick).
func (pj *pathJudge) normFor(e, ev []float64, sc float64) norm {
	n := len(pj.head)
	f := make([]float64, n)
	var lb, lh float64
	for j := range pj.head {
		f[j] = e[j] * pj.period[j] / pj.unit[j]
		if pj.head[j] {
			lh += math.Log(f[j])
		} else {
			lb += math.Log(f[j])
		}
	}
	nb := pj.nb
	if math.IsNaN(sc) {
		sc = math.Exp(lh/float64(n-nb) - lb/float64(nb))
	}
	return norm{base: f[:nb], head: f[nb:], e: e, ev: ev, scale: sc}
}

// normOf is the normalisation of function i of c (Row.idx), or, for -1,
// that of a function outside the yardstick.
func (c *comparison) normOf(pj *pathJudge, i int) norm {
	if i < 0 {
		return pj.normFor(c.general, make([]float64, len(c.runs)), math.NaN())
	}
	f := &c.fns[i]
	return pj.normFor(f.e, f.ev, f.scale)
}

// runStacks are one run's samples as analysis.Index.Stacks gives them.
type runStacks struct {
	table  *analysis.Table
	stacks []analysis.RowStack
	keys   []int32 // matching key id of each table row
}

// readStacks returns the stacks of every run of c, base runs first, under
// the comparison's selection: read with the run's table (run).
func (c *comparison) readStacks() []runStacks {
	out := make([]runStacks, len(c.runs))
	for j, r := range c.runs {
		out[j] = runStacks{table: r.table, stacks: r.stacks, keys: r.rowKey}
	}
	return out
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
func (pj *pathJudge) pathSignificance(base, head []float64, n norm) pathTest {
	vals := append(append([]float64(nil), base...), head...)
	if pj.exact && !pj.multi {
		t := pathTest{p: 1, test: "exact"}
		if mean(head) != n.scale*mean(base) {
			t.p = 0
		}
		return t
	}
	k := make([]float64, len(vals))
	for j := range k {
		k[j] = vals[j] * pj.unit[j] / pj.period[j]
	}
	f := pj.model.judge(&feature{k: k, e: n.e, ev: n.ev})
	test := "moderated-t"
	if !pj.multi {
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
func relative(b, h, scale float64) float64 {
	if b <= 0 || scale <= 0 {
		return 0
	}
	return h/(scale*b) - 1
}

// pathRelative is a path's relative change from its per-run values,
// computed as row computes a function's, so that a path that is the whole
// function shows the function's change.
func pathRelative(bvals, hvals []float64, n norm) float64 {
	nbv, nhv := make([]float64, len(bvals)), make([]float64, len(hvals))
	for i := range bvals {
		nbv[i] = bvals[i] / n.base[i]
	}
	for i := range hvals {
		nhv[i] = hvals[i] / n.head[i]
	}
	return relative(stats.Median(nbv), stats.Median(nhv), 1)
}

// pooled is a path's values over runs as the function's shown value is
// taken (Report.shownValues): each run's value in its unit, summed, over
// the runs' units summed; in Share mode the path's time over the side's.
// units are the runs' units (run.unit), one per value.
func pooled(v []float64, units []float64) float64 {
	var num, den float64
	for j, x := range v {
		num += x * units[j]
		den += units[j]
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
