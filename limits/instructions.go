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
)

// instructionsType is the sample type of counted instructions.
const instructionsType = "instructions"

// isInstr reports whether q bounds instructions (Limit.Count).
func (q Quantity) isInstr() bool { return q == SelfInstructions || q == TotalInstructions }

// isCount reports whether q is bounded by Limit.Count.
func (q Quantity) isCount() bool { return q.isAlloc() || q.isInstr() }

// instrSampleType checks that p counts instructions.
func instrSampleType(p *profile.Profile, q Quantity) (string, error) {
	var have []string
	for _, st := range p.SampleType {
		if st.Type == instructionsType {
			return st.Type, nil
		}
		have = append(have, st.Type+"/"+st.Unit)
	}
	return "", fmt.Errorf("perfassert: a limit on %s needs a profile of counted instructions (perfassert.Instructions, a callgrind file); this profile has %s", q, strings.Join(have, ", "))
}

// countsInstructions reports whether p's default sample type is counted
// instructions, on which share limits are shares of instructions.
func countsInstructions(p *profile.Profile) bool {
	if p.DefaultSampleType != "" {
		return p.DefaultSampleType == instructionsType
	}
	return len(p.SampleType) > 0 && slices.ContainsFunc(p.SampleType[:1], func(st *profile.ValueType) bool { return st.Type == instructionsType })
}
