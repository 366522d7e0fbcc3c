package gotrace_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	xtrace "golang.org/x/exp/trace"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/gotrace"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testchild"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
)

// traceMu serialises the tests that start the runtime tracer or CPU profiler:
// there is one of each per process.
var traceMu sync.Mutex

// record runs f under runtime/trace (and CPU profiling when cpu is set) and
// returns the trace. It skips the test when the go command already traces or
// profiles this process (go test -trace/-cpuprofile), since a process has one
// tracer.
func record(tb testing.TB, cpu bool, f func()) []byte {
	tb.Helper()
	data, _ := recordCPU(tb, cpu, f)
	return data
}

// recordCPU is record that also returns the CPU profile written beside the
// trace (nil when cpu is false).
func recordCPU(tb testing.TB, cpu bool, f func()) (traceData, cpuProfile []byte) {
	tb.Helper()
	traceMu.Lock()
	defer traceMu.Unlock()
	var buf, pbuf bytes.Buffer
	if cpu {
		if err := pprof.StartCPUProfile(&pbuf); err == nil {
			defer func() {
				pprof.StopCPUProfile()
				cpuProfile = pbuf.Bytes()
			}()
		} else if _, bench := tb.(*testing.B); !bench {
			tb.Skipf("CPU profiling already on (go test -cpuprofile?): %v", err)
		}
		// A benchmark profiled with -cpuprofile still gets CPU samples in
		// the trace, from the go command's profiler.
	}
	if err := trace.Start(&buf); err != nil {
		tb.Skipf("tracing already on (go test -trace?): %v", err)
	}
	f()
	trace.Stop()
	return buf.Bytes(), nil
}

func parse(tb testing.TB, data []byte, view string) *profile.Profile {
	tb.Helper()
	p, err := gotrace.Parse(bytes.NewReader(data), pbuild.Options{View: view})
	if err != nil {
		tb.Fatalf("Parse(view %q): %v", view, err)
	}
	if err := p.CheckValid(); err != nil {
		tb.Fatal(err)
	}
	return p
}

func functions(tb testing.TB, p *profile.Profile) map[string]analysis.Function {
	tb.Helper()
	tab, err := analysis.Functions(p)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]analysis.Function{}
	for _, f := range tab.Functions {
		m[f.Name] = f
	}
	return m
}

// stacks lists each sample as "root;...;leaf" with its goroutine label.
func stacks(p *profile.Profile) map[string]int64 {
	m := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			names = append(names, s.Location[i].Line[0].Function.Name)
		}
		m[strings.Join(names, ";")] += s.Value[1]
	}
	return m
}

func spin(d time.Duration) int {
	n := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := 0; i < 1000; i++ {
			n += i * i
		}
	}
	return n
}

var sink atomic.Int64

