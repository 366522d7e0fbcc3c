package gate

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// How record counts its benchmarks within --budget: each one's repetitions
// and iterations chosen from its calibrated time, the longest left out when
// the whole would not fit, and the benchmarks counted a few at once.

// countPair counts benchmark l at both sides (the base's from the history
// when the record takes it from there), judges it, and confirms a failure
// (confirmExact).
func (r *recorder) countPair(ctx context.Context, vg string, sides []*recSide, l leaf, judge func(string) bool) (*exactResult, error) {
	ops := exactOps(l)
	reps := l.reps
	if reps < 1 {
		reps = exactReps
	}
	work := int64(reps) * ops // iterations a side
	var ps [2]*profile.Profile
	var negative []string
	var err error
	for j, s := range sides {
		if j == 0 && r.hist != nil {
			// The base's counts as its record stored them.
			if ps[j], err = historyProfile(r.hist, l.key()); err != nil {
				return nil, err
			}
			if err := writeProfile(countsProfile(s.out, l.pkg, l.name), ps[j]); err != nil {
				return nil, err
			}
			continue
		}
		c, err := r.countLeaf(ctx, vg, s, l, ops, reps)
		if err != nil {
			return nil, err
		}
		ps[j] = c.diffed
		work = c.work
		negative = append(negative, c.negative...)
		// The whole process of 2N ops as callgrind counted it, for
		// pprof.
		if err := writeProfile(filepath.Join(s.out, filepath.FromSlash(l.pkg), benchFile(l.name)+".instructions.pb.gz"), c.whole); err != nil {
			return nil, err
		}
		// The difference judged: what history append stores.
		if err := writeProfile(countsProfile(s.out, l.pkg, l.name), c.diffed); err != nil {
			return nil, err
		}
	}
	// The benchmark's own functions are shown, not judged (harness.go).
	judge = notHarness(judge, harnessFuncs(ps[0], ps[1]))
	rep, err := compareExact(ps[0], ps[1], judge, negative)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.name, err)
	}
	if rep.Failed() {
		// Confirmed before it fails: counted again, in fresh
		// processes, a function fails only when it fails both times.
		if rep, ps, err = r.confirmExact(ctx, vg, sides, l, ops, judge, negative, ps, rep); err != nil {
			return nil, err
		}
		// The counts written and judged are now the confirmation's,
		// of several processes: the ops the report and shard.json say
		// are all of theirs.
		if n := countedOps(ps[1]); n >= 1 {
			work = n
		}
	}
	return &exactResult{name: l.key(), ops: work, base: ps[0], head: ps[1], report: rep}, nil
}

// longestFirst is the order to count leaves in: the longest first (by
// exactCost), so that the last benchmark counted is a short one and the
// cores are busy to the end.
func longestFirst(leaves []leaf) []int {
	order := make([]int, len(leaves))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(exactCost(leaves[b], max(leaves[b].reps, 1), 1), exactCost(leaves[a], max(leaves[a].reps, 1), 1))
	})
	return order
}

// exactWorkers is how many benchmarks are counted at once: one a CPU
// this process may use (GOMAXPROCS), at most n.
func exactWorkers(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n))
}

