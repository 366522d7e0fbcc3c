package diff_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/hotbudget/hotbudget/diff"
)

// CompareBench tells benchmarks apart by package, as benchstat does: here
// both packages have BenchmarkParse, and only example.com/b's got slower.
// a's head runs are its base runs in another order (p=1); every head run
// of b is slower than every base run (p=2/C(10,5)=0.00794).
func ExampleCompareBench() {
	out := func(ns map[string][]int) string {
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\ncpu: test\n")
		for _, pkg := range []string{"example.com/a", "example.com/b"} {
			b.WriteString("pkg: " + pkg + "\n")
			for _, v := range ns[pkg] {
				fmt.Fprintf(&b, "BenchmarkParse-2\t1000\t%d ns/op\n", v)
			}
		}
		return b.String()
	}
	base := out(map[string][]int{"example.com/a": {100, 101, 99, 100, 102, 100}, "example.com/b": {200, 198, 202, 201, 199, 200}})
	head := out(map[string][]int{"example.com/a": {101, 99, 100, 102, 100, 101}, "example.com/b": {300, 297, 305, 301, 299, 300}})
	rep, err := diff.CompareBench(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range rep.Regressions() {
		fmt.Printf("%s in %s: %+.0f%% %s\n", row.Name, row.Config["pkg"], 100*row.Relative, row.Unit)
	}
	rep.WriteText(os.Stdout)
	// Output:
	// Parse-2 in example.com/b: +50% sec/op
	// base: 6 runs
	// head: 6 runs
	// compared: medians over runs per benchmark and unit; Mann-Whitney U as benchstat (no noise model is learned across benchmarks); false-discovery rate 0.05; minimum change 10%
	// goos: linux
	// goarch: amd64
	// cpu: test
	//
	//                 base                head   change          p    verdict  pkg            benchmark
	//   200.0n sec/op ± 1%  300.0n sec/op ± 2%  +50.00%  p=0.00216  regressed  example.com/b  Parse-2
	//   100.0n sec/op ± 2%  100.5n sec/op ± 1%   +0.50%    p=0.859  unchanged  example.com/a  Parse-2
	//
	// 1 of 2 benchmark results regressed: Parse-2 sec/op (example.com/b)
}
