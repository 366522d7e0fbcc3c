//go:build !unix

package testutil

import "time"

// CPUTime returns 0: this system's process CPU time is not read.
func CPUTime() time.Duration { return 0 }

// ChildrenCPUTime is 0 where the system does not say what child processes
// used.
func ChildrenCPUTime() time.Duration { return 0 }
