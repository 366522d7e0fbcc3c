package perfassert_test

import (
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	if elapsed > 5*time.Second {
		t.Errorf("capture took %v, bound 3s", elapsed)
	}

	// The busy function dominates its own capture.
	r, err := perfassert.Check(p, spinName, perfassert.Limit{Quantity: perfassert.SelfShare, Share: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Missing || r.Share < 0.5 {
		t.Fatalf("spin has %.0f%% of the capture, want most of it:\n%s", r.Share*100, r)
	}
	perfassert.MaxSelfShare(t, p, spinName, 1)

	// Per run: the capture's spin time divided by the runs, which is what a
	// budget on a captured function should bound.
	perRun, err := perfassert.Check(p, spinName, perfassert.Limit{Quantity: perfassert.SelfTime, Time: time.Second}, perfassert.PerIteration())
	if err != nil {
		t.Fatal(err)
	}
	if perRun.Iterations != n || perRun.Time != r.Time/time.Duration(n) || !perRun.Passed {
		t.Errorf("per run %v over %d runs, want %v / %d", perRun.Time, perRun.Iterations, r.Time, n)
	}
	perfassert.MaxSelfTime(t, p, spinName, 100*time.Millisecond, perfassert.PerIteration()) // spin(100_000) takes well under 1ms

	// A tight bound fails and the text names the capture and the function.
	ft := &fakeT{}
	if perfassert.MaxSelfShare(ft, p, spinName, 0.01) {
		t.Fatal("1% bound passed")
	}
	for _, want := range []string{
		"perfassert.MaxSelfShare: capture of TestCaptureBusyFunction: " + spinName + " self time ",
		"want at most 1.0%",
		"top functions by self time:",
		"heaviest stacks (leaf first):\n",
		spinName + " <- ",
	} {
		if !strings.Contains(ft.text(), want) {
			t.Errorf("failure text lacks %q:\n%s", want, ft.text())
		}
	}
}

func TestCaptureParallelTestsTakeTurns(t *testing.T) {
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			p := perfassert.Capture(t, func() { spin(50_000) }, perfassert.MinSamples(20), perfassert.MaxDuration(2*time.Second))
			if p == nil {
				t.Fatal("no profile")
			}
			perfassert.MaxSelfShare(t, p, spinName, 1) // present: fails if missing
		})
	}
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
		for _, o := range []perfassert.CaptureOption{perfassert.MinSamples(0), perfassert.MaxDuration(-1), perfassert.Rate(0), perfassert.Rate(20000)} {
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
		p, err := perfassert.CaptureProfile(func() { time.Sleep(10 * time.Millisecond) }, perfassert.MaxDuration(150*time.Millisecond))
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
	t.Run("Rate sets the sampling period", func(t *testing.T) {
		p, err := perfassert.CaptureProfile(func() { spin(50_000) }, perfassert.Rate(500), perfassert.MinSamples(50), perfassert.MaxDuration(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if p.Period != 2_000_000 {
			t.Errorf("Period = %d ns, want 2ms (500 Hz)", p.Period)
		}
	})
	t.Run("a panicking function leaves the profiler free", func(t *testing.T) {
		func() {
			defer func() { _ = recover() }()
			_, _ = perfassert.CaptureProfile(func() { panic("boom") })
		}()
		if _, err := perfassert.CaptureProfile(func() { spin(1000) }, perfassert.MaxDuration(50*time.Millisecond)); err != nil {
			t.Fatalf("after a panic: %v", err)
		}
	})
}
