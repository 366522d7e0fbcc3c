//go:build unix

package main

import "syscall"

// selfCPU returns the user plus system time this process has used, in
// nanoseconds: a measure of work that a busy machine inflates less than
// wall time.
func selfCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
