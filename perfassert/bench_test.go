package perfassert_test

import (
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/synth"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
)

// BenchmarkCheck50k checks one function's total time, a regexp over a
// hundredth of the functions and a misspelt name (with its did-you-mean
// search) on a profile of 50,000 functions and 200,000 stacks of depth
// 8-24, the size issue 11 measures with.
func BenchmarkCheck50k(b *testing.B) {
	p, _, err := synth.Profiles(synth.PairSpec{Seed: 1, Functions: 50000, Stacks: 200000, MinDepth: 8, MaxDepth: 24, Slower: 4242, Factor: 1.5})
	if err != nil {
		b.Fatal(err)
	}
	limit := limits.Limit{Quantity: limits.TotalTime, Time: time.Hour}
	for _, bc := range []struct {
		name, sel string
		opts      []perfassert.Option
		missing   bool
	}{
		{"exact", synth.Name(4242), nil, false},
		{"regexp", `^example\.com/app/pkg07\.`, []perfassert.Option{perfassert.Regexp()}, false},
		{"missing", synth.Name(4242) + "x", nil, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := limits.Check(p, bc.sel, limit, bc.opts...)
				if err != nil || r.Missing != bc.missing {
					b.Fatal(err, r.Missing)
				}
			}
		})
	}
}

// BenchmarkMatchBaseline is MatchBaseline's own cost in a golden test: the
// example's baseline of 16 processes read, split by process and compared
// with one of its processes as the current capture, allocations judged
// too (the capture and the test's other work are not in it).
func BenchmarkMatchBaseline(b *testing.B) {
	const path = "../examples/baseline/testdata/parse.pb.gz"
	base, err := loaders.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	procs, err := meta.SplitProcesses(base)
	if err != nil || len(procs) < 2 {
		b.Fatalf("%s: %d processes, %v", path, len(procs), err)
	}
	current := procs[0]
	b.ReportAllocs()
	for b.Loop() {
		var t minimalT
		if !perfassert.MatchBaseline(&t, path, current) {
			b.Fatalf("MatchBaseline failed: %s", t.errors)
		}
	}
}