// TestRegionDurations times nested regions with sleeps and checks that each
// region's total lies between the sleeps it holds and the wall time the test
// measured around it, and that self times exclude nested regions.
func TestRegionDurations(t *testing.T) {
	var outerWall, innerWall, workerWall time.Duration
	data := record(t, false, func() {
		ctx := context.Background()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := time.Now()
			trace.WithRegion(ctx, "worker", func() { time.Sleep(15 * time.Millisecond) })
			workerWall = time.Since(s)
		}()
		s := time.Now()
		r := trace.StartRegion(ctx, "outer")
		time.Sleep(20 * time.Millisecond)
		si := time.Now()
		trace.WithRegion(ctx, "inner", func() { time.Sleep(30 * time.Millisecond) })
		innerWall = time.Since(si)
		time.Sleep(10 * time.Millisecond)
		r.End()
		outerWall = time.Since(s)
		wg.Wait()
	})
	p := parse(t, data, "") // no CPU samples: regions by default
	if !pbuild.IsExact(p) {
		t.Fatal("regions view is not marked exact")
	}
	fn := functions(t, p)
	within := func(name string, got, lo, hi time.Duration) {
		t.Helper()
		// The trace clock and time.Now may disagree slightly: allow 1% + 100µs above.
		if got < lo || got > hi+hi/100+100*time.Microsecond {
			t.Errorf("%s = %v, want within [%v, %v]", name, got, lo, hi)
		}
	}
	within("outer total", time.Duration(fn["outer"].Total), 60*time.Millisecond, outerWall)
	within("outer self", time.Duration(fn["outer"].Self), 30*time.Millisecond, outerWall-30*time.Millisecond)
	within("inner total", time.Duration(fn["inner"].Total), 30*time.Millisecond, innerWall)
	if fn["inner"].Self != fn["inner"].Total {
		t.Errorf("inner self %v != total %v (it has no nested regions)", fn["inner"].Self, fn["inner"].Total)
	}
	if got := fn["outer"].Self + fn["inner"].Total; got != fn["outer"].Total {
		t.Errorf("outer self+inner total = %v, want outer total %v", got, fn["outer"].Total)
	}
	within("worker total", time.Duration(fn["worker"].Total), 15*time.Millisecond, workerWall)
	if n := fn["inner"].TotalSamples; n != 1 {
		t.Errorf("inner count = %d, want 1 region", n)
	}

	// Nesting and goroutines: inner sits under outer, worker on another goroutine.
	st := stacks(p)
	for _, want := range []string{"outer", "outer;inner", "worker"} {
		if _, ok := st[want]; !ok {
			t.Errorf("no stack %q in %v", want, st)
		}
	}
	gor := map[string]string{}
	for _, s := range p.Sample {
		g := s.Label[gotrace.LabelGoroutine]
		if len(g) != 1 {
			t.Fatalf("sample %v has goroutine labels %v", s.Location, g)
		}
		gor[s.Location[0].Line[0].Function.Name] = g[0]
	}
	if gor["outer"] != gor["inner"] || gor["outer"] == gor["worker"] {
		t.Errorf("goroutines per region = %v: want outer and inner on one, worker on another", gor)
	}
	// Go 1.25+ traces carry a wall-clock snapshot: the profile's start time.
	if d := time.Since(time.Unix(0, p.TimeNanos)); d < 0 || d > time.Minute {
		t.Errorf("TimeNanos = %v, %v ago; want the trace's start, moments ago", time.Unix(0, p.TimeNanos), d)
	}
	if p.DurationNanos < int64(outerWall/2) {
		t.Errorf("DurationNanos = %d, want about the trace's span (>= %v)", p.DurationNanos, outerWall)
	}
}

// TestRegionTotalsMatchEvents checks the durations view against an
// independent walk of the region events with x/exp/trace: each region type's
// total time is the sum of end minus begin of its instances, to the nanosecond.
func TestRegionTotalsMatchEvents(t *testing.T) {
	data := record(t, false, func() {
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					trace.WithRegion(ctx, "a", func() {
						time.Sleep(time.Duration(i+1) * time.Millisecond)
						trace.WithRegion(ctx, "b", func() { sink.Add(int64(spin(time.Millisecond))) })
					})
				}
			}()
		}
		wg.Wait()
	})
	want := map[string]time.Duration{}
	count := map[string]int64{}
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		g   xtrace.GoID
		typ string
	}
	begins := map[key]xtrace.Time{}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind() {
		case xtrace.EventRegionBegin:
			begins[key{ev.Goroutine(), ev.Region().Type}] = ev.Time()
		case xtrace.EventRegionEnd:
			k := key{ev.Goroutine(), ev.Region().Type}
			want[k.typ] += ev.Time().Sub(begins[k])
			count[k.typ]++
		}
	}
	fn := functions(t, parse(t, data, pbuild.ViewDurations))
	for _, typ := range []string{"a", "b"} {
		// The count value is 1 per region on the stack it ended with: self samples count regions.
		if time.Duration(fn[typ].Total) != want[typ] || fn[typ].SelfSamples != count[typ] {
			t.Errorf("region %s: total %v in %d regions, events say %v in %d", typ, fn[typ].Total, fn[typ].SelfSamples, want[typ], count[typ])
		}
	}
	if count["a"] != 12 {
		t.Errorf("events hold %d regions a, want 12", count["a"])
	}
	if time.Duration(fn["a"].Self) != want["a"]-want["b"] {
		t.Errorf("a self = %v, want a total - b total = %v", fn["a"].Self, want["a"]-want["b"])
	}
}

