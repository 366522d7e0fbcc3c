package gotrace

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"golang.org/x/exp/trace"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

func mk[T trace.EventDetails](t *testing.T, c trace.EventConfig[T]) trace.Event {
	t.Helper()
	ev, err := trace.MakeEvent(c)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// handEvents is a small trace built event by event, times in ns:
//
//	g1: task req [1000, 11000], region outer [2000, 10000] holding inner [5000, 8000]
//	g2: region bg begins at 3000 and never ends (closed at the last event, 12000);
//	    an end of region "nope" at 9500 matches nothing open and is ignored
//	g3: region early ends at 9000 without a begin (counted from the first event, 1000)
//	a CPU sample at 6000 on g1, thread 9: rootF -> leafF
func handEvents(t *testing.T) []trace.Event {
	region := func(ts trace.Time, kind trace.EventKind, g trace.GoID, task trace.TaskID, typ string) trace.Event {
		return mk(t, trace.EventConfig[trace.Region]{Time: ts, Kind: kind, Goroutine: g, Details: trace.Region{Task: task, Type: typ}})
	}
	stk := trace.MakeStack([]trace.StackFrame{
		{PC: 0x10, Func: "leafF", File: "a.go", Line: 10},
		{PC: 0x20, Func: "rootF", File: "a.go", Line: 3},
	})
	return []trace.Event{
		mk(t, trace.EventConfig[trace.Sync]{Time: 1000, Kind: trace.EventSync, Details: trace.Sync{N: 1}}),
		mk(t, trace.EventConfig[trace.Task]{Time: 1000, Kind: trace.EventTaskBegin, Goroutine: 1, Details: trace.Task{ID: 7, Type: "req"}}),
		region(2000, trace.EventRegionBegin, 1, 7, "outer"),
		region(3000, trace.EventRegionBegin, 2, 0, "bg"),
		region(5000, trace.EventRegionBegin, 1, 7, "inner"),
		mk(t, trace.EventConfig[trace.StackSample]{Time: 6000, Kind: trace.EventStackSample, Goroutine: 1, Thread: 9, Stack: stk}),
		region(8000, trace.EventRegionEnd, 1, 7, "inner"),
		region(9000, trace.EventRegionEnd, 3, 0, "early"),
		region(9500, trace.EventRegionEnd, 2, 0, "nope"),
		region(10000, trace.EventRegionEnd, 1, 7, "outer"),
		mk(t, trace.EventConfig[trace.Task]{Time: 11000, Kind: trace.EventTaskEnd, Goroutine: 1, Details: trace.Task{ID: 7, Type: "req"}}),
		mk(t, trace.EventConfig[trace.Sync]{Time: 12000, Kind: trace.EventSync, Details: trace.Sync{N: 2}}),
	}
}

func run(t *testing.T, view string) *profile.Profile {
	t.Helper()
	ps := newParser()
	for _, ev := range handEvents(t) {
		ps.event(ev)
	}
	p, err := ps.finish(view)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type row struct {
	stack  string
	count  int64
	nanos  int64
	labels string
}

func rows(p *profile.Profile) []row {
	var out []row
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i].Line[0]
			names = append(names, l.Function.Name)
		}
		var kv []string
		for k, v := range s.Label {
			kv = append(kv, k+"="+strings.Join(v, ","))
		}
		slices.Sort(kv)
		out = append(out, row{strings.Join(names, ";"), s.Value[0], s.Value[1], strings.Join(kv, " ")})
	}
	slices.SortFunc(out, func(a, b row) int { return strings.Compare(a.stack, b.stack) })
	return out
}

// TestHandWorkedDurations checks the durations view of handEvents against
// values worked out by hand from the event times.
func TestHandWorkedDurations(t *testing.T) {
	p := run(t, pbuild.ViewDurations)
	want := []row{
		{"bg", 1, 9000, "goroutine=2"},                      // 3000 → closed at 12000
		{"early", 1, 8000, "goroutine=3"},                   // from the first event, 1000 → 9000
		{"task:req;outer", 1, 5000, "goroutine=1 task=req"}, // [2000,5000] + [8000,10000]
		{"task:req;outer;inner", 1, 3000, "goroutine=1 task=req"},
	}
	if got := rows(p); !slices.Equal(got, want) {
		t.Errorf("durations:\n got %v\nwant %v", got, want)
	}
	if p.DurationNanos != 11000 || !pbuild.IsExact(p) {
		t.Errorf("DurationNanos %d exact %v, want 11000 and exact", p.DurationNanos, pbuild.IsExact(p))
	}
	w := strings.Join(pbuild.Warnings(p), "\n")
	for _, sub := range []string{`end of region "nope", which is not open (open: "bg")`, "1 regions still open", "1 regions ended without a begin"} {
		if !strings.Contains(w, sub) {
			t.Errorf("warnings %q lack %q", w, sub)
		}
	}
}

