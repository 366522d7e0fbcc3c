package gate

import (
	"testing"
	"time"
)

// TestRecordEstimate: the estimate counts every run of every benchmark a
// side has, its timed iterations slowed by the profiler, its overhead, and
// the building of its profile (dearer for a benchmark's first run), and
// the allocation runs; the figures are worked out by hand.
func TestRecordEstimate(t *testing.T) {
	r := &recorder{o: Config{Runs: 5, Count: 1}, cost: runCost{slow: 1.5, first: 400 * time.Millisecond, again: 100 * time.Millisecond}}
	a := leaf{pkg: "p", name: "BenchmarkA", iters: 1000, nsOp: 1e6, overhead: 50 * time.Millisecond}              // 1s a run
	b := leaf{pkg: "p", name: "BenchmarkB", iters: 10, nsOp: 2e7, allocsOp: 100, overhead: 50 * time.Millisecond} // 0.2s, base only
	base := &recSide{leaves: map[string]bool{a.key(): true, b.key(): true}}
	head := &recSide{leaves: map[string]bool{a.key(): true}}
	work, over := r.estimate([]leaf{a, b}, base, head)
	// A: 2 sides x 5 runs x 1s x 1.5; B: 1 side x 5 runs x 0.2s x 1.5.
	if want := 15*time.Second + 1500*time.Millisecond; work != want {
		t.Errorf("work = %s, want %s", work, want)
	}
	// Overheads: 15 runs x 50ms; profiles: 3 benchmark-sides x (400ms + 4 x 100ms).
	if want := 750*time.Millisecond + 2400*time.Millisecond; over != want {
		t.Errorf("over = %s, want %s", over, want)
	}
	// Allocation runs only for A (both sides): N = 200ms / 1ms = 200 ops;
	// 2 sides x (2 overheads + (3N+2) ops x 1ms).
	if got, want := r.allocEstimate([]leaf{a, b}, base, head), 2*(100*time.Millisecond+602*time.Millisecond); got != want {
		t.Errorf("allocEstimate = %s, want %s", got, want)
	}
	// An op's allocations are recorded one by one: 50 allocations an op
	// at allocRecordCost each.
	a.allocsOp = 50
	if got, want := r.allocEstimate([]leaf{a}, base, head), 2*(100*time.Millisecond+time.Duration(602*(1e6+50*float64(allocRecordCost)))); got != want {
		t.Errorf("allocEstimate with allocations = %s, want %s", got, want)
	}
	// Measured (allocCost): 3µs an allocation and 40ms a run beyond its
	// ops and overhead.
	r.cost.allocEach, r.cost.allocRun, r.cost.allocMeasured = 3*time.Microsecond, 40*time.Millisecond, true
	if got, want := r.allocEstimate([]leaf{a}, base, head), 2*(2*90*time.Millisecond+time.Duration(602*(1e6+50*3e3))); got != want {
		t.Errorf("allocEstimate with the measured cost = %s, want %s", got, want)
	}
	// Measured as nothing: no time an allocation, not the default.
	r.cost.allocEach = 0
	if got, want := r.allocEstimate([]leaf{a}, base, head), 2*(2*90*time.Millisecond+602*time.Millisecond); got != want {
		t.Errorf("allocEstimate with allocations measured free = %s, want %s", got, want)
	}
}
