package perfassert

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
)

type recT struct{ errs, logs []string }

func (r *recT) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recT) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestReportReport pins how a diff report becomes a failure independently
// of diff.Compare: only Regressed rows fail, the sides are named, and the
// report's warnings follow.
func TestReportReport(t *testing.T) {
	rep := &diff.Report{
		Settings: diff.DefaultSettings(),
		Base:     diff.Side{Runs: 1, Samples: 100},
		Head:     diff.Side{Runs: 1, Samples: 100},
		Rows: []diff.Row{
			{Name: "main.slow", Verdict: diff.Regressed, Relative: 0.6, P: 0.001, Q: 0.002, Test: "sampling"},
			{Name: "main.fast", Verdict: diff.Improved, Relative: -0.6, P: 0.001, Q: 0.002, Test: "sampling"},
			{Name: "main.newfn", Verdict: diff.New},
		},
		Warnings: []string{"only one run a side"},
	}
	rt := &recT{}
	if reportReport(rt, "NoRegression", "base = baseline, head = current", "function", rep) {
		t.Fatal("passed with a regressed row")
	}
	if len(rt.errs) != 1 {
		t.Fatalf("errors: %q", rt.errs)
	}
	text := rt.errs[0]
	for _, want := range []string{"perfassert.NoRegression: 1 of 3 functions judged regressed (base = baseline, head = current):\n", "main.slow", "warning: only one run a side"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	for _, not := range []string{"main.fast", "main.newfn"} {
		if strings.Contains(text, not) {
			t.Errorf("text lists %s, which did not regress:\n%s", not, text)
		}
	}
	if len(rep.Rows) != 3 {
		t.Errorf("the caller's report was modified: %d rows", len(rep.Rows))
	}

	rep.Rows = rep.Rows[1:]
	rt = &recT{}
	if !reportReport(rt, "NoRegression", "sides", "function", rep) || len(rt.errs) != 0 {
		t.Fatalf("no regressed row failed: %q", rt.errs)
	}
	if len(rt.logs) != 1 || !strings.Contains(rt.logs[0], "only one run a side") {
		t.Errorf("warnings of a passing comparison not logged: %q", rt.logs)
	}
}

func TestRacePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"testdata/parse.pb.gz", "testdata/parse.race.pb.gz"},
		{"parse.pprof", "parse.race.pprof"},
		{"testdata/parse", "testdata/parse.race"},
		{"dir.v2/.hidden.pb.gz", "dir.v2/.hidden.race.pb.gz"},
		{"/abs/p.cpuprofile", "/abs/p.race.cpuprofile"},
	} {
		if got := racePath(c.in); got != c.want {
			t.Errorf("racePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCaptureRecordsBuild: a capture says whether the race detector was
// compiled in, so MatchBaseline picks the baseline of the same build.
func TestCaptureRecordsBuild(t *testing.T) {
	p, err := CaptureProfile(func() {}, MaxDuration(20*time.Millisecond), MinSamples(1))
	if err != nil {
		t.Fatal(err)
	}
	race, known := raceOf(capturedOf(p).rec)
	if !known || race != raceEnabled {
		t.Errorf("raceOf = %v, %v; want %v, true (comments %q)", race, known, raceEnabled, p.Comments)
	}
}

// TestChildCaptureRecordsNoAllocations: a process MatchBaseline started
// (to record a baseline or confirm a comparison) keeps its capture's CPU
// samples and skips the allocation phase, whose result nobody reads; the
// same capture in the test's own process records them.
func TestChildCaptureRecordsNoAllocations(t *testing.T) {
	var sink []byte
	fn := func() { sink = make([]byte, 64+len(sink)%7) }
	capture := func() *profile.Profile {
		p, err := CaptureProfile(fn, MaxDuration(20*time.Millisecond), MinSamples(1))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, ok, err := AllocProfile(capture()); !ok || err != nil {
		t.Fatalf("a capture of this process holds no allocations (%v)", err)
	}
	t.Setenv(childDirEnv, t.TempDir())
	p := capture()
	if _, ok, err := AllocProfile(p); ok || err != nil {
		t.Errorf("a child process's capture holds allocations (%v)", err)
	}
	if rec, ok := meta.Known(p); !ok || len(rec.Runs) == 0 {
		t.Errorf("a child process's capture records no runs: %+v", rec)
	}
}

// TestCaptureRecordsWallTime: every run whose CPU time a capture records
// has its wall time too, the runs' wall times adding up to no more than the
// capture took.
func TestCaptureRecordsWallTime(t *testing.T) {
	start := time.Now()
	p, err := CaptureProfile(func() { neighbourBurn(20000) }, MaxDuration(200*time.Millisecond), MinSamples(1))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := meta.Known(p)
	if !ok || len(rec.Runs) == 0 {
		t.Fatalf("no runs: %+v", rec)
	}
	var wall time.Duration
	withCPU := 0
	for _, r := range rec.Runs {
		if r.CPUNanos > 0 {
			withCPU++
			if r.WallNanos <= 0 {
				t.Errorf("run %s: CPU time %v, no wall time", r.Label, time.Duration(r.CPUNanos))
			}
		}
		wall += time.Duration(r.WallNanos)
	}
	if withCPU == 0 {
		t.Errorf("no run records its CPU time: %+v", rec.Runs)
	}
	if wall > took {
		t.Errorf("the runs' wall times add up to %v, the capture took %v", wall, took)
	}
}

var neighbourSink atomic.Uint64

//go:noinline
func neighbourBurn(n int) {
	x := neighbourSink.Load() | 5
	for i := 0; i < n; i++ {
		x = x*x + uint64(i)
	}
	neighbourSink.Store(x)
}

var ownSink atomic.Uint64

//go:noinline
func ownWork(n int) {
	x := ownSink.Load() | 9
	for i := 0; i < n; i++ {
		x ^= x << 7
		x ^= x >> 9
	}
	ownSink.Store(x)
}

// TestCaptureDropsUnlabelledSamples looks at the profiler's whole rounds: a
// goroutine burning CPU beside the capture is in them (the test is not
// vacuous) and not in the capture, with either sampler (the perf sampler
// takes the capturing goroutine's samples from its own thread; runtime/pprof
// sees the neighbour in its rounds all the same).
func TestCaptureDropsUnlabelledSamples(t *testing.T) {
	for _, sampler := range []string{"pprof", "auto"} {
		t.Run(sampler, func(t *testing.T) { testCaptureDropsUnlabelledSamples(t, sampler) })
	}
}

func testCaptureDropsUnlabelledSamples(t *testing.T, sampler string) {
	least := map[string]int64{"pprof": 10, "auto": 3}[sampler]
	// The neighbour must run beside the capture for the test to say
	// anything: on a loaded machine it may get no CPU in the capture's
	// rounds, and the capture is made again (a precondition, not the
	// product's verdict).
	for try := 1; ; try++ {
		rounds, neighbour, mine, burner := captureBesideNeighbour(t, sampler)
		t.Logf("rounds: %d samples, %d of the neighbour; capture: %d samples, %d of the neighbour", rounds, neighbour, mine, burner)
		if neighbour < least {
			if try < 4 {
				continue
			}
			t.Fatalf("the neighbour has %d samples in the profiler's rounds in %d tries: it did not run beside the capture", neighbour, try)
		}
		if mine == 0 || float64(burner) >= 0.01*float64(mine) {
			t.Errorf("the capture holds %d of the neighbour's samples out of %d, want under 1%%", burner, mine)
		}
		return
	}
}

// captureBesideNeighbour captures ownWork with sampler while a goroutine
// burns CPU beside it, and returns the samples of the profiler's rounds
// and of the neighbour in them, and those of the capture and of the
// neighbour in it.
func captureBesideNeighbour(t *testing.T, sampler string) (rounds, neighbour, mine, burner int64) {
	var raw, rawBurner atomic.Int64
	coord.mu.Lock()
	coord.roundHook = func(p *profile.Profile) {
		for _, s := range p.Sample {
			raw.Add(s.Value[0])
			for _, l := range s.Location {
				if len(l.Line) > 0 && strings.HasSuffix(l.Line[0].Function.Name, ".neighbourBurn") {
					rawBurner.Add(s.Value[0])
					break
				}
			}
		}
	}
	coord.mu.Unlock()
	defer func() {
		coord.mu.Lock()
		coord.roundHook = nil
		coord.mu.Unlock()
	}()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				neighbourBurn(20_000)
			}
		}
	}()
	opts := []CaptureOption{MinSamples(60), MinRuns(10), Precision(0.01), MaxDuration(2 * time.Second), Sampler(sampler)}
	if sampler == "pprof" {
		// 100 Hz: no runtime warning on stderr.
		opts = []CaptureOption{MinSamples(60), MaxDuration(2500 * time.Millisecond), Sampler(sampler), Rate(defaultRate)}
	}
	p, err := CaptureProfile(func() { ownWork(40_000) }, opts...)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		mine += s.Value[0]
		for _, l := range s.Location {
			if len(l.Line) > 0 && strings.HasSuffix(l.Line[0].Function.Name, ".neighbourBurn") {
				burner += s.Value[0]
			}
		}
	}
	return raw.Load(), rawBurner.Load(), mine, burner
}

