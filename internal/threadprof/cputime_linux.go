package threadprof

import (
	"syscall"
	"time"
)

// threadCPU is the calling thread's user and system CPU time
// (getrusage RUSAGE_THREAD).
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
