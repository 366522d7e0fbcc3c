package diff

import (
	"fmt"
	"slices"
	"strconv"
)

// Benchmark metrics that are counts, not measurements: B/op and allocs/op
// (go test -benchmem, b.ReportAllocs) count what the benchmark allocated
// per op. They are exact: a change is a change, judged without a test or
// a p-value; time stays statistical.

// exactBenchUnit reports whether a benchmark unit is an exact count.
func exactBenchUnit(unit string) bool {
	return unit == "B/op" || unit == "allocs/op"
}

// exactBenchVerdict judges an exact metric's row by its medians when the
// runs of each side agree within the tolerance, as counts of deterministic
// code do: worse beyond the tolerance (allocs/op: more than tol.Objects;
// B/op: more than tol.Bytes and tol.Relative of the base; tol.Once does not
// apply: go test has already divided by the ops) regressed,
// better beyond it improved, else unchanged; the row's Test is "exact",
// its P and Q 0 for a change and 1 otherwise: no statistics were computed.
// When the runs of a side disagree beyond the tolerance (a benchmark whose
// sync.Pool is refilled after garbage collections, which come at different
// times in each run), the counts are not exact here: it adds a warning to
// the row, changes nothing else and returns false, and the caller judges
// the row statistically as a measurement.
func exactBenchVerdict(row *Row, base, head []float64, tol AllocTolerance) bool {
	count := func(v float64) AllocCount {
		if row.Unit == "allocs/op" {
			return AllocCount{Objects: v}
		}
		return AllocCount{Bytes: v}
	}
	for _, side := range [][]float64{base, head} {
		lo, hi := slices.Min(side), slices.Max(side)
		if tol.grew(count(lo), count(hi), 0) {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s varies between runs (%s to %s): not a deterministic count here (a pool refilled after garbage collections?), judged as a measurement",
				row.Unit, strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)))
			return false
		}
	}
	row.Test = "exact"
	if row.Base.Metric != 0 {
		row.Relative = row.Head.Metric/row.Base.Metric - 1
	}
	b, h := count(row.Base.Metric), count(row.Head.Metric)
	switch {
	case tol.grew(b, h, 0):
		row.Verdict, row.P, row.Q = Regressed, 0, 0
	case tol.grew(h, b, 0):
		row.Verdict, row.P, row.Q = Improved, 0, 0
	default:
		row.Verdict, row.P, row.Q = Unchanged, 1, 1
	}
	return true
}
