package diff

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// Stage one, normalise: every function's metric per run, and the exposure
// each run gives it (what its count is divided by: the rest of the profile
// in share mode, the run's work per op, the sample period), so that the
// model compares rates.

// normalise is stage one. In: the runs (comparison.runs, head) and the
// settings. Out: the function columns in key order, each with its
// metric per run (measured) and exposures (e, ev, display, scale), the
// exposures of a function outside the yardstick (general), and the
// report's warnings that the sides share little or that most shares
// moved; an error when they share almost nothing.
func normalise(c *comparison) error {
	c.fns = c.measure(c.eng.Metric)
	if err := overlap(c.fns, c.head, c.rep, c.eng.Key); err != nil {
		return err
	}
	c.general = c.exposures(c.fns, &c.rep.Warnings)
	return nil
}

// measured is one key's raw measurements over all runs (base runs first).
type measured struct {
	id     int32 // key id
	name   string
	file   string
	t      []float64 // the compared metric's time per run, ns
	k      []float64 // effective samples per run: t over the run's period
	inBase bool
	inHead bool
}

// measure gathers every key's metric per run, base runs first, in key
// order: the measured part of a function column.
func (c *comparison) measure(metric Metric) []function {
	s, runs, head := c.eng, c.runs, c.head
	n := len(runs)
	fns := make([]function, len(s.keys))
	at := make([]int32, len(s.keys)) // key id -> column
	buf := make([]float64, 2*n*len(s.keys))
	for i, id := range s.keyOrder() {
		at[id] = int32(i)
		m := &fns[i].measured
		m.id, m.name, m.file = id, s.keys[id].name, s.keys[id].file
		m.t, buf = buf[:n:n], buf[n:]
		m.k, buf = buf[:n:n], buf[n:]
	}
	for j, r := range runs {
		for id := range r.fn {
			f := &r.fn[id]
			if !f.present {
				continue
			}
			m := &fns[at[id]].measured
			t, _ := f.metric(metric)
			m.t[j] = float64(t)
			m.k[j] = float64(t) / r.period
			if t > 0 || f.self > 0 || f.total > 0 {
				if head[j] {
					m.inHead = true
				} else {
					m.inBase = true
				}
			}
		}
	}
	return fns
}

// keyOrder returns the key ids sorted by key.
func (s *engine) keyOrder() []int32 {
	if len(s.order) != len(s.keys) {
		s.order = make([]int32, len(s.keys))
		for i := range s.order {
			s.order[i] = int32(i)
		}
		slices.SortFunc(s.order, func(a, b int32) int { return strings.Compare(s.keys[a].key, s.keys[b].key) })
	}
	return s.order
}

// overlap refuses two sides that share almost nothing (two different
// programs) and warns when they share little.
func overlap(fns []function, head []bool, rep *Report, key Key) error {
	var shared, all [2]float64
	for i := range fns {
		m := &fns[i]
		for j := range head {
			g := grp(head[j])
			all[g] += m.t[j]
			if m.inBase && m.inHead {
				shared[g] += m.t[j]
			}
		}
	}
	if all[0] <= 0 || all[1] <= 0 {
		return nil
	}
	fb, fh := shared[0]/all[0], shared[1]/all[1]
	switch {
	case fb < 0.1 || fh < 0.1:
		hint := "they are not profiles of the same program (or one side is filtered to other threads or functions)"
		if key != KeyName {
			hint += fmt.Sprintf("; functions are matched by %s: do file paths or lines differ between the builds? (diff.WithKey(diff.KeyName))", key)
		}
		return &UnrelatedError{BaseShared: fb, HeadShared: fh, Hint: hint}
	case fb < 0.5 || fh < 0.5:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"base and head share functions holding only %.1f%% of the base's time and %.1f%% of the head's: most of the profile is new or gone, so per-function verdicts say little; are both sides the same program?", 100*fb, 100*fh))
	}
	return nil
}

