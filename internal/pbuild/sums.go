package pbuild

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/google/pprof/profile"
)

// ValueSums is the module's one rule on sample values, applied by every
// loader and by every index: a value is never negative, and the values of
// each sample type add up, over the whole profile, to at most the largest
// int64 (in nanoseconds, for a time). A profile that holds to it gives every
// sum the analysis makes (a function's self or total time, a selection's
// total, a run's, each a sum over some of the samples) without overflow.
// A negative value has no meaning for a profile that is judged: it turns
// shares into -150% and 250%, and a total into less than its parts
// (pprof's -diff_base profiles hold them, and are no input to judge).
//
// Add the samples one at a time; Sum holds each type's sum so far.
type ValueSums struct {
	types []ValueType
	scale []uint64 // nanoseconds per unit of a time type; 1 otherwise
	Sum   []int64  // per sample type: in nanoseconds for a time
}

// NewValueSums returns the sums of a profile with the given sample types.
func NewValueSums(types []ValueType) *ValueSums {
	s := &ValueSums{types: types, scale: make([]uint64, len(types)), Sum: make([]int64, len(types))}
	for i, t := range types {
		s.scale[i] = 1
		if n := UnitNanos(t.Unit); n > 0 {
			s.scale[i] = uint64(n)
		}
	}
	return s
}

// Add adds the values of sample i (its index in the profile, for the
// error), one per sample type; missing values count as 0. The error says
// which value is negative, or which type's sum overflows.
func (s *ValueSums) Add(i int, values []int64) error {
	for j, v := range values[:min(len(values), len(s.Sum))] {
		if v < 0 {
			return fmt.Errorf("sample %d has a negative %s value, %d: sample values must not be negative (a difference profile, pprof -diff_base, cannot be judged)", i, s.typeName(j), v)
		}
		hi, lo := bits.Mul64(uint64(v), s.scale[j])
		sum, ok := CheckedAdd(s.Sum[j], int64(lo))
		if hi != 0 || lo > math.MaxInt64 || !ok {
			return fmt.Errorf("sample %d: the %s values add up to more than %d%s, the most a total can hold (int64): they would overflow", i, s.typeName(j), int64(math.MaxInt64), s.unitWord(j))
		}
		s.Sum[j] = sum
	}
	return nil
}

func (s *ValueSums) typeName(j int) string {
	t := s.types[j]
	return t.Type + "/" + t.Unit
}

func (s *ValueSums) unitWord(j int) string {
	if UnitNanos(s.types[j].Unit) > 0 {
		return " nanoseconds"
	}
	return ""
}

// CheckedAdd returns a+b and true, or false when the sum of the two
// non-negative values overflows int64. A negative operand is refused too
// (false): sums of sample values never have one.
func CheckedAdd(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	sum, carry := bits.Add64(uint64(a), uint64(b), 0)
	if carry != 0 || sum > math.MaxInt64 {
		return 0, false
	}
	return int64(sum), true
}

// CheckValues applies ValueSums to every sample of p: the loaders' check
// of what they read, whatever its format.
func CheckValues(p *profile.Profile) error {
	s := NewValueSums(ValueTypes(p))
	for i, smp := range p.Sample {
		if smp == nil {
			continue
		}
		if err := s.Add(i, smp.Value); err != nil {
			return err
		}
	}
	return nil
}
