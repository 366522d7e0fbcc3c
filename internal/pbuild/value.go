package pbuild

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// ErrNotTime is returned by ValueIndex when the selected value is not a time.
var ErrNotTime = errors.New("sample value is not a time")

// ValueIndex returns the index of the sample value that stands for time
// (by type name sampleType; by default p's DefaultSampleType, else the last
// type, as pprof chooses), the index of the count value (-1 if p has none),
// and the factor that turns the time value into nanoseconds.
func ValueIndex(p *profile.Profile, sampleType string) (timeIdx, countIdx int, toNanos int64, err error) {
	return ValueIndexOf(ValueTypes(p), p.DefaultSampleType, sampleType)
}

// ValueTypes are p's sample types.
func ValueTypes(p *profile.Profile) []ValueType {
	types := make([]ValueType, len(p.SampleType))
	for i, st := range p.SampleType {
		if st != nil {
			types[i] = ValueType{Type: st.Type, Unit: st.Unit}
		}
	}
	return types
}

// ValueType is a sample type without pprof's internal fields.
type ValueType struct{ Type, Unit string }

// ValueIndexOf is ValueIndex for a list of sample types and a default type
// name: the rule for readers that have no *profile.Profile.
func ValueIndexOf(types []ValueType, defaultType, sampleType string) (timeIdx, countIdx int, toNanos int64, err error) {
	if len(types) == 0 {
		return 0, -1, 0, errors.New("profile has no sample types")
	}
	timeIdx = len(types) - 1
	want := sampleType
	if want == "" {
		want = defaultType
	}
	if want != "" {
		found := false
		for i, st := range types {
			if st.Type == want {
				timeIdx, found = i, true
				break
			}
		}
		if !found && sampleType != "" {
			var names []string
			for _, st := range types {
				names = append(names, st.Type)
			}
			return 0, -1, 0, fmt.Errorf("no sample type %q (have %s)", sampleType, strings.Join(names, ", "))
		}
	}
	countIdx = -1
	for i, st := range types {
		if st.Unit == "count" && i != timeIdx {
			countIdx = i
			break
		}
	}
	st := types[timeIdx]
	toNanos = UnitNanos(st.Unit)
	if toNanos == 0 {
		// Legacy and address-only profiles may lack units but be CPU time.
		if st.Unit == "" && (st.Type == "cpu" || st.Type == "wall" || st.Type == "time") {
			toNanos = 1
		} else {
			return 0, -1, 0, fmt.Errorf("%w: %s/%s", ErrNotTime, st.Type, st.Unit)
		}
	}
	return timeIdx, countIdx, toNanos, nil
}

// UnitNanos is how many nanoseconds one of unit u is, 0 when u is not a time unit.
func UnitNanos(u string) int64 {
	switch strings.ToLower(u) {
	case "nanoseconds", "nanosecond", "ns":
		return 1
	case "microseconds", "microsecond", "us", "µs":
		return 1e3
	case "milliseconds", "millisecond", "ms":
		return 1e6
	case "seconds", "second", "s":
		return 1e9
	}
	return 0
}

// CountIndex is, for a profile whose selected value (p's
// DefaultSampleType, else its last type, as ValueIndex selects it) is not
// a time, the index of that value when its unit is "count" (instructions
// or other events counted, objects), and whether it is one: writers of
// formats that hold counts (folded stacks, speedscope's unit "none") write
// it as it is.
func CountIndex(p *profile.Profile) (int, bool) {
	if len(p.SampleType) == 0 {
		return 0, false
	}
	i := len(p.SampleType) - 1
	for j, st := range p.SampleType {
		if st != nil && p.DefaultSampleType != "" && st.Type == p.DefaultSampleType {
			i = j
			break
		}
	}
	st := p.SampleType[i]
	return i, st != nil && st.Unit == "count"
}
