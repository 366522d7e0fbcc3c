//go:build linux

package samplercheck

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/hotbudget/hotbudget/internal/perfevent"
	"golang.org/x/sys/unix"
)

// Probe runs the workload now for samples periods of CPU time (1s for
// 2,000 samples at 500µs) on a thread of its own, timing every call with
// the thread's CPU clock while a cpu-clock event samples the thread at
// period, and returns what it counted. The error matches ErrNotChecked
// where perf events are refused or the program runs under the race
// detector (ErrRace).
func Probe(period time.Duration, samples int) (*Tally, error) {
	if raceEnabled {
		return nil, ErrRace
	}
	type out struct {
		t   *Tally
		err error
	}
	done := make(chan out)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t, err := probe(period, samples)
		done <- out{t, err}
	}()
	o := <-done
	return o.t, o.err
}

func probe(period time.Duration, n int) (*Tally, error) {
	ev, err := perfevent.Open(perfevent.Config{CPU: -1, Period: period, Disabled: true, Pages: 256})
	if errors.Is(err, perfevent.ErrUnavailable) {
		return nil, errors.Join(ErrNotChecked, err)
	}
	if err != nil {
		return nil, err
	}
	defer ev.Close()

	// The handoff's goroutine runs on a thread of its own: the checked
	// thread sleeps while it works and wakes when it is done, as a
	// benchmark that waits for the goroutines it starts does.
	work := make(chan int)
	back := make(chan uint64)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for n := range work {
			var a Acc
			a.Add(n)
			back <- a.V
		}
	}()
	defer close(work)

	ref := map[string]time.Duration{}
	samples := map[string]int64{}
	drain := func() {
		ev.Read(func(s *perfevent.Sample) {
			if len(s.Callchain) > 0 {
				samples[groupOf(s.Callchain[0])]++
			}
		})
	}
	timed := func(group string, f func()) {
		t0 := threadCPU()
		f()
		ref[group] += threadCPU() - t0
	}
	budget := time.Duration(max(n, 1)) * period
	if err := ev.Enable(); err != nil {
		return nil, err
	}
	start := threadCPU()
	var sum uint64
	for threadCPU()-start < budget {
		work <- 10000
		sum += <-back
		timed("alu", func() { sum += ALU(20000) })
		timed("callsleaf", func() { sum += CallsLeaf(15000) })
		timed("divide", func() { sum += Divide(3000) })
		if n, size := ev.Buffered(); n > size/2 {
			drain()
		}
	}
	ev.Disable()
	drain()
	sink.Store(sum)
	return &Tally{Period: period, Ref: ref, Samples: samples, When: time.Now()}, nil
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// groupPC caches the group of each program counter seen.
var (
	groupsMu sync.Mutex
	groupPC  = map[uint64]string{}
)

func groupOf(pc uint64) string {
	groupsMu.Lock()
	defer groupsMu.Unlock()
	if g, ok := groupPC[pc]; ok {
		return g
	}
	g := ""
	if f := runtime.FuncForPC(uintptr(pc)); f != nil {
		g = GroupOf(f.Name()) // FuncForPC names the innermost inlined function
	}
	groupPC[pc] = g
	return g
}