// parallel calls do(i) for i in [0, n) on at most workers goroutines and
// returns the first error; after an error (or ctx's end) it starts no
// new call.
func parallel(ctx context.Context, workers, n int, do func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first == nil && ctx.Err() != nil {
					first = ctx.Err()
				}
				if first != nil || next == n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// planExact chooses how calibrated leaves are counted (exactPlan), says
// so, and keeps what it left out for the report.
func (r *recorder) planExact(leaves []leaf, t0 time.Time) ([]leaf, error) {
	n := len(leaves)
	workers := exactWorkers(n)
	if r.o.FixedIters == 0 {
		for i := range leaves {
			leaves[i].iters = exactIters(leaves[i], r.o.Target)
		}
	}
	leaves, out, est := exactPlan(leaves, r.o.Target, r.o.Budget, 2, workers)
	for _, l := range leaves {
		r.progress("%s %s: counted at %d and %d iterations a side", textfmt.Name(l.pkg), textfmt.Name(l.name), exactOps(l), 2*exactOps(l))
	}
	r.notCounted = notCountedLine(out, r.o.Budget)
	if r.notCounted != "" {
		r.progress("%s", r.notCounted)
	}
	if len(leaves) == 0 {
		return nil, fmt.Errorf("no benchmark can be counted within --budget %s: %s", r.o.Budget, r.notCounted)
	}
	r.progress("calibrated %s in %s; counting %s under callgrind (N and 2N iterations, in two processes a side, %d at once) takes about %s",
		plural(n, "benchmark", "benchmarks"), since(t0), plural(len(leaves), "benchmark", "benchmarks"), workers, est.Round(time.Second))
	return leaves, nil
}

// exactCalibrationMin is how long the benchmarks run natively, at least,
// to calibrate a counted record: go test's own calibration to 1ms stops at
// N = 1 when the first iteration (its warm-up, or a loaded machine) takes
// that long, and an N of a few ops counts the warm-up too.
const exactCalibrationMin = 20 * time.Millisecond

// calibrationBenchtime is the -test.benchtime record calibrates the
// benchmarks with: --benchtime, or when counting at least
// exactCalibrationMin (exactIters then scales N to --benchtime).
func (r *recorder) calibrationBenchtime() string {
	if !r.o.Instructions || r.o.FixedIters > 0 {
		return r.o.Benchtime
	}
	return max(r.o.Target, exactCalibrationMin).String()
}

// exactIters is N for benchmark l counted for target (--benchtime): its
// op's calibrated time into target, at least 2.
func exactIters(l leaf, target time.Duration) int64 {
	if l.nsOp <= 0 || target <= 0 {
		return max(l.iters, 2)
	}
	return max(int64(float64(target)/l.nsOp), 2)
}

// exactOps is N, the iterations of benchmark l's shorter counted process
// (the longer runs 2N): its calibrated count, at least 2. go test runs a
// b.N benchmark once before its N iterations unless N is 1, so that
// processes of 1 and 2 iterations run 1 and 3: their difference is 2
// ops, not 1; from 2 on it is N (a b.Loop benchmark runs exactly N).
func exactOps(l leaf) int64 { return max(l.iters, 2) }

const (
	// exactSlowdown is how many times longer a benchmark's iterations
	// take under callgrind (its CPU time) than natively: 130-140 on
	// shopspring/decimal's arithmetic (docs/gate.md).
	exactSlowdown = 150
	// exactProcess is what a counting process costs beyond its
	// iterations: valgrind's and the test binary's start, valgrind's
	// translation of the code the benchmark runs, the dump written, read
	// and symbolised: 0.9 s for a test binary that runs no benchmark,
	// 1.5-3 s for BurntSushi/toml's (whose record of 31 benchmarks took
	// 1.5 times what 1.5 s a process foresaw).
	exactProcess = 2500 * time.Millisecond
)

// exactCost is the CPU time counting benchmark l at reps repetitions of N
// and 2N ops takes on sides sides: two processes a side, of reps*(1+N) and
// reps*(1+2N) iterations.
func exactCost(l leaf, reps, sides int) time.Duration {
	ops := float64(reps) * float64(3*exactOps(l)+2)
	return time.Duration(sides) * (2*exactProcess + time.Duration(ops*l.nsOp*exactSlowdown))
}

// notCounted is a benchmark left out of a counted record to fit --budget.
type notCounted struct {
	name string        // package and benchmark
	nsOp float64       // an op's time, calibrated
	cost time.Duration // counting it, estimated
}

// exactPlan chooses each benchmark's repetitions and, when counting them
// all would take longer than budget (0: no limit) on workers at once,
// leaves out the longest until the rest fit: a benchmark whose op takes a
// second natively takes minutes under callgrind. It returns the leaves to
// count, those left out, and how long counting is estimated to take.
func exactPlan(leaves []leaf, target, budget time.Duration, sides, workers int) ([]leaf, []notCounted, time.Duration) {
	costs := make([]time.Duration, len(leaves))
	var total time.Duration
	for i := range leaves {
		leaves[i].reps = exactReps
		costs[i] = exactCost(leaves[i], leaves[i].reps, sides)
		total += costs[i]
	}
	wall := func(t time.Duration) time.Duration { return t / time.Duration(max(workers, 1)) }
	if budget <= 0 || wall(total) <= budget {
		return leaves, nil, wall(total)
	}
	order := make([]int, len(leaves))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	drop := map[int]bool{}
	for _, i := range order {
		if wall(total) <= budget {
			break
		}
		drop[i] = true
		total -= costs[i]
	}
	var keep []leaf
	var out []notCounted
	for i, l := range leaves {
		if drop[i] {
			out = append(out, notCounted{name: l.key(), nsOp: l.nsOp, cost: costs[i]})
			continue
		}
		keep = append(keep, l)
	}
	return keep, out, wall(total)
}

// notCountedLine says which benchmarks were left out of a counted record
// and how to count them: "" when none was.
func notCountedLine(out []notCounted, budget time.Duration) string {
	if len(out) == 0 {
		return ""
	}
	var names []string
	for _, n := range out {
		_, name, _ := strings.Cut(n.name, " ")
		names = append(names, fmt.Sprintf("%s (an op takes %s natively; counting it, about %s)", name, time.Duration(n.nsOp).Round(time.Millisecond), n.cost.Round(time.Minute)))
	}
	return textfmt.Line(fmt.Sprintf("%s not counted, to fit --budget %s: %s; count them alone (--bench, --budget 0) or time them (--instrument time)",
		plural(len(out), "benchmark", "benchmarks"), budget, strings.Join(names, ", ")))
}

// countedOps is the ops of every process of a side's counts: the sum of
// its runs' work (0 when it records none).
func countedOps(p *profile.Profile) int64 {
	rec, ok := meta.Known(p)
	if !ok {
		return 0
	}
	var n float64
	for _, run := range rec.Runs {
		n += run.Work
	}
	return int64(n)
}
