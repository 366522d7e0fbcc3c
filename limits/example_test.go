package limits_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
)

// exampleProfile is a small profile in folded-stack form (1 ms per count).
func exampleProfile(folded string) *profile.Profile {
	p, err := loaders.Read(strings.NewReader(folded), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		panic(err)
	}
	return p
}

// Check bounds one quantity of the functions a selector names. The result
// is data for programs; Summary is its one-line text, String the failure
// text perfassert reports.
func ExampleCheck() {
	p := exampleProfile(`main.main;main.parse;main.normalizeKey 620
main.main;main.parse 180
main.main;main.render 200
`)
	r, err := limits.Check(p, "main.normalizeKey", limits.Limit{Quantity: limits.SelfTime, Time: 500 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Passed, time.Duration(r.Value), r.Samples) // a time limit: Value is nanoseconds
	fmt.Println(r.Summary())
	// Output:
	// false 620ms 620
	// main.normalizeKey self time 620ms (62.00% of 1s total, 620 samples), want at most 500ms
}

// A Checker indexes profiles once and checks any number of limits on them.
// Two profiles are two runs of one program: a time is the mean per run, a
// share is of both pooled.
func ExampleChecker() {
	run1 := exampleProfile("main.main;main.parse 300\nmain.main;main.render 100\n")
	run2 := exampleProfile("main.main;main.parse 500\nmain.main;main.render 100\n")
	ck, err := limits.NewChecker(run1, run2)
	if err != nil {
		panic(err)
	}
	for _, l := range []limits.Limit{
		{Quantity: limits.TotalTime, Time: 450 * time.Millisecond},
		{Quantity: limits.TotalShare, Share: 0.75},
	} {
		r, err := ck.Check("main.parse", l)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %s: passed %v\n", l.Quantity, r.Limit, r.Passed)
	}
	// Output:
	// total time 450ms: passed true
	// total share 75.00%: passed false
}

// EachMatch judges each function a regexp matches on
// its own and reports the worst, as budget files' match rules do; without
// it the matches are pooled.
func ExampleEachMatch() {
	read := func(folded string) *profile.Profile {
		p, err := loaders.Read(strings.NewReader(folded), loaders.WithFormat(loaders.FormatFolded))
		if err != nil {
			panic(err)
		}
		return p
	}
	ck, err := limits.NewChecker(
		read("main;main.parse 300\nmain;main.render 500\nmain;main.render;main.parse 200\n"),
		read("main;main.parse 500\nmain;main.render 500\n"),
	)
	if err != nil {
		panic(err)
	}
	limit := limits.Limit{Quantity: limits.TotalTime, Time: 600 * time.Millisecond}
	for _, opts := range [][]limits.Option{
		nil,
		{limits.Regexp()},
		{limits.Regexp(), limits.EachMatch()},
	} {
		sel := "main.parse"
		if len(opts) > 0 {
			sel = `^main\.(parse|render)$`
		}
		r, err := ck.Check(sel, limit, opts...)
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Summary())
	}
	// Output:
	// main.parse total time 500ms (mean of 2 profiles: 50.00% of 1s total, 1000 samples in all), within 600ms (83.33% of the limit)
	// 2 functions matching regexp "^main\\.(parse|render)$" total time 1s (mean of 2 profiles: 100.00% of 1s total, 2000 samples in all), want at most 600ms
	// main.render (worst of 2 functions matching regexp "^main\\.(parse|render)$") total time 600ms (mean of 2 profiles: 60.00% of 1s total, 1200 samples in all), within 600ms (100.00% of the limit)
}
