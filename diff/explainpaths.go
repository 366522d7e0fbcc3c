package diff

import (
	"fmt"
	"math"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/stats"
)

// The inputs explanations are computed from, and the test of a call path's
// change.

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
