//go:build !unix

package perfassert

import "time"

// processCPU is not available here: the lost-sample check is skipped.
func processCPU() (time.Duration, bool) { return 0, false }
