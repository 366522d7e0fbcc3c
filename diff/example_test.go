package diff_test

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

// Two profiles of one program as folded stacks (sample counts, each
// sample a millisecond): parse went from 400 to 600 samples, the rest
// stayed. Compare judges each function's share of its profile, measured
// against the functions that did not move (here gc and render), so that
// one function's growth does not make the others look faster.
func ExampleCompare() {
	read := func(folded string) []*profile.Profile {
		p, err := loaders.Read(strings.NewReader(folded))
		if err != nil {
			panic(err)
		}
		return []*profile.Profile{p}
	}
	base := read("main;handler;parse 400\nmain;handler;render 300\nmain;gc 300\n")
	head := read("main;handler;parse 600\nmain;handler;render 300\nmain;gc 300\n")
	r, err := diff.Compare(base, head)
	if err != nil {
		panic(err)
	}
	for _, row := range r.Rows {
		if row.Base.Metric == 0 && row.Head.Metric == 0 {
			continue // main and handler: no self time
		}
		fmt.Printf("%-7s %5.1f%% -> %5.1f%%  %s\n", row.Name, 100*row.Base.Metric, 100*row.Head.Metric, row.Verdict)
	}
	fmt.Println("fails the gate:", r.Failed())
	// Output:
	// parse    40.0% ->  60.0%  regressed
	// gc       30.0% ->  30.0%  unchanged
	// render   30.0% ->  30.0%  unchanged
	// fails the gate: true
}

// CompareIndex judges profiles already indexed: loaders.LoadIndex reads
// a Go profile straight into an Index, without a *profile.Profile, which
// is how hotbudget diff reads large profiles.
func ExampleCompareIndex() {
	index := func(pattern string) []*analysis.Index {
		files, _ := filepath.Glob(pattern)
		var xs []*analysis.Index
		for _, f := range files {
			x, err := loaders.LoadIndex(f)
			if err != nil {
				panic(err)
			}
			xs = append(xs, x)
		}
		return xs
	}
	// Five runs a side of a program whose renderReport does 20% more work.
	r, err := diff.CompareIndex(index("../testdata/regress/base-*.pb.gz"), index("../testdata/regress/head-*.pb.gz"))
	if err != nil {
		panic(err)
	}
	for _, row := range r.Regressions() {
		fmt.Printf("%s regressed: %+.0f%% of its share\n", row.Name, 100*row.Relative)
	}
	// Output:
	// main.renderReport regressed: +22% of its share
}
