package folded_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/folded"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

func Example() {
	in := "main;parse;lex 30\nmain;parse 10\nmain;render 60\n"
	p, err := folded.Parse(strings.NewReader(in), pbuild.Options{})
	if err != nil {
		panic(err)
	}
	tab, err := analysis.Functions(p)
	if err != nil {
		panic(err)
	}
	for _, f := range tab.Functions {
		fmt.Printf("%-7s self %-5v total %v\n", f.Name, time.Duration(f.Self), time.Duration(f.Total)) // folded stacks: times
	}
	fmt.Println(pbuild.Warnings(p))
	if err := folded.Write(os.Stdout, p); err != nil {
		panic(err)
	}
	// Output:
	// render  self 60ms  total 60ms
	// lex     self 30ms  total 30ms
	// parse   self 10ms  total 40ms
	// main    self 0s    total 100ms
	// [folded stacks hold sample counts only: each sample taken as 1ms]
	// main;parse 10
	// main;parse;lex 30
	// main;render 60
}
