//go:build linux

package perfassert

import (
	"syscall"
	"time"
)

// rusageThread is RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPU returns the CPU time (user and system) the calling thread has
// used, and false when the system cannot say.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