// TestHandWorkedSamples: the default view takes the CPU sample, with its
// frames, the default period and the region it ran in.
func TestHandWorkedSamples(t *testing.T) {
	p := run(t, "")
	want := []row{{"rootF;leafF", 1, DefaultPeriod, "goroutine=1 region=inner task=req tid=9"}}
	if got := rows(p); !slices.Equal(got, want) {
		t.Errorf("samples:\n got %v\nwant %v", got, want)
	}
	if p.Period != DefaultPeriod || pbuild.IsExact(p) {
		t.Errorf("Period %d exact %v, want %d and sampled", p.Period, pbuild.IsExact(p), DefaultPeriod)
	}
	leaf := p.Sample[0].Location[0].Line[0]
	if leaf.Function.Filename != "a.go" || leaf.Line != 10 {
		t.Errorf("leaf at %s:%d, want a.go:10", leaf.Function.Filename, leaf.Line)
	}
}

// TestDeepNesting: regions nested beyond MaxDepth add no frames; their time
// stays with the region at the limit and the whole time is kept.
func TestDeepNesting(t *testing.T) {
	ps := newParser()
	const n = MaxDepth + 100
	add := func(ts trace.Time, kind trace.EventKind, i int) {
		ps.event(mk(t, trace.EventConfig[trace.Region]{Time: ts, Kind: kind, Goroutine: 1, Details: trace.Region{Type: "r" + strconv.Itoa(i)}}))
	}
	for i := range n {
		add(trace.Time(1000+i), trace.EventRegionBegin, i)
	}
	for i := n - 1; i >= 0; i-- {
		add(trace.Time(1000+2*n-i), trace.EventRegionEnd, i)
	}
	p, err := ps.finish(pbuild.ViewDurations)
	if err != nil {
		t.Fatal(err)
	}
	var total, deepest, atLimit int64
	for _, s := range p.Sample {
		total += s.Value[1]
		deepest = max(deepest, int64(len(s.Location)))
		if len(s.Location) == MaxDepth {
			atLimit += s.Value[1]
		}
	}
	// Region ri spans [1000+i, 1000+2n-i]: self time 2 ns for every region
	// within the limit, and the innermost region at the limit holds all
	// the time of its deeper regions: [1000+MaxDepth-1, 1000+2n-MaxDepth+1].
	wantTotal := int64(2 * n) // the outermost region's span
	wantAtLimit := int64(2*n - 2*(MaxDepth-1))
	if total != wantTotal || deepest != MaxDepth || atLimit != wantAtLimit {
		t.Errorf("total %d, deepest stack %d with %d ns; want %d, %d with %d ns", total, deepest, atLimit, wantTotal, MaxDepth, wantAtLimit)
	}
	if !strings.Contains(strings.Join(pbuild.Warnings(p), "\n"), "nested deeper than 512") {
		t.Errorf("no depth warning: %q", pbuild.Warnings(p))
	}
}

// TestRateWarningHandWorked: samples of one thread 1ms apart (1000 Hz) are
// warned about; 10ms apart (100 Hz) are not.
func TestRateWarningHandWorked(t *testing.T) {
	stk := trace.MakeStack([]trace.StackFrame{{PC: 0x10, Func: "f", File: "a.go", Line: 1}})
	for _, c := range []struct {
		gap  trace.Time
		warn bool
	}{{1_000_000, true}, {10_000_000, false}, {4_000_000, true}, {6_000_000, false}} {
		ps := newParser()
		for i := range 20 {
			ps.event(mk(t, trace.EventConfig[trace.StackSample]{Time: 1000 + trace.Time(i)*c.gap, Kind: trace.EventStackSample, Goroutine: 1, Thread: 9, Stack: stk}))
		}
		p, err := ps.finish("")
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(pbuild.Warnings(p), "\n"), "rate was likely above 100 Hz")
		if got != c.warn || p.Sample[0].Value[1] != 20*DefaultPeriod {
			t.Errorf("gap %dns: warning %v, time %d; want %v, %d", c.gap, got, p.Sample[0].Value[1], c.warn, 20*DefaultPeriod)
		}
	}
}
