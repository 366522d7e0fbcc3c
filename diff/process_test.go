package diff_test

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// TestCompareByProcess: a baseline holding the captures of several
// processes is judged process against process, as perfassert.MatchBaseline
// judges it: the same report as its processes given one profile each (the
// side then says it counts processes), whichever side holds it, through
// Compare and CompareIndex.
func TestCompareByProcess(t *testing.T) {
	base := loadGlob(t, "../testdata/regress/base-*.pb.gz")
	head := loadGlob(t, "../testdata/regress/head-*.pb.gz")
	// Three processes: runs 1-2, 3-4 and 5 of the base.
	var captures []*profile.Profile
	for _, runs := range [][]*profile.Profile{base[0:2], base[2:4], base[4:5]} {
		captures = append(captures, labelledRuns(t, runs))
	}
	merged, err := meta.MergeProcesses(captures)
	if err != nil {
		t.Fatal(err)
	}
	procs, err := meta.SplitProcesses(merged)
	if err != nil || len(procs) != 3 {
		t.Fatalf("SplitProcesses: %d, %v", len(procs), err)
	}
	r, err := diff.Compare([]*profile.Profile{merged}, head)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Base.Processes || r.Base.Runs != 3 || !r.Head.Processes || r.Head.Runs != len(head) {
		t.Errorf("sides %+v and %+v, want 3 processes against %d", r.Base, r.Head, len(head))
	}
	var text strings.Builder
	if err := r.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "base: 3 processes, ") || !strings.Contains(text.String(), "3 base and 5 head processes catch") {
		t.Errorf("the report does not say it counts processes:\n%s", text.String())
	}
	// The processes given apart: runs, each process one.
	apart, err := diff.Compare(procs, head)
	if err != nil {
		t.Fatal(err)
	}
	if apart.Base.Processes || apart.Base.Runs != 3 {
		t.Errorf("processes given apart: side %+v", apart.Base)
	}
	apart.Base.Processes, apart.Head.Processes = true, true
	if got, want := reportJSON(t, r), reportJSON(t, apart); got != want {
		t.Errorf("a baseline of processes and its processes apart disagree:\n%s\nvs\n%s", got, want)
	}
	// The same through CompareIndex, and with the baseline as head.
	x, err := analysis.NewIndex(merged)
	if err != nil {
		t.Fatal(err)
	}
	var hx []*analysis.Index
	for _, p := range head {
		y, err := analysis.NewIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		hx = append(hx, y)
	}
	ri, err := diff.CompareIndex([]*analysis.Index{x}, hx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reportJSON(t, ri), reportJSON(t, r); got != want {
		t.Errorf("CompareIndex and Compare disagree:\n%s\nvs\n%s", got, want)
	}
	rev, err := diff.Compare(head, []*profile.Profile{merged})
	if err != nil {
		t.Fatal(err)
	}
	if !rev.Head.Processes || rev.Head.Runs != 3 || !rev.Base.Processes {
		t.Errorf("the baseline as head: sides %+v and %+v", rev.Base, rev.Head)
	}
	// A profile of one process's runs is compared run against run.
	one, err := diff.Compare([]*profile.Profile{captures[0]}, head)
	if err != nil {
		t.Fatal(err)
	}
	if one.Base.Processes || one.Base.Runs != 2 {
		t.Errorf("one process's runs: side %+v, want 2 runs", one.Base)
	}
}

// TestNoiseInProcesses: the noise line of a comparison by process says the
// functions vary from process to process.
func TestNoiseInProcesses(t *testing.T) {
	for _, tc := range []struct {
		noise diff.Noise
		want  string
	}{
		{diff.Noise{Source: "runs", Dispersion: 0.01, Functions: 22, ResidualDF: 15, PriorDF: 33}, "noise: functions vary 10.0% from process to process beyond sampling noise (learned from 22 functions, 15 residual df;"},
	} {
		r := &diff.Report{Settings: diff.DefaultSettings(), Noise: tc.noise,
			Base: diff.Side{Runs: 16, Processes: true, Unit: "ns"}, Head: diff.Side{Runs: 1, Processes: true, Unit: "ns"}}
		var b strings.Builder
		if err := r.Write(&b, "text"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) || !strings.HasPrefix(b.String(), "base: 16 processes, ") {
			t.Errorf("%s noise:\n%s\nwant %q", tc.noise.Source, b.String(), tc.want)
		}
	}
}
