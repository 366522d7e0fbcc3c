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
	res.Write(os.Stdout, "text")
	fmt.Println("passed:", res.Passed())
	// Output:
	// PASS  budget.yaml:9   max_self         busyLoop self time 299.04ms (94.87% of 315.22ms total, 257 samples), within 400ms (74.76% of the limit)
	// PASS  budget.yaml:12  max_total_share  lightWork total time 1.10ms (0.35% of 315.22ms total, 1 samples), share 0.35%, within 10.00% (3.51% of the limit)
	//                                        warning: only 1 samples in the measured total share: a sampled measurement this small is noise (±100%); profile for longer (Capture: MinSamples)
	// PASS  budget.yaml:15  max_self         busyLoop (worst of 26 functions matching regexp ".") self time 299.04ms (94.87% of 315.22ms total, 257 samples), within 350ms (85.44% of the limit)
	// budget budget.yaml: 3 of 3 checks passed (1 profile)
	// passed: true
}
