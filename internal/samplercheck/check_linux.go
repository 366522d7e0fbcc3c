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

// targetSamples is how many samples a check aims at: the standard error
// of a 35% share is then under a point.
const targetSamples = 3000

// Check measures now, at the given sampling period, whether cpu-clock
// samples attribute the workload's time as its thread's CPU clock does
// (see the package comment). It takes targetSamples periods of CPU time
// (1.5 s at 500µs) on a thread of its own. The error matches
// ErrNotChecked where perf events are refused or the program runs under
// the race detector (ErrRace).
func Check(period time.Duration) (*Result, error) {
	if raceEnabled {
		return nil, ErrRace
	}
	type out struct {
		r   *Result
		err error
	}
	done := make(chan out)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := check(period)
		done <- out{r, err}
	}()
	o := <-done
	return o.r, o.err
}

func check(period time.Duration) (*Result, error) {
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
	budget := time.Duration(targetSamples) * period
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
	r := Judge(ref, samples)
	r.Period = period
	r.When = time.Now()
	return r, nil
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