// TestRoundSumsAreTheTables: the CPU time splitRound adds up for a round
// (to tell lost samples) and countSamples are the Total and TotalSamples of
// the profile's table (analysis.Functions), which count every sample's
// value once: the captures' samples and the dropped ones alike, by the
// sample type the table reads, a recursive stack once.
func TestRoundSumsAreTheTables(t *testing.T) {
	work := &profile.Function{ID: 1, Name: "main.work"}
	caller := &profile.Function{ID: 2, Name: "main.main"}
	leaf := &profile.Location{ID: 1, Line: []profile.Line{{Function: work}}}
	up := &profile.Location{ID: 2, Line: []profile.Line{{Function: caller}}}
	// round builds a round of four samples: one of the active capture "1",
	// one of a capture no longer active, one unlabelled (a parallel test,
	// the garbage collector), and one of capture "1" through a recursive
	// stack.
	round := func(types []*profile.ValueType, def string, values ...[]int64) *profile.Profile {
		p := &profile.Profile{
			SampleType: types, DefaultSampleType: def,
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
			Function: []*profile.Function{work, caller}, Location: []*profile.Location{leaf, up},
		}
		labels := []map[string][]string{
			{captureLabel: {"1"}, meta.LabelRun: {"1"}},
			{captureLabel: {"9"}, meta.LabelRun: {"1"}},
			nil,
			{captureLabel: {"1"}, meta.LabelRun: {"2"}},
		}
		for i, v := range values {
			stack := []*profile.Location{leaf, up}
			if i == 3 {
				stack = []*profile.Location{leaf, up, leaf, up}
			}
			p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: v, Label: labels[i]})
		}
		return p
	}
	count := &profile.ValueType{Type: "samples", Unit: "count"}
	cpu := &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	wallMS := &profile.ValueType{Type: "wall", Unit: "milliseconds"}
	ms := int64(time.Millisecond)
	values := [][]int64{{1, 10 * ms}, {2, 20 * ms}, {4, 40 * ms}, {8, 80 * ms}}
	reversed := [][]int64{{10 * ms, 1}, {20 * ms, 2}, {40 * ms, 4}, {80 * ms, 8}}
	tests := []struct {
		name        string
		p           *profile.Profile
		wantOK      bool
		wantTime    time.Duration
		wantSamples int64
	}{
		{"Go CPU profile", round([]*profile.ValueType{count, cpu}, "cpu", values...), true, 150 * time.Millisecond, 15},
		{"no default type: the last", round([]*profile.ValueType{count, cpu}, "", values...), true, 150 * time.Millisecond, 15},
		{"time first, named default", round([]*profile.ValueType{cpu, count}, "cpu", reversed...), true, 150 * time.Millisecond, 15},
		{"time in milliseconds", round([]*profile.ValueType{count, wallMS}, "", []int64{1, 10}, []int64{2, 20}, []int64{4, 40}, []int64{8, 80}), true, 150 * time.Millisecond, 15},
		{"the default type is no time", round([]*profile.ValueType{cpu, count}, "", reversed...), false, 0, 0},
		{"a sample lacks the time value", round([]*profile.ValueType{count, cpu}, "cpu", values[0], values[1], []int64{4}, values[3]), false, 0, 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{id: "1", fnName: "main.run"}
			sampled, ok := splitRound(tc.p, []*session{s})
			if ok != tc.wantOK || sampled != tc.wantTime {
				t.Errorf("splitRound = %v, %v; want %v, %v", sampled, ok, tc.wantTime, tc.wantOK)
			}
			if got := countSamples(tc.p); got != tc.wantSamples {
				t.Errorf("countSamples = %d, want %d", got, tc.wantSamples)
			}
			table, err := analysis.Functions(tc.p)
			// analysis reads counts too (Unit); a round's time needs a time.
			if (err == nil && table.Unit == analysis.UnitTime) != ok {
				t.Fatalf("splitRound ok = %v, Functions: %+v, %v", ok, table, err)
			}
			if ok && (sampled != time.Duration(table.Total) || countSamples(tc.p) != table.TotalSamples) {
				t.Errorf("splitRound %v and countSamples %d, the table %v and %d", sampled, countSamples(tc.p), table.Total, table.TotalSamples)
			}
			// The capture still gets its own samples, and only those.
			if len(s.ps) != 1 || len(s.ps[0].Sample) != 2 {
				t.Errorf("the capture got %v", s.ps)
			}
		})
	}

	t.Run("committed legacy baseline", func(t *testing.T) {
		f, err := os.Open("../testdata/perfassert/legacy-parse.pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := profile.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		if sumsAreTheTable(t, p) <= 0 {
			t.Error("the baseline holds no time")
		}
	})

	t.Run("rounds of a capture", func(t *testing.T) {
		var mu sync.Mutex
		var rounds []*profile.Profile
		coord.mu.Lock()
		coord.roundHook = func(p *profile.Profile) {
			mu.Lock()
			rounds = append(rounds, p.Copy())
			mu.Unlock()
		}
		coord.mu.Unlock()
		defer func() {
			coord.mu.Lock()
			coord.roundHook = nil
			coord.mu.Unlock()
		}()
		if _, err := CaptureProfile(func() { ownWork(40_000) }, MinSamples(10), MinRuns(2), MaxDuration(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		var total time.Duration
		for _, p := range rounds {
			total += sumsAreTheTable(t, p)
		}
		if total <= 0 {
			t.Errorf("%d rounds with no time", len(rounds))
		}
	})
}

// TestPerfCaptureTakesStartedGoroutinesOnly: with the perf sampler, the
// runtime/pprof samples a capture keeps are those of goroutines the
// function started, whole goroutine stacks; a sample of the thread's
// scheduler stack (g0) bears the labels of the goroutine it last ran, the
// capturing one included, and is dropped like a stack cut short. The g0
// stacks are those runtime/pprof wrote for a goroutine parking on a locked
// thread (go1.26, linux/amd64), and the stack [time.now] it wrote for a
// signal in the vDSO.
func TestPerfCaptureTakesStartedGoroutinesOnly(t *testing.T) {
	var fns []*profile.Function
	loc := func(name string) *profile.Location {
		f := &profile.Function{ID: uint64(len(fns) + 1), Name: name}
		fns = append(fns, f)
		return &profile.Location{ID: f.ID, Line: []profile.Line{{Function: f}}}
	}
	work, worker := loc("main.work"), loc("main.worker")
	nanotime, mcall := loc("runtime.nanotime"), loc("runtime.mcall")
	sys, system := loc("runtime.systemstack"), loc("runtime._System")
	drain, markWorker, goexit := loc("runtime.gcDrain"), loc("runtime.gcBgMarkWorker"), loc("runtime.goexit")
	now := loc("time.now")
	stacks := map[string][]*profile.Location{
		// A signal in the vDSO, unwound no further than the clock's
		// caller (seen in TestSamplersAgree).
		"in the vDSO":        {now},
		"started goroutine":  {work, worker},
		"parking (mcall)":    {nanotime, mcall},
		"on the systemstack": {sys},
		"cut short":          {work, system},
		// A GC mark worker the capturing goroutine started inherits its
		// labels: the collector's work, not the function's.
		"runtime's goroutine": {drain, markWorker, goexit},
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000, Function: fns,
	}
	for _, st := range stacks {
		p.Location = append(p.Location, st[0])
		p.Sample = append(p.Sample, &profile.Sample{Location: st, Value: []int64{1, 10_000_000},
			Label: map[string][]string{captureLabel: {"1"}, meta.LabelRun: {"1"}}})
	}
	s := &session{id: "1", fnName: "main.run", cfg: captureConfig{sampler: samplerPerf}}
	splitRound(p, []*session{s})
	var kept []string
	for _, smp := range s.ps[0].Sample {
		kept = append(kept, smp.Location[len(smp.Location)-1].Line[0].Function.Name)
	}
	if len(kept) != 1 || kept[0] != "main.worker" {
		t.Errorf("kept the samples rooted in %v, want only the started goroutine's (main.worker)", kept)
	}
	if r := s.byRun["1"]; r == nil || r.samples != 20 {
		t.Errorf("run 1 counts %+v, want the started goroutine's 10ms as 20 perf samples", r)
	}
	// With runtime/pprof alone the runtime's goroutine is left out too.
	s = &session{id: "1", fnName: "main.run", cfg: captureConfig{sampler: samplerPprof}}
	splitRound(p, []*session{s})
	for _, smp := range s.ps[0].Sample {
		if name := smp.Location[len(smp.Location)-1].Line[0].Function.Name; name == "runtime.goexit" || name == "runtime.gcBgMarkWorker" {
			t.Errorf("runtime/pprof capture kept the GC mark worker's sample")
		}
	}
}

// sumsAreTheTable checks splitRound's and countSamples' sums of p against
// its table, and returns the table's Total.
func sumsAreTheTable(t *testing.T, p *profile.Profile) time.Duration {
	t.Helper()
	table, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	sampled, ok := splitRound(p, nil)
	if !ok || sampled != time.Duration(table.Total) {
		t.Errorf("splitRound = %v, %v; the table's Total is %v", sampled, ok, table.Total)
	}
	if n := countSamples(p); n != table.TotalSamples {
		t.Errorf("countSamples = %d, the table's TotalSamples %d", n, table.TotalSamples)
	}
	return time.Duration(table.Total)
}

// processIndex is the index of one process's capture of work iterations
// that used cpu of CPU time, as Index.Processes gives it.
func processIndex(t *testing.T, work float64, cpu time.Duration) *analysis.Index {
	t.Helper()
	return processWallIndex(t, work, cpu, 0)
}

// oneFunctionProfile is a CPU profile of one sample of n samples' time
// (1ms each) on function fn, with the given labels.
func oneFunctionProfile(fn string, n int64, labels map[string][]string) *profile.Profile {
	f := &profile.Function{ID: 1, Name: fn}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: f}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1e6,
		Function: []*profile.Function{f}, Location: []*profile.Location{loc},
		Sample: []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{n, n * 1e6}, Label: labels}},
	}
}

