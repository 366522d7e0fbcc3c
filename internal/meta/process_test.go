package meta_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// sum is the total of value i over p's samples.
func sum(p *profile.Profile, i int) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[i]
	}
	return n
}

func TestMergeAndSplitProcesses(t *testing.T) {
	a, b := twoRunProfile(), twoRunProfile()
	b.Period = 20e6 // a capture with a longer effective period
	b.Sample[0].Value = []int64{4, 40e6}
	m, err := meta.MergeProcesses([]*profile.Profile{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// Through a file, as a baseline travels.
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if m, err = profile.Parse(&buf); err != nil {
		t.Fatal(err)
	}
	r, ok, err := meta.Get(m)
	if err != nil || !ok {
		t.Fatalf("Get: %v %v", ok, err)
	}
	if got := r.Processes(); got != 2 {
		t.Errorf("Processes() = %d, want 2", got)
	}
	var labels []string
	for _, run := range r.Runs {
		labels = append(labels, run.Label)
	}
	if got := strings.Join(labels, " "); got != "1.1 1.2 2.1 2.2" {
		t.Errorf("run labels %q", got)
	}
	if r.Runs[2].Process != 2 || r.Runs[3].Work != 50 || r.Runs[3].CPUNanos != 7 {
		t.Errorf("runs %+v", r.Runs)
	}
	if r.SampledNanos != 120e6 || r.UsedNanos != 500e6 || r.Name != "capture of TestX" {
		t.Errorf("record %+v", r)
	}
	if m.Period != 20e6 {
		t.Errorf("period %d, want the longest, 20e6", m.Period)
	}
	if m.Comments[0] != "kept by the user" {
		t.Errorf("comments %q", m.Comments)
	}
	// The runs split back as they were captured.
	runs, err := meta.Split(m)
	if err != nil || len(runs) != 4 {
		t.Fatalf("Split: %d runs, %v", len(runs), err)
	}
	if got := sum(runs[2], 0); got != 4+3 {
		t.Errorf("process 2, run 1: %d samples, want 7", got)
	}
	// By process: each capture's samples, as one run with the work of all.
	procs, err := meta.SplitProcesses(m)
	if err != nil || len(procs) != 2 {
		t.Fatalf("SplitProcesses: %d, %v", len(procs), err)
	}
	for i, want := range []int64{1 + 2 + 3, 4 + 2 + 3} {
		q := procs[i]
		if wantPeriod := []int64{10e6, 20e6}[i]; q.Period != wantPeriod {
			t.Errorf("process %d: period %d, want its capture's %d", i+1, q.Period, wantPeriod)
		}
		if got := sum(q, 0); got != want {
			t.Errorf("process %d: %d samples, want %d", i+1, got, want)
		}
		qr, _, _ := meta.Get(q)
		if len(qr.Runs) != 1 || qr.Runs[0].Work != 150 || qr.Runs[0].CPUNanos != 7 || qr.SampledNanos != 0 {
			t.Errorf("process %d record %+v", i+1, qr)
		}
		// Each is one run to every reader of runs.
		if one, err := meta.Split(q); err != nil || len(one) != 1 {
			t.Errorf("process %d splits into %d runs, %v", i+1, len(one), err)
		}
	}
	// m keeps its own labels.
	if l := m.Sample[0].Label[meta.LabelRun]; len(l) != 1 || !strings.Contains(l[0], ".") {
		t.Errorf("the merged profile's labels changed: %q", l)
	}
	// A capture of one process is one profile of one run.
	one, err := meta.SplitProcesses(twoRunProfile())
	if err != nil || len(one) != 1 || sum(one[0], 0) != 6 {
		t.Fatalf("one process: %d profiles, %v", len(one), err)
	}
	if r, _, _ := meta.Get(one[0]); r.Runs[0].Work != 150 {
		t.Errorf("one process: work %v", r.Runs[0].Work)
	}
}

func TestMergeProcessesRefuses(t *testing.T) {
	merged, err := meta.MergeProcesses([]*profile.Profile{twoRunProfile(), twoRunProfile()})
	if err != nil {
		t.Fatal(err)
	}
	other := twoRunProfile()
	r, _, _ := meta.Get(other)
	r.WorkUnit = meta.WorkOp
	meta.Set(other, r)
	bare := twoRunProfile()
	bare.Comments = nil
	stray := twoRunProfile()
	stray.Sample[0].Label[meta.LabelRun] = []string{"9"}
	double := twoRunProfile()
	double.Sample[1].Label[meta.LabelRun] = []string{"1", "2"}
	for name, c := range map[string]struct {
		ps   []*profile.Profile
		want string
	}{
		"none":        {nil, "no captures"},
		"nil":         {[]*profile.Profile{twoRunProfile(), nil}, "capture 2 is nil"},
		"merged":      {[]*profile.Profile{merged}, "holds 2 processes"},
		"units":       {[]*profile.Profile{twoRunProfile(), other}, `counts its work in "op"`},
		"no record":   {[]*profile.Profile{bare}, "records no runs"},
		"stray label": {[]*profile.Profile{stray}, "does not list"},
		"two labels":  {[]*profile.Profile{double}, `sample 1 has 2 "hotbudget.run" labels, want 1`},
	} {
		_, err := meta.MergeProcesses(c.ps)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

// TestMergeUnlabelledCapture: a capture of one unlabelled run merges with
// its samples labelled, and splits back by process.
func TestMergeUnlabelledCapture(t *testing.T) {
	one := func() *profile.Profile {
		p := twoRunProfile()
		for _, s := range p.Sample {
			s.Label = nil
		}
		r, _, _ := meta.Get(p)
		r.Runs = []meta.Run{{Work: 40}}
		meta.Set(p, r)
		return p
	}
	m, err := meta.MergeProcesses([]*profile.Profile{one(), one()})
	if err != nil {
		t.Fatal(err)
	}
	procs, err := meta.SplitProcesses(m)
	if err != nil || len(procs) != 2 {
		t.Fatalf("SplitProcesses: %d, %v", len(procs), err)
	}
	for i, q := range procs {
		if got := sum(q, 0); got != 6 {
			t.Errorf("process %d: %d samples, want 6", i+1, got)
		}
	}
}
