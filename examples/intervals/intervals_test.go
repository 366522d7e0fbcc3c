// Package intervals shows that profiles of the same program sampled at
// different intervals compare as unchanged. Node's --cpu-prof-interval 100
// takes ten times the samples of --cpu-prof-interval 1000 and makes the
// program itself slower; hotbudget compares times (never raw sample counts)
// as shares of each profile's total by default, so neither difference looks
// like a regression. The CLI does the same with
//
//	hotbudget diff examples/intervals/testdata/base-1000us.cpuprofile -- examples/intervals/testdata/head-100us.cpuprofile
package intervals

import (
	"fmt"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

// A baseline sampled every 1000 µs against a run sampled every 100 µs.
func Example() {
	base, err := loaders.Load("testdata/base-1000us.cpuprofile")
	if err != nil {
		fmt.Println(err)
		return
	}
	head, err := loaders.Load("testdata/head-100us.cpuprofile")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("sampling period: base %v, head %v\n", time.Duration(base.Period), time.Duration(head.Period))
	r, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{head}, diff.WithSelection(analysis.Selection{DropSynthetic: true}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range r.Rows {
		if row.Name == "parse" || row.Name == "render" || row.Name == "checksum" {
			fmt.Printf("%-8s %5.1f%% -> %5.1f%% of the profile: %s\n", row.Name, row.Base.Metric*100, row.Head.Metric*100, row.Verdict)
		}
	}
	fmt.Println("regressions:", len(r.Regressions()))
	for _, w := range r.Warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// sampling period: base 1.137ms, head 208µs
	// parse     63.2% ->  65.5% of the profile: unchanged
	// render    17.8% ->  18.9% of the profile: unchanged
	// checksum  16.9% ->  16.3% of the profile: unchanged
	// regressions: 0
	// warning: base sampled every 1.14ms, head every 208us: compared as times, not sample counts
	// warning: 1 base and 1 head run(s): run-to-run noise is taken as a coefficient of variation of 5% per function (too few functions to learn it from the profiles); changes smaller than that cannot be told from noise: compare several runs a side (hotbudget record)
}