// processWallIndex is processIndex with the wall time the run took.
func processWallIndex(t *testing.T, work float64, cpu, wall time.Duration) *analysis.Index {
	t.Helper()
	p := oneFunctionProfile("m.f", 10, nil)
	meta.Set(p, meta.Record{WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Label: "1", Work: work, CPUNanos: cpu.Nanoseconds(), WallNanos: wall.Nanoseconds()}}})
	x, err := analysis.NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestOtherState: a failed comparison whose current process took far more
// (or less) CPU time per iteration than any process of the baseline, more
// than its regressed functions account for, says the machine ran it in
// another state; within the baseline's range, or explained by the
// regressions, or passing, it says nothing.
func TestOtherState(t *testing.T) {
	base := []*analysis.Index{processIndex(t, 100, 105*time.Millisecond), processIndex(t, 100, 110*time.Millisecond), processIndex(t, 200, 230*time.Millisecond)}
	failed := &diff.Report{Rows: []diff.Row{{Name: "m.f", Verdict: diff.Regressed, Delta: 0.04, Relative: 0.4}}}
	for _, tc := range []struct {
		name string
		head time.Duration // per 100 iterations
		rep  *diff.Report
		want string
	}{
		{"slower", 190 * time.Millisecond, failed, "the current process took 1.90ms of CPU time per iteration, +65% beyond the slowest of the baseline's 3 processes (1.05ms-1.15ms), and the functions judged regressed account for about +4%: the machine ran it in another state"},
		{"faster", 70 * time.Millisecond, failed, "the current process took 700us of CPU time per iteration, -33% below the fastest of the baseline's 3 processes (1.05ms-1.15ms)"},
		{"in range", 140 * time.Millisecond, failed, ""}, // +22%: within stateMargin
		{"explained", 190 * time.Millisecond, &diff.Report{Rows: []diff.Row{{Name: "m.f", Verdict: diff.Regressed, Delta: 0.4}}}, ""},
		{"passed", 190 * time.Millisecond, &diff.Report{Rows: []diff.Row{{Name: "m.f", Verdict: diff.Unchanged}}}, ""},
	} {
		c := compared{base: base, head: []*analysis.Index{processIndex(t, 100, tc.head)}, byProcess: true, baseProcesses: len(base)}
		got := otherState(c, tc.rep)
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q\nwant it to start %q", tc.name, got, tc.want)
		}
	}
	// Run against run (a baseline of one process): nothing.
	c := compared{base: base, head: []*analysis.Index{processIndex(t, 100, 190*time.Millisecond)}}
	if got := otherState(c, failed); got != "" {
		t.Errorf("runs: %q", got)
	}
}

