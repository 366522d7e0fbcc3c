package analysis_test

import (
	"fmt"
	"log"
	"os"
	"regexp"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// Self and total time per function of a profile: the numbers
// `go tool pprof -top` prints. Folded stacks count each sample as 1 ms.
func ExampleFunctions() {
	p, err := loaders.Read(strings.NewReader(`main;parse;lex 30
main;parse 20
main;render 50
main;render;parse;lex 10
`))
	if err != nil {
		log.Fatal(err)
	}
	t, err := analysis.Functions(p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("total", t.Total)
	for _, f := range t.Functions {
		fmt.Printf("%-6s self %-5v total %-6v %.0f%%\n", f.Name, f.Self, f.Total, 100*f.TotalShare)
	}
	// Output:
	// total 110ms
	// render self 50ms  total 60ms   55%
	// lex    self 40ms  total 40ms   36%
	// parse  self 20ms  total 60ms   55%
	// main   self 0s    total 110ms  100%
}

// An Index answers any number of tables of one profile without walking its
// samples again: here all of it, then only the samples through render.
func ExampleIndex_Table() {
	p, err := loaders.Read(strings.NewReader(`main;parse;lex 30
main;render;parse;lex 10
main;render 50
`))
	if err != nil {
		log.Fatal(err)
	}
	x, err := analysis.NewIndex(p)
	if err != nil {
		log.Fatal(err)
	}
	for _, opts := range [][]analysis.Option{nil, {analysis.Focus(regexp.MustCompile(`^render$`))}} {
		t, err := x.Table(opts...)
		if err != nil {
			log.Fatal(err)
		}
		lex := t.Find("lex")[0]
		fmt.Printf("lex: total %v of %v\n", lex.Total, t.Total)
	}
	// Output:
	// lex: total 40ms of 90ms
	// lex: total 10ms of 90ms
}

// ParseIndex reads a Go profile (pprof's protobuf, gzipped or not) on a
// fast path that never builds a *profile.Profile.
func ExampleParseIndex() {
	data, err := os.ReadFile("../testdata/pprof/busy.pb.gz")
	if err != nil {
		log.Fatal(err)
	}
	x, err := analysis.ParseIndex(data)
	if err != nil {
		log.Fatal(err)
	}
	t, err := x.Table()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.SampleType, "every", t.Period)
	for _, name := range []string{"main.parseRecords", "main.renderReport"} {
		f := t.Find(name)[0]
		fmt.Printf("%s total %v\n", name, f.Total)
	}
	// Output:
	// cpu/nanoseconds every 10ms
	// main.parseRecords total 990ms
	// main.renderReport total 480ms
}
