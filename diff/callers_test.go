package diff

import (
	"reflect"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
)

// callersProfile has the stacks a;b;a;main (thread main), a;main (thread
// main), d;c;main with d inlined into c (thread main) and b;x (thread
// worker).
func callersProfile() *profile.Profile {
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name, Filename: "x.go", StartLine: int64(id)}
	}
	fMain, fA, fB, fC, fD, fX := fn(1, "main"), fn(2, "a"), fn(3, "b"), fn(4, "c"), fn(5, "d"), fn(6, "x")
	loc := func(id uint64, fns ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range fns {
			l.Line = append(l.Line, profile.Line{Function: f, Line: f.StartLine + 1})
		}
		return l
	}
	lMain, lA, lB, lCD, lX := loc(1, fMain), loc(2, fA), loc(3, fB), loc(4, fD, fC), loc(5, fX)
	s := func(thread string, locs ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: locs, Value: []int64{1, 10}, Label: map[string][]string{"thread": {thread}}}
	}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10,
		Sample:     []*profile.Sample{s("main", lA, lB, lA, lMain), s("main", lA, lMain), s("main", lCD, lMain), s("worker", lB, lX)},
		Location:   []*profile.Location{lMain, lA, lB, lCD, lX},
		Function:   []*profile.Function{fMain, fA, fB, fC, fD, fX},
	}
}

// TestDirectCallers works callersProfile's direct callers out by hand: a
// recursive function's callers are the frames above each of its
// occurrences, an inlined function's the function it is inlined into; only
// the samples the comparison selects count, and functions are named as
// the comparison names them (renamed).
func TestDirectCallers(t *testing.T) {
	callers := func(opts ...Option) map[string]map[string]bool {
		s, err := newEngine(opts)
		if err != nil {
			t.Fatal(err)
		}
		x, err := analysis.NewIndex(callersProfile())
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.run(x)
		if err != nil {
			t.Fatal(err)
		}
		return directCallers(s, []*run{r}, map[string]bool{"a": true, "b": true, "d": true, "main": true, "nowhere": true, "B": true})
	}
	want := map[string]map[string]bool{
		"a":       {"b": true, "main": true},
		"b":       {"a": true, "x": true},
		"d":       {"c": true},
		"main":    {},
		"nowhere": {},
		"B":       {},
	}
	if got := callers(); !reflect.DeepEqual(got, want) {
		t.Errorf("directCallers = %v, want %v", got, want)
	}
	// The worker thread left out: b is called by a alone.
	want["b"] = map[string]bool{"a": true}
	if got := callers(WithSelection(analysis.Selection{Threads: []string{"main"}})); !reflect.DeepEqual(got, want) {
		t.Errorf("directCallers of thread main = %v, want %v", got, want)
	}
	// b renamed B: found under its new name, and named so as a caller.
	got := callers(WithSelection(analysis.Selection{Threads: []string{"main"}}), WithRename("b", "B"))
	want = map[string]map[string]bool{
		"a":       {"B": true, "main": true},
		"b":       {},
		"d":       {"c": true},
		"main":    {},
		"nowhere": {},
		"B":       {"a": true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directCallers with b renamed B = %v, want %v", got, want)
	}
}