// TestBusyMachine: a failed comparison whose current processes got far less
// of their wall time as CPU than every process of the baseline says the
// machine was busy; one current process as busy as the baseline's, a
// pass, or a baseline that did not record wall time, say nothing.
func TestBusyMachine(t *testing.T) {
	ms := time.Millisecond
	base := []*analysis.Index{processWallIndex(t, 100, 950*ms, 1000*ms), processWallIndex(t, 100, 1000*ms, 1020*ms)}
	failed := &diff.Report{Rows: []diff.Row{{Name: "m.f", Verdict: diff.Regressed, Relative: 0.7}}}
	passed := &diff.Report{Rows: []diff.Row{{Name: "m.f", Verdict: diff.Unchanged}}}
	busy := []*analysis.Index{processWallIndex(t, 100, 580*ms, 1000*ms), processWallIndex(t, 100, 600*ms, 1000*ms)}
	for _, tc := range []struct {
		name string
		base []*analysis.Index
		head []*analysis.Index
		rep  *diff.Report
		want string
	}{
		{"busy", base, busy, failed, "the current 2 processes used 58%-60% of the wall time as CPU time, the baseline's 95%-98%: the machine was busy"},
		{"one", base, busy[:1], failed, "the current process used 58% of the wall time as CPU time"},
		{"one quiet process", base, append(busy[:1:1], processWallIndex(t, 100, 900*ms, 1000*ms)), failed, ""},
		{"within the margin", base, []*analysis.Index{processWallIndex(t, 100, 720*ms, 1000*ms)}, failed, ""},
		{"passed", base, busy, passed, ""},
		{"no wall time in the baseline", []*analysis.Index{processIndex(t, 100, 950*ms)}, busy, failed, ""},
	} {
		c := compared{base: tc.base, head: tc.head, byProcess: true, baseProcesses: len(tc.base)}
		got := busyMachine(c, tc.rep)
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q\nwant it to start %q", tc.name, got, tc.want)
		}
	}
}

