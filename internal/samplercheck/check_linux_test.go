package samplercheck

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkAgain is the capture's own check: one probe of the size
// perfassert makes after each capture (200 samples at 500µs) and record
// after each run (300 at 100µs), pooled with the newest, and the probe
// Recent makes when the window holds none (2,000 samples, at each period).
// It reports the process's CPU time per check (both of the probe's
// threads and the kernel's sampling) beside the wall time; the machine may
// be shared, so compare CPU time.
func BenchmarkAgain(b *testing.B) {
	for _, c := range []struct {
		name    string
		period  time.Duration
		samples int
	}{{"capture", 500 * time.Microsecond, 200}, {"record", 100 * time.Microsecond, 300}, {"recent", 500 * time.Microsecond, CheckSamples}, {"recent-record", 100 * time.Microsecond, CheckSamples}} {
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

// TestBiasedSimulates: with Env=biased the probes of Recent count as on a
// machine whose perf sampler is wrong, and Recent says so.
func TestBiasedSimulates(t *testing.T) {
	if raceEnabled {
		t.Skip("no check under the race detector (TestNoCheckUnderRace)")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(Env, Biased)
	mu.Lock()
	memo = map[time.Duration][]*Tally{}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		memo = map[time.Duration][]*Tally{}
		mu.Unlock()
	})
	r, err := Recent(100 * time.Microsecond)
	if err != nil {
		t.Skipf("no check here: %v", err)
	}
	if !r.Misattributes() {
		t.Errorf("a biased probe agrees: %s", r)
	}
	if !strings.HasSuffix(cachePath(bootID(), 100*time.Microsecond), "-biased.json") {
		t.Errorf("biased probes kept with the others: %s", cachePath(bootID(), 100*time.Microsecond))
	}
}
