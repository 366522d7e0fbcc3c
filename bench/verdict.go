package bench

import (
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/stats"
	"golang.org/x/perf/benchmath"
)

// The tests of a benchmark's runs, and how their results are adjusted and
// ordered.

// compareRuns tests a benchmark's runs under s.Assume and names the test.
func (s *Settings) compareRuns(base, head []float64) (string, benchmath.Comparison) {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = s.Alpha
	b, h := benchmath.NewSample(base, &th), benchmath.NewSample(head, &th)
	if s.Assume == diff.AssumeNormal {
		return "welch-t", benchmath.AssumeNormal.Compare(b, h)
	}
	return "mann-whitney", benchmath.AssumeNothing.Compare(b, h)
}

// rankTooFew returns n1 and n2 when the Mann–Whitney test of c could not
// reach alpha whatever the runs measured: its smallest two-sided p-value,
// 2/C(n1+n2, n1), is not below alpha (benchmath then warns "need >= N
// samples" on the row).
func rankTooFew(c benchmath.Comparison) [2]int {
	if c.N1 == 0 || c.N2 == 0 || 2*stats.RankMinP(c.N1, c.N2) < c.Alpha {
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
		if row.Test == "mann-whitney" {
			tooFew = append(tooFew, row.tooFew)
		}
	}
	return stats.RankWarnings(tooFew, noun, alpha)
}

// benjaminiHochberg sets Row.Q of rows[idx...] to their adjusted p-values.
func benjaminiHochberg(rows []Row, idx []int) {
	p := make([]float64, len(idx))
	for k, i := range idx {
		p[k] = rows[i].P
	}
	for k, q := range stats.BH(p) {
		rows[idx[k]].Q = q
	}
}

// verdictRank puts what needs attention first.
func verdictRank(v diff.Verdict) int {
	switch v {
	case diff.Regressed:
		return 0
	case diff.Improved:
		return 1
	case diff.New:
		return 2
	case diff.Gone:
		return 3
	}
	return 4
}
