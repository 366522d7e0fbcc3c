package perfassert

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
)

// How captures share the CPU profiler.
//
// Go has one CPU profiler per process, and a profile can be read only once
// the profiler has stopped. Every capture in the process therefore joins one
// profiling session, run by the coordinator below in rounds: the profiler
// runs while any capture is active, stops at the end of each round, and the
// round's samples are handed to the captures by the pprof label each capture
// runs its function under (captureLabel; goroutines the function starts
// inherit it). Samples of other goroutines, such as a parallel test or the
// garbage collector's background workers, carry no capture label and are
// dropped. The profiler restarts at once while some capture still needs
// samples; a capture that joins while it runs starts at once too.
//
// A capture is made of runs of the same number of iterations of its
// function (the first run, timed, sets the number), each labelled with
// meta.LabelRun by the capturing goroutine itself, so runs do not depend on
// when rounds end. When a capture has done the runs it was expected to
// need, it pauses at the run boundary and asks the coordinator, which ends
// the round at once, counts the samples of the finished runs and either
// stops the capture or sets how many more runs it needs. A run left
// unfinished at the time limit is dropped.

// asyncPreempt is the runtime function a goroutine is sent to when it is
// preempted asynchronously.
const asyncPreempt = "runtime.asyncPreempt"

// captureLabel is the pprof label whose value names the capture a sample
// belongs to. It is removed from the captured profile.
const captureLabel = "hotbudget.capture"

// Run and round lengths. Stopping and restarting the profiler costs well
// under a millisecond; rounds refresh each capture's estimate of the runs it
// needs.
const (
	minRun = 20 * time.Millisecond
	// minRunSamples is the fewest samples a run is timed for.
	minRunSamples = 5
	maxRun        = time.Second
	maxRound      = time.Second
)

// session is one capture.
type session struct {
	cfg      captureConfig
	id       string
	fn       func()
	fnName   string // fn's function name, as profiles name it
	periodBy string // the leaf whose runtime/pprof samples set the perf capture's period (effectivePeriod)
	start    time.Time
	deadline time.Time
	runLen   time.Duration // the first run's length; its iterations make every run

	// Set by the capturing goroutine, read by the coordinator.
	mu      sync.Mutex
	done    []runInfo    // finished runs, in order
	runs    atomic.Int64 // len(done)
	target  atomic.Int64 // runs after which the capture pauses for a verdict
	paused  atomic.Bool  // waiting on verdict
	exited  atomic.Bool  // stopped at the time limit
	stop    atomic.Bool  // set by the coordinator: stop now (the profiler was lost)
	verdict chan bool    // coordinator to capture: true go on, false stop

	admitted chan error    // a pending capture learns here that profiling started for it
	finished chan struct{} // closed when the coordinator is done with the capture

	// Owned by the coordinator until finished is closed.
	ps      []*profile.Profile     // the capture's samples, one profile a round
	byRun   map[string]*runSamples // samples of each run, by run label
	sampled time.Duration          // CPU time the whole rounds' samples stand for
	used    time.Duration          // CPU time the process used in those rounds
	cpuOK   bool                   // used is known
	reason  string                 // why the capture stopped
	rse     float64                // relative error of the least precise judged share
	top     string                 // that function
	err     error

	// The perf sampler's side (nil with runtime/pprof alone), filled by
	// the capturing goroutine.
	perf    *perfCapture
	perfErr error // set by the capturing goroutine before it exits
}

// runInfo is what the capturing goroutine knows of a finished run.
type runInfo struct {
	work  int64         // iterations
	cpu   time.Duration // process CPU during the run, when alone
	wall  time.Duration // the run's wall time
	alone bool          // no other capture ran meanwhile
}

// runSamples counts a run's samples.
type runSamples struct {
	samples int64
	leaves  map[string]int64 // by leaf function
}

