package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// Sample is one sample of TimeProfile: its stack of function names, root
// first, its time, and the thread it ran on ("" for no thread label).
type Sample struct {
	Stack  []string
	Nanos  int64
	Thread string
}

// TimeProfile builds a Go-shaped CPU profile (samples/count and
// cpu/nanoseconds, sampled every 10ms) of the given samples, values as
// given: negative ones and ones whose sum overflows included, so that tests
// can build the inputs the loaders must refuse. A sample's count is its
// time over the period. The profile is not checked.
func TimeProfile(samples ...Sample) *profile.Profile {
	const period = 10_000_000
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     period,
	}
	locs := map[string]*profile.Location{}
	for _, s := range samples {
		smp := &profile.Sample{Value: []int64{s.Nanos / period, s.Nanos}}
		for i := len(s.Stack) - 1; i >= 0; i-- {
			name := s.Stack[i]
			l, ok := locs[name]
			if !ok {
				f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
				l = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
				p.Function = append(p.Function, f)
				p.Location = append(p.Location, l)
				locs[name] = l
			}
			smp.Location = append(smp.Location, l)
		}
		if s.Thread != "" {
			smp.Label = map[string][]string{"thread": {s.Thread}}
		}
		p.Sample = append(p.Sample, smp)
	}
	return p
}

// WriteProfile writes p, gzipped, with p.Write to dir/name and returns the
// path.
func WriteProfile(t testing.TB, dir, name string, p *profile.Profile) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// SevenFuncs is a profile of main.main calling six functions on one
// thread, main.f0 taking f0 nanoseconds and the others 300ms to 20ms: the
// input of the no-time probes of every package (an empty side, a renamed
// thread, a negative value).
func SevenFuncs(thread string, f0 int64) *profile.Profile {
	var ss []Sample
	for i, ns := range []int64{f0, 300e6, 100e6, 50e6, 30e6, 20e6} {
		ss = append(ss, Sample{Stack: []string{"main.main", fmt.Sprintf("main.f%d", i)}, Nanos: ns, Thread: thread})
	}
	return TimeProfile(ss...)
}
