package perfassert

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"slices"
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

// BenchmarkSamplerOverhead measures how much slower the captured function
// runs under the perf sampler as Capture runs it: the perf event on the
// locked thread, runtime/pprof on at 100 Hz for other goroutines, the ring
// buffer drained and its stacks symbolised whenever it is half full (and the
// samples' frames dropped, not being under a capture loop: the
// symbolisation is paid all the same).
//
// Blocks of 20ms of the thread's CPU time alternate, the event disabled
// then enabled, and each pair gives the ratio of CPU time per call on to
// off: a machine that speeds up or slows down as a whole (a virtual
// machine's neighbours, the clock) moves both blocks of a pair alike, where
// timing the sampled and unsampled function one after the other measured
// the drift (1ms's sampler came out slower than 500µs's in 4 of 5 runs).
// overhead-% is the median pair's (ratio-1)*100; cpu-ns/op the sampled
// calls' CPU time. Compare with benchstat:
//
//	go test ./perfassert -run '^$' -bench SamplerOverhead -count 6 > overhead.txt
//	benchstat -col /period overhead.txt
func BenchmarkSamplerOverhead(b *testing.B) {
	for _, period := range []time.Duration{perfPeriod / 2, perfPeriod, 2 * perfPeriod} {
		b.Run(fmt.Sprintf("period=%v", period), func(b *testing.B) { benchPerf(b, period) })
	}
}

func benchPerf(b *testing.B, period time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, ok := threadCPU(); !ok {
		b.Skip("no per-thread CPU clock here")
	}
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
	// block runs calls until they used blockCPU of the thread's CPU time
	// (or the benchmark's b.N ran out) and returns the calls and the time.
	const blockCPU = 20 * time.Millisecond
	left := b.N
	block := func(on bool) (calls int, cpu time.Duration) {
		if on {
			if err := pc.ev.Enable(); err != nil {
				b.Fatal(err)
			}
		}
		c0, _ := threadCPU()
		for left > 0 {
			overheadWork()
			calls++
			left--
			if pc.full() {
				if err := s.drain("1"); err != nil {
					b.Fatal(err)
				}
			}
			if calls%32 == 0 {
				if c, _ := threadCPU(); c-c0 >= blockCPU {
					break
				}
			}
		}
		if on {
			if err := s.drain("1"); err != nil {
				b.Fatal(err)
			}
			if err := pc.ev.Disable(); err != nil {
				b.Fatal(err)
			}
		}
		c, _ := threadCPU()
		return calls, c - c0
	}
	var ratios []float64
	var onCalls int
	var onCPU time.Duration
	b.ResetTimer()
	for left > 0 {
		n0, c0 := block(false)
		n1, c1 := block(true)
		onCalls, onCPU = onCalls+n1, onCPU+c1
		if n0 > 0 && n1 > 0 && c0 > 0 {
			ratios = append(ratios, (float64(c1)/float64(n1))/(float64(c0)/float64(n0)))
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.ReportMetric(100*(ratios[len(ratios)/2]-1), "overhead-%")
	}
	if onCalls > 0 {
		b.ReportMetric(float64(onCPU)/float64(onCalls), "cpu-ns/op")
	}
	if onCPU > 0 {
		b.ReportMetric(float64(pc.n)/onCPU.Seconds(), "samples/cpu-s")
	}
}
