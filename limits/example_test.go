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
