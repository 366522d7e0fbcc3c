package callgrind_test

import (
	"fmt"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

func Example() {
	// main (20 Ir itself) calls func1 once (400 Ir in all) and func2
	// three times (400); func1 calls func2 twice (300): the extended
	// example of valgrind's Callgrind Format Specification.
	in := `# callgrind format
events: Ir
fl=(1) file1.c
fn=(1) main
16 20
cfn=(2) func1
calls=1 50
16 400
cfi=(2) file2.c
cfn=(3) func2
calls=3 20
16 400
fn=(2)
51 100
cfi=(2)
cfn=(3)
calls=2 20
51 300
fl=(2)
fn=(3)
20 700
`
	p, err := callgrind.Parse(strings.NewReader(in), pbuild.Options{})
	if err != nil {
		panic(err)
	}
	tab, err := analysis.Functions(p)
	if err != nil {
		panic(err)
	}
	fmt.Println(tab.SampleType, pbuild.IsExact(p))
	for _, f := range tab.Functions {
		fmt.Printf("%-5s %s self %3d total %3d\n", f.Name, f.File, f.Self, f.Total)
	}
	// Output:
	// instructions/count true
	// func2 file2.c self 700 total 700
	// func1 file1.c self 100 total 400
	// main  file1.c self  20 total 820
}
