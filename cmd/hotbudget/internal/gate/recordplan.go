package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Which benchmarks record runs and for how long (calibration and the time
// estimate), running them a side at a time, and each run's profile.

// calibrate finds every benchmark matching --bench and its iteration
// count: on the base revision for benchmarks it has, on the head revision
// for benchmarks new there.
func (r *recorder) calibrate(ctx context.Context, base, head *recSide) ([]leaf, error) {
	t0 := time.Now()
	byKey := map[string]*leaf{}
	var order []string
	overhead := map[string]time.Duration{} // per run of one benchmark of a package
	find := func(s *recSide, benchtime string) error {
		s.leaves = map[string]bool{}
		for _, pkg := range sortedKeys(s.bins) {
			t1 := time.Now()
			out, err := r.runBinary(ctx, s, s.bins[pkg], "-test.bench", r.o.Bench, "-test.benchtime", benchtime)
			if err != nil {
				return err
			}
			results := r.parseBench(out)
			if benchtime == "1x" && len(results) > 0 {
				// One process, each benchmark set up and run once: what a
				// run costs beyond its timed iterations, shared out.
				var timed float64
				for _, res := range results {
					timed += res.nsOp
				}
				overhead[pkg] = (time.Since(t1) - time.Duration(timed)) / time.Duration(len(results))
			}
			for _, res := range results {
				l := leaf{pkg: pkg, name: res.name, iters: res.iters, nsOp: res.nsOp, bytesOp: res.bytesOp, allocsOp: res.allocsOp}
				s.leaves[l.key()] = true
				if k := byKey[l.key()]; k == nil {
					byKey[l.key()] = &l
					order = append(order, l.key())
				} else {
					// What an op allocates bounds the allocation runs:
					// the larger side's.
					k.bytesOp, k.allocsOp = max(k.bytesOp, l.bytesOp), max(k.allocsOp, l.allocsOp)
				}
			}
		}
		return nil
	}
	benchtime := r.calibrationBenchtime()
	if r.o.FixedIters > 0 || r.o.Shard.N > 0 {
		benchtime = "1x" // only to find the benchmarks (a shard calibrates its own: calibrateShard)
	}
	if err := find(base, benchtime); err != nil {
		return nil, err
	}
	baseKeys := len(order)
	// The head side only lists its benchmarks (one iteration each);
	// those new at head are calibrated there.
	if err := find(head, "1x"); err != nil {
		return nil, err
	}
	for _, k := range order[baseKeys:] {
		l := byKey[k]
		if r.o.FixedIters > 0 || r.o.Shard.N > 0 {
			continue
		}
		out, err := r.runBinary(ctx, head, head.bins[l.pkg], "-test.bench", l.pattern(), "-test.benchtime", benchtime)
		if err != nil {
			return nil, err
		}
		for _, res := range r.parseBench(out) {
			if res.name == l.name {
				l.iters, l.nsOp, l.bytesOp, l.allocsOp = res.iters, res.nsOp, res.bytesOp, res.allocsOp
			}
		}
	}
	if len(order) == 0 {
		hint := "name a package that has benchmarks (func BenchmarkX(b *testing.B) in a _test.go file)"
		if r.o.Bench != "." {
			// A pattern of the user's matched nothing: say that, not
			// that the packages lack benchmarks.
			hint = "the pattern matched no benchmark; go test -list . shows the benchmarks there are"
		}
		return nil, fmt.Errorf("no benchmark matches --bench %q in %s at %s %s or %s %s: %s",
			r.o.Bench, strings.Join(r.o.Packages, " "), base.name, base.rev, head.name, head.rev, hint)
	}
	var leaves []leaf
	sort.Strings(order)
	if r.o.Shard.N > 0 {
		var err error
		if order, err = r.calibrateShard(ctx, base, head, byKey, order); err != nil {
			return nil, err
		}
	}
	for _, k := range order {
		l := *byKey[k]
		if r.o.FixedIters > 0 {
			l.iters = r.o.FixedIters
		}
		l.overhead = max(overhead[l.pkg], 0)
		leaves = append(leaves, l)
	}
	if r.o.Instructions {
		return r.planExact(leaves, t0)
	}
	// Profiling slows the runs down (10 kHz perf events double a
	// benchmark's CPU time on some machines) and each run's profile is
	// built afterwards: measured on one run before estimating, so that
	// the estimate and --budget count what the runs will really take.
	cost, err := r.profilerCost(ctx, base, leaves)
	if err != nil {
		return nil, err
	}
	if !r.o.NoAllocs {
		if cost.allocEach, cost.allocRun, cost.allocMeasured, err = r.allocCost(ctx, base, head, leaves); err != nil {
			return nil, err
		}
	}
	r.cost = cost
	work, over := r.estimate(leaves, base, head)
	if b := r.o.Budget; b > 0 && work+over > b && work > 0 && b > over {
		// Fewer iterations, the same for every benchmark in proportion.
		f := float64(b-over) / float64(work)
		for i := range leaves {
			leaves[i].iters = max(1, int64(float64(leaves[i].iters)*f))
		}
		r.progress("the runs would take about %s, beyond --budget %s: every benchmark runs %.0f%% of its calibrated iterations (--budget 0 for no limit)",
			(work + over).Round(time.Second), b, 100*f)
		work, over = r.estimate(leaves, base, head)
	}
	for _, l := range leaves {
		where := ""
		switch {
		case !base.leaves[l.key()]:
			where = " (new at head)"
		case !head.leaves[l.key()]:
			where = " (gone at head)"
		}
		r.progress("%s %s: %d iterations a run%s", textfmt.Name(l.pkg), textfmt.Name(l.name), l.iters, where)
	}
	r.estimated = work + over
	allocs := time.Duration(0)
	if !r.o.NoAllocs {
		allocs = r.allocEstimate(leaves, base, head)
	}
	r.progress("calibrated %s in %s; the runs take about %s (%s of benchmark iterations profiled, %.2fx their unprofiled time; %s starting test binaries, setting up and building profiles)%s",
		plural(len(leaves), "benchmark", "benchmarks"), since(t0), (work + over).Round(time.Second), work.Round(time.Second), r.cost.slow,
		over.Round(time.Second), allocRunsNote(allocs))
	return leaves, nil
}

// allocRunsNote is what the calibration line says of the allocation runs.
func allocRunsNote(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf(", then the allocation runs about %s", d.Round(time.Second))
}

// runCost is what profiling adds to a benchmark's runs, measured on two
// runs of one benchmark (profilerCost): its timed iterations take slow
// times as long as unprofiled, and the profile of its first run takes
// first to build beyond the run's overhead (the binary's symbols for code
// not seen before are read then), that of every later run again.
type runCost struct {
	slow         float64
	first, again time.Duration
	// allocEach is what recording one allocation costs in the allocation
	// runs, allocRun what such a run takes beyond its ops and its
	// overhead (writing the profile), when allocMeasured: measured on one
	// benchmark (allocCost).
	allocEach, allocRun time.Duration
	allocMeasured       bool
}

// profilerCostRun bounds the runs that measure the profiler's cost: about
// this long of timed work each (and at most the benchmark's calibrated
// iterations).
const profilerCostRun = 250 * time.Millisecond

// profilerCost runs the benchmark of leaves with the most timed work twice
// on base, profiled as the runs are, for about profilerCostRun each, and
// returns what profiling costs: the ratio of its time per op to the
// calibrated one (clamped to 1x-20x, so that one noisy run cannot make the
// estimate absurd), and the time each run took beyond its timed work and
// its overhead.
func (r *recorder) profilerCost(ctx context.Context, base *recSide, leaves []leaf) (runCost, error) {
	c := runCost{slow: 1}
	best := -1
	for i, l := range leaves {
		if !base.leaves[l.key()] || l.nsOp <= 0 {
			continue
		}
		if best < 0 || float64(l.iters)*l.nsOp > float64(leaves[best].iters)*leaves[best].nsOp {
			best = i
		}
	}
	if best < 0 {
		return c, nil
	}
	l := leaves[best]
	iters := max(1, min(l.iters, int64(float64(profilerCostRun)/l.nsOp)))
	what := fmt.Sprintf("%s %s at %s %s (measuring the profiler's cost)", l.pkg, l.name, base.name, base.rev)
	// The binary's symbols are opened once for all its runs when perf
	// events profile them: not a cost of a run. An error is the run's to
	// report.
	if mode, _ := samplercheck.Sampler(r.env.Getenv); mode != "pprof" {
		r.symbols(base.bins[l.pkg])
	}
	var slow []float64
	for i := range 2 {
		t0 := time.Now()
		out, _, err := r.profileRun(ctx, base, base.bins[l.pkg], what, "-test.bench", l.pattern(), "-test.benchtime", fmt.Sprintf("%dx", iters),
			"-test.count", "1")
		if err != nil {
			return runCost{}, err
		}
		elapsed := time.Since(t0)
		for _, res := range r.parseBench(out) {
			if res.name != l.name || res.nsOp <= 0 {
				continue
			}
			slow = append(slow, res.nsOp/l.nsOp)
			extra := max(elapsed-l.overhead-time.Duration(float64(iters)*res.nsOp), 0)
			if i == 0 {
				c.first = extra
			} else {
				c.again = extra
			}
		}
	}
	if len(slow) > 0 {
		c.slow = min(max(slices.Min(slow), 1), 20)
	}
	return c, nil
}

// allocRecordCost is what recording one allocation with its stack costs
// at -test.memprofilerate=1 when it was not measured (allocCost): 0.6µs
// on valyala/fastjson's parse benchmarks (4.3 million allocations by
// -benchmem's count in 2.7s beyond the runs' other time, a 2-core VM at
// load 10), 2.5µs on BurntSushi/toml's decoding through reflection (its
// deeper stacks: 2.93ms an op against 0.15ms, 1,102 allocations), 4-6µs
// in a loop of nothing but 16-byte allocations. A constant of 1µs
// estimated toml's allocation runs at 58s; they took 3m9s.
const allocRecordCost = time.Microsecond

// allocCostRun bounds the allocation run that measures allocCost: about
// this long at allocRecordCost an allocation.
const allocCostRun = 250 * time.Millisecond

// allocCost measures what the allocation runs cost on the benchmark whose
// runs would take longest (both sides have it, it allocates): one run on
// base of about allocCostRun, whose time per op beyond the calibrated one
// is the recording of its allocations (each), and whose time beyond its
// ops and its overhead is the run's own (writing the profile). ok is false
// when no benchmark both sides have allocates, or its run did not say its
// time per op.
func (r *recorder) allocCost(ctx context.Context, base, head *recSide, leaves []leaf) (each, run time.Duration, ok bool, err error) {
	best, most := -1, 0.0
	for i, l := range leaves {
		if !base.leaves[l.key()] || !head.leaves[l.key()] || l.allocsOp <= 0 || l.nsOp <= 0 {
			continue
		}
		if w := float64(allocIters(l)) * l.allocsOp; w > most {
			best, most = i, w
		}
	}
	if best < 0 {
		return 0, 0, false, nil
	}
	l := leaves[best]
	iters := max(2, min(allocIters(l), int64(float64(allocCostRun)/(l.nsOp+l.allocsOp*float64(allocRecordCost)))))
	dir, err := os.MkdirTemp(base.tmp, "memcost")
	if err != nil {
		return 0, 0, false, err
	}
	defer os.RemoveAll(dir)
	b := base.bins[l.pkg]
	cmd, stdout, stderr := r.allocCmd(ctx, b, l, iters, filepath.Join(dir, "mem.pprof"))
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, false, benchFailed(ctx, base, b, err, stdout, stderr)
	}
	elapsed := time.Since(t0)
	for _, res := range r.parseBench(stdout.Bytes()) {
		if res.name != l.name || res.nsOp <= 0 {
			continue
		}
		each = time.Duration(max(res.nsOp-l.nsOp, 0) / l.allocsOp)
		run = max(elapsed-l.overhead-time.Duration(float64(iters+1)*res.nsOp), 0)
		r.progress("recording an allocation costs %s (%s %s at %s %s: %s an op against %s unrecorded, %.0f allocations)",
			textfmt.Duration(each), textfmt.Name(l.pkg), textfmt.Name(l.name), base.name, base.rev,
			textfmt.Duration(time.Duration(res.nsOp)), textfmt.Duration(time.Duration(l.nsOp)), l.allocsOp)
		return each, run, true, nil
	}
	return 0, 0, false, nil
}

