package diff

// Benchmark metrics that are counts, not measurements: B/op and allocs/op
// (go test -benchmem, b.ReportAllocs) count what the benchmark allocated
// per op. They are exact: a change is a change, judged without a test or
// a p-value; time stays statistical.

// exactBenchUnit reports whether a benchmark unit is an exact count.
func exactBenchUnit(unit string) bool {
	return unit == "B/op" || unit == "allocs/op"
}

// exactBenchVerdict judges an exact metric's row by its medians (equal to
// every run's value when the runs agree, as allocation counts do): worse
// beyond the tolerance (allocs/op: more than tol.Objects; B/op: more than
// tol.Bytes and tol.Relative of the base) regressed, better beyond it
// improved, else unchanged. The row's Test is "exact", its P and Q 0 for a
// change and 1 otherwise: no statistics were computed.
func exactBenchVerdict(row *Row, tol AllocTolerance) {
	row.Test = "exact"
	if row.Base.Metric != 0 {
		row.Relative = row.Head.Metric/row.Base.Metric - 1
	}
	var base, head AllocCount
	if row.Unit == "allocs/op" {
		base.Objects, head.Objects = row.Base.Metric, row.Head.Metric
	} else {
		base.Bytes, head.Bytes = row.Base.Metric, row.Head.Metric
	}
	switch {
	case tol.grew(base, head):
		row.Verdict, row.P, row.Q = Regressed, 0, 0
	case tol.grew(head, base):
		row.Verdict, row.P, row.Q = Improved, 0, 0
	default:
		row.Verdict, row.P, row.Q = Unchanged, 1, 1
	}
}
