//go:build !linux

package samplercheck

import "time"

// Check measures the cpu-clock perf event's attribution; perf events
// exist only on Linux, so elsewhere it returns ErrNotChecked.
func Check(period time.Duration) (*Result, error) { return nil, ErrNotChecked }