// TestTasks pins the task decision: a task is a frame above the regions run
// in it, its total is their wall time, and the task type is a label.
func TestTasks(t *testing.T) {
	data := record(t, false, func() {
		ctx, task := trace.NewTask(context.Background(), "request")
		trace.WithRegion(ctx, "handle", func() {
			time.Sleep(5 * time.Millisecond)
			trace.WithRegion(ctx, "db", func() { time.Sleep(5 * time.Millisecond) })
		})
		task.End()
		trace.WithRegion(context.Background(), "untasked", func() { time.Sleep(time.Millisecond) })
	})
	p := parse(t, data, pbuild.ViewDurations)
	st := stacks(p)
	for _, want := range []string{"task:request;handle", "task:request;handle;db", "untasked"} {
		if _, ok := st[want]; !ok {
			t.Errorf("no stack %q in %v", want, st)
		}
	}
	fn := functions(t, p)
	if fn["task:request"].Total != fn["handle"].Total || fn["task:request"].Self != 0 {
		t.Errorf("task total %v self %v, want total = handle's %v and self 0", fn["task:request"].Total, fn["task:request"].Self, fn["handle"].Total)
	}
	for _, s := range p.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		got := strings.Join(s.Label[gotrace.LabelTask], ",")
		want := "request"
		if leaf == "untasked" {
			want = ""
		}
		if got != want {
			t.Errorf("sample %s: task label %q, want %q", leaf, got, want)
		}
	}
}

// TestCPUSamples records a trace with CPU profiling on and checks the samples
// view: real frames with file and line, 10ms per sample, region labels, and
// that it is the default when the trace has samples.
func TestCPUSamples(t *testing.T) {
	// 300ms of spinning at 100 Hz: expect about 30 samples; allow for a
	// loaded machine. The spin lasts a wall time: at load 12 on two cores,
	// under -race, it once got 2 samples, so it runs again, twice as long,
	// until it has 5.
	var (
		data, cpuProf []byte
		p             *profile.Profile
		sp            analysis.Function
		spun          time.Duration
	)
	for spun = 300 * time.Millisecond; ; spun *= 2 {
		data, cpuProf = recordCPU(t, true, func() {
			trace.WithRegion(context.Background(), "busy", func() { sink.Add(int64(spin(spun))) })
		})
		p = parse(t, data, "")
		fn := functions(t, p)
		var ok bool
		if sp, ok = fn["github.com/hotbudget/hotbudget/internal/gotrace_test.spin"]; !ok {
			t.Fatalf("spin not in samples: %v", fn)
		}
		if sp.SelfSamples >= 5 || spun >= 2400*time.Millisecond {
			break
		}
		t.Logf("spin: %d self samples in %v, spinning again for twice as long", sp.SelfSamples, spun)
	}
	if pbuild.IsExact(p) {
		t.Fatal("default view of a trace with CPU samples is exact, want the sampled CPU view")
	}
	if p.Period != gotrace.DefaultPeriod {
		t.Errorf("Period = %d, want %d", p.Period, gotrace.DefaultPeriod)
	}
	if sp.SelfSamples < 5 || time.Duration(sp.Total) > spun+100*time.Millisecond {
		t.Errorf("spin: %d self samples, total %v; want >= 5 samples and <= %v", sp.SelfSamples, sp.Total, spun+100*time.Millisecond)
	}
	if !strings.HasSuffix(sp.File, "gotrace_test.go") || sp.Line <= 0 {
		t.Errorf("spin frame at %s:%d, want gotrace_test.go with a line", sp.File, sp.Line)
	}
	if time.Duration(sp.Self) != time.Duration(sp.SelfSamples)*10*time.Millisecond {
		t.Errorf("spin self %v for %d samples, want 10ms each", sp.Self, sp.SelfSamples)
	}
	var inBusy int64
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == sp.Name && len(s.Label[gotrace.LabelRegion]) == 1 && s.Label[gotrace.LabelRegion][0] == "busy" {
			inBusy += s.Value[0]
			if len(s.Label[pbuild.LabelTID]) != 1 || len(s.Label[gotrace.LabelGoroutine]) != 1 {
				t.Errorf("sample labels %v lack tid or goroutine", s.Label)
			}
		}
	}
	if inBusy != sp.SelfSamples {
		t.Errorf("%d of %d spin samples carry region=busy", inBusy, sp.SelfSamples)
	}

	// The runtime writes each CPU sample to the profile and the trace alike:
	// the pprof profile recorded at the same time must agree, give or take
	// the samples at the edges of the profile's and the trace's windows.
	pp, err := profile.ParseData(cpuProf)
	if err != nil {
		t.Fatal(err)
	}
	pf := functions(t, pp)[sp.Name]
	if d := pf.SelfSamples - sp.SelfSamples; d < -2 || d > 2 {
		t.Errorf("spin: %d self samples in the trace, %d in the CPU profile recorded beside it", sp.SelfSamples, pf.SelfSamples)
	}

	// The same trace's durations view holds the region.
	d := functions(t, parse(t, data, pbuild.ViewDurations))
	if time.Duration(d["busy"].Total) < spun {
		t.Errorf("durations view: busy total %v, want >= %v", d["busy"].Total, spun)
	}
}

