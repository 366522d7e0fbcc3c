package analysis_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestSelectionReplaces: a Selection is the one Option; of several, the
// last counts, whatever the ones before it selected, and the Selection
// given is not modified.
func TestSelectionReplaces(t *testing.T) {
	x, err := analysis.NewIndex(handProfile())
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile
	for _, sel := range []analysis.Selection{
		{},
		{Threads: []string{"worker", "1"}},
		{Processes: []string{"7"}},
		{DropSynthetic: true, Focus: re(`^a$`)},
		{Ignore: re(`^c$`), ToCaller: re(`^d$`)},
		{SampleType: "cpu"},
	} {
		t.Run(sel.String(), func(t *testing.T) {
			want, err := x.Table(sel)
			if err != nil {
				t.Fatal(err)
			}
			other := analysis.Selection{Threads: []string{"nobody"}, Focus: re(`^nothing$`)}
			got, err := x.Table(other, nil, sel)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("after another selection: %v, want %v", rowsOf(got), rowsOf(want))
			}
		})
	}
	// The union of two threads is one Selection of both; the slice the
	// caller holds is its own.
	threads := []string{"worker", "1"}
	sel := analysis.Selection{Threads: threads[:1:1]}
	one, err := x.Table(sel)
	if err != nil {
		t.Fatal(err)
	}
	both, err := x.Table(analysis.Selection{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	if both.Total != 100 || one.Total >= both.Total || len(sel.Threads) != 1 {
		t.Errorf("threads: one %v, both %v (want 100ns), selection now %v", one.Total, both.Total, sel.Threads)
	}
}

func TestSelectionValidate(t *testing.T) {
	x, err := analysis.NewIndex(handProfile())
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []analysis.Selection{{Threads: []string{""}}, {Processes: []string{"7", ""}}} {
		if err := sel.Validate(); err == nil {
			t.Errorf("%+v: no error", sel)
		}
		if _, err := x.Table(sel); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("Table(%+v): err %v", sel, err)
		}
	}
	if err := (analysis.Selection{Threads: []string{"main"}}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestSelectionString(t *testing.T) {
	sel := analysis.Selection{Threads: []string{"main", "7"}, DropSynthetic: true, Focus: regexp.MustCompile(`^app\.`)}
	if got, want := sel.String(), `thread "main" or "7", without synthetic frames, focus /^app\./`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if s := (analysis.Selection{}).String(); s != "" {
		t.Errorf("zero selection: %q", s)
	}
}

// TestThroughHandWorked: the stacks through a set of functions of the
// hand-made profile (see handProfile), worked by hand: a sample counts
// once however many matching frames it has, and the samples of one stack
// are merged.
func TestThroughHandWorked(t *testing.T) {
	p := handProfile()
	// A second sample of the stack a;main: merged with the first.
	p.Sample = append(p.Sample, &profile.Sample{Location: p.Sample[1].Location, Value: []int64{5, 50}, Label: p.Sample[1].Label})
	x, err := analysis.NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	name := func(re string) func(string) bool { return regexp.MustCompile(re).MatchString }
	tests := []struct {
		name  string
		match func(string) bool
		leaf  bool
		opts  []analysis.Option
		want  []string
	}{
		{"a anywhere", name(`^a$`), false, nil, []string{"a;b;a;main: 20 (2)", "a;main: 60 (6)"}},
		{"a or b anywhere: once per sample", name(`^(a|b)$`), false, nil, []string{"a;b;a;main: 20 (2)", "a;main: 60 (6)"}},
		{"a as the leaf", name(`^a$`), true, nil, []string{"a;b;a;main: 20 (2)", "a;main: 60 (6)"}},
		{"b as the leaf", name(`^b$`), true, nil, nil},
		{"c (d inlined in it)", name(`^c$`), false, nil, []string{"d;c;main: 30 (3)"}},
		{"c charged d's time", name(`^c$`), true, []analysis.Option{analysis.Selection{ToCaller: regexp.MustCompile(`^d$`)}}, []string{"c;main: 30 (3)"}},
		{"a charged to its caller, and called higher up", name(`^a$`), false, []analysis.Option{analysis.Selection{ToCaller: regexp.MustCompile(`^a$`)}}, []string{"b;a;main: 20 (2)"}},
		{"main, one thread", name(`^main$`), false, []analysis.Option{analysis.Selection{Threads: []string{"worker"}}}, nil},
		{"idle", name(`idle`), true, nil, []string{"(idle): 40 (4)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := x.Table(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			stacks, err := x.Through(tab, tc.match, tc.leaf, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkStacks(t, tab, stacks, true, tc.want)
		})
	}
	// a's leaf frames are charged to b and main; the a above b keeps a's
	// total (20: the two samples of a;b;a;main), and no self time.
	charged, err := x.Table(analysis.Selection{ToCaller: regexp.MustCompile(`^a$`)})
	if err != nil {
		t.Fatal(err)
	}
	if r := charged.Find("a"); len(r) != 1 || r[0].Self != 0 || r[0].Total != 20 {
		t.Errorf("a charged to its caller: %+v, want self 0, total 20", r)
	}
	all, err := x.Table()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Through(all, nil, false); err == nil {
		t.Error("Through without a match function: no error")
	}
	// A table of another selection lacks rows the stacks need.
	worker, err := x.Table(analysis.Selection{Threads: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Through(worker, name(`^main$`), false); err == nil {
		t.Error("Through with a table of another selection: no error")
	}
}

// TestThroughSumsToRows: on real profiles, the stacks through each
// function add up to its row, self and total, time and samples; the
// stacks through two functions add up to the union of their samples.
func TestThroughSumsToRows(t *testing.T) {
	for _, path := range []string{"../testdata/pprof/busy.pb.gz", "../testdata/cpuprofile/busy.cpuprofile"} {
		p, err := loaders.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		x, err := analysis.NewIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		tab, all, err := x.Stacks()
		if err != nil {
			t.Fatal(err)
		}
		sum := func(stacks []analysis.RowStack) (v int64, n int64) {
			for _, s := range stacks {
				v += int64(s.Value)
				n += s.Samples
			}
			return v, n
		}
		for _, f := range tab.Functions {
			if len(tab.Find(f.Name)) > 1 {
				continue
			}
			is := func(n string) bool { return n == f.Name }
			total, err := x.Through(tab, is, false)
			if err != nil {
				t.Fatal(err)
			}
			self, err := x.Through(tab, is, true)
			if err != nil {
				t.Fatal(err)
			}
			tv, tn := sum(total)
			sv, sn := sum(self)
			if tv != int64(f.Total) || tn != f.TotalSamples || sv != int64(f.Self) || sn != f.SelfSamples {
				t.Errorf("%s: %s: through %d (%d) leaf %d (%d), row total %d (%d) self %d (%d)",
					path, f.Name, tv, tn, sv, sn, f.Total, f.TotalSamples, f.Self, f.SelfSamples)
			}
		}
		// Two functions: the samples through either, from all the stacks.
		a, b := tab.Functions[0].Name, tab.Functions[len(tab.Functions)/2].Name
		either := func(n string) bool { return n == a || n == b }
		var want int64
		for _, s := range all {
			for _, fr := range s.Frames {
				if either(tab.Functions[fr].Name) {
					want += int64(s.Value)
					break
				}
			}
		}
		st, err := x.Through(tab, either, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := sum(st); got != want {
			t.Errorf("%s: through %s or %s: %d, want %d", path, a, b, got, want)
		}
	}
}