// exposures fills, per function and run, the exposure the model divides
// counts by (e), the known variance of its logarithm (ev), the factor that
// turns a fitted rate into the displayed metric (display), and the scale
// (how the rest of the profile moved, head over base; 1 outside Share
// mode). It returns the exposures of a function outside the yardstick,
// and adds to warnings when most shares moved.
func (c *comparison) exposures(fns []function, warnings *[]string) (general []float64) {
	s, runs, head := c.eng, c.runs, c.head
	n := len(runs)
	general = make([]float64, n)
	if s.Mode != Share {
		for j, r := range runs {
			general[j] = r.unit / r.period
		}
		zero := make([]float64, n) // read-only, shared
		for i := range fns {
			f := &fns[i]
			f.e, f.ev = general, zero
			f.display, f.scale = 1, 1
		}
		return general
	}
	// Share: each run's effective samples, corrected for how the rest of
	// the profile moved (median of ratios over the reference functions).
	total := make([]float64, n)
	for j, r := range runs {
		total[j] = float64(r.table.Total) / r.period
	}
	copy(general, total)
	var refs []int
	for i := range fns {
		if isReference(&fns[i].measured, total, head) {
			refs = append(refs, i)
		}
	}
	if len(refs) < 3 {
		// Too few functions to tell how the rest moved: each function is
		// compared with the rest of its own profile.
		for i := range fns {
			m := &fns[i]
			if !m.inBase || !m.inHead {
				// New or gone: its share of its own profile (against the
				// rest of the profile it would read as odds, 69% as 223%).
				m.e, m.ev = slices.Clone(total), make([]float64, n)
				m.display, m.scale = 1, 1
				continue
			}
			m.e, m.ev = make([]float64, n), make([]float64, n)
			var lb, lh float64
			var nb, nh int
			for j := range runs {
				rest := total[j] - m.k[j]
				if rest >= 1 && m.k[j] <= 0.9*total[j] {
					m.e[j], m.ev[j] = rest, 1/rest
				} else {
					m.e[j] = total[j] // nearly everything: no rest to compare with
				}
				l := math.Log(m.e[j] / total[j])
				if head[j] {
					lh += l
					nh++
				} else {
					lb += l
					nb++
				}
			}
			m.display = math.Exp(lb / float64(nb))
			m.scale = math.Exp(lh/float64(nh) - lb/float64(nb))
		}
		return general
	}
	// The yardstick: the majority of the reference functions whose ratio
	// head/base is closest to the typical (median) ratio. A function is
	// measured against the yardstick without itself, run by run, so that
	// neither its own change nor another changed function moves it, and
	// the yardstick's own sampling noise (the variance of the log of its
	// samples) counts.
	ratio := make([]float64, len(refs))
	for r, i := range refs {
		var sh [2]float64
		var nr [2]int
		for j := range runs {
			g := grp(head[j])
			sh[g] += fns[i].k[j] / total[j]
			nr[g]++
		}
		ratio[r] = math.Log(sh[1] / float64(nr[1]) / (sh[0] / float64(nr[0])))
	}
	typical := stats.Median(ratio)
	order := make([]int, len(refs))
	for r := range order {
		order[r] = r
	}
	sort.SliceStable(order, func(a, b int) bool {
		return math.Abs(ratio[order[a]]-typical) < math.Abs(ratio[order[b]]-typical)
	})
	majority := map[int]bool{} // index into fns
	for _, r := range order[:len(refs)/2+1] {
		majority[refs[r]] = true
	}
	var members []int
	for i := range majority {
		members = append(members, i)
	}
	sort.Ints(members)
	yard := make([]float64, n) // the whole yardstick's samples per run
	for _, i := range members {
		for j := range runs {
			yard[j] += fns[i].k[j]
		}
	}
	// With enough members, a run's factor is the median of the members'
	// log shares (each centred on its mean over the runs), as DESeq2's
	// size factors: robust to the one member whose time a JIT moved in
	// that run. With few, their summed samples.
	centred := map[int][]float64{}
	if len(members) > yardMedian {
		for _, i := range members {
			c := make([]float64, n)
			var sum float64
			for j := range runs {
				c[j] = math.Log(fns[i].k[j] / total[j])
				sum += c[j]
			}
			for j := range c {
				c[j] -= sum / float64(n)
			}
			centred[i] = c
		}
	}
	medianFactor := func(skip int) ([]float64, []float64) {
		f := make([]float64, n)
		v := make([]float64, n)
		col := make([]float64, 0, len(members))
		for j := range runs {
			col = col[:0]
			var inv float64
			for _, i := range members {
				if i != skip {
					col = append(col, centred[i][j])
					inv += 1 / fns[i].k[j]
				}
			}
			f[j] = math.Exp(stats.Median(col))
			// The variance of a median of m values, each with sampling
			// variance 1/k: about π/2 times that of their mean.
			v[j] = math.Pi / 2 * inv / float64(len(col)*len(col))
		}
		return f, v
	}
	var allF, allV []float64
	if len(centred) > 0 {
		allF, allV = medianFactor(-1)
	}
	// exposure is the exposures of function i (-1: any function outside
	// the yardstick, which all share them), and its scale.
	exposure := func(i int) (e, ev []float64, scale float64) {
		e, ev = make([]float64, n), make([]float64, n)
		ys := make([]float64, n) // ln of the yardstick's share per run
		if len(centred) > 0 {
			f, v := allF, allV
			if i >= 0 {
				f, v = medianFactor(i)
			}
			for j := range runs {
				e[j], ev[j] = total[j]*f[j], v[j]
				ys[j] = math.Log(f[j])
			}
		} else {
			for j := range runs {
				y := yard[j]
				if i >= 0 {
					y -= fns[i].k[j]
				}
				e[j], ev[j] = y, 1/y
				ys[j] = math.Log(y / total[j])
			}
		}
		// Exposures are the yardstick's samples over its mean base share,
		// so that base rates read as shares.
		var lb, lh float64
		var nb, nh int
		for j := range runs {
			if head[j] {
				lh += ys[j]
				nh++
			} else {
				lb += ys[j]
				nb++
			}
		}
		ref := math.Exp(lb / float64(nb))
		for j := range runs {
			e[j] /= ref
		}
		return e, ev, math.Exp(lh/float64(nh) - lb/float64(nb))
	}
	var moved float64
	var rest struct {
		e, ev []float64
		scale float64
	}
	for i := range fns {
		f := &fns[i]
		f.display = 1
		if majority[i] {
			f.e, f.ev, f.scale = exposure(i)
			continue
		}
		if rest.e == nil {
			rest.e, rest.ev, rest.scale = exposure(-1)
			copy(general, rest.e) // the whole yardstick, as any other function's
			moved = rest.scale
		}
		// Read-only, shared by every function outside the yardstick.
		f.e, f.ev, f.scale = rest.e, rest.ev, rest.scale
	}
	if len(majority) == len(fns) {
		moved = fns[0].scale
	}
	if sc := moved; sc < 0.5 || sc > 2 {
		*warnings = append(*warnings, fmt.Sprintf(
			"the shares of most functions moved by a factor of %.3g: the comparison assumes most functions did not change; are both sides the same program and build (one under -race, say)?", sc))
	}
	return general
}

// isReference reports whether a function may stand for how the rest of
// the profile moved: present in every run with enough samples for its
// share to be measured, and at least 1% of the profile on one side.
func isReference(m *measured, total []float64, head []bool) bool {
	var sum float64
	var sh [2]float64
	var n [2]int
	for j, k := range m.k {
		if k <= 0 || total[j] <= 0 {
			return false
		}
		sum += k
		g := grp(head[j])
		sh[g] += k / total[j]
		n[g]++
	}
	if sum/float64(len(m.k)) < 2*minNoiseCount {
		return false
	}
	return sh[0]/float64(n[0]) >= 0.01 || sh[1]/float64(n[1]) >= 0.01
}
