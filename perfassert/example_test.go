package perfassert_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
)

// printT is a TestingT that prints what a test would report.
type printT struct{}

func (printT) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// exampleProfile is a small profile in folded-stack form (1 ms per count).
func exampleProfile() *profile.Profile {
	p, err := loaders.Read(strings.NewReader(`main.main;main.parse;main.normalizeKey 620
main.main;main.parse 180
main.main;main.render 200
`), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		panic(err)
	}
	return p
}

// A function over its budget fails with got before want, its share of the
// profile, the top functions and the heaviest stacks through it.
func ExampleMaxSelfTime() {
	p := exampleProfile()
	ok := perfassert.MaxSelfTime(printT{}, p, "main.normalizeKey", 500*time.Millisecond, perfassert.Named("parse.folded"))
	fmt.Println("passed:", ok)
	// Output:
	// perfassert.MaxSelfTime: parse.folded: main.normalizeKey self time 620ms (62.00% of 1s total, 620 samples), want at most 500ms
	// top functions by self time:
	//           self   self%      total  total%  function
	//          620ms  62.00%      620ms  62.00%  main.normalizeKey
	//          200ms  20.00%      200ms  20.00%  main.render
	//          180ms  18.00%      800ms  80.00%  main.parse
	//              0   0.00%         1s 100.00%  main.main
	// heaviest stacks (leaf first):
	//          620ms  62.00%  main.normalizeKey <- main.parse <- main.main
	// warning: folded stacks hold sample counts only: each sample taken as 1ms
	// passed: false
}

// Shares are of the whole profile; a passing assertion reports nothing.
func ExampleMaxTotalShare() {
	p := exampleProfile()
	fmt.Println(perfassert.MaxTotalShare(printT{}, p, "main.parse", 0.80))
	// Output:
	// true
}

// A selector that matches nothing never passes: it names the closest functions.
func ExampleMaxTotalTime_didYouMean() {
	p := exampleProfile()
	perfassert.MaxTotalTime(printT{}, p, "main.normaliseKey", time.Second)
	// Output:
	// perfassert.MaxTotalTime: profile: no function named "main.normaliseKey" among 4 functions (1s total, 1000 samples)
	// did you mean:
	//     main.normalizeKey
	// top functions by total time:
	//           self   self%      total  total%  function
	//              0   0.00%         1s 100.00%  main.main
	//          180ms  18.00%      800ms  80.00%  main.parse
	//          620ms  62.00%      620ms  62.00%  main.normalizeKey
	//          200ms  20.00%      200ms  20.00%  main.render
	// warning: folded stacks hold sample counts only: each sample taken as 1ms
}

// Regexp pools the functions it matches; a sample through several of them
// counts once.
func ExampleRegexp() {
	p := exampleProfile()
	r, err := limits.Check(p, `^main\.(parse|normalizeKey)$`, limits.Limit{Quantity: limits.TotalShare, Share: 0.9}, perfassert.Regexp())
	if err != nil {
		panic(err)
	}
	fmt.Println(len(r.Matched), time.Duration(r.Value), r.Share, r.Passed) // a CPU profile: Value is nanoseconds
	// Output:
	// 2 800ms 0.8 true
}

// WithSelection says which samples count: here a browser profile's idle
// time is left out, so that the share is of the time the page's own code
// ran (analysis.Selection's other fields pick threads, processes or the
// sample type the same way).
func ExampleWithSelection() {
	p, err := loaders.Read(strings.NewReader(`(idle) 500
main;parse 300
main;render 200
`), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		panic(err)
	}
	limit := limits.Limit{Quantity: limits.SelfShare, Share: 0.50}
	for _, sel := range []analysis.Selection{{}, {DropSynthetic: true}} {
		r, err := limits.Check(p, "parse", limit, perfassert.WithSelection(sel))
		if err != nil {
			panic(err)
		}
		what := sel.String() // "" for the zero Selection
		if what == "" {
			what = "every sample"
		}
		fmt.Printf("%s: parse %.0f%%, passed %v\n", what, r.Share*100, r.Passed)
	}
	// Output:
	// every sample: parse 30%, passed true
	// without synthetic frames: parse 60%, passed false
}

// Capture profiles the code under test; assertions on it are one line each.
func ExampleCapture() {
	t := &testing.T{} // in a test, the test's t
	p := perfassert.Capture(t, func() { spin(10_000) }, perfassert.MinSamples(50))
	// Time per run of the function, and share of the capture.
	perfassert.MaxSelfTime(t, p, "github.com/hotbudget/hotbudget/perfassert_test.spin", time.Millisecond, perfassert.PerIteration())
	perfassert.MaxSelfShare(t, p, "github.com/hotbudget/hotbudget/perfassert_test.spin", 0.99)
	n, _ := perfassert.Iterations(p) // runs of the function, for diff.WithOps
	_ = n
}

// MatchBaseline compares with a profile under testdata; run the test once
// with -hotbudget.update (or HOTBUDGET_UPDATE=1) to write it.
func ExampleMatchBaseline() {
	t := &testing.T{} // in a test, the test's t
	p := perfassert.Capture(t, func() { spin(10_000) }, perfassert.MinSamples(50))
	perfassert.MatchBaseline(t, "testdata/spin.pb.gz", p)
}

// CheckRegression gives programs the diff report behind NoRegression.
func ExampleCheckRegression() {
	read := func(folded string) *profile.Profile {
		p, err := loaders.Read(strings.NewReader(folded), loaders.WithFormat(loaders.FormatFolded))
		if err != nil {
			panic(err)
		}
		return p
	}
	base := read("main;main.parse 500\nmain;main.render 500\n")
	head := read("main;main.parse 800\nmain;main.render 200\n")
	rep, err := perfassert.CheckRegression([]*profile.Profile{base}, []*profile.Profile{head})
	if err != nil {
		panic(err)
	}
	for _, r := range rep.Regressions() {
		fmt.Println(r.Name, r.Verdict)
	}
	// Output:
	// main.parse regressed
}

// A test that counts instructions instead of sampling time: its baseline,
// committed with the code, holds on any runner with the same Go and
// valgrind (the test is skipped, saying why, where valgrind is missing).
func ExampleInstructions() {
	test := func(t *testing.T) {
		var s string
		p := perfassert.Capture(t, func() { s = strings.Repeat("ab", 1000) }, perfassert.Instructions())
		perfassert.MaxSelfInstructions(t, p, "strings.Repeat", 50_000, perfassert.PerIteration())
		perfassert.MatchBaseline(t, "testdata/repeat.instructions.pb.gz", p)
		_ = s
	}
	_ = test
}
