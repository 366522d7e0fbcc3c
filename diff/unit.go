package diff

import (
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// unitOf is the unit of a report's values: the base side's, time when unset.
func unitOf(sd Side) string {
	if sd.Unit == "" {
		return analysis.UnitTime
	}
	return sd.Unit
}

// fmtValue writes a value of the report (a total, a function's self or
// total, a metric in absolute and per-op modes) in its unit.
func (r *Report) fmtValue(v float64) string { return textfmt.Value(unitOf(r.Base), v) }

// quantity names what the report's values are: "time", "bytes" or
// "objects", for "self time as share of the profile" and the headline.
func quantity(unit string) string {
	switch unit {
	case analysis.UnitBytes:
		return "bytes"
	case analysis.UnitCount:
		return "objects"
	}
	return "time"
}
