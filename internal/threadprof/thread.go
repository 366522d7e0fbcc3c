package threadprof

import (
	"runtime"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/perfevent"
)

// Pages is the ring buffer size Open asks for: 128 pages (512 KiB), what
// kernel.perf_event_mlock_kb allows an unprivileged user by default.
const Pages = 128

// Thread is a cpu-clock perf event on one OS thread and the symboliser of
// its samples.
type Thread struct {
	Event *perfevent.Event
	Sym   *Symbolizer
}

// Open opens a disabled cpu-clock event sampling the calling thread every
// period of its CPU time (perfevent.DefaultPeriod when 0), with the
// frameless leaf's return address asked for. The calling goroutine must be
// locked to its thread (runtime.LockOSThread) for as long as the event is
// on. The error matches perfevent.ErrUnavailable where perf events are
// refused.
func Open(period time.Duration) (*Thread, error) {
	ev, err := perfevent.Open(perfevent.Config{CPU: -1, Period: period, Disabled: true, LeafRet: true, Pages: Pages})
	if err != nil {
		return nil, err
	}
	return &Thread{Event: ev, Sym: NewSymbolizer()}, nil
}

// Full reports whether the ring buffer is half full.
func (t *Thread) Full() bool {
	n, size := t.Event.Buffered()
	return n > size/2
}

// Result is a profile of one thread's work taken by Record.
type Result struct {
	// Profile holds the samples in runtime/pprof's sample types
	// (samples/count, cpu/nanoseconds), period the event's.
	Profile *profile.Profile
	// ThreadCPU is the CPU time the thread used while the event was on.
	ThreadCPU time.Duration
	// Lost counts samples the kernel dropped because the ring was full.
	Lost uint64
}

// Record runs work on the calling goroutine, locked to its thread, with a
// cpu-clock event sampling that thread every period (perfevent.DefaultPeriod
// when 0), and returns the thread's profile. Goroutines work starts, and the
// runtime's own threads (garbage collection workers), run elsewhere and are
// not in it. Another goroutine empties the ring buffer while work runs, so
// that a long run loses no samples. The error matches
// perfevent.ErrUnavailable where perf events are refused; work has not run
// then.
func Record(period time.Duration, work func()) (*Result, error) {
	if period == 0 {
		period = perfevent.DefaultPeriod
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t, err := Open(period)
	if err != nil {
		return nil, err
	}
	defer t.Event.Close()

	var (
		mu      sync.Mutex
		samples []*profile.Sample
		scratch []*profile.Location
		readErr error
	)
	drain := func() {
		mu.Lock()
		defer mu.Unlock()
		if readErr != nil {
			return
		}
		readErr = t.Event.Read(func(s *perfevent.Sample) {
			scratch = t.Sym.Stack(s, scratch)
			samples = append(samples, &profile.Sample{
				Location: append([]*profile.Location(nil), scratch...),
				Value:    []int64{1, int64(s.Period)},
			})
		})
	}
	stop := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if n, size := t.Event.Buffered(); n > size/4 {
					drain()
				}
			}
		}
	}()

	c0, _ := threadCPU()
	wall := time.Now()
	if err := t.Event.Enable(); err != nil {
		close(stop)
		<-drained
		return nil, err
	}
	work()
	t.Event.Disable()
	c1, _ := threadCPU()
	elapsed := time.Since(wall)
	close(stop)
	<-drained
	drain()
	if readErr != nil {
		return nil, readErr
	}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        period.Nanoseconds(),
		DurationNanos: elapsed.Nanoseconds(),
		Sample:        samples,
		Location:      t.Sym.Locations(),
		Function:      t.Sym.Functions(),
	}
	return &Result{Profile: p, ThreadCPU: c1 - c0, Lost: t.Event.Lost()}, nil
}
