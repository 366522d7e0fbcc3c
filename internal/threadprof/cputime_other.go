//go:build !linux

package threadprof

import "time"

// threadCPU is unknown off Linux, where Record fails before it is asked.
func threadCPU() (time.Duration, bool) { return 0, false }
