package diff

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/internal/stats"
	"golang.org/x/perf/benchmath"
)

// Stage three, verdicts: the false-discovery correction across the
// comparisons, the verdict of each row, near misses, the noise's and the
// tests' warnings, and the rows' order.

// decide adjusts the p-values of the tested rows of one or several
// comparisons together (CompareEach: one per benchmark, the false-discovery
// rate held across all of them), decides them, and gives power advice.
//
// The family is every function present on both sides that is large
// enough on one of them for its change to reach the absolute minimum
// effect, and, in a family of their own, every sizeable function on one
// side only (whether it is new or gone): chosen by size, never by the observed change, since
// keeping only the functions that moved most would shrink the correction
// and let noise through. Benjamini–Hochberg runs over the whole family
// twice: on the one-sided p-values for "slower" (the gate's question) and
// for "faster". The minimum effect applies after the adjustment.
// Functions outside Settings.Gate are a family of their own, which only
// finds near misses.
func decide(cs []*comparison) {
	type member struct {
		c   *comparison
		row *Row
	}
	// Families: gated and ungated, tested and on one side only. Functions
	// on one side only are adjusted among themselves: many of them are
	// small, and in one family their small weights would raise the
	// weights, and lower the q, of the large functions tested.
	fams := map[[2]bool][]member{}
	for _, c := range cs {
		for i := range c.rep.Rows {
			row := &c.rep.Rows[i]
			switch {
			case row.presence != "":
			case !row.tested:
				continue
			case !c.min.sizeable(math.Max(row.Base.Metric, row.Head.Metric)):
				row.Verdict, row.Q = Unchanged, 1
				continue
			}
			k := [2]bool{row.Ungated, row.presence != ""}
			fams[k] = append(fams[k], member{c, row})
		}
	}
	for _, k := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		fam := fams[k]
		up := make([]float64, len(fam))
		down := make([]float64, len(fam))
		w := make([]float64, len(fam))
		for n, m := range fam {
			row := m.row
			up[n], down[n] = row.pUp, row.pDown
			switch row.presence {
			case New:
				up[n], down[n] = row.P, 1
			case Gone:
				up[n], down[n] = 1, row.P
			}
			w[n] = m.c.min.weight(row)
		}
		qUp, qDown := stats.WeightedBH(up, w), stats.WeightedBH(down, w)
		for n, m := range fam {
			s, row := m.c.eng, m.row
			a := s.Alpha / math.Max(float64(len(fam)), 1)
			row.Q = qUp[n]
			if row.Delta < 0 {
				row.Q = qDown[n]
			}
			if row.presence != "" {
				if row.Q < s.Alpha && !row.Ungated {
					row.Verdict = row.presence
				}
				continue
			}
			if f := m.c.fns[row.idx].fit; row.tested && f != nil && !(m.c.exact && !m.c.multi) {
				row.MinDetectable, row.RunsNeeded = detectable(f.se, f.df, a, s.MinRelative, f.perRun)
			}
			s.verdict(row, m.c.min.bigEnough(row))
			if row.Ungated && row.Verdict != Unchanged {
				if row.Verdict == Regressed {
					row.NearMiss = fmt.Sprintf("%s, %s, q=%.3g: significant, but not gated (outside the gated functions; gate every function with diff.WithGate(regexp.MustCompile(\".\")))",
						pct(row.Relative), fmtP(row.P), row.Q)
				}
				row.Verdict = Unchanged
			}
		}
	}
}

