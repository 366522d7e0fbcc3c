package diff_test

import (
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

// A change renamed parse to parseFast and made it slower. Matched by name,
// parse is gone and parseFast new, which fail no gate (and with only two
// functions on both sides to measure shares against, their shares, which
// fell as parseFast's grew, read as improved); WithRename judges parse and
// parseFast as one function, and the others as unchanged.
func ExampleWithRename() {
	read := func(folded string) []*profile.Profile {
		p, err := loaders.Read(strings.NewReader(folded))
		if err != nil {
			panic(err)
		}
		return []*profile.Profile{p}
	}
	base := read("main;handler;parse 400\nmain;handler;render 300\nmain;gc 300\n")
	head := read("main;handler;parseFast 600\nmain;handler;render 300\nmain;gc 300\n")
	for _, opts := range [][]diff.Option{nil, {diff.WithRename("parse", "parseFast")}} {
		r, err := diff.Compare(base, head, opts...)
		if err != nil {
			panic(err)
		}
		for _, row := range r.Rows {
			if row.Verdict != diff.Unchanged {
				fmt.Println(row.Name, row.Verdict, row.RenamedFrom)
			}
		}
		fmt.Println("fails the gate:", r.Failed())
	}
	// Output:
	// gc improved []
	// render improved []
	// parseFast new []
	// parse gone []
	// fails the gate: false
	// parseFast regressed [parse]
	// fails the gate: true
}
