package analysis_test

import (
	"errors"
	"fmt"
	"log"
	"regexp"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// Self and total time per function of a profile: the numbers
// `go tool pprof -top` prints. Folded stacks count each sample as 1 ms.
// Values are int64 in the table's unit, here nanoseconds
// (analysis.UnitTime), so a value is a time.Duration once the unit says so.
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
	if t.Unit != analysis.UnitTime {
		log.Fatalf("%s is not a time", t.SampleType)
	}
	fmt.Println("total", time.Duration(t.Total))
	for _, f := range t.Functions {
		fmt.Printf("%-6s self %-5v total %-6v %.0f%%\n", f.Name, time.Duration(f.Self), time.Duration(f.Total), 100*f.TotalShare)
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
	for _, opts := range [][]analysis.Option{nil, {analysis.Selection{Focus: regexp.MustCompile(`^render$`)}}} {
		t, err := x.Table(opts...)
		if err != nil {
			log.Fatal(err)
		}
		lex := t.Find("lex")[0]
		fmt.Printf("lex: total %s of %s\n", t.Format(lex.Total), t.Format(t.Total))
	}
	// Output:
	// lex: total 40ms of 90ms
	// lex: total 10ms of 90ms
}

// mustIndex reads a profile in one of the text formats the loaders know
// and indexes it.
func mustIndex(text string) *analysis.Index {
	p, err := loaders.Read(strings.NewReader(text))
	if err != nil {
		log.Fatal(err)
	}
	x, err := analysis.NewIndex(p)
	if err != nil {
		log.Fatal(err)
	}
	return x
}

// A Selection says which samples count; passed to Table it is an Option.
// Here only the thread "worker" counts, without its idle time.
func ExampleSelection() {
	x := mustIndex(`{"$schema":"https://www.speedscope.app/file-format-schema.json",
"shared":{"frames":[{"name":"main"},{"name":"work"},{"name":"(idle)"}]},
"profiles":[
 {"type":"sampled","name":"main","unit":"milliseconds","startValue":0,"endValue":30,"samples":[[0,1],[0]],"weights":[20,10]},
 {"type":"sampled","name":"worker","unit":"milliseconds","startValue":0,"endValue":60,"samples":[[1],[2]],"weights":[40,20]}]}`)
	sel := analysis.Selection{Threads: []string{"worker"}, DropSynthetic: true}
	t, err := x.Table(sel)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s in all\n", sel, t.Format(t.Total))
	for _, f := range t.Functions {
		fmt.Println(f.Name, t.Format(f.Self))
	}
	// Output:
	// thread "worker", without synthetic frames: 40ms in all
	// work 40ms
}

// Through gives the stacks through a set of functions: their pooled time,
// each sample counted once. lex and parse together are 60ms, not their
// totals' 40ms + 60ms.
func ExampleIndex_Through() {
	x := mustIndex("main;parse;lex 30\nmain;render;parse;lex 10\nmain;parse 20\nmain;render 50\n")
	t, err := x.Table()
	if err != nil {
		log.Fatal(err)
	}
	stacks, err := x.Through(t, regexp.MustCompile(`^(lex|parse)$`).MatchString, false)
	if err != nil {
		log.Fatal(err)
	}
	var pooled int64
	for _, s := range stacks {
		pooled += s.Value
	}
	fmt.Println("lex or parse:", t.Format(pooled), "of", t.Format(t.Total))
	// Output:
	// lex or parse: 60ms of 110ms
}

// CheckTime refuses to measure what a selection leaves without time: here
// the thread "main", which the profile does not have (a change renamed
// it). A comparison or a limit on it would pass with nothing measured.
func ExampleCheckTime() {
	x := mustIndex(`{"$schema":"https://www.speedscope.app/file-format-schema.json",
"shared":{"frames":[{"name":"main"},{"name":"work"}]},
"profiles":[{"type":"sampled","name":"worker","unit":"milliseconds","startValue":0,"endValue":60,"samples":[[0,1]],"weights":[60]}]}`)
	for _, thread := range []string{"worker", "main"} {
		sel := analysis.Selection{Threads: []string{thread}}
		t, err := x.Table(sel)
		if err != nil {
			log.Fatal(err)
		}
		err = analysis.CheckTime("head", sel, []*analysis.Index{x}, []*analysis.Table{t})
		fmt.Printf("%s: %v (no time: %v)\n", thread, err, errors.Is(err, analysis.ErrNoTime))
	}
	// Output:
	// worker: <nil> (no time: false)
	// main: head: the selection (thread "main") leaves no time; the profile has thread worker (no time: true)
}