// allocEstimate is how long the allocation runs of leaves take: two runs a
// side of every benchmark both sides have, of N+1 and 2N+1 ops
// (allocIters), each op taking its calibrated time plus the recording of
// its allocations, and each run its overhead.
func (r *recorder) allocEstimate(leaves []leaf, base, head *recSide) time.Duration {
	var d time.Duration
	each := r.cost.allocEach
	if !r.cost.allocMeasured {
		each = allocRecordCost
	}
	for _, l := range leaves {
		if !base.leaves[l.key()] || !head.leaves[l.key()] {
			continue
		}
		n := float64(allocIters(l))
		op := l.nsOp + l.allocsOp*float64(each)
		d += 2 * (2*(l.overhead+r.cost.allocRun) + time.Duration((3*n+2)*op))
	}
	return d
}

// estimate is how long the runs of leaves take: their timed iterations
// at the calibrated time per operation slowed by the profiler (r.cost),
// and the rest of every run: its overhead (measured when the head side
// listed its benchmarks) and the building of its profile.
func (r *recorder) estimate(leaves []leaf, base, head *recSide) (work, over time.Duration) {
	for _, l := range leaves {
		sides := 0
		for _, s := range []*recSide{base, head} {
			if s.leaves[l.key()] {
				sides++
			}
		}
		n := time.Duration(sides * r.o.Runs)
		timed := float64(l.iters*int64(r.o.Count)) * l.nsOp * max(r.cost.slow, 1)
		work += n * time.Duration(timed)
		over += n*l.overhead + time.Duration(sides)*(r.cost.first+time.Duration(r.o.Runs-1)*r.cost.again)
	}
	return work, over
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runAll runs every benchmark --runs times a side, interleaved, and
// writes the profiles and benchmark output.
func (r *recorder) runAll(ctx context.Context, sides []*recSide, leaves []leaf, res *Measurement) error {
	base, head := sides[0], sides[1]
	both := 0
	for _, l := range leaves {
		if base.leaves[l.key()] && head.leaves[l.key()] {
			both++
		}
	}
	if both == 0 && r.shard == nil { // a shard's part may hold none: merge judges them all
		return errors.New("no benchmark exists at both revisions: there is nothing to compare")
	}
	pairs := map[string]*diff.Pair{}
	runsStart := time.Now()
	for run := 1; run <= r.o.Runs; run++ {
		t0 := time.Now()
		order := []*recSide{base, head}
		if run%2 == 0 {
			order = []*recSide{head, base}
		}
		spent := map[*recSide]time.Duration{}
		parts := map[*recSide][]*profile.Profile{}
		ops := map[*recSide]int64{}
		for _, l := range leaves {
			for _, s := range order {
				if !s.leaves[l.key()] {
					continue
				}
				t1 := time.Now()
				var p *profile.Profile
				var iters int64
				var err error
				if s == base && r.hist != nil {
					p, iters, err = r.historyRun(s, l, run)
				} else {
					p, iters, err = r.runLeaf(ctx, s, l, run)
				}
				if err != nil {
					return err
				}
				spent[s] += time.Since(t1)
				if base.leaves[l.key()] && head.leaves[l.key()] {
					parts[s] = append(parts[s], p)
					ops[s] += iters
					pr := pairs[l.key()]
					if pr == nil {
						pr = &diff.Pair{Name: l.key()}
						pairs[l.key()] = pr
					}
					if s == base {
						pr.Base = append(pr.Base, p)
					} else {
						pr.Head = append(pr.Head, p)
					}
					if r.hist != nil && len(pr.Base) > 0 && len(pr.Head) == 1 && s == head {
						if err := checkSameSampler(r.hist, pr.Base[0], p); err != nil {
							return err
						}
					}
				}
			}
		}
		for _, s := range sides {
			if len(parts[s]) == 0 {
				continue // a shard's benchmarks all new or gone at head
			}
			if _, err := r.mergeRun(s, parts[s], ops[s], run); err != nil {
				return err
			}
		}
		left := time.Since(runsStart) / time.Duration(run) * time.Duration(r.o.Runs-run)
		r.progress("run %d of %d: base %s, head %s (%s); about %s left", run, r.o.Runs, spent[base].Round(10*time.Millisecond),
			spent[head].Round(10*time.Millisecond), since(t0), left.Round(time.Second))
	}
	for _, s := range sides {
		path := filepath.Join(s.out, "bench.txt")
		if err := atomicfile.Write(path, func(f *os.File) error { _, err := f.Write(s.bench.Bytes()); return err }); err != nil {
			return err
		}
	}
	for _, l := range leaves {
		if pr := pairs[l.key()]; pr != nil {
			res.pairs = append(res.pairs, *pr)
		}
	}
	res.baseBench, res.headBench = base.bench.Bytes(), head.bench.Bytes()
	r.progress("wrote %s and %s in %s (the runs %s; estimated %s)", base.out, head.out, since(r.start), since(runsStart), r.estimated.Round(time.Second))
	return nil
}

// unsafeName matches what a benchmark's name may hold but a file name
// should not: runLeaf replaces it with "_".
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._=+-]+`)

// runLeaf runs one benchmark once with CPU profiling and returns its
// profile, with the iterations it did recorded in it.
func (r *recorder) runLeaf(ctx context.Context, s *recSide, l leaf, run int) (*profile.Profile, int64, error) {
	b := s.bins[l.pkg]
	what := fmt.Sprintf("%s %s at %s %s", l.pkg, l.name, s.name, s.rev)
	out, p, err := r.profileRun(ctx, s, b, what, "-test.bench", l.pattern(), "-test.benchtime", fmt.Sprintf("%dx", l.iters),
		"-test.count", strconv.Itoa(r.o.Count))
	if err != nil {
		return nil, 0, err
	}
	start := s.bench.Len()
	s.bench.Write(out)
	r.shard.noteBench(s, l, run, start)
	var iters int64
	for _, res := range r.parseBench(out) {
		if res.name == l.name {
			iters += res.iters
		}
	}
	if iters == 0 {
		return nil, 0, fmt.Errorf("%s printed no result (was it skipped?):\n%s", what, strings.TrimSpace(string(out)))
	}
	meta.Set(p, meta.Record{
		Name:  fmt.Sprintf("%s %s at %s %s, run %d", l.pkg, l.name, s.name, s.rev, run),
		Build: s.build, Race: s.race, RateHz: rateHz(p),
		WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: float64(iters)}},
	})
	path := leafProfile(s.out, l.pkg, l.name, run)
	if err := writeProfile(path, p); err != nil {
		return nil, 0, err
	}
	return p, iters, nil
}

func rateHz(p *profile.Profile) int {
	if p.Period <= 0 || p.PeriodType == nil || p.PeriodType.Unit != "nanoseconds" {
		return 0
	}
	return int((1e9 + p.Period/2) / p.Period)
}

// mergeRun merges one run's profiles of the benchmarks both sides have
// and writes it as cpu-RUN.pb.gz. A lone profile is taken as it is and
// its record replaced: runLeaf has written it already.
func (r *recorder) mergeRun(s *recSide, parts []*profile.Profile, ops int64, run int) (*profile.Profile, error) {
	p, err := mergeRuns(parts)
	if err != nil {
		return nil, fmt.Errorf("merging run %d of %s: %w", run, s.name, err)
	}
	rec := meta.Record{
		Name:  fmt.Sprintf("%s %s, run %d: %d benchmarks", s.name, s.rev, run, len(parts)),
		Build: s.build, Race: s.race, RateHz: rateHz(p),
	}
	if len(parts) == 1 {
		rec.WorkUnit, rec.Runs = meta.WorkOp, []meta.Run{{Work: float64(ops)}}
	} else {
		// Several benchmarks, each with its own fixed iteration count:
		// the work is one run of all of them, the same on both sides.
		rec.WorkUnit, rec.Runs = meta.WorkRun, []meta.Run{{Work: 1}}
	}
	meta.Set(p, rec)
	if err := writeProfile(filepath.Join(s.out, fmt.Sprintf("cpu-%d.pb.gz", run)), p); err != nil {
		return nil, err
	}
	return p, nil
}

func writeProfile(path string, p *profile.Profile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, func(f *os.File) error { return p.Write(f) })
}