// run is the capturing loop: it runs fn under the capture's pprof labels,
// moving to the next run label every run (the first run lasts runLen; its
// iterations make every later run), until the
// coordinator says stop or the time limit passes.
func (s *session) run(ctx context.Context) {
	// The first run lasts runLen of CPU time of this goroutine, which stays
	// on its thread meanwhile so that the thread's CPU clock counts it (a
	// machine busy with other work, or the garbage collector's background
	// workers, then do not leave the run with few samples), but at most
	// four times runLen of wall time (fn may wait rather than compute),
	// and at most MaxDuration over twice MinRuns (a starved capture still
	// gets runs enough to tell how they vary).
	// The clock is read at most ten times a run, after runLen of wall time.
	// With the perf sampler the goroutine stays on its thread for the
	// whole capture: the perf event samples that thread.
	runtime.LockOSThread()
	locked := true
	defer func() {
		if locked {
			runtime.UnlockOSThread()
		}
	}()
	if s.cfg.sampler == samplerPerf {
		pc, err := openPerf(perfPeriod)
		if err == nil {
			pc.cpu, _ = threadCPU()
			err = pc.ev.Enable()
		}
		if err != nil {
			if pc != nil {
				pc.ev.Close()
			}
			s.perfErr = err
			s.exit()
			return
		}
		s.perf = pc
		defer func() {
			pc.ev.Disable()
			c, _ := threadCPU()
			s.mu.Lock()
			pc.cpu = c - pc.cpu
			pc.lost = pc.ev.Lost()
			s.mu.Unlock()
			pc.ev.Close()
		}()
	}
	var (
		n            int64 // iterations in the current run
		per          int64 // iterations a run; 0 until the first run ends
		runStart     = time.Now()
		tcpu0, tcpOK = threadCPU()
		cpu0, _      = processCPU()
		joins0       = coord.joins.Load()
		alone0       = coord.activeN.Load() == 1
		lastCheck    time.Time
		label        = "1"
	)
	drain := func() {
		if s.perf != nil {
			if err := s.drain(label); err != nil && s.perfErr == nil {
				s.perfErr = err
			}
		}
	}
	firstDone := func(now time.Time) bool {
		wall := now.Sub(runStart)
		switch {
		case wall < s.runLen:
			return false
		case wall >= min(4*s.runLen, s.cfg.maxDuration/time.Duration(2*max(s.cfg.minRuns, 1))) || !tcpOK:
			return true
		case now.Sub(lastCheck) < s.runLen/10:
			return false
		}
		lastCheck = now
		c, _ := threadCPU()
		return c-tcpu0 >= s.runLen
	}
	for {
		s.fn()
		n++
		now := time.Now()
		if s.stop.Load() {
			return
		}
		if s.perf != nil && s.perf.full() {
			drain()
		}
		if per == 0 && firstDone(now) || per > 0 && n == per {
			if per == 0 && s.perf == nil {
				runtime.UnlockOSThread()
				locked = false
			}
			per = n
			drain()
			s.finish(runInfo{work: n, wall: now.Sub(runStart)}, cpu0, joins0, alone0)
			n = 0
			if !now.Before(s.deadline) {
				s.exit()
				return
			}
			if s.runs.Load() >= s.target.Load() {
				s.paused.Store(true)
				coord.poke()
				select {
				case goOn := <-s.verdict:
					if !goOn {
						return
					}
				case <-s.finished: // stopped meanwhile (the profiler was lost)
					return
				}
			}
			label = strconv.FormatInt(s.runs.Load()+1, 10)
			ctx = pprof.WithLabels(ctx, pprof.Labels(meta.LabelRun, label))
			pprof.SetGoroutineLabels(ctx)
			runStart, joins0, alone0 = time.Now(), coord.joins.Load(), coord.activeN.Load() == 1
			cpu0, _ = processCPU()
			if s.perf != nil {
				s.perf.ev.Read(func(*perfevent.Sample) {}) // the pause's own samples
			}
			continue
		}
		if !now.Before(s.deadline) {
			if s.runs.Load() == 0 {
				// The only run, however short: fn ran at least once.
				drain()
				s.finish(runInfo{work: n, wall: now.Sub(runStart)}, cpu0, joins0, alone0)
			}
			s.exit()
			return
		}
	}
}

// finish records a finished run.
func (s *session) finish(r runInfo, cpu0 time.Duration, joins0 int64, alone0 bool) {
	if cpu1, ok := processCPU(); ok && cpu0 > 0 {
		r.cpu = cpu1 - cpu0
	}
	r.alone = alone0 && coord.joins.Load() == joins0 && coord.activeN.Load() == 1
	s.mu.Lock()
	s.done = append(s.done, r)
	s.mu.Unlock()
	s.runs.Add(1)
}

func (s *session) exit() {
	s.exited.Store(true)
	coord.poke()
}