// TestRateWarning: a trace does not record the CPU profiling rate; samples
// much closer than 10ms on a thread are warned about. It runs in a child
// process that leaves out the runtime's line about the profiling rate.
func TestRateWarning(t *testing.T) {
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	var buf bytes.Buffer
	var gaps []time.Duration
	// The spin runs for a wall time: on a busy machine (load 12 on two
	// cores) 200 ms gave 9 gaps, so it runs longer until there are 10.
	for d := 200 * time.Millisecond; len(gaps) < 10 && d <= 3200*time.Millisecond; d *= 2 {
		buf.Reset()
		if err := trace.Start(&buf); err != nil {
			t.Skipf("tracing already on: %v", err)
		}
		// The documented way to profile at another rate: set it, then start
		// runtime/pprof, which keeps it (and prints that it cannot set its own)
		// and drains the samples so that later profiles can start.
		runtime.SetCPUProfileRate(1000)
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			runtime.SetCPUProfileRate(0)
			trace.Stop()
			t.Skipf("CPU profiling already on: %v", err)
		}
		sink.Add(int64(spin(d)))
		pprof.StopCPUProfile()
		trace.Stop()
		// How close the samples come depends on the kernel's tick (a 250 Hz
		// kernel delivers 1000 Hz samples 4ms apart) and on the load, so check
		// the warning against the gaps measured here, independently of Parse.
		gaps = sampleGaps(t, buf.Bytes())
	}
	p := parse(t, buf.Bytes(), pbuild.ViewSamples)
	if len(p.Sample) == 0 {
		t.Fatal("no CPU samples at 1000 Hz")
	}
	slices.Sort(gaps)
	if len(gaps) < 10 {
		t.Fatalf("only %d gaps between CPU samples of a thread at 1000 Hz", len(gaps))
	}
	med := gaps[len(gaps)/2]
	t.Logf("median gap between a thread's samples at 1000 Hz: %v", med)
	if warned := hasWarning(p, "rate was likely above 100 Hz"); warned != (med < 5*time.Millisecond) {
		t.Errorf("median gap %v: rate warning %v, warnings %q", med, warned, pbuild.Warnings(p))
	}
	// At the default rate (the committed cpu.trace) there is no such warning.
	b, err := os.ReadFile("../../testdata/gotrace/cpu.trace")
	if err != nil {
		t.Fatal(err)
	}
	if p := parse(t, b, ""); hasWarning(p, "rate") {
		t.Errorf("rate warning at 100 Hz: %q", pbuild.Warnings(p))
	}
}

// sampleGaps returns the gaps between consecutive CPU samples of each thread.
func sampleGaps(t *testing.T, data []byte) []time.Duration {
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	last := map[xtrace.ThreadID]xtrace.Time{}
	var gaps []time.Duration
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			return gaps
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind() != xtrace.EventStackSample {
			continue
		}
		if l, ok := last[ev.Thread()]; ok {
			gaps = append(gaps, ev.Time().Sub(l))
		}
		last[ev.Thread()] = ev.Time()
	}
}

// TestViewFallback: an explicit view that is empty falls back to the other
// with a warning; a trace with neither gives an empty profile with a warning.
func TestViewFallback(t *testing.T) {
	data := record(t, false, func() {
		trace.WithRegion(context.Background(), "r", func() { time.Sleep(time.Millisecond) })
	})
	p := parse(t, data, pbuild.ViewSamples)
	if !pbuild.IsExact(p) || !hasWarning(p, "no CPU samples") {
		t.Errorf("samples view of a trace without samples: exact %v, warnings %q; want regions with a warning", pbuild.IsExact(p), pbuild.Warnings(p))
	}
	empty := record(t, false, func() { time.Sleep(time.Millisecond) })
	p = parse(t, empty, "")
	if len(p.Sample) != 0 || !hasWarning(p, "neither CPU samples nor user regions") {
		t.Errorf("trace without regions or samples: %d samples, warnings %q", len(p.Sample), pbuild.Warnings(p))
	}
	if _, err := gotrace.Parse(bytes.NewReader(data), pbuild.Options{View: "flame"}); err == nil || !strings.Contains(err.Error(), "unknown view") {
		t.Errorf("unknown view: err = %v", err)
	}
}

