package analysis_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestStacksHandWorked checks the stacks of the hand-made profile (see
// handProfile) frame by frame, under the options that change which samples
// count.
func TestStacksHandWorked(t *testing.T) {
	tests := []struct {
		name string
		opts []analysis.Option
		want []string // "frames leaf first: value"
	}{
		{"all", nil, []string{"a;b;a;main: 20", "a;main: 10", "d;c;main: 30", "(idle): 40"}},
		{"drop synthetic", []analysis.Option{analysis.Selection{DropSynthetic: true}}, []string{"a;b;a;main: 20", "a;main: 10", "d;c;main: 30"}},
		{"focus b", []analysis.Option{analysis.Selection{Focus: regexp.MustCompile(`^b$`)}}, []string{"a;b;a;main: 20"}},
		{"ignore c", []analysis.Option{analysis.Selection{Ignore: regexp.MustCompile(`^c$`)}}, []string{"a;b;a;main: 20", "a;main: 10", "(idle): 40"}},
		{"thread", []analysis.Option{analysis.Selection{Threads: []string{"worker"}}}, []string{"(idle): 40"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, stacks, err := stacksOf(handProfile(), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkStacks(t, tab, stacks, false, tc.want)
		})
	}
}

// checkStacks compares stacks with want, each "frames leaf first: value"
// and, with samples, " (samples)".
func checkStacks(t *testing.T, tab *analysis.Table, stacks []analysis.RowStack, samples bool, want []string) {
	t.Helper()
	var got []string
	for _, s := range stacks {
		var names []string
		for _, f := range s.Frames {
			names = append(names, tab.Functions[f].Name)
		}
		line := fmt.Sprintf("%s: %d", strings.Join(names, ";"), s.Value)
		if samples {
			line += fmt.Sprintf(" (%d)", s.Samples)
		}
		got = append(got, line)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stacks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStacksSumToFunctions rebuilds every function's self and total time of
// real profiles from the stacks, counting a recursive function once per
// sample, and compares them with Functions (itself checked against go tool
// pprof -top).
func TestStacksSumToFunctions(t *testing.T) {
	for _, path := range []string{"../testdata/regress/head-1.pb.gz", "../testdata/pprof/busy.pb.gz", "../testdata/cpuprofile/busy.cpuprofile"} {
		p, err := loaders.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		tab, stacks, err := stacksOf(p)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		self := make([]int64, len(tab.Functions))
		total := make([]int64, len(tab.Functions))
		selfN := make([]int64, len(tab.Functions))
		for _, s := range stacks {
			self[s.Frames[0]] += int64(s.Value)
			selfN[s.Frames[0]] += s.Samples
			seen := map[int32]bool{}
			for _, f := range s.Frames {
				if !seen[f] {
					seen[f] = true
					total[f] += int64(s.Value)
				}
			}
		}
		for i, f := range tab.Functions {
			if self[i] != int64(f.Self) || total[i] != int64(f.Total) || selfN[i] != f.SelfSamples {
				t.Errorf("%s: %s from stacks: self %d total %d samples %d; Functions: %d %d %d",
					path, f.Name, self[i], total[i], selfN[i], f.Self, f.Total, f.SelfSamples)
			}
		}
	}
}

// Stacks gives each sample's frames as rows of the table, leaf first.
func ExampleIndex_Stacks() {
	x, err := loaders.LoadIndex("../testdata/cli/base.folded")
	if err != nil {
		panic(err)
	}
	tab, stacks, err := x.Stacks()
	if err != nil {
		panic(err)
	}
	for _, s := range stacks {
		var names []string
		for i := len(s.Frames) - 1; i >= 0; i-- { // root first
			names = append(names, tab.Functions[s.Frames[i]].Name)
		}
		fmt.Println(strings.Join(names, " → "), tab.Format(s.Value))
	}
	// Output:
	// main → handler → parse 400ms
	// main → handler → render 300ms
	// main → gc 300ms
}

// stacksOf is x.Stacks of p's index.
func stacksOf(p *profile.Profile, opts ...analysis.Option) (*analysis.Table, []analysis.RowStack, error) {
	x, err := analysis.NewIndex(p)
	if err != nil {
		return nil, nil, err
	}
	return x.Stacks(opts...)
}
