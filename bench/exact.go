package bench

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hotbudget/hotbudget/diff"
)

// Benchmark metrics that are counts, not measurements: B/op and allocs/op
// (go test -benchmem, b.ReportAllocs) count what the benchmark allocated
// per op. They are exact: a change is a change, judged without a test or
// a p-value; time stays statistical.

// exactUnit reports whether a benchmark unit is an exact count.
func exactUnit(unit string) bool {
	return unit == "B/op" || unit == "allocs/op"
}

// grew reports whether an exact count went from base to head beyond the
// tolerance: allocs/op by more than tol.Objects; B/op by more than
// tol.Bytes and tol.Relative of the base. tol.Once does not apply: go test
// has already divided by the ops.
func grew(tol diff.AllocTolerance, unit string, base, head float64) bool {
	if unit == "allocs/op" {
		return head-base > tol.Objects
	}
	return head-base > max(tol.Bytes, tol.Relative*base)
}

// exactVerdict judges an exact metric's row by its medians when the runs
// of each side agree within the tolerance, as counts of deterministic code
// do: worse beyond the tolerance regressed, better beyond it improved,
// else unchanged; the row's Test is "exact", its P and Q 0 for a
// change and 1 otherwise: no statistics were computed. When the runs of a
// side disagree beyond the tolerance (a benchmark whose sync.Pool is
// refilled after garbage collections, which come at different times in
// each run), the counts are not exact here: it adds a warning to the row,
// changes nothing else and returns false, and the caller judges the row
// statistically as a measurement.
func exactVerdict(row *Row, base, head []float64, tol diff.AllocTolerance) bool {
	for _, side := range [][]float64{base, head} {
		lo, hi := slices.Min(side), slices.Max(side)
		if grew(tol, row.Unit, lo, hi) {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s varies between runs (%s to %s): not a deterministic count here (a pool refilled after garbage collections?), judged as a measurement",
				row.Unit, strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)))
			return false
		}
	}
	row.Test = "exact"
	if row.Base.Median != 0 {
		row.Relative = row.Head.Median/row.Base.Median - 1
	}
	b, h := row.Base.Median, row.Head.Median
	switch {
	case grew(tol, row.Unit, b, h):
		row.Verdict, row.P, row.Q = diff.Regressed, 0, 0
	case grew(tol, row.Unit, h, b):
		row.Verdict, row.P, row.Q = diff.Improved, 0, 0
	default:
		row.Verdict, row.P, row.Q = diff.Unchanged, 1, 1
	}
	return true
}
