package meta_test

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

func twoRunProfile() *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10e6,
		Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
		Comments: []string{"kept by the user"},
	}
	for i, run := range []string{"1", "2", "1"} {
		p.Sample = append(p.Sample, &profile.Sample{
			Location: []*profile.Location{loc},
			Value:    []int64{int64(i + 1), int64(i+1) * 10e6},
			Label:    map[string][]string{meta.LabelRun: {run}},
		})
	}
	meta.Set(p, meta.Record{Name: "capture of TestX", Build: "go1.26.8 linux/amd64", WorkUnit: "iteration",
		SampledNanos: 60e6, UsedNanos: 250e6, Runs: []meta.Run{{Label: "1", Work: 100}, {Label: "2", Work: 50, CPUNanos: 7}}})
	return p
}

func TestRoundTripThroughPprof(t *testing.T) {
	p := twoRunProfile()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := meta.Get(q)
	if err != nil || !ok {
		t.Fatalf("Get: ok %v, err %v", ok, err)
	}
	if r.Name != "capture of TestX" || r.Build != "go1.26.8 linux/amd64" || r.Race || len(r.Runs) != 2 || r.Runs[1].Work != 50 || r.Runs[1].CPUNanos != 7 ||
		r.SampledNanos != 60e6 || r.UsedNanos != 250e6 {
		t.Errorf("record after a round trip: %+v", r)
	}
	if q.Comments[0] != "kept by the user" || len(q.Comments) != 2 {
		t.Errorf("comments: %q", q.Comments)
	}
}

func TestSetReplaces(t *testing.T) {
	p := twoRunProfile()
	meta.Set(p, meta.Record{Name: "again"})
	n := 0
	for _, c := range p.Comments {
		if strings.HasPrefix(c, meta.CommentPrefix) {
			n++
		}
	}
	r, _, _ := meta.Get(p)
	if n != 1 || r.Name != "again" || len(r.Runs) != 0 {
		t.Errorf("after a second Set: %d records, %+v", n, r)
	}
}

func TestLegacyComments(t *testing.T) {
	p := &profile.Profile{Comments: []string{"hotbudget name: capture of TestY", "hotbudget iterations: 1234", "hotbudget build: go1.26.8 linux/amd64 race"}}
	r, ok, err := meta.Get(p)
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if r.Name != "capture of TestY" || r.Build != "go1.26.8 linux/amd64" || !r.Race || r.WorkUnit != "iteration" || len(r.Runs) != 1 || r.Runs[0].Work != 1234 {
		t.Errorf("legacy record: %+v", r)
	}
	meta.Set(p, r)
	if len(p.Comments) != 1 {
		t.Errorf("Set left legacy comments: %q", p.Comments)
	}
	if _, _, err := meta.Get(&profile.Profile{Comments: []string{"hotbudget iterations: many"}}); err == nil {
		t.Error("a malformed iterations comment was accepted")
	}
}

func TestGetErrors(t *testing.T) {
	for _, c := range []string{meta.CommentPrefix + "{", meta.CommentPrefix + `{"v":99}`} {
		if _, _, err := meta.Get(&profile.Profile{Comments: []string{c}}); err == nil {
			t.Errorf("%q: no error", c)
		}
	}
	if _, ok, err := meta.Get(&profile.Profile{}); ok || err != nil {
		t.Errorf("no record: ok %v err %v", ok, err)
	}
}

