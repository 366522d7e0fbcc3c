// Package verdictbench holds the parts of hotbudget's verdict-accuracy
// benchmark that work on profiles alone: injecting a known regression into
// a real recorded profile at the sample level, and the seeded draws of runs
// the benchmark compares. It imports no public package of the module, so
// that any package's tests (diff's among them) may use it; the benchmark
// itself, which judges with package diff, is in the bench subpackage and
// the verdictbench command.
package verdictbench

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/google/pprof/profile"
)

// Scope says which samples an injection touches.
type Scope int

const (
	// Self touches the samples whose leaf frame is the function (pprof's
	// flat): the function's own time grows.
	Self Scope = iota
	// Total touches the samples that hold the function anywhere in their
	// stack (pprof's cum, recursion counted once): the function and
	// everything it calls grow.
	Total
)

func (s Scope) String() string {
	if s == Total {
		return "total"
	}
	return "self"
}

// Injected reports what an injection did.
type Injected struct {
	// Matched is the count (samples) of the touched samples before the
	// injection; Added is the count added.
	Matched, Added int64
}

// Inject returns a copy of p in which a known regression of function fn
// (matched by pprof name, as `go tool pprof -top` prints it) was injected:
// every sample that Scope selects, of count c, is followed by a new sample
// on the same stack, with the same labels, that holds k ~ Binomial(c, prob)
// more counts and every other value scaled alike (value·k/c, rounded down;
// a sample of 1 count and 1 ms gets, with probability prob, one copy of 1
// count and 1 ms). Samples with k = 0 get no copy. The copies follow their
// sample, so profiles whose samples are in time order (V8's) stay in time
// order. prob = 0.2 adds 20% to the function's self (or total) time on
// average.
//
// The count is the first sample value whose unit is "count" (Go's
// "samples", V8's and Chrome's "samples" or "events"); a profile without
// one is an error. p is not modified; the copy shares p's locations,
// functions and mappings. rng makes the draw reproducible.
func Inject(p *profile.Profile, fn string, scope Scope, prob float64, rng *rand.Rand) (*profile.Profile, Injected, error) {
	if p == nil {
		return nil, Injected{}, errors.New("verdictbench: nil profile")
	}
	if !(prob >= 0 && prob <= 1) {
		return nil, Injected{}, fmt.Errorf("verdictbench: probability %v is not in [0,1]", prob)
	}
	ci := CountIndex(p)
	if ci < 0 {
		return nil, Injected{}, fmt.Errorf("verdictbench: the profile has no sample value counted in \"count\" (sample types %v)", sampleTypes(p))
	}
	q := shallowCopy(p)
	q.Sample = make([]*profile.Sample, 0, len(p.Sample)+len(p.Sample)/8)
	var st Injected
	for _, s := range p.Sample {
		q.Sample = append(q.Sample, s)
		if !matches(s, fn, scope) {
			continue
		}
		c := s.Value[ci]
		if c <= 0 {
			continue
		}
		st.Matched += c
		k := Binomial(rng, c, prob)
		if k == 0 {
			continue
		}
		st.Added += k
		v := make([]int64, len(s.Value))
		for i, x := range s.Value {
			v[i] = x * k / c
		}
		q.Sample = append(q.Sample, &profile.Sample{Location: s.Location, Value: v, Label: s.Label, NumLabel: s.NumLabel, NumUnit: s.NumUnit})
	}
	return q, st, nil
}

// CountIndex returns the index of p's first sample value whose unit is
// "count", or -1.
func CountIndex(p *profile.Profile) int {
	for i, t := range p.SampleType {
		if t != nil && t.Unit == "count" {
			return i
		}
	}
	return -1
}

// Binomial draws from Binomial(n, prob) as n Bernoulli trials: exact, and
// fast for the counts of profile samples (mostly 1 to a few dozen).
func Binomial(rng *rand.Rand, n int64, prob float64) int64 {
	var k int64
	for range n {
		if rng.Float64() < prob {
			k++
		}
	}
	return k
}

// LeafName is the pprof name of a sample's leaf frame: the innermost
// function of its first location ("" for a sample without one).
func LeafName(s *profile.Sample) string {
	if len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
		return ""
	}
	return s.Location[0].Line[0].Function.Name
}

func matches(s *profile.Sample, fn string, scope Scope) bool {
	if scope == Self {
		return LeafName(s) == fn
	}
	for _, l := range s.Location {
		for _, ln := range l.Line {
			if ln.Function != nil && ln.Function.Name == fn {
				return true
			}
		}
	}
	return false
}

// shallowCopy copies p's exported fields; slices other than Sample are
// shared.
func shallowCopy(p *profile.Profile) *profile.Profile {
	return &profile.Profile{
		SampleType:        p.SampleType,
		DefaultSampleType: p.DefaultSampleType,
		Sample:            p.Sample,
		Mapping:           p.Mapping,
		Location:          p.Location,
		Function:          p.Function,
		Comments:          p.Comments,
		DocURL:            p.DocURL,
		DropFrames:        p.DropFrames,
		KeepFrames:        p.KeepFrames,
		TimeNanos:         p.TimeNanos,
		DurationNanos:     p.DurationNanos,
		PeriodType:        p.PeriodType,
		Period:            p.Period,
	}
}

func sampleTypes(p *profile.Profile) []string {
	var out []string
	for _, t := range p.SampleType {
		if t != nil {
			out = append(out, t.Type+"/"+t.Unit)
		}
	}
	return out
}
