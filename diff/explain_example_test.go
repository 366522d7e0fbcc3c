package diff_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

// A regressed function's explanation names the caller path its extra time
// comes through. In these folded stacks parse is called through load and
// through handler → render, and only the calls through render got slower.
func ExampleExplanation() {
	load := func(path string) []*profile.Profile {
		p, err := loaders.Load(path)
		if err != nil {
			panic(err)
		}
		return []*profile.Profile{p}
	}
	r, err := diff.Compare(load("../testdata/cli/explain-base.folded"), load("../testdata/cli/explain-head.folded"))
	if err != nil {
		panic(err)
	}
	for _, row := range r.Regressions() {
		fmt.Printf("%s: %s\n", row.Name, row.Explain.Summary)
		for _, pc := range row.Explain.Paths {
			fmt.Printf("  %-9s %+.0f%%  %s\n", pc.Verdict, 100*pc.Relative, strings.Join(pc.Path, " → "))
		}
	}
	// Output:
	// parse: +25.0% of the +25.0% comes through main → handler → render → parse; the path main → load → parse is unchanged
	//   regressed +50%  main → handler → render → parse
	//   unchanged +0%  main → load → parse
}

// Write(w, "html") writes one page that opens offline: the verdicts, the
// explanations and a differential flame graph.
func ExampleReport_Write_html() {
	base, err := loaders.Load("../testdata/cli/explain-base.folded")
	if err != nil {
		panic(err)
	}
	head, err := loaders.Load("../testdata/cli/explain-head.folded")
	if err != nil {
		panic(err)
	}
	r, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{head})
	if err != nil {
		panic(err)
	}
	f, err := os.CreateTemp("", "report-*.html")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	if err := r.Write(f, "html"); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
	page, _ := os.ReadFile(f.Name())
	fmt.Println(strings.HasPrefix(string(page), "<!DOCTYPE html>"), strings.Contains(string(page), "main → handler → render → parse"))
	// Output: true true
}
