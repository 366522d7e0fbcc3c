//go:build unix

package index

import (
	"syscall"
	"time"
)

// cpuTime is testutil.CPUTime, which this package's tests cannot import
// (testutil imports index): the user plus system time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
