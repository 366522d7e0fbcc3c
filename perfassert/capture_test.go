package perfassert_test

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/perfassert"
)

const spinName = "github.com/hotbudget/hotbudget/perfassert_test.spin"

var spinSink atomic.Uint64

// spin burns CPU in a loop the compiler cannot remove.
//
//go:noinline
func spin(n int) {
	x := spinSink.Load() | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	spinSink.Store(x)
}

func TestCaptureBusyFunction(t *testing.T) {
	start := time.Now()
	p := perfassert.Capture(t, func() { spin(100_000) }, perfassert.MinSamples(50), perfassert.MaxDuration(3*time.Second))
	elapsed := time.Since(start)
	if p == nil {
		t.Fatal("no profile")
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	n, ok := perfassert.Iterations(p)
	if !ok || n < 1 {
		t.Errorf("Iterations = %d, %v", n, ok)
	}
	if got := perfassert.ProfileName(p); got != "capture of TestCaptureBusyFunction" {
		t.Errorf("ProfileName = %q", got)
	}
	var samples int64
	for _, s := range p.Sample {
		samples += s.Value[0]
	}
	if samples < 50 && elapsed < 3*time.Second {
		t.Errorf("%d samples after %v: stopped before MinSamples and MaxDuration", samples, elapsed)
	}
	// MaxDuration bounds the sampling (the profile's duration), with one
	// iteration's slack; the allocation phase and reading the profiles
	// come after it and stretch with the machine's load (seen at 5s under
	// -race at load 10), so the call's wall time is bounded loosely, only
	// against a capture that never stops.
	if d := time.Duration(p.DurationNanos); d > 3*time.Second+time.Second {
		t.Errorf("sampling took %v, MaxDuration 3s", d)
	}
	if elapsed > 30*time.Second {
		t.Errorf("capture took %v with MaxDuration 3s", elapsed)
	}

	// The busy function dominates its own capture.
	r, err := limits.Check(p, spinName, limits.Limit{Quantity: limits.SelfShare, Share: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Missing || r.Share < 0.5 {
		t.Fatalf("spin has %.0f%% of the capture, want most of it:\n%s", r.Share*100, r)
	}
	perfassert.MaxSelfShare(t, p, spinName, 1)

	// Per run: the capture's spin time divided by the runs, which is what a
	// budget on a captured function should bound.
	perRun, err := limits.Check(p, spinName, limits.Limit{Quantity: limits.SelfTime, Time: time.Second}, perfassert.PerIteration())
	if err != nil {
		t.Fatal(err)
	}
	if perRun.Iterations != n || time.Duration(perRun.Value) != time.Duration(r.Value)/time.Duration(n) || !perRun.Passed {
		t.Errorf("per run %v over %d runs, want %v / %d", time.Duration(perRun.Value), perRun.Iterations, time.Duration(r.Value), n)
	}
	perfassert.MaxSelfTime(t, p, spinName, 100*time.Millisecond, perfassert.PerIteration()) // spin(100_000) takes well under 1ms

	// A tight bound fails and the text names the capture and the function.
	ft := &fakeT{}
	if perfassert.MaxSelfShare(ft, p, spinName, 0.01) {
		t.Fatal("1% bound passed")
	}
	for _, want := range []string{
		"perfassert.MaxSelfShare: capture of TestCaptureBusyFunction: " + spinName + " self time ",
		"want at most 1.00%",
		"top functions by self time:",
		"heaviest stacks (leaf first):\n",
		spinName + " <- ",
	} {
		if !strings.Contains(ft.text(), want) {
			t.Errorf("failure text lacks %q:\n%s", want, ft.text())
		}
	}
}

// TestCaptureParallelCapturesShareTheProfiler: two parallel tests capture at
// the same time (they do not queue), and each profile holds only its own
// function.
func TestCaptureParallelCapturesShareTheProfiler(t *testing.T) {
	var spans [2][2]int64 // start, end of each capture
	t.Run("group", func(t *testing.T) {
		for i := range 2 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				mine, theirs := spinName, otherName
				fn := func() { spin(50_000) }
				if i == 1 {
					mine, theirs = theirs, mine
					fn = func() { other(50_000) }
				}
				p := perfassert.Capture(t, fn, perfassert.MinSamples(40), perfassert.MaxDuration(3*time.Second))
				if p == nil {
					t.Fatal("no profile")
				}
				spans[i] = [2]int64{p.TimeNanos, p.TimeNanos + p.DurationNanos}
				perfassert.MaxSelfShare(t, p, mine, 1) // present: fails if missing
				if r, err := limits.Check(p, theirs, limits.Limit{Quantity: limits.TotalShare, Share: 0}); err != nil || !r.Missing {
					t.Errorf("the other capture's function is in this one: %v\n%s", err, r)
				}
			})
		}
	})
	if spans[0][0] >= spans[1][1] || spans[1][0] >= spans[0][1] {
		t.Errorf("the captures took turns (%v and %v): they should run at once", spans[0], spans[1])
	}
}