// TestPassSummaryClosest checks issue 32's rule for a passing
// comparison's line: it names what came closest to failing by the gate's
// own measure (the near miss, else the smallest q), never the largest
// unjudged ratio, which a tiny function's noise wins.
func TestPassSummaryClosest(t *testing.T) {
	rep := &diff.Report{
		Settings: diff.DefaultSettings(),
		Rows: []diff.Row{
			{Name: "m.tiny", Verdict: diff.Unchanged, Relative: 4.02, P: 0.45, Q: 0.9, Test: "sampling"},
			{Name: "m.decode", Verdict: diff.Unchanged, Relative: 0.12, P: 0.01, Q: 0.08, Test: "sampling"},
			{Name: "m.lex", Verdict: diff.Unchanged, Relative: 0.2, P: 0.02, Q: 0.2, Test: "sampling", NearMiss: "q above the rate"},
			{Name: "m.fast", Verdict: diff.Improved, Relative: -0.5, P: 0.001, Q: 0.002, Test: "sampling"},
		},
	}
	got := passSummary(rep, "function")
	if !strings.Contains(got, "closest to failing: m.lex +20.0% (q=0.2") || strings.Contains(got, "m.tiny") {
		t.Errorf("passSummary = %q, want m.lex (the near miss) and not m.tiny", got)
	}
	rep.Rows[2].NearMiss = ""
	if got := passSummary(rep, "function"); !strings.Contains(got, "closest to failing: m.decode +12.0% (q=0.08") {
		t.Errorf("passSummary = %q, want m.decode (the smallest q)", got)
	}
}

