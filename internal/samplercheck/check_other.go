//go:build !linux

package samplercheck

import "time"

// Probe measures the cpu-clock perf event's attribution; perf events
// exist only on Linux, so elsewhere it returns ErrNotChecked.
func Probe(period time.Duration, samples int) (*Tally, error) { return nil, ErrNotChecked }
