//go:build !linux

package perfevent

import (
	"fmt"
	"runtime"
)

// Event is an open cpu-clock event; perf events exist only on Linux.
type Event struct{}

// Open returns an error matching ErrUnavailable: perf events exist only on
// Linux.
func Open(c Config) (*Event, error) {
	return nil, fmt.Errorf("perfevent: %w: perf events exist only on Linux, not %s", ErrUnavailable, runtime.GOOS)
}

// Paranoid reports that there is no kernel.perf_event_paranoid here.
func Paranoid() (int, error) {
	return 0, fmt.Errorf("perfevent: no kernel.perf_event_paranoid on %s", runtime.GOOS)
}

// FD returns -1.
func (e *Event) FD() int { return -1 }

// Enable fails: there is no event.
func (e *Event) Enable() error { return ErrUnavailable }

// Disable fails: there is no event.
func (e *Event) Disable() error { return ErrUnavailable }

// SetOutput fails: there is no event.
func (e *Event) SetOutput(*Event) error { return ErrUnavailable }

// Close does nothing.
func (e *Event) Close() error { return nil }

// Lost returns 0.
func (e *Event) Lost() uint64 { return 0 }

// Read fails: there is no event.
func (e *Event) Read(func(*Sample)) error { return ErrUnavailable }

// Samples fails: there is no event.
func (e *Event) Samples() ([]Sample, error) { return nil, ErrUnavailable }
