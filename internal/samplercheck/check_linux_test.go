package samplercheck

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkAgain is the capture's own check: one probe of the size
// perfassert makes after each capture (200 samples at 500µs) and record
// after each run (300 at 100µs), pooled with the newest. It reports the
// probe's CPU time (the thread's) and wall time per check; the machine may
// be shared, so compare CPU time.
func BenchmarkAgain(b *testing.B) {
	for _, c := range []struct {
		name    string
		period  time.Duration
		samples int
	}{{"capture", 500 * time.Microsecond, 200}, {"record", 100 * time.Microsecond, 300}, {"recent", 500 * time.Microsecond, CheckSamples}} {
		b.Run(c.name, func(b *testing.B) {
			b.Setenv("XDG_CACHE_HOME", b.TempDir())
			var cpu time.Duration
			for b.Loop() {
				t0 := processCPU()
				if _, _, err := Again(c.period, c.samples); err != nil {
					b.Skip(err)
				}
				cpu += processCPU() - t0
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}

// processCPU is the process's user and system CPU time.
func processCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
