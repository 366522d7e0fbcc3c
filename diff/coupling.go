package diff

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Stage four, JIT coupling: a function whose time moved to or from its
// caller (inlining, a JIT's choices) is confirmed only when the pair's
// combined time moved too.

// couple is the stage after decide. In: the decided rows, the function
// columns, the runs' call graphs. Out: a regressed or improved row whose
// time a JIT moved to or from a neighbour made unchanged, with a warning
// saying so. It applies to sampled self times under the model.
func couple(c *comparison) {
	s := c.eng
	if s.Metric == Self && s.Assume == AssumeModel && !c.exact {
		c.confirm()
	}
}

// confirm checks every function judged regressed or improved for time a
// JIT moved rather than a change of cost. V8 inlines a callee into its
// caller in some runs and not in others; the callee's samples are then the
// caller's, so one function's self time rises as a neighbour's falls, and
// only their sum is the cost of the code.
//
// With several runs a side the runs show which neighbours are so coupled
// with the function: their log times move against it from run to run
// within a side (correlation of the residuals below −coupling). The change
// is then judged on the function and its coupled neighbours together, and
// stands only if that sum changed the same way (level Alpha): a move
// between them cancels in the sum, a change of the function's own cost
// does not. Neighbours are its direct callers (their self time, each) and
// its direct callees (their self time under it, together).
//
// With one run a side nothing shows coupling: a change is taken for a move
// when a neighbour moved the other way, by at least half as much, and
// significantly.
func (c *comparison) confirm() {
	s, rep, runs, head := c.eng, c.rep, c.runs, c.head
	var cand []*Row
	names := map[string]bool{}
	for i := range rep.Rows {
		if v := rep.Rows[i].Verdict; v == Regressed || v == Improved {
			cand = append(cand, &rep.Rows[i])
			names[rep.Rows[i].Name] = true
		}
	}
	if len(cand) == 0 {
		return
	}
	nb := 0
	for _, h := range head {
		if !h {
			nb++
		}
	}
	multi := nb >= 2 && len(head)-nb >= 2
	callers := directCallers(s, runs, names)
	// The key ids of every caller's name (several under name+file keys).
	keysOf := map[string][]int32{}
	for _, cs := range callers {
		for c := range cs {
			keysOf[c] = nil
		}
	}
	for id, k := range s.keys {
		if ids, ok := keysOf[k.name]; ok {
			keysOf[k.name] = append(ids, int32(id))
		}
	}
	type neighbour struct {
		what string
		k    []float64
	}
	type check struct {
		row  *Row
		what string
		sum  bool // the function with its coupled neighbours
	}
	var checks []check
	var fs []*feature
	for _, row := range cand {
		fn := &c.fns[row.idx]
		m, e := &fn.measured, fn.e
		var nbs []neighbour
		cn := make([]string, 0, len(callers[m.name]))
		for c := range callers[m.name] {
			if len(keysOf[c]) > 0 {
				cn = append(cn, c)
			}
		}
		sort.Strings(cn)
		for _, c := range cn {
			each := make([]float64, len(runs))
			for _, id := range keysOf[c] {
				for j, r := range runs {
					if f := r.get(id); f != nil {
						each[j] += float64(f.self) / r.period
					}
				}
			}
			nbs = append(nbs, neighbour{"its caller " + c, each})
		}
		under := make([]float64, len(runs))
		for j, r := range runs {
			var l float64
			if f := r.get(m.id); f != nil {
				l = float64(f.local) / r.period
			}
			under[j] = math.Max(l-m.k[j], 0)
		}
		nbs = append(nbs, neighbour{"its direct callees under it", under})
		if multi {
			sum := append([]float64(nil), m.k...)
			var with []string
			for _, nb := range nbs {
				if residualCorrelation(m.k, nb.k, e, head) < -coupling {
					for j := range sum {
						sum[j] += nb.k[j]
					}
					with = append(with, nb.what)
				}
			}
			if len(with) == 0 {
				continue
			}
			checks = append(checks, check{row, strings.Join(with, " and "), true})
			fs = append(fs, &feature{k: sum, e: e, ev: fn.ev})
			continue
		}
		for _, nb := range nbs {
			checks = append(checks, check{row, nb.what, false})
			fs = append(fs, &feature{k: nb.k, e: e, ev: fn.ev})
		}
	}
	if len(checks) == 0 {
		return
	}
	n0 := len(fs)
	for i := range c.fns {
		if f := &c.fns[i]; f.inBase && f.inHead {
			fs = append(fs, &feature{k: f.k, e: f.e, ev: f.ev})
		}
	}
	fits, _, _ := fitModel(fs, head, nil, nil)
	done := map[*Row]bool{}
	for n := 0; n < n0; n++ {
		ck, f := checks[n], fits[n]
		row := ck.row
		if done[row] {
			continue
		}
		up := row.Delta > 0
		if ck.sum {
			p := f.pUp
			if !up {
				p = f.pDwn
			}
			if p < s.Alpha && (f.lfc > 0) == up {
				continue
			}
			done[row] = true
			row.Verdict = Unchanged
			row.Warnings = append(row.Warnings, fmt.Sprintf(
				"self time %+.1f%%, but its runs trade time with %s (a JIT inlining in some runs and not in others), and together they changed %+.1f%% (p=%.2g): not a change shown in its cost",
				100*row.Relative, ck.what, 100*math.Expm1(f.lfc), p))
			continue
		}
		self := math.Log1p(row.Relative)
		rel := f.rate[0] / ratePooled(c.fns[row.idx].k, c.fns[row.idx].e, head)
		// The neighbour's change in the function's own terms: how much of
		// its time it is.
		d := rel * math.Expm1(f.lfc)
		p := f.pDwn
		if !up {
			p = f.pUp
		}
		if p >= s.Alpha || math.IsNaN(d) || (up && d > -math.Expm1(self)/2) || (!up && d < -math.Expm1(self)/2) {
			continue
		}
		done[row] = true
		row.Verdict = Unchanged
		row.Warnings = append(row.Warnings, fmt.Sprintf(
			"self time %+.1f%%, while %s changed by %+.1f%% of the function's time (p=%.2g): time moved between them (a JIT inlining in some runs and not in others), not a change of its cost",
			100*row.Relative, ck.what, 100*d, p))
	}
}