// TestEffectivePeriodSaysWho: a perf capture is judged at the period of its
// coarsest judged function's samples, and says which function set it, so
// that a capture judged at runtime/pprof's 10ms can say why. A stray 10ms
// sample with no function of the module on its stack (runtime.gogo's, in
// one fastjson capture) sets no period: it judges nothing.
func TestEffectivePeriodSaysWho(t *testing.T) {
	fn := func(names ...string) []*profile.Location {
		var ls []*profile.Location
		for _, n := range names {
			ls = append(ls, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: n}}}})
		}
		return ls
	}
	perf := perfPeriod.Nanoseconds()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: fn("m.a"), Value: []int64{300, 300 * perf}},
			{Location: fn("m.b"), Value: []int64{1, 10_000_000}},
			{Location: fn("runtime.gogo"), Value: []int64{1, 10_000_000}},
		},
	}
	mod := regexp.MustCompile(`^m\.`)
	if got, by := effectivePeriod(p, mod); got != 10_000_000 || by != "m.b" {
		t.Errorf("effectivePeriod = %v, %q; want 10ms, \"m.b\"", time.Duration(got), by)
	}
	// The module's function under a runtime leaf (a goroutine it started,
	// copying): its total is judged at that sample's period.
	p.Sample[1].Location = fn("runtime.memmove", "m.b")
	if got, by := effectivePeriod(p, mod); got != 10_000_000 || by != "m.b" {
		t.Errorf("m.b under runtime.memmove: effectivePeriod = %v, %q; want 10ms, \"m.b\"", time.Duration(got), by)
	}
	p.Sample = slices.Delete(p.Sample, 1, 2)
	if got, by := effectivePeriod(p, mod); got != perf || by != "" {
		t.Errorf("runtime.gogo's 10ms sample beside the module's perf samples: effectivePeriod = %v, %q; want %v, \"\"", time.Duration(got), by, perfPeriod)
	}
	if got, by := effectivePeriod(p, nil); got != 10_000_000 || by != "runtime.gogo" {
		t.Errorf("the module unknown: effectivePeriod = %v, %q; want 10ms, \"runtime.gogo\"", time.Duration(got), by)
	}
	// Three such samples: a goroutine's work, present in enough runs to
	// weigh in the yardstick; its period is the profile's.
	p.Sample[1].Value = []int64{minCoarse, minCoarse * 10_000_000}
	if got, by := effectivePeriod(p, mod); got != 10_000_000 || by != "runtime.gogo" {
		t.Errorf("%d samples of runtime.gogo: effectivePeriod = %v, %q; want 10ms, \"runtime.gogo\"", minCoarse, time.Duration(got), by)
	}
	p.Sample = p.Sample[:1]
	if got, by := effectivePeriod(p, nil); got != perf || by != "" {
		t.Errorf("perf samples alone: effectivePeriod = %v, %q; want %v, \"\"", time.Duration(got), by, perfPeriod)
	}
}