// TestCaptureKeepsItsOwnGoroutinesOnly: a goroutine the captured function
// starts is in the capture (it inherits the label); one running beside it
// is not; no frame of perfassert or of package testing is left in the
// stacks.
func TestCaptureKeepsItsOwnGoroutinesOnly(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a neighbour burning CPU: not ours
		for {
			select {
			case <-stop:
				return
			default:
				burn(20_000)
			}
		}
	}()
	p := perfassert.Capture(t, func() {
		done := make(chan struct{})
		go func() { other(40_000); close(done) }()
		spin(40_000)
		<-done
	}, perfassert.MinSamples(60), perfassert.MaxDuration(2*time.Second))
	if p == nil {
		t.Fatal("no profile")
	}
	perfassert.MaxSelfShare(t, p, otherName, 1) // started by fn: present
	perfassert.MaxSelfShare(t, p, spinName, 1)
	if r, err := limits.Check(p, burnName, limits.Limit{Quantity: limits.TotalShare, Share: 0}); err != nil || !r.Missing {
		t.Errorf("the neighbour goroutine is in the capture: %v\n%s", err, r)
	}
	for _, s := range p.Sample {
		for _, l := range s.Location {
			for _, ln := range l.Line {
				name := ln.Function.Name
				if strings.HasPrefix(name, "testing.") || strings.HasPrefix(name, "github.com/hotbudget/hotbudget/perfassert.") || name == "runtime/pprof.Do" || name == "runtime.asyncPreempt" && l == s.Location[0] {
					t.Fatalf("harness frame %s in a captured stack", name)
				}
			}
		}
	}
}

const (
	otherName = "github.com/hotbudget/hotbudget/perfassert_test.other"
	burnName  = "github.com/hotbudget/hotbudget/perfassert_test.burn"
)

var burnSink atomic.Uint64

//go:noinline
func burn(n int) {
	x := burnSink.Load() | 3
	for i := 0; i < n; i++ {
		x = x*x + uint64(i)
	}
	burnSink.Store(x)
}

