//go:build unix

package perfassert

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used,
// and false when the system cannot say.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
