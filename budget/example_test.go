package budget_test

import (
	"fmt"
	"os"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/budget"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
)

// A budget in YAML, checked against a real Go CPU profile. Every limit gives
// a result; the text report names the budget line, the check and the
// result in perfassert's words (a budget limit is perfassert's check): the
// function, got before want, and the share of the profile. A match rule
// judges each matching function alone and reports the worst.
func ExampleCheck() {
	b, err := budget.Parse("perf-budget.yaml", []byte(`
version: 1
rules:
  - function: main.parseRecords
    max_self: 100ms
    max_total_share: 70%
  - match: '^main\.'
    max_self_share: 10%
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := budget.Check(b, []*profile.Profile{loadBusy()}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Write(os.Stdout, "text")
	fmt.Println("passed:", res.Passed())
	// Output:
	// FAIL  perf-budget.yaml:5  max_self         main.parseRecords self time 150ms (10.14% of 1.48s total, 15 samples), want at most 100ms
	// PASS  perf-budget.yaml:6  max_total_share  main.parseRecords total time 990ms (66.89% of 1.48s total, 99 samples), share 66.89%, within 70.00% (95.56% of the limit)
	// FAIL  perf-budget.yaml:8  max_self_share   main.parseRecords (worst of 4 functions matching regexp "^main\\.") self time 150ms (10.14% of 1.48s total, 15 samples), share 10.14%, want at most 10.00%
	// budget perf-budget.yaml: 2 of 3 checks failed (1 profile)
	// passed: false
}

// Errors in a budget file name the file and line, all of them at once.
func ExampleParse() {
	_, err := budget.Parse("perf-budget.yaml", []byte(`version: 1
rules:
  - function: main.parseRecords
    max_self: 200
  - function: main.renderReport
    max_self_share: 0.05
`))
	fmt.Println(err)
	// Output:
	// perf-budget.yaml:4: max_self: 200 has no unit: write a duration such as 200ms
	// perf-budget.yaml:6: max_self_share: 0.05 has no unit: write a percentage such as 0.05%
}

// A budget limit's Bound is the limits.Limit perfassert's assertion of
// the same bound checks: the same result and the same words, so a budget
// line can move into a test.
func ExampleLimit() {
	b, err := budget.Parse("perf-budget.yaml", []byte("version: 1\nrules:\n  - function: main.parseRecords\n    max_self: 100ms\n    drop_synthetic: true\n"))
	if err != nil {
		panic(err)
	}
	p := loadBusy()
	res, err := budget.Check(b, []*profile.Profile{p}, nil)
	if err != nil {
		panic(err)
	}
	rule := &b.Rules[0]
	l := rule.Limits[0]
	fmt.Printf("%s, %s of %s, %s\n", l.Bound.Quantity, l.Bound, rule.Function, rule.Selection)
	// In a test: perfassert.MaxSelfTime(t, p, rule.Function, l.Bound.Time,
	// perfassert.WithSelection(rule.Selection)).
	r, err := limits.Check(p, rule.Function, l.Bound, limits.WithSelection(rule.Selection))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Checks[0].Message)
	fmt.Println(r.Summary())
	// Output:
	// self time, 100ms of main.parseRecords, without synthetic frames
	// main.parseRecords self time 150ms (10.14% of 1.48s total, 15 samples), want at most 100ms
	// main.parseRecords self time 150ms (10.14% of 1.48s total, 15 samples), want at most 100ms
}

// loadBusy loads the Go CPU profile the examples check.
func loadBusy() *profile.Profile {
	p, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		panic(err)
	}
	return p
}