// TestCaptureRuns: a capture is made of at least MinRuns runs, each
// labelled and listed in its record with its iterations: runs are of equal
// work (a run without samples joins the next, so a run's work is a
// multiple of the others').
func TestCaptureRuns(t *testing.T) {
	ft := &fakeT{name: "TestCaptureRuns"}
	p := perfassert.Capture(ft, func() { spin(20_000) }, perfassert.MinSamples(60), perfassert.MinRuns(6), perfassert.MaxDuration(4*time.Second), fastSampler())
	if p == nil {
		t.Fatal(ft.text())
	}
	runs, err := perfassert.SplitRuns(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 6 {
		t.Errorf("%d runs, want at least MinRuns(6)", len(runs))
	}
	var total, least int64
	for i, r := range runs {
		n, ok := perfassert.Iterations(r)
		if !ok || n <= 0 {
			t.Fatalf("run %d: iterations %d, %v", i+1, n, ok)
		}
		if least == 0 || n < least {
			least = n
		}
		total += n
		if countSamples(r) == 0 {
			t.Errorf("run %d has no samples", i+1)
		}
	}
	// A run of the profile is a group of the capture's runs, which all do
	// the same iterations (hundreds of spin(20_000), by calibration): so
	// every run's count is a multiple of that, and their greatest common
	// divisor is at least it. Groups differ in size (the leftover and a
	// run without samples join a group), so the smallest run need not
	// divide the others (458 and 687, of 229 each, beside two busy loops);
	// runs of unequal work would leave a divisor of a few iterations.
	g := int64(0)
	for _, r := range runs {
		n, _ := perfassert.Iterations(r)
		for b := n; b != 0; {
			g, b = b, g%b
		}
	}
	if g < 10 {
		var counts []int64
		for _, r := range runs {
			n, _ := perfassert.Iterations(r)
			counts = append(counts, n)
		}
		t.Errorf("runs of %v iterations: their greatest common divisor is %d, not the iterations of equal runs", counts, g)
	}
	if n, _ := perfassert.Iterations(p); n != total {
		t.Errorf("Iterations = %d, runs add up to %d", n, total)
	}
	// Capture says what it cost (after, in the process's first capture,
	// which sampler it uses).
	ft.logs = slices.DeleteFunc(ft.logs, func(l string) bool { return strings.HasPrefix(l, "perfassert.Capture: sampler: ") })
	if len(ft.logs) != 1 {
		t.Fatalf("logs %q", ft.logs)
	}
	for _, want := range []string{"perfassert.Capture: capture of TestCaptureRuns: ", fmt.Sprintf(" samples in %d runs, ", len(runs)), " wall, ", " CPU, ", fmt.Sprintf(" %d iterations (", total), "; stopped: "} {
		if !strings.Contains(ft.logs[0], want) {
			t.Errorf("log lacks %q: %s", want, ft.logs[0])
		}
	}
}

func countSamples(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return n
}

// skipT is a fake T that can skip, like testing.TB.
type skipT struct {
	fakeT
	skipped string
}

func (s *skipT) Skipf(format string, args ...any) { s.skipped = fmt.Sprintf(format, args...) }

func TestCaptureWhenProfilerBusy(t *testing.T) {
	// Hold the profiler as go test -cpuprofile does. If the test binary
	// already runs under -cpuprofile, it is held anyway.
	if err := pprof.StartCPUProfile(io.Discard); err == nil {
		defer pprof.StopCPUProfile()
	}
	calls := 0
	start := time.Now()
	_, err := perfassert.CaptureProfile(func() { calls++ })
	if !errors.Is(err, perfassert.ErrProfilerBusy) {
		t.Fatalf("err = %v, want ErrProfilerBusy", err)
	}
	if calls != 0 || time.Since(start) > time.Second {
		t.Errorf("busy profiler: fn ran %d times, took %v; want an immediate error", calls, time.Since(start))
	}

	st := &skipT{fakeT: fakeT{name: "TestX"}}
	if p := perfassert.Capture(st, func() {}); p != nil {
		t.Error("got a profile")
	}
	if !strings.Contains(st.skipped, "CPU profiler is already in use") || !strings.Contains(st.skipped, "run it without -cpuprofile") || len(st.errors) != 0 {
		t.Errorf("skip %q, errors %q", st.skipped, st.errors)
	}

	mt := &minimalT{}
	p := perfassert.Capture(mt, func() {})
	if p != nil || len(mt.errors) != 1 || !strings.Contains(mt.errors[0], "perfassert.Capture: the CPU profiler is already in use") {
		t.Errorf("minimal T: profile %v, errors %q", p != nil, mt.errors)
	}
	// Assertions on the nil profile fail instead of passing.
	if perfassert.MaxSelfTime(mt, p, "x", time.Hour) {
		t.Error("assertion on a nil profile passed")
	}
}

func TestCaptureOptions(t *testing.T) {
	t.Run("invalid options are errors", func(t *testing.T) {
		for _, o := range []perfassert.CaptureOption{perfassert.MinSamples(0), perfassert.MaxDuration(-1), perfassert.Rate(0), perfassert.Rate(20000),
			perfassert.MinRuns(0), perfassert.Precision(0), perfassert.Precision(1)} {
			if _, err := perfassert.CaptureProfile(func() {}, o); err == nil {
				t.Errorf("option accepted")
			}
		}
		if _, err := perfassert.CaptureProfile(nil); err == nil {
			t.Error("nil function accepted")
		}
	})
	t.Run("MaxDuration bounds an idle function", func(t *testing.T) {
		start := time.Now()
		// NoAllocs: the allocation phase runs fn for a quarter of
		// MaxDuration at most, but reading the process's allocation
		// profile around it is not bounded (seconds under -race after
		// many captures).
		p, err := perfassert.CaptureProfile(func() { time.Sleep(10 * time.Millisecond) }, perfassert.MaxDuration(150*time.Millisecond), perfassert.NoAllocs())
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v with MaxDuration 150ms", d)
		}
		if n, _ := perfassert.Iterations(p); n < 2 {
			t.Errorf("Iterations = %d, want the function repeated", n)
		}
	})
	t.Run("a panicking function leaves the profiler free", func(t *testing.T) {
		func() {
			defer func() { _ = recover() }()
			_, _ = perfassert.CaptureProfile(func() { panic("boom") })
		}()
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			t.Fatalf("after a panic the profiler is still held: %v", err)
		}
		pprof.StopCPUProfile()
		if _, err := perfassert.CaptureProfile(func() { spin(1000) }, perfassert.MaxDuration(50*time.Millisecond)); err != nil {
			t.Fatalf("after a panic: %v", err)
		}
	})
	t.Run("t.FailNow in the function leaves the profiler free", func(t *testing.T) {
		done := make(chan struct{})
		go func() { // as a test goroutine calling t.FailNow would
			defer close(done)
			_, _ = perfassert.CaptureProfile(func() { runtime.Goexit() })
		}()
		<-done
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			t.Fatalf("after runtime.Goexit the profiler is still held: %v", err)
		}
		pprof.StopCPUProfile()
	})
}
