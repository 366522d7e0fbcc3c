package gate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestExactPlan: N scales a benchmark's calibrated op time into the
// counted time, at least 2; each process runs the benchmark once;
// benchmarks that would not fit --budget are left out, the longest first,
// and named with how to count them.
func TestExactPlan(t *testing.T) {
	ms := float64(time.Millisecond)
	fast := leaf{pkg: "m", name: "BenchmarkFast", nsOp: 100}        // 100ns
	mid := leaf{pkg: "m", name: "BenchmarkMid", nsOp: 0.6 * ms}     // 0.6ms
	slow := leaf{pkg: "m", name: "BenchmarkSlow", nsOp: 44 * ms}    // 44ms
	huge := leaf{pkg: "m", name: "BenchmarkHuge", nsOp: 9_000 * ms} // 9s
	for _, c := range []struct {
		l     leaf
		iters int64
	}{{fast, 10_000}, {mid, 2}, {slow, 2}, {huge, 2}} {
		c.l.iters = exactIters(c.l, time.Millisecond)
		if c.l.iters != c.iters {
			t.Errorf("%s: N %d; want %d", c.l.name, c.l.iters, c.iters)
		}
	}
	if n := exactIters(mid, ExactBenchtime); n != 6 {
		t.Errorf("%s at the default --benchtime %s: N %d, want 6", mid.name, ExactBenchtime, n)
	}
	if n := exactIters(leaf{iters: 1}, time.Millisecond); n != 2 {
		t.Errorf("no calibrated time, 1 iteration: N %d, want 2", n)
	}

	var leaves []leaf
	for _, l := range []leaf{fast, huge, mid, slow} {
		l.iters = exactIters(l, time.Millisecond)
		leaves = append(leaves, l)
	}
	keep, out, est := exactPlan(slices.Clone(leaves), time.Millisecond, 15*time.Minute, 2, 2)
	if len(keep) != 3 || len(out) != 1 || out[0].name != "m BenchmarkHuge" || est > 15*time.Minute || est <= 0 {
		t.Fatalf("budget 15m: kept %d, left out %+v, estimate %v; want the 9s benchmark alone left out", len(keep), out, est)
	}
	line := notCountedLine(out, 15*time.Minute)
	if !strings.HasPrefix(line, "1 benchmark not counted, to fit --budget 15m0s: BenchmarkHuge (an op takes 9s natively; counting it, about ") ||
		!strings.HasSuffix(line, "count them alone (--bench, --budget 0) or time them (--instrument time)") {
		t.Errorf("not counted: %q", line)
	}
	if keep, out, _ := exactPlan(slices.Clone(leaves), time.Millisecond, 0, 2, 2); len(keep) != 4 || out != nil {
		t.Errorf("no budget: kept %d, left out %v", len(keep), out)
	}
	if keep, _, _ := exactPlan(slices.Clone(leaves), time.Millisecond, time.Nanosecond, 2, 2); len(keep) != 0 {
		t.Errorf("a budget nothing fits: kept %d", len(keep))
	}
	if notCountedLine(nil, time.Minute) != "" {
		t.Error("nothing left out, yet a line")
	}
	// The longest is counted first.
	if o := longestFirst(keep); len(keep) > 0 && o[0] != 2 {
		t.Errorf("order %v, want the 44ms benchmark first", o)
	}
}

// TestParallel: every index is done once, on at most the workers given;
// the first error stops new calls and is returned.
func TestParallel(t *testing.T) {
	var running, most, calls atomic.Int64
	done := make([]atomic.Int64, 50)
	err := parallel(context.Background(), 3, len(done), func(i int) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond)
		done[i].Add(1)
		calls.Add(1)
		running.Add(-1)
		return nil
	})
	if err != nil || calls.Load() != 50 || most.Load() > 3 {
		t.Errorf("err %v, %d calls, %d at once; want nil, 50, at most 3", err, calls.Load(), most.Load())
	}
	for i := range done {
		if done[i].Load() != 1 {
			t.Errorf("index %d done %d times", i, done[i].Load())
		}
	}
	boom := errors.New("boom")
	calls.Store(0)
	err = parallel(context.Background(), 2, 100, func(i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls.Load() > 10 {
		t.Errorf("err %v after %d calls; want boom, soon", err, calls.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := parallel(ctx, 2, 10, func(int) error { t.Error("called after the context ended"); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: %v", err)
	}
}
