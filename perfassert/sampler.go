package perfassert

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/threadprof"
)

// Samplers. Capture samples the capturing goroutine with the Linux
// cpu-clock perf event on its (locked) thread where the system allows it,
// thousands of times a second; goroutines the captured function starts run
// on other threads and are sampled by runtime/pprof, as all of the capture
// is where perf events are refused.
const (
	samplerAuto  = ""
	samplerPerf  = "perf"
	samplerPprof = "pprof"
)

// SamplerEnv names the environment variable that picks Capture's sampler
// for the whole test binary: "pprof" forces runtime/pprof, "perf" the perf
// event (a capture then fails where perf events are refused), "auto" or
// unset the perf event where allowed. The Sampler option wins over it.
const SamplerEnv = "HOTBUDGET_SAMPLER"

// PerfPeriod is the perf event's sample period: 2,000 samples a second of
// the capturing thread's CPU time, eight times what runtime/pprof delivers
// on a 250 Hz kernel (perfevent.DefaultPeriod says why not more: on the
// virtual machine it was measured on, the sampled code used 15% more CPU
// time at this period and 36% more at half of it).
const PerfPeriod = perfevent.DefaultPeriod

// Sampler picks the capture's sampler: "perf" (the Linux cpu-clock perf
// event; the capture fails where perf events are refused), "pprof"
// (runtime/pprof alone, at the highest rate the kernel was measured to
// deliver, unless Rate says otherwise) or "auto" (the default: perf where
// allowed, else pprof). It overrides HOTBUDGET_SAMPLER.
func Sampler(name string) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		switch name {
		case "auto":
			c.sampler, c.samplerSet = samplerAuto, true
		case samplerPerf, samplerPprof:
			c.sampler, c.samplerSet = name, true
		default:
			c.err = fmt.Errorf("perfassert: Sampler(%q): want \"perf\", \"pprof\" or \"auto\"", name)
		}
	})
}

// perfState is what the process knows of perf events: whether they open,
// and why not.
var perfState = sync.OnceValue(func() error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		e, err := perfevent.Open(perfevent.Config{CPU: -1, Disabled: true, Pages: 1})
		if err == nil {
			err = e.Close()
		}
		done <- err
	}()
	return <-done
})

// pprofRate is the rate runtime/pprof is asked for when it samples alone:
// the highest the kernel was measured to deliver (asking for more than it
// delivers makes every sample claim less time than it stands for).
var pprofRate = sync.OnceValues(measurePprofRate)

// measurePprofRate asks runtime/pprof for 1000 Hz while one goroutine spins
// for 100ms of its thread's CPU time, and counts the samples: the kernel's
// timer frequency caps them (250 Hz on many kernels). It returns 80% of the
// delivered rate, rounded down to 10 Hz (so that the asked rate is met on
// a busy machine, where fewer signals arrive), at least DefaultRate.
func measurePprofRate() (hz int, measured float64) {
	var buf bytes.Buffer
	runtime.SetCPUProfileRate(1000)
	if err := pprof.StartCPUProfile(&buf); err != nil {
		runtime.SetCPUProfileRate(0)
		return DefaultRate, 0
	}
	done := make(chan time.Duration)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, ok := threadCPU()
		var x uint64
		for c, _ := threadCPU(); ok && c-c0 < 100*time.Millisecond; c, _ = threadCPU() {
			for range 10000 {
				x = x*6364136223846793005 + 1
			}
		}
		calibrationSink.Add(x)
		c1, _ := threadCPU()
		done <- c1 - c0
	}()
	cpu := <-done
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil || cpu <= 0 {
		return DefaultRate, 0
	}
	var n int64
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if len(l.Line) > 0 && l.Line[0].Function != nil && strings.HasSuffix(l.Line[0].Function.Name, "measurePprofRate.func1") {
				n += s.Value[0]
				break
			}
		}
	}
	measured = float64(n) / cpu.Seconds()
	hz = int(measured*0.8) / 10 * 10
	return min(max(hz, DefaultRate), 1000), measured
}

var calibrationSink atomic.Uint64

// samplerNote is said once per test binary: which sampler ran, at what
// rate, and how to get the fast one.
var samplerNote sync.Once