// finishedRuns returns the finished runs.
func (s *session) finishedRuns() []runInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.done)
}

// counts returns the samples of the finished runs and their count by leaf
// function, with the runs. With the perf sampler they are the perf
// samples of the capturing thread plus, in perf samples' worth of time,
// runtime/pprof's of the goroutines the function started.
func (s *session) counts(runs []runInfo) (total int64, perRun []*runSamples) {
	if s.perf != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	for i := range runs {
		label := strconv.Itoa(i + 1)
		r := s.byRun[label]
		if s.perf != nil {
			r = addRunSamples(r, s.perf.byRun[label])
		}
		if r == nil {
			r = &runSamples{}
		}
		total += r.samples
		perRun = append(perRun, r)
	}
	return total, perRun
}

// addRunSamples returns the sum of a and b, either of which may be nil.
func addRunSamples(a, b *runSamples) *runSamples {
	if a == nil || b == nil {
		if a == nil {
			return b
		}
		return a
	}
	sum := &runSamples{samples: a.samples + b.samples, leaves: maps.Clone(a.leaves)}
	for f, k := range b.leaves {
		sum.leaves[f] += k
	}
	return sum
}

// enough reports whether the finished runs of a paused capture are all it
// needs, and records why it stops.
func (s *session) enough() bool {
	runs := s.finishedRuns()
	total, _ := s.counts(runs)
	if len(runs) < s.cfg.minRuns || total < s.cfg.minSamples {
		return false
	}
	s.top, s.rse = s.precision(runs)
	if s.rse > s.cfg.precision {
		return false
	}
	s.reason = "precise enough"
	return true
}

// plan sets how many runs s is expected to need: enough for MinSamples at
// the samples a run has had so far, more if the shares are not yet as
// precise as asked (the error falls as one over the root of the samples).
func (s *session) plan() {
	runs := s.finishedRuns()
	done := int64(len(runs))
	total, _ := s.counts(runs)
	need := int64(s.cfg.minRuns)
	if done > 0 && total > 0 {
		perRun := float64(total) / float64(done)
		want := float64(s.cfg.minSamples)
		if total >= s.cfg.minSamples {
			_, rse := s.precision(runs)
			want = max(want, float64(total)*math.Pow(rse/s.cfg.precision, 2))
		}
		need = max(need, int64(math.Ceil(want/perRun)))
	}
	if done > 0 && total == 0 {
		need = max(need, 2*done) // no samples yet: fn is mostly off-CPU
	}
	s.target.Store(max(need, done+1))
}

