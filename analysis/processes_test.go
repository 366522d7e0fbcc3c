package analysis_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// capture is a capture of one process with runs "a" and "b": run a's
// samples in main.f, run b's in main.g (called from main.f), the second
// process's with a thread label, and period period.
func capture(proc int, period int64) *profile.Profile {
	f := &profile.Function{ID: 1, Name: "main.f"}
	g := &profile.Function{ID: 2, Name: "main.g"}
	lf := &profile.Location{ID: 1, Line: []profile.Line{{Function: f}}}
	lg := &profile.Location{ID: 2, Line: []profile.Line{{Function: g}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: period,
		Function: []*profile.Function{f, g}, Location: []*profile.Location{lf, lg},
	}
	add := func(run string, n int64, stack ...*profile.Location) {
		l := map[string][]string{meta.LabelRun: {run}}
		if proc == 2 {
			l["thread"] = []string{"worker"}
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: []int64{n, n * period}, Label: l})
	}
	add("a", int64(3+proc), lf)
	add("b", 2, lg, lf)
	add("a", 1, lg, lf)
	add("b", int64(proc), lf)
	meta.Set(p, meta.Record{Name: "capture of TestX", WorkUnit: meta.WorkIteration,
		Runs: []meta.Run{{Label: "a", Work: 100}, {Label: "b", Work: float64(50 * proc), CPUNanos: 7}}})
	return p
}

// facts are what a comparison reads of an Index.
func facts(t *testing.T, x *analysis.Index) string {
	t.Helper()
	tab, err := x.Table()
	if err != nil {
		t.Fatal(err)
	}
	work, unit, err := x.Work()
	if err != nil {
		t.Fatal(err)
	}
	runs, err := x.Runs()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d runs, work %g %s, %d samples, total %v, period %v, functions %+v, labels %v",
		len(runs), work, unit, tab.TotalSamples, tab.Format(tab.Total), tab.Period, tab.Functions, x.LabelSets())
}

// TestProcessesAsSplitProcesses holds Index.Processes to the Index of each
// profile meta.SplitProcesses makes: the same runs, work, samples,
// periods, functions and labels.
func TestProcessesAsSplitProcesses(t *testing.T) {
	m, err := meta.MergeProcesses([]*profile.Profile{capture(1, 10e6), capture(2, 20e6), capture(3, 10e6)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := meta.SplitProcesses(m)
	if err != nil || len(want) != 3 {
		t.Fatalf("SplitProcesses: %d, %v", len(want), err)
	}
	x, err := analysis.NewIndex(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.Processes()
	if err != nil || len(got) != 3 {
		t.Fatalf("Processes: %d, %v", len(got), err)
	}
	for i := range want {
		w, err := analysis.NewIndex(want[i])
		if err != nil {
			t.Fatal(err)
		}
		if g, w := facts(t, got[i]), facts(t, w); g != w {
			t.Errorf("process %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
	// By hand: process 2 did 100+100 iterations, sampled 5+2+1+2 times
	// at 20ms, in main.f and main.g.
	g := facts(t, got[1])
	if want := "1 runs, work 200 iteration, 10 samples, total 200ms, period 20ms"; g[:len(want)] != want {
		t.Errorf("process 2: %s, want %s...", g, want)
	}
	// The merged index keeps its runs.
	if runs, err := x.Runs(); err != nil || len(runs) != 6 {
		t.Errorf("the merged index has %d runs after Processes, %v", len(runs), err)
	}
	if !reflect.DeepEqual(x.LabelSets(), indexOf(t, m).LabelSets()) {
		t.Errorf("Processes changed the merged index's label sets")
	}
	// One process: itself, as one run; a profile without a record: itself.
	one, err := indexOf(t, capture(1, 10e6)).Processes()
	if err != nil || len(one) != 1 || facts(t, one[0])[:6] != "1 runs" {
		t.Errorf("one process: %d indexes, %v", len(one), err)
	}
	bare := capture(1, 10e6)
	bare.Comments = nil
	bx := indexOf(t, bare)
	if ps, err := bx.Processes(); err != nil || len(ps) != 1 || ps[0] != bx {
		t.Errorf("a profile without a record: %d indexes, %v", len(ps), err)
	}
	// One process whose samples carry no run labels: one run of them all.
	unlabelled := capture(2, 10e6)
	for _, s := range unlabelled.Sample {
		delete(s.Label, meta.LabelRun)
	}
	ps, err := indexOf(t, unlabelled).Processes()
	if err != nil || len(ps) != 1 {
		t.Fatalf("one unlabelled process: %d indexes, %v", len(ps), err)
	}
	if got, want := facts(t, ps[0]), "1 runs, work 200 iteration, 10 samples, total 100ms, period 10ms"; !strings.HasPrefix(got, want) {
		t.Errorf("one unlabelled process: %s, want %s...", got, want)
	}
	// Runs of several processes whose samples carry no run labels cannot
	// be told apart.
	for _, s := range m.Sample {
		delete(s.Label, meta.LabelRun)
	}
	if _, err := indexOf(t, m).Processes(); err == nil {
		t.Errorf("Processes of unlabelled samples of 3 processes: no error")
	}
}

func indexOf(t *testing.T, p *profile.Profile) *analysis.Index {
	t.Helper()
	x, err := analysis.NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