// resolveSampler decides c's sampler and, for runtime/pprof alone, its rate.
func resolveSampler(c *captureConfig) error {
	want := c.sampler
	if !c.samplerSet {
		switch v := os.Getenv(SamplerEnv); v {
		case "", "auto":
			want = samplerAuto
		case samplerPerf, samplerPprof:
			want = v
		default:
			return fmt.Errorf("perfassert: %s=%q: want \"perf\", \"pprof\" or \"auto\"", SamplerEnv, v)
		}
	}
	c.refused = nil
	if c.hzSet && !c.samplerSet {
		want = samplerPprof // Rate is runtime/pprof's
	}
	if want != samplerPprof {
		if err := perfState(); err != nil {
			if want == samplerPerf {
				return fmt.Errorf("perfassert: the perf sampler was asked for: %w", err)
			}
			c.refused = err
			want = samplerPprof
		} else {
			want = samplerPerf
		}
	}
	c.sampler = want
	if want == samplerPprof && !c.hzSet {
		c.hz, _ = pprofRate()
	}
	if want == samplerPerf && !c.hzSet {
		c.hz = DefaultRate // goroutines the function starts: no runtime warning at 100 Hz
	}
	return nil
}

// samplerText says which sampler took a capture's samples, at what rate.
func samplerText(c captureConfig, delivered float64) string {
	if c.sampler == samplerPerf {
		s := fmt.Sprintf("sampler: Linux perf cpu-clock event on the capturing thread, every %s of its CPU time (%.0f Hz asked", PerfPeriod, 1/PerfPeriod.Seconds())
		if delivered > 0 {
			s += fmt.Sprintf(", %.0f Hz delivered", delivered)
		}
		return s + fmt.Sprintf("), runtime/pprof at %d Hz for goroutines it starts", c.hz)
	}
	s := fmt.Sprintf("sampler: runtime/pprof at %d Hz", c.hz)
	if !c.hzSet {
		if _, m := pprofRate(); m > 0 {
			s += fmt.Sprintf(" (the kernel delivered %.0f Hz when asked for 1000)", m)
		}
	}
	switch {
	case c.refused != nil:
		s += "; the perf sampler (2,000 Hz) is unavailable: " + strings.TrimPrefix(c.refused.Error(), "perfevent: ")
		if !strings.Contains(c.refused.Error(), "sysctl") {
			s += "; on Linux, `sysctl kernel.perf_event_paranoid=2` allows it"
		}
	case c.samplerSet:
		s += " (asked for with Sampler)"
	default:
		s += " (" + SamplerEnv + "=pprof)"
	}
	return s
}

// perfCapture is the perf side of a capture: the event on the capturing
// thread and the samples read from it, by run. The capturing goroutine
// fills it; the coordinator reads it under session.mu once the runs it
// judges are finished.
type perfCapture struct {
	ev      *perfevent.Event
	sym     *threadprof.Symbolizer
	scratch []*profile.Location
	samples []*profile.Sample
	byRun   map[string]*runSamples
	dropped int64 // samples not under the captured function (the capture loop's own work)
	lost    uint64
	cpu     time.Duration // the thread's CPU time while the event was on
	n       int64         // samples read
}

// openPerf opens the perf event on the calling thread, which must be
// locked to its goroutine.
func openPerf(period time.Duration) (*perfCapture, error) {
	t, err := threadprof.Open(period)
	if err != nil {
		return nil, err
	}
	return &perfCapture{ev: t.Event, sym: t.Sym, byRun: map[string]*runSamples{}}, nil
}

// full reports whether the ring buffer is half full.
func (pc *perfCapture) full() bool {
	n, size := pc.ev.Buffered()
	return n > size/2
}

// drain reads the ring buffer into run label's samples, keeping the frames
// of the captured function (fnName) as splitRound does for runtime/pprof.
func (s *session) drain(label string) error {
	pc := s.perf
	return pc.ev.Read(func(smp *perfevent.Sample) {
		pc.n++
		locs := pc.sym.Stack(smp, pc.scratch)
		pc.scratch = locs
		mine, underRun, ok := trimRun(locs, s.fnName)
		if !underRun || !ok || len(mine) == 0 {
			pc.dropped++
			return
		}
		if len(mine) > 1 && leafName(mine) == asyncPreempt {
			mine = mine[1:]
		}
		v := int64(smp.Period)
		sample := &profile.Sample{Location: append([]*profile.Location(nil), mine...),
			Value: []int64{1, v}, Label: map[string][]string{meta.LabelRun: {label}}}
		s.mu.Lock()
		pc.samples = append(pc.samples, sample)
		r := pc.byRun[label]
		if r == nil {
			r = &runSamples{leaves: map[string]int64{}}
			pc.byRun[label] = r
		}
		r.samples++
		r.leaves[ownLeaf(mine)]++
		s.mu.Unlock()
	})
}
