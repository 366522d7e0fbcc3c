package diff

import (
	"math"

	"golang.org/x/perf/benchmath"
)

// A function's row: its values on each side, as displayed, and the fitted
// test's verdict inputs.

// tabulate is stage three. In: the function columns normalised and
// fitted, the settings (Only, Gate). Out: the report's rows, one per
// function judged (Settings.Only), each measured and tested but not yet
// decided (decide), or decided when no test is needed.
func tabulate(c *comparison) {
	s, rep := c.eng, c.rep
	rep.Rows = make([]Row, 0, len(c.fns))
	for i := range c.fns {
		name := c.fns[i].name
		if s.Only != nil && !s.Only.MatchString(name) {
			continue
		}
		rep.Rows = append(rep.Rows, c.row(i))
		row := &rep.Rows[len(rep.Rows)-1]
		row.idx = i
		row.Ungated = s.Gate != nil && !s.Gate.MatchString(name)
	}
}

// row measures function i on both sides and, when it can be decided
// without a test, gives its verdict; tested rows are decided by decide.
func (c *comparison) row(i int) Row {
	s, runs, head, exact, multi := c.eng, c.runs, c.head, c.exact, c.multi
	fn := &c.fns[i]
	m, display, f, e := &fn.measured, fn.display, fn.fit, fn.e
	row := Row{Name: m.name, File: m.file, P: 1, Q: 1, Test: testNone, Scale: fn.scale}
	row.Base, row.Head = s.values(m, runs, head)
	pooled := func(g int) float64 {
		var sk, se float64
		for j := range runs {
			if grp(head[j]) == g {
				sk += m.k[j]
				se += e[j]
			}
		}
		if se <= 0 {
			return 0
		}
		return sk / se * display
	}
	// distinct is the p-value of the samples a function has on side g,
	// and none on the other, falling so by chance: were its rate the
	// same on both sides, each sample would land on side g with
	// probability e(g)/e(both), and all k do with probability that^k.
	// Samples come in runs, which vary beyond sampling: with several runs
	// a side the runs it was seen in must also all be on side g, which
	// the m of them are with probability C(n_g, m)/C(n, m) (a function of
	// two samples in each of five runs is 1 in 252 so, not 1 in 1,024).
	distinct := func(g int) float64 {
		var k, eg, eo float64
		var seen, ng, no int
		for j := range runs {
			if grp(head[j]) == g {
				k += m.k[j]
				eg += e[j]
				ng++
				if m.k[j] > 0 {
					seen++
				}
			} else {
				eo += e[j]
				no++
			}
		}
		if !(eg > 0) || !(eo > 0) {
			return 1
		}
		p := math.Exp(k * math.Log(eg/(eg+eo)))
		if multi {
			pr := 1.0
			for i := 0; i < seen; i++ {
				pr *= float64(ng-i) / float64(ng+no-i)
			}
			p = math.Max(p, pr)
		}
		return math.Min(p, 1)
	}
	switch {
	case !m.inBase:
		// New only when it matters: a function that appears with a
		// sample or two is noise, not news. decide adjusts P with the
		// other functions' tests.
		row.Head.Metric = pooled(1)
		row.Delta = row.Head.Metric
		row.Verdict = Unchanged
		if c.min.sizeable(row.Head.Metric) {
			row.presence, row.P, row.Test = New, distinct(1), testPresence
		}
		return row
	case !m.inHead:
		row.Base.Metric = pooled(0)
		row.Delta = -row.Base.Metric
		row.Verdict = Unchanged
		if c.min.sizeable(row.Base.Metric) {
			row.presence, row.P, row.Test = Gone, distinct(0), testPresence
		}
		return row
	}
	row.Base.Metric = f.rate[0] * display
	row.Head.Metric = f.rate[1] * display
	row.Relative = math.Expm1(f.lfc)
	if seenInEveryRun(m) {
		// The fitted (weighted geometric) means, in the metric's unit.
		row.Base.Metric = math.Exp(logMean(m, e, head, 0)) * display
		row.Head.Metric = row.Base.Metric * math.Exp(f.lfc)
	} else if row.Base.Metric > 0 && row.Head.Metric > 0 {
		// Absent from some runs: the pooled rates, and their ratio.
		row.Relative = row.Head.Metric/row.Base.Metric - 1
	} else {
		row.Relative = 0 // absent from every run of a side: no ratio
	}
	row.Delta = row.Head.Metric - row.Base.Metric
	switch {
	case exact && !multi:
		row.Test = testExact
		row.pUp, row.pDown = 1, 1
		if row.Delta > 0 {
			row.pUp = 0
		} else if row.Delta < 0 {
			row.pDown = 0
		}
	case multi && s.Assume != AssumeModel:
		b, h := perRunValues(m, e, head, display)
		var c benchmath.Comparison
		row.Test, c = s.compareRuns(b, h)
		for _, w := range c.Warnings {
			row.Warnings = append(row.Warnings, w.Error())
		}
		if row.Test == testMannWhitney {
			row.tooFew = rankTooFew(c)
		}
		row.pUp, row.pDown = c.P/2, 1-c.P/2
		if f.lfc < 0 {
			row.pUp, row.pDown = row.pDown, row.pUp
		}
	default:
		row.Test = testModeratedT
		if !multi {
			row.Test = testPairT
		}
		row.pUp, row.pDown = f.pUp, f.pDwn
		if exact {
			row.Test = testExactT
		}
	}
	row.P = row.pUp
	if row.Delta < 0 {
		row.P = row.pDown
	}
	row.tested = true
	return row
}

