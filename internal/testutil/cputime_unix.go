//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// CPUTime returns the user plus system time this process has used: a
// measure of work that a busy machine inflates less than wall time. It is
// 0 where the system does not say.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ChildrenCPUTime returns the user plus system time this process's
// children that have ended and been waited for have used: the cost of
// work done in child processes (a capture under callgrind), which a busy
// machine inflates less than wall time. It is 0 where the system does not
// say.
func ChildrenCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
