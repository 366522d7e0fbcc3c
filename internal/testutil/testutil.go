// Package testutil holds what the module's tests and benchmarks share:
// measures of a benchmark's peak heap and of the CPU time a process used,
// the invariants every profile keeps, and the reading, round trips and
// benchmarks of the internal formats. Only test files import it, and it
// imports no public package of the module.
package testutil

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// PeakHeap samples the heap in use (objects and the free space of their
// spans) every 5 ms until stop is called, which returns the peak above the
// heap at the start, in MB. runtime/metrics is read, not
// runtime.ReadMemStats, which would stop the world at every sample.
func PeakHeap() (stop func() float64) {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	inuse := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64()
	}
	base := inuse()
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		top := uint64(0)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				peak <- top
				return
			case <-tick.C:
				top = max(top, inuse())
			}
		}
	}()
	return func() float64 {
		close(done)
		top := <-peak
		return float64(top-min(top, base)) / 1e6
	}
}
