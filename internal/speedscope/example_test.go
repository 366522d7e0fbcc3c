package speedscope_test

import (
	"fmt"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/speedscope"
)

func ExampleParse() {
	in := `{"$schema":"https://www.speedscope.app/file-format-schema.json",
"shared":{"frames":[{"name":"main"},{"name":"work"}]},
"profiles":[{"type":"evented","name":"main thread","unit":"milliseconds","startValue":0,"endValue":10,
"events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":2},{"type":"C","frame":1,"at":9},{"type":"C","frame":0,"at":10}]}]}`
	p, err := speedscope.Parse(strings.NewReader(in), pbuild.Options{})
	if err != nil {
		panic(err)
	}
	tab, err := analysis.Functions(p, analysis.Selection{Threads: []string{"main thread"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("exact:", tab.Exact)
	for _, f := range tab.Functions {
		fmt.Printf("%-4s self %v total %v\n", f.Name, tab.Format(f.Self), tab.Format(f.Total))
	}
	_, err = speedscope.Parse(strings.NewReader(strings.Replace(in, `"C","frame":1`, `"C","frame":0`, 1)), pbuild.Options{})
	fmt.Println(err)
	// Output:
	// exact: true
	// work self 7ms total 7ms
	// main self 3ms total 10ms
	// profile 0 ("main thread"): event 2: closes frame 0 ("main") but the innermost open frame is 1 ("work"), opened at event 1 (events must be properly nested)
}
