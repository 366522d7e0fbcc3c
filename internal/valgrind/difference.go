package valgrind

import (
	"cmp"
	"errors"
	"slices"

	"github.com/google/pprof/profile"
)

// Difference returns more less less, two profiles of counts (every sample
// value, each apart; the first decides what is dropped) of one program counted twice, as a profile of counts: what
// the second ran that the first did not, as when more counts 2N runs of a
// loop and less N of them in the same process or another.
//
// What both executed alike cancels. Callgrind may put a function's
// instructions on one call stack in one count and on another stack in the
// other (when the Go runtime switches stacks), so one stack's difference
// can be below zero where another's is above: a function's stacks below
// zero are taken from its stacks above zero, the largest first, which
// keeps every function's self count (the leaf's) and leaves no value below
// zero. A function whose self count is below zero in all is work that did
// not repeat (the runtime's monitor thread, timers, the first count's
// start-up), not a count of the runs: it is dropped and named in negative,
// so that a caller does not judge it. Functions are named by the leaf
// frame's innermost function. Call it with profiles of one binary, as
// callgrind.ParseByAddress reads them.
func Difference(more, less *profile.Profile) (diff *profile.Profile, negative []string, err error) {
	if len(more.SampleType) == 0 || len(less.SampleType) == 0 {
		return nil, nil, errors.New("a profile without sample types")
	}
	more, neg := more.Copy(), less.Copy()
	for _, p := range []*profile.Profile{more, neg} {
		if p.PeriodType == nil { // profile.Merge needs one
			p.PeriodType = &profile.ValueType{Type: p.SampleType[0].Type, Unit: p.SampleType[0].Unit}
		}
	}
	neg.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{more, neg})
	if err != nil {
		return nil, nil, err
	}
	leaf := func(s *profile.Sample) string {
		if len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
			return ""
		}
		return s.Location[0].Line[0].Function.Name
	}
	byLeaf := map[string][]*profile.Sample{}
	for _, s := range d.Sample {
		if slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 }) {
			byLeaf[leaf(s)] = append(byLeaf[leaf(s)], s)
		}
	}
	var kept []*profile.Sample
	for name, ss := range byLeaf {
		var sum int64
		for _, s := range ss {
			sum += s.Value[0]
		}
		if sum < 0 {
			negative = append(negative, name)
			continue
		}
		// Each value apart (the further events of a dump with cache
		// simulation as the first), so that every event's self count
		// stays the function's.
		for i := range ss[0].Value {
			var debt int64
			for _, s := range ss {
				if s.Value[i] < 0 {
					debt -= s.Value[i]
					s.Value[i] = 0
				}
			}
			slices.SortStableFunc(ss, func(a, b *profile.Sample) int { return cmp.Compare(b.Value[i], a.Value[i]) })
			for _, s := range ss {
				take := min(debt, s.Value[i])
				s.Value[i] -= take
				debt -= take
			}
		}
		for _, s := range ss {
			if slices.ContainsFunc(s.Value, func(v int64) bool { return v > 0 }) {
				kept = append(kept, s)
			}
		}
	}
	slices.Sort(negative)
	d.Sample = kept
	return d.Compact(), negative, nil
}