// conclude is the stage after decide and couple. In: the decided rows,
// the runs and the noise. Out: the report's near misses, warnings,
// renames, headline, and its rows in order, what needs attention first.
func conclude(c *comparison) {
	s, rep, b, h := c.eng, c.rep, c.b, c.h
	c.nearMisses()
	if len(b.runs) == 1 && len(h.runs) == 1 && !c.exact {
		// With several runs on one side the noise is learned from
		// them (fitRuns), and the report's noise line says so.
		rep.Warnings = append(rep.Warnings, pairWarning(len(b.runs), len(h.runs), c.noise))
	}
	if c.multi && s.Assume == AssumeNothing && !c.exact {
		fam := 0
		for _, row := range rep.Rows {
			if row.tested && c.min.sizeable(math.Max(row.Base.Metric, row.Head.Metric)) {
				fam++
			}
		}
		if w := rankLimit(len(b.runs), len(h.runs), fam, s.Alpha); w != "" {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	s.renames(rep)
	rep.Headline = s.headline(b, h)
	rep.Headline.unit = b.sum.Unit
	c.paidBack()
	sortRows(rep.Rows)
	rep.Warnings = append(rep.Warnings, testWarnings(rep.Rows, "functions", s.Alpha)...)
	if w := noiseWarning(c.noise); w != "" && s.Assume == AssumeModel {
		rep.Warnings = append(rep.Warnings, w)
	}
}

// nearMissQ is the adjusted p-value, as a multiple of the false-discovery
// rate, below which a gated slowdown of at least the minimum change that
// is not a regression is a near miss: at alpha 0.05, q < 0.25.
const nearMissQ = 5

// nearMisses marks the gated rows that are suspicious without failing:
// slower by at least the minimum change, q above the false-discovery rate
// but within nearMissQ times it.
func (c *comparison) nearMisses() {
	s, rep := c.eng, c.rep
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if !row.tested || row.Ungated || row.Verdict != Unchanged || !(row.Delta > 0) || !c.min.bigEnough(row) {
			continue
		}
		if row.Q >= s.Alpha && row.Q < math.Min(nearMissQ*s.Alpha, 0.5) {
			row.NearMiss = fmt.Sprintf("%s with %s, but q=%.3g is above the false-discovery rate %g: more runs would tell",
				pct(row.Relative), fmtP(row.P), row.Q, s.Alpha)
		}
	}
}

// verdict judges a tested row from its adjusted p-value, Q, once big says
// whether its change reaches the minimum effect: below it a change is no
// discovery, however certain, and Q says so.
func (s *engine) verdict(row *Row, big bool) {
	switch {
	case !big:
		row.Verdict, row.Q = Unchanged, 1
	case row.Q >= s.Alpha:
		row.Verdict = Unchanged
	case row.Delta > 0:
		row.Verdict = Regressed
	default:
		row.Verdict = Improved
	}
}

// pairWarning says what one run a side can and cannot tell.
func pairWarning(nb, nh int, nz noise) string {
	how := fmt.Sprintf("run-to-run noise is taken as a coefficient of variation of %.0f%% per function", 100*math.Sqrt(nz.phi))
	if nz.source == noisePair {
		how += fmt.Sprintf(", learned from how %d functions' shares spread between the two profiles", nz.used)
	} else {
		how += " (too few functions to learn it from the profiles)"
	}
	return fmt.Sprintf("%d base and %d head run(s): %s; changes smaller than that cannot be told from noise: compare several runs a side (hotbudget record)", nb, nh, how)
}

// noiseWarning says when several runs a side could not learn the noise
// from the functions, what was taken instead, and what fixes it. When the
// profiles hold too few functions for longer runs to fix it (a program of
// three functions), it is no warning: the report's noise line says what was
// assumed.
func noiseWarning(nz noise) string {
	if nz.resDF <= 0 || nz.used >= minRunsFunctions || nz.present < minRunsFunctions {
		return ""
	}
	how := fmt.Sprintf("the least assumed, %.1f%%", 100*math.Sqrt(nz.phi))
	if nz.source == noiseWhole {
		how = fmt.Sprintf("the whole profile's own run-to-run spread, %.1f%%", 100*math.Sqrt(nz.phi))
	}
	return fmt.Sprintf("run-to-run noise not learned: only %d function(s) have %d samples a run in every run (%d needed), so functions are taken to vary as %s; longer runs (hotbudget record --benchtime, perfassert.MinSamples) learn it",
		nz.used, minNoiseCount, minRunsFunctions, how)
}

func noiseReport(nz noise) Noise {
	out := Noise{Source: nz.source, Dispersion: nz.phi, Functions: nz.used, ResidualDF: nz.resDF, Outliers: nz.outliers, Whole: nz.whole, present: nz.present}
	if math.IsInf(nz.priorDF, 1) {
		out.PriorDF = -1
	} else {
		out.PriorDF = nz.priorDF
	}
	return out
}

// compareRuns tests several runs a side under s.Assume and names the test.
func (s *engine) compareRuns(base, head []float64) (string, benchmath.Comparison) {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = s.Alpha
	b, h := benchmath.NewSample(base, &th), benchmath.NewSample(head, &th)
	if s.Assume == AssumeNormal {
		return testWelchT, benchmath.AssumeNormal.Compare(b, h)
	}
	return testMannWhitney, benchmath.AssumeNothing.Compare(b, h)
}

// rankLimit warns when the Mann–Whitney test cannot flag a function that
// got slower on its own: its smallest one-sided p-value with n1 and n2
// runs, 1/C(n1+n2, n1), times the m functions tested (the
// Benjamini–Hochberg adjustment of the smallest p) is not below alpha.
func rankLimit(n1, n2, m int, alpha float64) string {
	if m == 0 {
		return ""
	}
	minP := stats.RankMinP(n1, n2)
	if minP >= alpha || minP*float64(m) < alpha {
		return "" // too few runs for any test: benchmath says so itself
	}
	return fmt.Sprintf("with %d and %d runs the Mann-Whitney test's smallest p-value is %.2g, and %d functions are tested: a regression of one function alone cannot be flagged at false-discovery rate %g; take more runs, or use the default model (diff.WithAssumption(diff.AssumeModel))",
		n1, n2, minP, m, alpha)
}

// rankTooFew returns n1 and n2 when the Mann–Whitney test of c could not
// reach alpha whatever the runs measured: its smallest two-sided p-value,
// 2/C(n1+n2, n1), is not below alpha (benchmath then warns "need >= N
// samples" on the row).
func rankTooFew(c benchmath.Comparison) [2]int {
	if c.N1 == 0 || c.N2 == 0 {
		return [2]int{}
	}
	if 2*stats.RankMinP(c.N1, c.N2) < c.Alpha {
		return [2]int{}
	}
	return [2]int{c.N1, c.N2}
}

// testWarnings says once per run count in the report, with how many rows
// it held for, that the Mann–Whitney test had too few runs to flag
// anything (Row.tooFew), so that a user who reads only the summary sees
// it; the rows keep benchmath's own words.
func testWarnings(rows []Row, noun string, alpha float64) []string {
	tooFew := make([][2]int, 0, len(rows))
	for _, row := range rows {
		if row.Test == testMannWhitney {
			tooFew = append(tooFew, row.tooFew)
		}
	}
	return stats.RankWarnings(tooFew, noun, alpha)
}

// verdictRank puts what needs attention first.
func verdictRank(v Verdict) int {
	switch v {
	case Regressed:
		return 0
	case Improved:
		return 1
	case New:
		return 2
	case Gone:
		return 3
	}
	return 4
}

func sortRows(rows []Row) {
	// Sorted as small keys, then moved once: rows are large, and a stable
	// sort moves its elements O(n log n) times.
	type sortKey struct {
		rank int
		size float64 // |Delta|, or the larger metric when unchanged
		row  *Row
		at   int
	}
	keys := make([]sortKey, len(rows))
	for i := range rows {
		a := &rows[i]
		k := sortKey{rank: verdictRank(a.Verdict), size: math.Abs(a.Delta), row: a, at: i}
		if a.Verdict == Unchanged {
			k.size = math.Max(a.Base.Metric, a.Head.Metric)
		}
		if math.IsNaN(k.size) {
			k.size = math.Inf(-1) // last, and a consistent order
		}
		keys[i] = k
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.row.Name, b.row.Name); c != 0 {
			return c
		}
		if c := strings.Compare(a.row.File, b.row.File); c != 0 {
			return c
		}
		return a.at - b.at // stable
	})
	sorted := make([]Row, len(rows))
	for k, key := range keys {
		sorted[k] = *key.row
	}
	copy(rows, sorted)
}

