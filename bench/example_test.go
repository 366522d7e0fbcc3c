package bench_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

// Compare tells benchmarks apart by package, as benchstat does: here
// both packages have BenchmarkParse, and only example.com/b's got slower.
// a's head runs are its base runs in another order (p=1); every head run
// of b is slower than every base run (p=2/C(10,5)=0.00794).
func ExampleCompare() {
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
	rep, err := bench.Compare(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range rep.Regressions() {
		fmt.Printf("%s in %s: %+.0f%% %s\n", row.Name, row.Config["pkg"], 100*row.Relative, row.Unit)
	}
	rep.Write(os.Stdout, "text")
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

// Outputs from two machines differ in their cpu line: every benchmark is
// then new on one side and gone on the other, not compared, and a warning
// names the key and the option that ignores it. With the key ignored,
// BenchmarkParse is compared: medians 100 and 150.5 ns/op, +50.5%, and
// every head run slower than every base run (p = 2/C(12,6) = 0.00216).
func ExampleWithIgnore() {
	out := func(cpu string, ns ...int) string {
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/a\ncpu: " + cpu + "\n")
		for _, v := range ns {
			fmt.Fprintf(&b, "BenchmarkParse-2\t1000\t%d ns/op\n", v)
		}
		return b.String()
	}
	base := out("laptop", 100, 101, 99, 100, 102, 100)
	head := out("ci runner", 150, 152, 149, 151, 150, 151)
	rep, err := bench.Compare(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := rep.Counts()
	fmt.Printf("%d new, %d gone\n%s\n", c[diff.New], c[diff.Gone], rep.Warnings[0])
	rep, err = bench.Compare(strings.NewReader(base), strings.NewReader(head), bench.WithIgnore("cpu"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range rep.Rows {
		fmt.Printf("%s %s: %s, %+.1f%% (p=%.3g)\n", row.Name, row.Unit, row.Verdict, 100*row.Relative, row.P)
	}
	// Output:
	// 1 new, 1 gone
	// 1 benchmark results are on one side only because their configuration differs (cpu "laptop" in base, "ci runner" in head): they are not compared; ignore the key to compare them anyway (benchstat's -ignore; bench.WithIgnore("cpu"))
	// Parse-2 sec/op: regressed, +50.5% (p=0.00216)
}
