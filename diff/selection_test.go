package diff_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
)

// threeThreads is a profile of three threads, a (10ms), b (20ms) and c
// (40ms), each with one function of its own.
func threeThreads() *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     int64(time.Millisecond),
	}
	for i, th := range []string{"a", "b", "c"} {
		f := &profile.Function{ID: uint64(i + 1), Name: "work_" + th}
		l := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: f}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		n := int64(10 << i)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{n, n * int64(time.Millisecond)},
			Label: map[string][]string{"thread": {th}}})
	}
	return p
}

// TestSelectionOptions: diff's one selection option, WithSelection,
// means what analysis's Selection and perfassert's WithSelection do:
// several threads select the union, a later WithSelection replaces an
// earlier one (diff's default ToCaller included), and an empty name is an
// error.
func TestSelectionOptions(t *testing.T) {
	p := threeThreads()
	ms := time.Millisecond
	threads := func(names ...string) diff.Option { return diff.WithSelection(analysis.Selection{Threads: names}) }
	tests := []struct {
		name  string
		opts  []diff.Option
		total time.Duration
	}{
		{"everything", nil, 70 * ms},
		{"one thread", []diff.Option{threads("b")}, 20 * ms},
		{"threads add up", []diff.Option{threads("a", "c")}, 50 * ms},
		{"the last replaces", []diff.Option{threads("c"), threads("a")}, 10 * ms},
		{"ignore", []diff.Option{diff.WithSelection(analysis.Selection{Ignore: regexp.MustCompile(`_c$`)})}, 70 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := compare(t, one(p), one(p), tc.opts...)
			if time.Duration(r.Base.Total) != tc.total || time.Duration(r.Head.Total) != tc.total {
				t.Errorf("totals %v and %v, want %v", r.Base.Total, r.Head.Total, tc.total)
			}
		})
	}
	// The default selection charges runtime.asyncPreempt to its caller; a
	// Selection replaces it, and keeps it when built from the default.
	r := compare(t, one(p), one(p))
	if r.Settings.Selection.ToCaller == nil || r.Settings.Selection.ToCaller.String() != diff.DefaultSettings().Selection.ToCaller.String() {
		t.Errorf("the default lost its ToCaller: %+v", r.Settings.Selection)
	}
	r = compare(t, one(p), one(p), threads("a"))
	if r.Settings.Selection.ToCaller != nil {
		t.Errorf("WithSelection kept ToCaller %v", r.Settings.Selection.ToCaller)
	}
	sel := diff.DefaultSettings().Selection
	sel.Threads = []string{"a"}
	r = compare(t, one(p), one(p), diff.WithSelection(sel))
	if r.Settings.Selection.ToCaller == nil || time.Duration(r.Base.Total) != 10*ms {
		t.Errorf("WithSelection of the default with a thread: %+v, total %v", r.Settings.Selection, r.Base.Total)
	}
	if len(diff.DefaultSettings().Selection.Threads) != 0 {
		t.Errorf("options changed DefaultSettings: %+v", diff.DefaultSettings().Selection)
	}
	for _, o := range []diff.Option{threads(""), diff.WithSelection(analysis.Selection{Processes: []string{"7", ""}})} {
		if _, err := diff.Compare(one(p), one(p), o); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("empty name: err %v", err)
		}
	}
}

// WithSelection compares only the samples an analysis.Selection keeps,
// here two of a profile's three threads. Built from the default
// selection, it keeps diff's charging of runtime.asyncPreempt to its
// caller; analysis.Selection{Threads: ...} alone would not.
func ExampleWithSelection() {
	p := threeThreads()                     // threads a (10ms), b (20ms) and c (40ms)
	sel := diff.DefaultSettings().Selection // keeps diff's default ToCaller
	sel.Threads = []string{"a", "b"}
	r, err := diff.Compare([]*profile.Profile{p}, []*profile.Profile{p}, diff.WithSelection(sel))
	if err != nil {
		panic(err)
	}
	fmt.Println(time.Duration(r.Base.Total), time.Duration(r.Head.Total), len(r.Regressions())) // a CPU profile: nanoseconds
	// Output:
	// 30ms 30ms 0
}

// DefaultSettings is a function: a caller that changes the value it
// returns, its ToCaller regexp included, changes no other comparison's.
func TestDefaultSettingsIsNotShared(t *testing.T) {
	a := diff.DefaultSettings()
	a.Alpha = 0.5
	a.Selection.Threads = append(a.Selection.Threads, "a")
	a.Selection.ToCaller.Longest()
	b := diff.DefaultSettings()
	if b.Alpha != 0.05 || len(b.Selection.Threads) != 0 || a.Selection.ToCaller == b.Selection.ToCaller {
		t.Errorf("DefaultSettings() shares state between calls: %+v", b)
	}
}