// TestOpenRegions: a region open when tracing stops is closed at the last
// event with a warning. (A region ending without a begin, as in a flight
// recorder's window, is covered by TestHandWorkedDurations.)
func TestOpenRegions(t *testing.T) {
	traceMu.Lock()
	defer traceMu.Unlock()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("tracing already on: %v", err)
	}
	open := trace.StartRegion(context.Background(), "open")
	time.Sleep(2 * time.Millisecond)
	trace.Stop()
	open.End()
	p := parse(t, buf.Bytes(), "")
	fn := functions(t, p)
	if time.Duration(fn["open"].Total) < 2*time.Millisecond {
		t.Errorf("open region total = %v, want >= 2ms", fn["open"].Total)
	}
	if !hasWarning(p, "1 regions still open") {
		t.Errorf("no warning for the open region: %q", pbuild.Warnings(p))
	}
}

func hasWarning(p *profile.Profile, sub string) bool {
	for _, w := range pbuild.Warnings(p) {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// TestBadInput: empty, non-trace, header only, truncated and garbage input
// give errors that say what is wrong, never a panic.
func TestBadInput(t *testing.T) {
	good, err := os.ReadFile("../../testdata/gotrace/regions.trace")
	if err != nil {
		t.Fatal(err)
	}
	header := good[:16]
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "header"},
		{"not a trace", "hello world, not a trace at all", "not a Go execution trace"},
		{"future version", "go 1.99 trace\x00\x00\x00", "unsupported trace version go 1.99"},
		{"header only", string(header), "no events"},
		{"garbage after header", string(header) + strings.Repeat("\xff\x13garbage", 50), "expected batch event"},
		{"truncated", string(good[:len(good)/2]), "truncated trace"},
		{"truncated batch header", string(good[:20]), "truncated trace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := gotrace.Parse(strings.NewReader(c.in), pbuild.Options{})
			if err == nil {
				t.Fatalf("no error; got a profile with %d samples", len(p.Sample))
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

// TestTestdata loads the committed traces (made by testdata/gotrace/gen) and
// checks what the generator guarantees: its sleeps bound the regions from
// below, nesting, two goroutines, a task, and CPU samples of its busy loop.
func TestTestdata(t *testing.T) {
	p, err := loaders.Load("../../testdata/gotrace/regions.trace")
	if err != nil {
		t.Fatal(err)
	}
	fn := functions(t, p)
	st := stacks(p)
	for _, want := range []string{"task:job;load", "task:job;load;decode", "compute"} {
		if _, ok := st[want]; !ok {
			t.Errorf("regions.trace: no stack %q in %v", want, st)
		}
	}
	// gen sleeps 10ms in load outside decode, 20ms in decode, 3×5ms in compute.
	if time.Duration(fn["decode"].Total) < 20*time.Millisecond || time.Duration(fn["load"].Self) < 10*time.Millisecond || time.Duration(fn["compute"].Total) < 15*time.Millisecond || fn["compute"].TotalSamples != 3 {
		t.Errorf("regions.trace: decode %v, load self %v, compute %v in %d", fn["decode"].Total, fn["load"].Self, fn["compute"].Total, fn["compute"].TotalSamples)
	}

	c, err := loaders.Load("../../testdata/gotrace/cpu.trace")
	if err != nil {
		t.Fatal(err)
	}
	if pbuild.IsExact(c) {
		t.Fatal("cpu.trace default view is exact, want CPU samples")
	}
	cf := functions(t, c)
	if cf["main.busy"].SelfSamples < 5 {
		t.Errorf("cpu.trace: main.busy has %d self samples, want >= 5", cf["main.busy"].SelfSamples)
	}
	d, err := loaders.Load("../../testdata/gotrace/cpu.trace", loaders.WithView(loaders.ViewDurations))
	if err != nil {
		t.Fatal(err)
	}
	if df := functions(t, d); time.Duration(df["spin"].Total) < 100*time.Millisecond {
		t.Errorf("cpu.trace durations: spin region %v, want >= 100ms", df["spin"].Total)
	}
}

// TestPprofTop writes both views of the committed traces as pprof files and
// checks self and total of every function against go tool pprof -top.
func TestPprofTop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof")
	}
	for _, c := range []struct{ file, view string }{
		{"regions.trace", pbuild.ViewDurations},
		{"cpu.trace", pbuild.ViewSamples},
		{"cpu.trace", pbuild.ViewDurations},
	} {
		b, err := os.ReadFile("../../testdata/gotrace/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		p := parse(t, b, c.view)
		path := testutil.WriteProfile(t, t.TempDir(), "p.pb.gz", p)
		out, err := testutil.PprofCmd("-top", "-symbolize=none", "-nodecount=1000000",
			"-nodefraction=0", "-edgefraction=0", "-unit=ns", path).Output()
		if err != nil {
			t.Fatalf("go tool pprof: %v", err)
		}
		rows := map[string][2]string{}
		inTable := false
		for _, line := range strings.Split(string(out), "\n") {
			fs := strings.Fields(line)
			switch {
			case len(fs) > 0 && fs[0] == "flat":
				inTable = true
			case inTable && len(fs) >= 6:
				rows[strings.Join(fs[5:], " ")] = [2]string{fs[0], fs[3]}
			}
		}
		fn := functions(t, p)
		if len(rows) != len(fn) {
			t.Errorf("%s %s: pprof shows %d functions, analysis %d:\n%s", c.file, c.view, len(rows), len(fn), out)
		}
		for name, f := range fn {
			want := [2]string{fmt.Sprintf("%dns", f.Self), fmt.Sprintf("%dns", f.Total)}
			if f.Self == 0 {
				want[0] = "0"
			}
			if rows[name] != want {
				t.Errorf("%s %s: %s: pprof flat/cum %v, want %v", c.file, c.view, name, rows[name], want)
			}
		}
	}
}

// TestDetect pins that the loaders recognise a Go trace by its header.
func TestDetect(t *testing.T) {
	b, err := os.ReadFile("../../testdata/gotrace/regions.trace")
	if err != nil {
		t.Fatal(err)
	}
	if f := loaders.Detect(b[:min(len(b), 512)]); f != loaders.FormatGoTrace {
		t.Errorf("Detect = %q, want %q", f, loaders.FormatGoTrace)
	}
}

// TestXExpCrashers runs the crasher corpus of x/exp/trace's own fuzzer
// (copied into testdata/fuzz/FuzzParse/xexp-*): every input is refused with an
// error or read into a valid profile; the Go 1.22 trace that closes a region
// it never opened is counted from the first event with a warning.
func TestXExpCrashers(t *testing.T) {
	files, err := filepath.Glob("testdata/fuzz/FuzzParse/xexp-*")
	if err != nil || len(files) < 10 {
		t.Fatalf("x/exp crasher corpus: %d files, %v", len(files), err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// The file is "go test fuzz v1\n[]byte(\"...\")\n".
		_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := gotrace.Parse(strings.NewReader(data), pbuild.Options{})
		if strings.HasSuffix(name, "closing-unknown-region") {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !hasWarning(p, "1 regions ended without a begin") || len(p.Sample) != 1 {
				t.Errorf("%s: %d samples, warnings %q; want the region counted with a warning", name, len(p.Sample), pbuild.Warnings(p))
			}
			continue
		}
		if err == nil {
			err = p.CheckValid()
		}
		if err != nil && strings.Contains(err.Error(), "panicked") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"regions.trace", "cpu.trace"} {
		b, err := os.ReadFile("../../testdata/gotrace/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte("go 1.26 trace\x00\x00\x00"))
	f.Add([]byte("go 1.21 trace\x00\x00\x00\x01\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return
		}
		for _, v := range []string{"", pbuild.ViewDurations} {
			p, err := gotrace.Parse(bytes.NewReader(b), pbuild.Options{View: v})
			if err == nil {
				if err := p.CheckValid(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkParse parses a trace of many goroutines running nested regions
// with CPU profiling on, in both views.
func BenchmarkParse(b *testing.B) {
	data := record(b, true, func() {
		ctx := context.Background()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 20000 {
					trace.WithRegion(ctx, "outer", func() {
						trace.WithRegion(ctx, "inner", func() { sink.Add(int64(j)) })
						if j%1000 == 0 {
							sink.Add(int64(spin(time.Millisecond)))
						}
					})
				}
			}()
		}
		wg.Wait()
	})
	// The floor: x/exp/trace reading the events and doing nothing with them.
	b.Run("x-exp-trace-only", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			r, err := xtrace.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := r.ReadEvent(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, v := range []string{pbuild.ViewSamples, pbuild.ViewDurations} {
		b.Run(v, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gotrace.Parse(bytes.NewReader(data), pbuild.Options{View: v}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
