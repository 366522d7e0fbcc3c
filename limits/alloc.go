package limits

import (
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Allocation quantities: bounded by Limit.Count, measured on heap and
// allocation profiles (go test -memprofile, runtime/pprof's "heap" and
// "allocs", node --heap-prof) as analysis measures time: self is what the
// function allocates itself, total what it and everything it calls
// allocate, a sample counted once where the function recurses.
const (
	SelfAllocs      Quantity = "self allocations"      // objects allocated with the function as the leaf frame
	TotalAllocs     Quantity = "total allocations"     // objects allocated anywhere below the function
	SelfAllocBytes  Quantity = "self allocated bytes"  // bytes allocated with the function as the leaf frame
	TotalAllocBytes Quantity = "total allocated bytes" // bytes allocated anywhere below the function
)

// isAlloc reports whether q bounds allocations (Limit.Count).
func (q Quantity) isAlloc() bool {
	return q == SelfAllocs || q == TotalAllocs || q == SelfAllocBytes || q == TotalAllocBytes
}

// allocUnit is the unit an allocation quantity is measured in.
func (q Quantity) allocUnit() string {
	if q == SelfAllocBytes || q == TotalAllocBytes {
		return analysis.UnitBytes
	}
	return analysis.UnitCount
}

// allocSampleType picks the sample type an allocation quantity reads in
// profile p when the selection names none: Go's alloc_objects or
// alloc_space (every allocation made, not only those still in use), else
// for bytes a default type in bytes (V8's space). The error says what the
// profile has instead.
func allocSampleType(p *profile.Profile, q Quantity) (string, error) {
	want, unit := "alloc_objects", "count"
	if q.allocUnit() == analysis.UnitBytes {
		want, unit = "alloc_space", "bytes"
	}
	var have []string
	for _, st := range p.SampleType {
		if st.Type == want {
			return want, nil
		}
		have = append(have, st.Type+"/"+st.Unit)
	}
	if unit == "bytes" {
		for _, st := range p.SampleType {
			if st.Type == p.DefaultSampleType && st.Unit == "bytes" {
				return st.Type, nil
			}
		}
	}
	return "", fmt.Errorf("perfassert: a limit on %s needs an allocation profile with sample type %s (go test -memprofile, runtime/pprof's heap or allocs profile); this profile has %s",
		q, want, strings.Join(have, ", "))
}

// unit is the unit of the result's Value, Total, rows and stacks.
func (r *Result) unit() string {
	if r.Unit == "" {
		return analysis.UnitTime
	}
	return r.Unit
}

// fmtValue writes a measured value in the result's unit: a time, bytes or
// a number of objects.
func (r *Result) fmtValue(v int64) string { return textfmt.Value(r.unit(), float64(v)) }

// fmtMeasured is fmtValue with the unit of a count: "1200 instructions".
func (r *Result) fmtMeasured(v int64) string {
	if isCounted(r.Selection.SampleType) && r.unit() == analysis.UnitCount {
		return textfmt.Count(float64(v)) + " " + r.Selection.SampleType
	}
	return r.fmtValue(v)
}

// noun is what the result's values are, for "top functions by self time".
func (r *Result) noun() string {
	switch r.unit() {
	case analysis.UnitBytes:
		return "bytes"
	case analysis.UnitCount:
		if isCounted(r.Selection.SampleType) {
			return r.Selection.SampleType
		}
		return "allocations"
	}
	return "time"
}
