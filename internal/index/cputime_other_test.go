//go:build !unix

package index

import "time"

// cpuTime returns 0: this system's process CPU time is not read.
func cpuTime() time.Duration { return 0 }
