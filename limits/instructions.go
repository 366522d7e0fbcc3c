package limits

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Instruction quantities: bounded by Limit.Count, measured on profiles of
// counted instructions (perfassert.Instructions, callgrind files), whose
// sample type is "instructions". Self is what the function executes
// itself (its inlined callees are functions of their own, as in a
// sampled profile), total what it and everything it calls execute.
const (
	SelfInstructions  Quantity = "self instructions"  // instructions executed with the function as the leaf frame
	TotalInstructions Quantity = "total instructions" // instructions executed anywhere below the function
	// Estimated cycles (perfassert.Cycles), bounded by Limit.Count as
	// instructions are, on a capture's "cycles" sample type.
	SelfCycles  Quantity = "self cycles"  // estimated cycles with the function as the leaf frame
	TotalCycles Quantity = "total cycles" // estimated cycles anywhere below the function
)

// instructionsType and cyclesType are the sample types of counted
// instructions and of estimated cycles.
const (
	instructionsType = "instructions"
	cyclesType       = "cycles"
)

// isInstr reports whether q bounds exact counts, instructions or
// estimated cycles (Limit.Count).
func (q Quantity) isInstr() bool {
	return q == SelfInstructions || q == TotalInstructions || q == SelfCycles || q == TotalCycles
}

// countType is the sample type q bounds: cycles or instructions.
func (q Quantity) countType() string {
	if q == SelfCycles || q == TotalCycles {
		return cyclesType
	}
	return instructionsType
}

// isCounted reports whether the sample type st is an exact count:
// instructions or estimated cycles.
func isCounted(st string) bool { return st == instructionsType || st == cyclesType }

// isCount reports whether q is bounded by Limit.Count.
func (q Quantity) isCount() bool { return q.isAlloc() || q.isInstr() }

// instrSampleType checks that p counts instructions.
func instrSampleType(p *profile.Profile, q Quantity) (string, error) {
	var have []string
	for _, st := range p.SampleType {
		if st.Type == q.countType() {
			return st.Type, nil
		}
		have = append(have, st.Type+"/"+st.Unit)
	}
	if q.countType() == cyclesType {
		return "", fmt.Errorf("perfassert: a limit on %s needs a profile of estimated cycles (perfassert.Cycles); this profile has %s", q, strings.Join(have, ", "))
	}
	return "", fmt.Errorf("perfassert: a limit on %s needs a profile of counted instructions (perfassert.Instructions, a callgrind file); this profile has %s", q, strings.Join(have, ", "))
}

// countsInstructions reports whether p's default sample type is counted
// instructions or estimated cycles, on which share limits are shares of
// that count.
func countsInstructions(p *profile.Profile) bool {
	if p.DefaultSampleType != "" {
		return isCounted(p.DefaultSampleType)
	}
	return len(p.SampleType) > 0 && slices.ContainsFunc(p.SampleType[:1], func(st *profile.ValueType) bool { return isCounted(st.Type) })
}

// defaultCount is the exact count a limit on q selects in p, whose default
// sample type is a count: the one q bounds ("" when p has none, which
// instrSampleType then says), or p's own for a share.
func defaultCount(p *profile.Profile, q Quantity) string {
	if q.isInstr() {
		if !slices.ContainsFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == q.countType() }) {
			return ""
		}
		return q.countType()
	}
	if p.DefaultSampleType != "" {
		return p.DefaultSampleType
	}
	return p.SampleType[0].Type
}
