//go:build !unix

package testutil

import "time"

// CPUTime returns 0: this system's process CPU time is not read.
func CPUTime() time.Duration { return 0 }
