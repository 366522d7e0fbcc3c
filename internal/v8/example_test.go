package v8_test

import (
	"fmt"
	"os"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

// Parse a small profile (the first example of seeds/000) and print self and
// total time per function. (root) is not a frame; the last sample lasts the
// average interval.
func ExampleParse() {
	f, err := os.Open("testdata/minimal.cpuprofile")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	p, err := v8.Parse(f, pbuild.Options{Name: "CPU.20250510.134625.51430.0.001.cpuprofile"})
	if err != nil {
		panic(err)
	}
	tb, err := analysis.Functions(p)
	if err != nil {
		panic(err)
	}
	for _, fn := range tb.Functions {
		fmt.Printf("%-14s %s:%d  self %-6v total %v\n", fn.Name, fn.File, fn.Line, time.Duration(fn.Self), time.Duration(fn.Total)) // a CPU profile: nanoseconds
	}
	fmt.Println("pid", p.Sample[0].Label[pbuild.LabelPID], "period", p.Period, "ns")
	// Output:
	// runMainESM     node:internal/modules/run_main:93  self 100µs  total 300µs
	// child-work-1   file:///index.mjs:12  self 100µs  total 100µs
	// child-work-2   file:///index.mjs:13  self 100µs  total 100µs
	// main-work      file:///index.mjs:11  self 0s     total 200µs
	// pid [51430] period 100000 ns
}
