package perfassert

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/perfevent"
)

var overheadSink uint64

// overheadWork is a captured function of about 100µs: a little arithmetic
// over a slice and some calls, so that stacks have a few frames.
//
//go:noinline
func overheadWork() {
	var x uint64
	buf := make([]uint64, 256)
	for r := range 40 {
		for i := range buf {
			buf[i] = overheadStep(buf[i], uint64(r+i))
			x += buf[i]
		}
	}
	overheadSink += x
}

//go:noinline
func overheadStep(a, b uint64) uint64 { return a*6364136223846793005 + b ^ a>>7 }

// BenchmarkSamplerOverhead times the captured function unprofiled and under
// the perf sampler as Capture runs it: the perf event on the locked thread
// at PerfPeriod, runtime/pprof on at 100 Hz for other goroutines, the ring
// buffer drained and its stacks symbolised whenever it is half full (and
// the samples' frames dropped, not being under a capture loop: the
// symbolisation is paid all the same). Compare with benchstat:
//
//	go test ./perfassert -run '^$' -bench SamplerOverhead -count 10 > overhead.txt
//	benchstat -col /sampler overhead.txt
//
// cpu-ns/op, the capturing thread's CPU time per call, is the figure to
// compare on a shared machine.
func BenchmarkSamplerOverhead(b *testing.B) {
	b.Run("sampler=none", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, _ := threadCPU()
		for b.Loop() {
			overheadWork()
		}
		reportCPU(b, c0)
	})
	for _, period := range []time.Duration{PerfPeriod / 2, PerfPeriod, 2 * PerfPeriod} {
		b.Run(fmt.Sprintf("sampler=perf-%v", period), func(b *testing.B) { benchPerf(b, period) })
	}
}

func benchPerf(b *testing.B, period time.Duration) {
	{
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		pc, err := openPerf(period)
		if errors.Is(err, perfevent.ErrUnavailable) {
			b.Skip(err)
		}
		if err != nil {
			b.Fatal(err)
		}
		defer pc.ev.Close()
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
		s := &session{fnName: "overheadWork", perf: pc}
		if err := pc.ev.Enable(); err != nil {
			b.Fatal(err)
		}
		c0, _ := threadCPU()
		for b.Loop() {
			overheadWork()
			if pc.full() {
				if err := s.drain("1"); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := s.drain("1"); err != nil {
			b.Fatal(err)
		}
		reportCPU(b, c0)
		if c, _ := threadCPU(); c > c0 {
			b.ReportMetric(float64(pc.n)/(c-c0).Seconds(), "samples/cpu-s")
		}
	}
}

// reportCPU reports the thread's CPU time per iteration since c0: on a
// machine shared with other work, wall time per iteration measures the
// machine's load more than the sampler.
func reportCPU(b *testing.B, c0 time.Duration) {
	if c, ok := threadCPU(); ok && b.N > 0 {
		b.ReportMetric(float64(c-c0)/float64(b.N), "cpu-ns/op")
	}
}