// weight is a function's share of the false-discovery budget, before its
// test is seen: in proportion to how small a relative change of it can
// count (both minimum effects reached), up to 1 for functions so large
// that the relative minimum alone decides. A function of 0.5% of the
// profile must double to change by 0.5 share points; one of 5% needs 10%.
// Spreading the budget so keeps the many small functions of a real
// profile, which seldom change by enough to count, from hiding a
// regression of a large one.
func (m minimum) weight(row *Row) float64 {
	v := math.Max(row.Base.Metric, row.Head.Metric)
	var floor float64
	switch m.mode {
	case Share, PerAnchor:
		floor = m.share
	case PerOp:
		floor = float64(m.absolute) / m.runOps
	default:
		floor = float64(m.absolute)
	}
	if !(floor > 0) || !(m.relative > 0) {
		return 1
	}
	return math.Min(1, v*m.relative/floor)
}

// logMean is the unweighted mean over one side's runs of ln(k/e), as the
// model takes it, for the displayed value.
func logMean(m *measured, e []float64, head []bool, g int) float64 {
	var sum float64
	var n int
	for j := range m.k {
		if grp(head[j]) == g {
			sum += logRate(m.k[j], e[j])
			n++
		}
	}
	return sum / float64(n)
}

// perRunValues are the normalised metric per run, for the rank and Welch
// tests.
func perRunValues(m *measured, e []float64, head []bool, display float64) (b, h []float64) {
	for j := range m.k {
		v := m.k[j] / e[j] * display
		if head[j] {
			h = append(h, v)
		} else {
			b = append(b, v)
		}
	}
	return b, h
}

// values are one function's raw means over each side's runs.
func (s *engine) values(m *measured, runs []*run, head []bool) (Value, Value) {
	var v [2]Value
	var n [2]int
	for j, r := range runs {
		g := grp(head[j])
		n[g]++
		f := r.get(m.id)
		if f == nil {
			continue
		}
		v[g].Self += f.self
		v[g].Total += f.total
		v[g].SelfShare += f.selfShare
		v[g].TotalShare += f.totShare
		_, k := f.metric(s.Metric)
		v[g].Samples += k
	}
	for g := range v {
		v[g].Self /= int64(n[g])
		v[g].Total /= int64(n[g])
		v[g].SelfShare /= float64(n[g])
		v[g].TotalShare /= float64(n[g])
	}
	return v[0], v[1]
}