// coupling is how strongly a neighbour's time must move against a
// function's from run to run for the two to be judged together.
const coupling = 0.5

// residualCorrelation is the correlation of two functions' log times
// across runs, each taken from its side's mean: how they move together
// from run to run, whatever the change between the sides.
func residualCorrelation(a, b, e []float64, head []bool) float64 {
	ra, rb := residuals(a, e, head), residuals(b, e, head)
	var sab, saa, sbb float64
	for j := range ra {
		sab += ra[j] * rb[j]
		saa += ra[j] * ra[j]
		sbb += rb[j] * rb[j]
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

func residuals(k, e []float64, head []bool) []float64 {
	y := make([]float64, len(k))
	var sum [2]float64
	var n [2]int
	for j := range k {
		y[j] = logRate(k[j], e[j])
		sum[grp(head[j])] += y[j]
		n[grp(head[j])]++
	}
	for j := range y {
		g := grp(head[j])
		y[j] -= sum[g] / float64(n[g])
	}
	return y
}

// ratePooled is the base side's pooled rate of counts k over exposures e.
func ratePooled(k, e []float64, head []bool) float64 {
	var sk, se float64
	for j := range k {
		if !head[j] {
			sk += k[j]
			se += e[j]
		}
	}
	return sk / se
}

// directCallers returns, for each name, the functions directly above it in
// the runs' stacks (itself excluded), named as the comparison names them:
// in each stack the run's table kept, the nearest frame above an
// occurrence of the function that is not the function's own (a recursive
// function's caller is the frame above each occurrence). The runs' stacks
// are the samples the comparison's selection counts.
func directCallers(s *engine, runs []*run, names map[string]bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for n := range names {
		out[n] = map[string]bool{}
	}
	for _, r := range runs {
		name := func(row int32) string { return s.keys[r.rowKey[row]].name }
		want := make([]bool, len(r.rowKey))
		found := false
		for row := range r.rowKey {
			if names[name(int32(row))] {
				want[row], found = true, true
			}
		}
		if !found {
			continue
		}
		for _, st := range r.stacks {
			for i, f := range st.Frames {
				if !want[f] {
					continue
				}
				for _, c := range st.Frames[i+1:] {
					if c != f {
						out[name(f)][name(c)] = true
						break
					}
				}
			}
		}
	}
	return out
}

// seenInEveryRun reports whether the function has samples in every run.
func seenInEveryRun(m *measured) bool {
	for _, k := range m.k {
		if k <= 0 {
			return false
		}
	}
	return true
}
