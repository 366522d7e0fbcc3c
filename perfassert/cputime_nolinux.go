//go:build !linux

package perfassert

import "time"

// threadCPU is not available here: a capture times its first run by the
// process's CPU clock, which also counts other goroutines.
func threadCPU() (time.Duration, bool) { return processCPU() }
