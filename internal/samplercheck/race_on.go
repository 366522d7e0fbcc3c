//go:build race

package samplercheck

// raceEnabled: the race detector's instrumentation runs in functions of
// its own (racefuncenter, __tsan_read...), which the samples charge to
// them and the reference to the workload's functions: no check is made.
const raceEnabled = true