// precision returns the function whose share of the capture's samples is
// least precise among those it is judged by, and the relative standard error
// of that share. The functions are the heaviest of the module under test
// (of all functions when none of the module's has samples) by the samples
// whose innermost module frame they are (see ownLeaf), with any other of
// them holding a fifth of those samples or more; shares are of the samples
// with a module frame. The error is the ratio
// estimator's across runs, which sees run-to-run
// noise as well as sampling noise, with five runs or more; with fewer, the
// binomial error of the pooled samples.
func (s *session) precision(runs []runInfo) (string, float64) {
	n, perRun := s.counts(runs)
	if n == 0 {
		return "", math.Inf(1)
	}

	total := map[string]int64{}
	for _, r := range perRun {
		for f, k := range r.leaves {
			total[f] += k
		}
	}
	mod := moduleFuncs()
	own := func(f string) bool { return mod != nil && mod.MatchString(f) }
	anyOwn := false
	for f := range total {
		if own(f) {
			anyOwn = true
			break
		}
	}
	var cands []string
	for f := range total {
		if !anyOwn || own(f) {
			cands = append(cands, f)
		}
	}
	slices.SortFunc(cands, func(a, b string) int {
		if total[a] != total[b] {
			if total[a] > total[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	// Shares are of the candidates' samples: the runtime's share (the
	// garbage collector's assists come in bursts) moves every share of
	// the module's functions alike, which comparisons factor out.
	var base int64
	runBase := make([]int64, len(perRun))
	for _, f := range cands {
		base += total[f]
		for i, r := range perRun {
			runBase[i] += r.leaves[f]
		}
	}
	worst, worstName := 0.0, ""
	for i, f := range cands {
		if i > 0 && float64(total[f]) < 0.2*float64(base) {
			break
		}
		k := float64(total[f])
		share := k / float64(base)
		rse := math.Sqrt((1 - share) / k)
		if len(perRun) >= 5 {
			// Ratio estimator over runs:
			// SE = sqrt(R/(R-1) Σ (k_i - share n_i)²) / n.
			var ss float64
			for j, r := range perRun {
				d := float64(r.leaves[f]) - share*float64(runBase[j])
				ss += d * d
			}
			r := float64(len(perRun))
			rse = math.Sqrt(r/(r-1)*ss) / float64(base) / share
		}
		if worstName == "" || rse > worst {
			worst, worstName = rse, f
		}
	}
	return worstName, worst
}

// assemble builds the capture's profile from its finished runs, and its
// record; samples of a run left unfinished are dropped.
func (s *session) assemble() (*profile.Profile, meta.Record, error) {
	runs := s.finishedRuns()
	rec := meta.Record{
		Name: s.cfg.name, Build: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		Race: raceEnabled, RateHz: int(math.Round(s.cfg.sampleHz())), WorkUnit: meta.WorkIteration,
		Sampler: s.cfg.sampler,
	}
	_, perRun := s.counts(runs)
	groups := groupRuns(perRun, s.cfg.minRuns)
	label := map[string]string{} // old run label -> new
	for j, g := range groups {
		run := meta.Run{Label: strconv.Itoa(j + 1)}
		alone := true
		for _, i := range g {
			run.Work += float64(runs[i].work)
			run.CPUNanos += int64(runs[i].cpu)
			run.WallNanos += int64(runs[i].wall)
			alone = alone && runs[i].alone
			label[strconv.Itoa(i+1)] = run.Label
		}
		if !alone || run.CPUNanos <= 0 {
			run.CPUNanos, run.WallNanos = 0, 0
		}
		rec.Runs = append(rec.Runs, run)
	}
	ps := s.ps
	if s.perf != nil {
		ps = append(slices.Clone(ps), s.perfProfile())
	}
	for _, q := range ps {
		q.Sample = slices.DeleteFunc(q.Sample, func(smp *profile.Sample) bool {
			l := smp.Label[meta.LabelRun]
			return len(l) != 1 || label[l[0]] == ""
		})
		for _, smp := range q.Sample {
			smp.Label[meta.LabelRun] = []string{label[smp.Label[meta.LabelRun][0]]}
		}
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		return nil, meta.Record{}, fmt.Errorf("perfassert: merging capture rounds: %w", err)
	}
	if s.perf != nil {
		merged.Period, s.periodBy = effectivePeriod(merged, moduleFuncs())
	}
	merged.TimeNanos = s.start.UnixNano()
	merged.DurationNanos = time.Since(s.start).Nanoseconds()
	if s.cpuOK {
		rec.SampledNanos, rec.UsedNanos = s.sampled.Nanoseconds(), s.used.Nanoseconds()
	}
	return merged, rec, nil
}

// Runs a capture is judged by (item 4 of issue 15): a capture of a slow
// function, or one starved of CPU, may finish dozens of runs with a
// handful of samples apiece, in which no function has enough samples a run
// for the comparison to learn how runs vary; then it falls back on a floor
// and finds differences in unchanged code (3 of 20 unchanged captures of
// 260-380 samples in 11-14 runs failed at load 29 on 2 cores). Consecutive
// runs are therefore grouped, the same number of runs a group, so that
// groups have groupSamples samples on average and there are at most
// maxGroups of them (but at least MinRuns when those hold half of
// groupSamples each).
const (
	groupSamples = 50
	maxGroups    = 30
)

// groupRuns returns the runs that make each run of the profile: equal
// numbers of consecutive runs, the leftover joining the last group, and a
// run without samples joining the next (or the last) group, since a run
// without samples cannot be compared (it has no shares).
func groupRuns(perRun []*runSamples, minRuns int) [][]int {
	var total int64
	for _, r := range perRun {
		total += r.samples
	}
	n := len(perRun)
	size := 1
	if n > 0 && total > 0 {
		bySamples := int(math.Ceil(float64(groupSamples) * float64(n) / float64(total)))
		if total/int64(max(minRuns, 1)) >= groupSamples/2 {
			// MinRuns groups hold half of groupSamples or more: keep
			// MinRuns of them at least.
			bySamples = min(bySamples, max(1, n/max(minRuns, 1)))
		}
		size = max(bySamples, (n+maxGroups-1)/maxGroups, 1)
	}
	var groups [][]int
	var cur []int
	var curSamples int64
	for i := range perRun {
		cur = append(cur, i)
		curSamples += perRun[i].samples
		if len(cur) >= size && curSamples > 0 {
			groups, cur, curSamples = append(groups, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		if len(groups) == 0 {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], cur...)
	}
	return groups
}

// perfProfile is the profile of the capturing thread's perf samples, in
// runtime/pprof's sample types, its functions given the start lines
// runtime/pprof gave them in the capture's rounds (runtime.Frame does not
// say them).
func (s *session) perfProfile() *profile.Profile {
	s.mu.Lock()
	samples := slices.Clone(s.perf.samples)
	s.mu.Unlock()
	start := map[string]int64{}
	var q profile.Profile
	for _, p := range s.ps {
		for _, f := range p.Function {
			start[f.Name] = f.StartLine
		}
		q.SampleType, q.DefaultSampleType, q.PeriodType = p.SampleType, p.DefaultSampleType, p.PeriodType
	}
	if len(q.SampleType) != 2 {
		q.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
		q.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	}
	q.Period = perfPeriod.Nanoseconds()
	for _, l := range s.perf.sym.locs {
		q.Location = append(q.Location, l)
	}
	slices.SortFunc(q.Location, func(a, b *profile.Location) int { return cmp.Compare(a.ID, b.ID) })
	for _, f := range s.perf.sym.funcs {
		f.StartLine = start[f.Name]
		q.Function = append(q.Function, f)
	}
	slices.SortFunc(q.Function, func(a, b *profile.Function) int { return cmp.Compare(a.ID, b.ID) })
	q.Sample = samples
	return &q
}

// effectivePeriod is the sampling period a profile mixing perf samples of
// the capturing thread with runtime/pprof's of the goroutines it started
// is judged at. The engine takes a function's time over the period as its
// sample count, with Poisson variance; a pprof sample standing for 10ms
// would count as 20 perf samples and its variance be understated 20 times.
// For each judged function the period at which that count has the
// variance of its weighted samples is Σw²/Σw (w: each sample's time); the
// profile's period is the largest of them, which understates no judged
// function's variance (and is the perf period when the function started
// no goroutine). A sample counts for the innermost function of judged
// (the module under test, moduleFuncs) on its stack, else for its leaf.
// A leaf outside the module is not judged, and sets the period only when
// it holds at least minCoarse samples coarser than the perf sampler's:
// then it may be present in enough runs to take part in the yardstick. A
// stray one does not: one 10ms sample of runtime.gogo once took a
// fastjson capture's comparison down to a twentieth of its samples. With
// judged nil, every leaf counts. by is the function that set a longer
// period ("" when none did).
func effectivePeriod(p *profile.Profile, judged *regexp.Regexp) (period int64, by string) {
	ti := len(p.SampleType) - 1
	perf := float64(perfPeriod.Nanoseconds())
	sw, sw2 := map[string]float64{}, map[string]float64{}
	coarse := map[string]int64{} // of the leaves outside judged
	for _, smp := range p.Sample {
		if len(smp.Value) <= ti || smp.Value[0] <= 0 {
			continue
		}
		w := float64(smp.Value[ti]) / float64(smp.Value[0]) // per sample
		f := leafName(smp.Location)
		if judged != nil {
			if m := innermostOf(smp.Location, judged); m != "" {
				f = m
			} else if w > 1.5*perf {
				coarse[f] += smp.Value[0]
			}
		}
		sw[f] += w * float64(smp.Value[0])
		sw2[f] += w * w * float64(smp.Value[0])
	}
	longest := perf
	for f, a := range sw {
		if k, out := coarse[f]; out && k < minCoarse {
			continue
		}
		if a > 0 && sw2[f]/a > longest {
			longest, by = sw2[f]/a, f
		}
	}
	return int64(math.Round(longest)), by
}

// minCoarse is the fewest samples coarser than the perf sampler's (a
// goroutine's, by runtime/pprof) with which a leaf outside the module sets
// a perf capture's period (effectivePeriod).
const minCoarse = 3

// sampleHz is the rate the capturing goroutine is sampled at.
func (c captureConfig) sampleHz() float64 {
	if c.sampler == samplerPerf {
		return 1 / perfPeriod.Seconds()
	}
	return float64(c.hz)
}
