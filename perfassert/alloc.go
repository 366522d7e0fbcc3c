package perfassert

import (
	"github.com/google/pprof/profile"
)

// MaxAllocs asserts that the functions fn selects in p, a heap or
// allocation profile, allocate at most max objects themselves (as the
// leaf frame; by default the alloc_objects sample type: allocations since
// the program started, not only those in use). With PerIteration the
// limit is per unit of work the profile records.
func MaxAllocs(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: SelfAllocs, Count: max}, opts)
}

// MaxTotalAllocs is MaxAllocs for the objects allocated by the functions
// fn selects and everything they call.
func MaxTotalAllocs(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: TotalAllocs, Count: max}, opts)
}

// MaxAllocBytes is MaxAllocs for bytes (by default the alloc_space sample
// type, or a V8 heap profile's bytes).
func MaxAllocBytes(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: SelfAllocBytes, Count: max}, opts)
}

// MaxTotalAllocBytes is MaxAllocBytes for the bytes allocated by the
// functions fn selects and everything they call.
func MaxTotalAllocBytes(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: TotalAllocBytes, Count: max}, opts)
}
