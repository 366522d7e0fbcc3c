//go:build linux

package perfassert

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time (user and system) the calling thread has
// used, and false when the system cannot say. It reads the thread's CPU
// clock (CLOCK_THREAD_CPUTIME_ID), exact to the nanosecond: getrusage's
// RUSAGE_THREAD splits that time by the tick's user and system counts and
// holds it back to keep both monotonic, so it stood still over the 1µs
// that draining a perf ring buffer takes.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
