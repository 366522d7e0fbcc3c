package perfassert

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/checkname"
	"github.com/hotbudget/hotbudget/internal/harness"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/limits"
)

// MaxAllocs asserts that the functions fn selects in p, a heap or
// allocation profile, allocate at most max objects themselves (as the
// leaf frame; by default the alloc_objects sample type: allocations since
// the program started, not only those in use). With PerIteration the
// limit is per unit of work the profile records.
//
// On a profile of Capture (or a baseline written from one), which holds
// CPU samples and beside them the function's allocations recorded exactly
// (see AllocProfile), the limit is on those allocations per iteration of
// the function, and a failure lists the function's allocating lines and
// stacks per iteration.
func MaxAllocs(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return allocReport(t, p, fn, limits.Limit{Quantity: limits.SelfAllocs, Count: max}, opts)
}

// MaxTotalAllocs is MaxAllocs for the objects allocated by the functions
// fn selects and everything they call.
func MaxTotalAllocs(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return allocReport(t, p, fn, limits.Limit{Quantity: limits.TotalAllocs, Count: max}, opts)
}

// MaxAllocBytes is MaxAllocs for bytes (by default the alloc_space sample
// type, or a V8 heap profile's bytes).
func MaxAllocBytes(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return allocReport(t, p, fn, limits.Limit{Quantity: limits.SelfAllocBytes, Count: max}, opts)
}

// MaxTotalAllocBytes is MaxAllocBytes for the bytes allocated by the
// functions fn selects and everything they call.
func MaxTotalAllocBytes(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return allocReport(t, p, fn, limits.Limit{Quantity: limits.TotalAllocBytes, Count: max}, opts)
}

// allocReport is report for an allocation limit: on a captured profile
// without allocation sample types of its own, the limit is checked per
// iteration on the allocations the capture recorded (AllocProfile), and a
// failure lists the allocating lines and stacks per iteration.
func allocReport(t TestingT, p *profile.Profile, fn string, limit limits.Limit, opts []Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if p == nil || hasAllocTypes(p) {
		return report(t, p, fn, limit, opts)
	}
	ap, ok, err := AllocProfile(p)
	if err != nil {
		t.Errorf("perfassert.%s(%q): %v", checkname.Of(string(limit.Quantity)), fn, err)
		return false
	}
	if !ok {
		return report(t, p, fn, limit, opts)
	}
	if counted, bytes := countedAllocs(ap); counted && !bytes && (limit.Quantity == limits.SelfAllocBytes || limit.Quantity == limits.TotalAllocBytes) {
		t.Errorf("perfassert.%s(%q): the capture counted its allocations under callgrind (Instructions), not their bytes (the runtime's allocators do not name an object's size there): limit the allocations (MaxAllocs), or the bytes of a capture without Instructions", checkname.Of(string(limit.Quantity)), fn)
		return false
	}
	opts = append(slices.Clone(opts), PerIteration())
	r, err := limits.Check(ap, fn, limit, opts...)
	if err != nil {
		t.Errorf("perfassert.%s(%q): %v", checkname.Of(string(limit.Quantity)), fn, err)
		return false
	}
	match := func(name string) bool { return name == fn }
	if r.Regexp {
		if re, err := regexp.Compile(fn); err == nil {
			match = re.MatchString
		}
	}
	// The engine's top functions and stacks are sums over the allocation
	// phase; these are per iteration.
	r.Top, r.Stacks = nil, nil
	text := r.String() + allocDetail(ap, r.Iterations, match, limit.Quantity == limits.SelfAllocs || limit.Quantity == limits.SelfAllocBytes, !r.Passed)
	if !r.Passed {
		t.Errorf("%s", text)
		return false
	}
	logf(t, "%s", text)
	return true
}

// hasAllocTypes reports whether p has a sample type of allocations.
func hasAllocTypes(p *profile.Profile) bool {
	for _, st := range p.SampleType {
		if st != nil && (st.Type == "alloc_objects" || st.Type == "alloc_space") {
			return true
		}
	}
	return false
}

// allocDetail lists, per iteration of the capture (work), the lines of the
// functions match accepts that allocate (self: those functions as the
// leaf; total: their frame innermost on the stack, the line that calls
// what allocates) and, when stacks, the heaviest allocating stacks through
// them, from exact allocation profile ap.
func allocDetail(ap *profile.Profile, work int64, match func(string) bool, self, stacks bool) string {
	oi, bi := allocIndexes(ap)
	if oi < 0 || bi < 0 || work <= 0 {
		return ""
	}
	type agg struct {
		key            string
		objects, bytes int64
	}
	lines, paths := map[string]*agg{}, map[string]*agg{}
	add := func(m map[string]*agg, k string, s *profile.Sample) {
		a := m[k]
		if a == nil {
			a = &agg{key: k}
			m[k] = a
		}
		a.objects += s.Value[oi]
		a.bytes += s.Value[bi]
	}
	for _, s := range ap.Sample {
		var names, where []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function != nil {
					names = append(names, ln.Function.Name)
					where = append(where, fmt.Sprintf("%s:%d", ln.Function.Filename, ln.Line))
				}
			}
		}
		at := -1
		for i, n := range names {
			if match(n) {
				at = i
				break
			}
			if self {
				break
			}
		}
		if at < 0 || len(s.Value) <= max(oi, bi) {
			continue
		}
		add(lines, names[at]+" "+where[at], s)
		cut := len(names)
		for cut > at+1 && harness.IsFrame(names[cut-1]) {
			cut--
		}
		add(paths, textfmt.Stack(names[:cut], max(at+3, 4)), s)
	}
	sorted := func(m map[string]*agg) []*agg {
		out := slices.Collect(maps.Values(m))
		slices.SortFunc(out, func(a, b *agg) int {
			return cmp.Or(cmp.Compare(b.objects, a.objects), cmp.Compare(b.bytes, a.bytes), strings.Compare(a.key, b.key))
		})
		return out[:min(len(out), allocTopN)]
	}
	per := func(a *agg) string {
		w := float64(work)
		return fmt.Sprintf("%10s %10s", textfmt.Count(math.Round(float64(a.objects)/w*100)/100), textfmt.Bytes(math.Round(float64(a.bytes)/w*100)/100))
	}
	var b strings.Builder
	if len(lines) > 0 {
		fmt.Fprintf(&b, "\nallocating lines, per iteration (exact: %d iterations at runtime.MemProfileRate = 1):\n    %10s %10s  %s", work, "objects", "bytes", "line")
		for _, a := range sorted(lines) {
			fmt.Fprintf(&b, "\n    %s  %s", per(a), textfmt.Line(a.key))
		}
	}
	if stacks && len(paths) > 0 {
		fmt.Fprintf(&b, "\nallocating stacks, per iteration (leaf first):")
		for _, a := range sorted(paths) {
			fmt.Fprintf(&b, "\n    %s  %s", per(a), textfmt.Line(a.key))
		}
	}
	return b.String()
}

// allocTopN is how many allocating lines and stacks a failure lists.
const allocTopN = 5
