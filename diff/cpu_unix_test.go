//go:build unix

package diff_test

import (
	"syscall"
	"testing"
	"time"
)

// cpuTimer starts measuring the process's CPU time (user and system, every
// thread, the garbage collector's included); the function it returns
// reports it per iteration as cpu-ns/op. On a machine shared with other
// work the wall time a benchmark reports measures the others as much as
// the code; the CPU time it used much less so.
func cpuTimer(b *testing.B) func() {
	start := cpuNow()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