// TestKnown: a nil profile, one without a record and one whose record
// cannot be read all give the zero record, not ok; a readable one is
// returned as Get returns it.
func TestKnown(t *testing.T) {
	for name, p := range map[string]*profile.Profile{
		"nil":        nil,
		"no record":  {},
		"unreadable": {Comments: []string{meta.CommentPrefix + "{"}},
	} {
		if r, ok := meta.Known(p); ok || r.Name != "" {
			t.Errorf("%s: Known = %+v, %v; want zero, false", name, r, ok)
		}
		if p == nil {
			continue
		}
		// The facts read once know the same.
		if r, ok := meta.Read(p.Comments).Known(); ok || r.Name != "" {
			t.Errorf("%s: Facts.Known = %+v, %v; want zero, false", name, r, ok)
		}
	}
	if f := meta.Read([]string{meta.CommentPrefix + "{"}); f.RecordErr == nil || f.HasRecord {
		t.Errorf("unreadable record: Facts %+v, want its error", f)
	}
	p := &profile.Profile{}
	meta.Set(p, meta.Record{Name: "capture of TestX", WorkUnit: meta.WorkIteration})
	if r, ok := meta.Known(p); !ok || r.Name != "capture of TestX" || r.WorkUnit != meta.WorkIteration {
		t.Errorf("Known = %+v, %v", r, ok)
	}
	if r, ok := meta.Read(p.Comments).Known(); !ok || r.Name != "capture of TestX" {
		t.Errorf("Facts.Known = %+v, %v", r, ok)
	}
}