// minimum is the smallest change a comparison counts, in its units: the
// settings' minimum changes and, in PerOp mode, the most operations one
// run did, which turns a time per operation back into time per run.
type minimum struct {
	mode            Mode
	relative, share float64
	absolute        time.Duration
	runOps          float64
}

// minimumOf is the minimum change of settings s with runOps operations in
// the largest run.
func minimumOf(s *Settings, runOps float64) minimum {
	return minimum{mode: s.Mode, relative: s.MinRelative, share: s.MinShare, absolute: s.MinAbsolute, runOps: runOps}
}

// minimum is the minimum change of the engine's settings and runs.
func (s *engine) minimum() minimum { return minimumOf(&s.Settings, s.runOps) }

// sizeable reports whether a normalised metric value reaches the minimum
// absolute change, so that a function appearing or vanishing at that size
// is worth a verdict of its own.
func (m minimum) sizeable(v float64) bool {
	switch m.mode {
	case Share, PerAnchor:
		return v >= m.share
	case PerOp:
		// Per-operation times are small: summed over the operations of
		// a run, the value must reach MinAbsolute.
		return v*m.runOps >= float64(m.absolute)
	}
	return v >= float64(m.absolute)
}

// bigEnough applies the minimum effect: both the relative and the absolute
// change must reach their minimum.
func (m minimum) bigEnough(row *Row) bool {
	return math.Abs(row.Relative) >= m.relative && m.sizeable(math.Abs(row.Delta))
}
