// Package nodebudget shows a Node.js CPU profile (.cpuprofile, as
// node --cpu-prof writes it) checked against a budget file from Go; the CLI
// does the same with
//
//	hotbudget check --budget examples/nodebudget/testdata/budget.yaml testdata/cpuprofile/busy.cpuprofile
package nodebudget

import (
	"fmt"
	"os"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/budget"
	"github.com/hotbudget/hotbudget/loaders"
)

// Load a real Node profile and a budget, check, and print every rule's result.
func Example() {
	data, err := os.ReadFile("testdata/budget.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := budget.Parse("budget.yaml", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := loaders.Load("../../testdata/cpuprofile/busy.cpuprofile")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := budget.Check(b, []*profile.Profile{p}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res.WriteText(os.Stdout)
	fmt.Println("passed:", res.Passed())
	// Output:
	// PASS  budget.yaml:9   max_self         busyLoop: self 299.04ms <= 400ms (94.87% of 315.22ms total)
	// PASS  budget.yaml:12  max_total_share  lightWork: total share 0.35% <= 10% (1.10ms of 315.22ms total)
	// PASS  budget.yaml:15  max_self         busyLoop (worst of 26 matching /./): self 299.04ms <= 350ms (94.87% of 315.22ms total)
	// budget budget.yaml: 3 of 3 checks passed (1 profile)
	// passed: true
}