func TestSplit(t *testing.T) {
	p := twoRunProfile()
	runs, err := meta.Split(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	sum := func(q *profile.Profile) (n int64) {
		for _, s := range q.Sample {
			n += s.Value[0]
		}
		return n
	}
	// Run "1" holds the first and third samples (1+3), run "2" the second.
	if sum(runs[0]) != 4 || sum(runs[1]) != 2 {
		t.Errorf("samples per run: %d, %d; want 4, 2", sum(runs[0]), sum(runs[1]))
	}
	for i, q := range runs {
		if err := q.CheckValid(); err != nil {
			t.Errorf("run %d: %v", i, err)
		}
		r, _, _ := meta.Get(q)
		if len(r.Runs) != 1 || r.Runs[0].Label != []string{"1", "2"}[i] || r.SampledNanos != 0 || r.UsedNanos != 0 {
			t.Errorf("run %d record: %+v (the capture's CPU times are not a run's)", i, r)
		}
	}
	if len(p.Sample) != 3 {
		t.Error("Split modified its input")
	}
	// Without labels the profile is one run.
	plain := &profile.Profile{Sample: []*profile.Sample{{}}}
	if rs, err := meta.Split(plain); err != nil || len(rs) != 1 || rs[0] != plain {
		t.Errorf("unlabelled profile: %v, %v", rs, err)
	}
}

func TestSplitErrors(t *testing.T) {
	unlisted := twoRunProfile()
	unlisted.Sample[0].Label[meta.LabelRun] = []string{"9"}
	missing := twoRunProfile()
	delete(missing.Sample[1].Label, meta.LabelRun)
	unlabelledRun := twoRunProfile()
	meta.Set(unlabelledRun, meta.Record{Runs: []meta.Run{{}}})
	dup := twoRunProfile()
	meta.Set(dup, meta.Record{Runs: []meta.Run{{Label: "1"}, {Label: "1"}}})
	for name, p := range map[string]*profile.Profile{"unlisted": unlisted, "missing": missing, "unlabelled run": unlabelledRun, "duplicate": dup} {
		if _, err := meta.Split(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Index.SplitRuns gives each run the index of the run Split gives: the same
// samples, values and comments.
func TestSplitRuns(t *testing.T) {
	p := twoRunProfile()
	runs, err := meta.Split(p)
	if err != nil {
		t.Fatal(err)
	}
	x, err := index.FromProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := x.SplitRuns()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != len(runs) {
		t.Fatalf("%d parts, want %d", len(parts), len(runs))
	}
	for i, q := range runs {
		want, err := index.FromProfile(q)
		if err != nil {
			t.Fatal(err)
		}
		got := parts[i]
		// The facts are read once, from the part's own comments: its
		// record lists its one run.
		if !reflect.DeepEqual(got.Facts, want.Facts) || !reflect.DeepEqual(got.Facts, meta.Read(got.Comments)) || len(got.Facts.Record.Runs) != 1 {
			t.Errorf("run %d: facts %+v, want %+v", i, got.Facts, want.Facts)
		}
		if !slices.Equal(got.Values, want.Values) || !slices.Equal(got.Comments, want.Comments) || got.NumSamples() != want.NumSamples() {
			t.Errorf("run %d: values %v comments %q, want %v %q", i, got.Values, got.Comments, want.Values, want.Comments)
		}
		for s := range got.NumSamples() {
			if !slices.Equal(got.Stack(got.SampleStack[s]), want.Stack(want.SampleStack[s])) {
				t.Errorf("run %d sample %d: another stack", i, s)
			}
		}
	}
	if x.NumSamples() != 3 {
		t.Error("SplitRuns modified its input")
	}
	plain, err := index.FromProfile(&profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, Sample: []*profile.Sample{{Value: []int64{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if xs, err := plain.SplitRuns(); err != nil || len(xs) != 1 || xs[0] != plain {
		t.Errorf("unlabelled index: %v, %v", xs, err)
	}
	// The errors are Split's.
	unlisted := twoRunProfile()
	unlisted.Sample[0].Label[meta.LabelRun] = []string{"9"}
	ux, err := index.FromProfile(unlisted)
	if err != nil {
		t.Fatal(err)
	}
	_, want := meta.Split(unlisted)
	if _, err := ux.SplitRuns(); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("unlisted run: %v, want %v", err, want)
	}
}

func TestSamplesLost(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		sampled, used int64
		warn          bool
	}{
		{105 * ms, 437 * ms, true},  // 1000 Hz asked, about 240 Hz delivered
		{300 * ms, 400 * ms, false}, // within the overhead of parsing between rounds
		{10 * ms, 40 * ms, false},   // too little CPU to judge
		{500 * ms, 400 * ms, false}, // more samples than CPU time: timer jitter
		{0, 0, false},               // not measured
	} {
		r := meta.Record{SampledNanos: tc.sampled, UsedNanos: tc.used}
		if got := r.SamplesLost(); got != tc.warn {
			t.Errorf("SamplesLost(%v, %v) = %v, want %v", tc.sampled, tc.used, got, tc.warn)
		}
		if w := r.LostSamplesWarning(); (w != "") != tc.warn {
			t.Errorf("LostSamplesWarning(%v, %v) = %q", tc.sampled, tc.used, w)
		}
	}
	r := meta.Record{SampledNanos: 105 * ms, UsedNanos: 437 * ms}
	if w := r.LostSamplesWarning(); !strings.Contains(w, "the samples account for 105ms of CPU time but the process used 437ms while capturing") {
		t.Errorf("warning text: %q", w)
	}
}

// FuzzComments: whatever a profile's comments and run labels hold (they
// come from any loaded file), reading the record and splitting the profile
// and its index into runs never panics, and a split that succeeds gives
// back every sample once.
func FuzzComments(f *testing.F) {
	p := twoRunProfile()
	f.Add(strings.Join(p.Comments, "\n"), "1", "2", "1")
	f.Add(meta.CommentPrefix+`{"runs":[{"label":"a"},{"label":"a"}]}`, "a", "a", "b")
	f.Add(meta.CommentPrefix+`{"runs":[{}]}`, "", "x", "")
	f.Add("hotbudget iterations: 12", "", "", "")
	f.Add(meta.CommentPrefix+`{"runs":null,"sampled_nanos":-1}`, "1", "", "1")
	f.Add(meta.CommentPrefix+`{"runs":[{"label":"1.1","process":1,"period_ns":-5},{"label":"2.1","process":2}]}`, "1.1", "2.1", "1.1")
	f.Add(meta.CommentPrefix+`{"runs":[{"label":"a","process":1},{"label":"b","process":2}]}`, "", "", "")
	f.Fuzz(func(t *testing.T, comments, l1, l2, l3 string) {
		q := twoRunProfile()
		q.Comments = strings.Split(comments, "\n")
		for i, l := range []string{l1, l2, l3} {
			q.Sample[i].Label = nil
			if l != "" {
				q.Sample[i].Label = map[string][]string{meta.LabelRun: {l}}
			}
		}
		if r, ok, err := meta.Get(q); err == nil && ok {
			_ = r.LostSamplesWarning()
		}
		runs, serr := meta.Split(q)
		if serr == nil {
			n := 0
			for _, r := range runs {
				n += len(r.Sample)
			}
			if n != len(q.Sample) {
				t.Errorf("Split: %d samples in %d runs, want %d", n, len(runs), len(q.Sample))
			}
		}
		// By process too: every sample once, in one process.
		if procs, err := meta.SplitProcesses(q); err == nil {
			n := 0
			for _, p := range procs {
				n += len(p.Sample)
				if p.Period <= 0 {
					t.Errorf("SplitProcesses: a process with period %d", p.Period)
				}
			}
			if n != len(q.Sample) {
				t.Errorf("SplitProcesses: %d samples in %d processes, want %d", n, len(procs), len(q.Sample))
			}
		}
		x, err := index.FromProfile(q)
		if err != nil {
			return
		}
		parts, ierr := x.SplitRuns()
		if (ierr == nil) != (serr == nil) {
			t.Errorf("Split error %v, SplitRuns error %v", serr, ierr)
		}
		if ierr == nil && len(parts) != len(runs) {
			t.Errorf("SplitRuns: %d runs, Split %d", len(parts), len(runs))
		}
	})
}

// TestPprofLeavesRecordOut: go tool pprof prints a profile's comments in
// its reports (-top's header, the graph's legend) except those starting
// with "#"; the record and the allocations, a baseline's hundreds of runs
// and a base64 profile, are among the latter, the user's comment is not.
func TestPprofLeavesRecordOut(t *testing.T) {
	p := twoRunProfile()
	p.Comments = meta.WithAllocProfile(p.Comments, bytes.Repeat([]byte("alloc"), 100))
	path := testutil.WriteProfile(t, t.TempDir(), "p.pb.gz", p)
	out, err := testutil.PprofCmd("-top", "-symbolize=none", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "kept by the user") || !strings.Contains(string(out), "main.f") {
		t.Fatalf("go tool pprof -top shows neither the user's comment nor the function:\n%s", out)
	}
	if strings.Contains(string(out), "hotbudget") || strings.Contains(string(out), "capture of TestX") {
		t.Errorf("go tool pprof -top shows hotbudget's record or allocations:\n%s", out)
	}
	if r, ok, err := meta.Get(p); err != nil || !ok || r.Name != "capture of TestX" {
		t.Errorf("the record: %+v %v %v", r, ok, err)
	}
}

// TestLegacyRecordComment: a record or allocations written before their
// comments started with "#" are read, and replaced by Set.
func TestLegacyRecordComment(t *testing.T) {
	c := []string{`hotbudget meta: {"v":1,"name":"old","work_unit":"iteration","runs":[{"work":3}]}`, "hotbudget allocs: " + "AAH/eA=="}
	r, ok, err := meta.FromComments(c)
	if err != nil || !ok || r.Name != "old" || len(r.Runs) != 1 || r.Runs[0].Work != 3 {
		t.Fatalf("legacy record: %+v %v %v", r, ok, err)
	}
	if a, ok, err := meta.AllocProfile(c); err != nil || !ok || !bytes.Equal(a, []byte{0, 1, 0xff, 'x'}) {
		t.Errorf("legacy allocations: %q %v %v", a, ok, err)
	}
	p := &profile.Profile{Comments: c}
	meta.Set(p, meta.Record{Name: "new"})
	p.Comments = meta.WithAllocProfile(p.Comments, []byte("y"))
	if len(p.Comments) != 2 || !strings.HasPrefix(p.Comments[0], "# ") || !strings.HasPrefix(p.Comments[1], "# ") {
		t.Errorf("after Set and WithAllocProfile: %q", p.Comments)
	}
}
