package perfassert

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// ErrProfilerBusy is returned by CaptureProfile when the process's CPU
// profiler is already running outside perfassert: Go allows one CPU profile
// at a time, and `go test -cpuprofile` holds it for the whole test binary.
var ErrProfilerBusy = errors.New("the CPU profiler is already in use (go test -cpuprofile, or another pprof.StartCPUProfile in this process)")

// A CaptureOption changes how Capture profiles.
type CaptureOption interface{ applyCapture(*captureConfig) }

type captureConfig struct {
	minSamples  int64
	minRuns     int
	precision   float64
	maxDuration time.Duration
	hz          int
	name        string
	err         error

	// Set by the options, to tell a default from a choice.
	hzSet, minSamplesSet, precisionSet, maxDurationSet, samplerSet bool

	noAllocs bool // NoAllocs: no allocation phase
	exact    bool // Instructions: count instructions under callgrind
	cycles   bool // Cycles: estimate cycles, with callgrind's cache simulation

	sampler string // samplerPerf or samplerPprof once resolved
	refused error  // why perf events were not used, when they were not asked against
	// checked is the check of perf events that let the capture use them
	// (nil: not checked); redo is set on a capture made again with
	// runtime/pprof because its first try's check found them wrong.
	checked *samplercheck.Result
	redo    misattributed
}

type captureFunc func(*captureConfig)

func (f captureFunc) applyCapture(c *captureConfig) { f(c) }

// Default capture settings.
const (
	defaultMinSamples  = 200
	defaultMaxDuration = 4500 * time.Millisecond
	defaultRate        = 100 // Hz, as runtime/pprof
	defaultMinRuns     = 10
	defaultPrecision   = 0.10
)

// childPeriods is how many of runtime/pprof's sample periods a capture with
// the perf sampler lasts at least (in the capturing goroutine's CPU time):
// at 100 Hz, 200ms, in which a goroutine started by the function that does
// a third of the work has about 10 samples.
const childPeriods = 20

// recordScale multiplies the default MinSamples and MaxDuration while
// baselines are written (HOTBUDGET_UPDATE=1 or -hotbudget.update) in one
// process; a baseline recorded in several (ProcessesEnv) is made of
// captures of the ordinary size, one a process.
const recordScale = 3

// Default capture settings with the perf sampler (see Sampler), which
// samples the capturing thread 2,000 times a second: more samples and
// tighter shares, in less time.
const (
	perfMinSamples  = 2000
	perfPrecision   = 0.05
	perfMaxDuration = 1500 * time.Millisecond
)

// MinSamples sets how many CPU samples Capture collects at least before it
// stops (default 200 with runtime/pprof: a function with 10% of them has a
// relative error near 22%; perfMinSamples, 2000, with the perf sampler;
// three times as many while baselines are written in one process, see
// recordScale; a baseline recorded in several, the default, is made of
// captures of the ordinary size, see ProcessesEnv). With
// the perf sampler a capture lasts at least 200ms of CPU time whatever
// MinSamples says (see childPeriods).
func MinSamples(n int) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if n <= 0 {
			c.err = fmt.Errorf("perfassert: MinSamples(%d): want a positive count", n)
		}
		c.minSamples, c.minSamplesSet = int64(n), true
	})
}

// MaxDuration bounds the wall time Capture spends running fn (default 4.5s
// with runtime/pprof, so that a test that captures and compares with a
// baseline stays under 5s on a busy machine; perfMaxDuration, 1.5s, with
// the perf sampler; three times as long while baselines are written in one
// process). Capture stops there even with fewer samples than
// MinSamples; fn always runs at least once. The allocation phase that
// follows (see CaptureProfile) runs fn for at most 150ms (less when a quarter of MaxDuration is
// less), plus two readings of the process's allocation profile, whose cost
// grows with the allocation sites the process has recorded (about 0.2s in
// a small test binary, seconds under -race after many captures; NoAllocs
// leaves the phase out).
func MaxDuration(d time.Duration) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if d <= 0 {
			c.err = fmt.Errorf("perfassert: MaxDuration(%s): want a positive duration", textfmt.Duration(d))
		}
		c.maxDuration, c.maxDurationSet = d, true
	})
}

// Rate sets runtime/pprof's sampling rate in Hz (at most 10000), and with
// it makes the capture use runtime/pprof alone unless Sampler("perf") is
// given too (then Rate is the rate of the goroutines the function starts).
// Without Rate, runtime/pprof alone samples at the highest rate the kernel
// was measured to deliver (see Sampler). The kernel may deliver fewer samples than asked above its
// timer frequency (often 250 Hz on Linux: 500 Hz gave about 230 samples a
// second here); each sample still counts one period, so absolute times then
// read low. Capture compares the samples with the CPU time the process used
// and adds a warning to the profile, shown in failure text, when they fall
// short. Any other rate is set with runtime.SetCPUProfileRate before
// profiling starts, which makes the runtime print "cannot set cpu profile
// rate until previous profile has finished" to stderr each time the
// profiler starts: once per profiling round (see CaptureProfile), of which a
// capture may take several; the profile is nevertheless sampled at the
// requested rate and its Period says so. Captures at different rates cannot
// share the profiler: one waits for the others to finish.
func Rate(hz int) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if hz <= 0 || hz > 10000 {
			c.err = fmt.Errorf("perfassert: Rate(%d): want 1..10000 Hz", hz)
		}
		c.hz, c.hzSet = hz, true
	})
}

// NoAllocs leaves out the capture's allocation phase (see CaptureProfile):
// the profile then holds CPU samples only, and MaxAllocs and MatchBaseline
// have no allocations to judge in it.
func NoAllocs() CaptureOption {
	return captureFunc(func(c *captureConfig) { c.noAllocs = true })
}

// CaptureName names the captured profile in failure text (default: "capture
// of " and the test's name, or "capture").
func CaptureName(name string) CaptureOption {
	return captureFunc(func(c *captureConfig) { c.name = name })
}

// MinRuns sets the fewest runs a capture is made of (default 10). Each run
// is a stretch of the capture's time with its own samples and iteration
// count (meta.LabelRun in the profile); a comparison of two captures is
// runs against runs, and more runs a side let it see run-to-run noise (a
// golden baseline of several processes is compared process against
// process: see MatchBaseline).
func MinRuns(n int) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if n <= 0 {
			c.err = fmt.Errorf("perfassert: MinRuns(%d): want a positive count", n)
		}
		c.minRuns = n
	})
}

// Precision sets how precise a capture's estimates must be before it stops
// (default 0.10): the relative standard error of the share of the heaviest
// functions of the module under test (by self samples: the top one, and
// any other with a fifth of the samples or more), estimated across runs so
// that run-to-run noise counts too. Captures stop at MinSamples and
// MinRuns if the shares are that precise by then, later if not, and at
// MaxDuration in any case.
func Precision(relErr float64) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if !(relErr > 0 && relErr < 1) {
			c.err = fmt.Errorf("perfassert: Precision(%v): want a relative error in (0,1)", relErr)
		}
		c.precision, c.precisionSet = relErr, true
	})
}

// CaptureProfile runs fn repeatedly under the runtime/pprof CPU profiler
// until its profile holds MinSamples samples in MinRuns runs and the shares
// of its heaviest functions are as precise as Precision asks, or until
// MaxDuration has passed, and returns the parsed profile. fn runs on the
// calling goroutine under a pprof label of its own, which goroutines it
// starts inherit; only samples carrying that label are kept, so parallel
// tests, other captures and the garbage collector's background work stay out
// of the profile, and perfassert's own frames are trimmed from its stacks.
// (Code under test that sets pprof labels from a context of its own, with
// pprof.Do or pprof.SetGoroutineLabels, replaces the capture's label while
// they hold: those samples are not in the capture.)
//
// Captures in parallel tests (t.Parallel) share one profiling session: the
// profiler runs in rounds while any capture is active and each round's
// samples are split among the captures by label. A capture is made of runs
// of the same number of iterations of fn, each labelled meta.LabelRun by the
// capturing goroutine, so that runs do not depend on when rounds end; the
// profile's hotbudget record (internal/meta, read by ProfileName, Iterations
// and MatchBaseline) lists the runs with their iterations of fn. While the
// test runs, the record and the allocations are kept beside the returned
// profile and the checks take them from there; they are also written in its
// comments, so that a capture saved with p.Write carries them.
//
// When the CPU profiler is already running outside perfassert (as under
// `go test -cpuprofile`), CaptureProfile runs nothing and returns an error
// wrapping ErrProfilerBusy at once: a process has one CPU profile and its
// data cannot be shared.
//
// After its CPU samples, a capture records fn's allocations exactly (unless
// NoAllocs, or in a process MatchBaseline runs to record a baseline or
// confirm a comparison, whose CPU samples it wants: a baseline keeps the
// allocations of the process that recorded it): it runs fn again, up to 1000 times or for about 150ms (a
// quarter of MaxDuration at most; fn runs at least once), with
// runtime.MemProfileRate = 1, restored after, so that every allocation is
// recorded with its stack, and keeps the allocations whose stacks go
// through fn on the calling goroutine; what parallel tests allocate
// meanwhile is not counted. The garbage collector is off during the phase
// (up to 1GiB more heap), so that a sync.Pool fn uses is not emptied a
// different number of times in each capture. Allocations of goroutines fn starts are not
// counted either (heap profiles carry no labels to tell them by). This
// phase runs alone: captures taking CPU samples finish first, and captures
// that start meanwhile wait, since recording every allocation slows them.
// (Under `go test -memprofile` the test's own heap profile then mixes the
// two rates.) The allocations travel with the returned profile, which
// keeps its CPU samples as they are: AllocProfile reads them, MaxAllocs,
// MaxAllocBytes and their total variants check them per iteration, and
// MatchBaseline and NoRegression judge them exactly (CheckAllocs). The
// runtime counts tiny allocations (under 16 bytes, without pointers) by
// the 16-byte blocks they share, as its heap profiles do, under the
// allocation that opened each block: those move between functions as
// their neighbours change, and are shown but not judged per function
// (diff.AllocFunc.Blocks16).
func CaptureProfile(fn func(), opts ...CaptureOption) (*profile.Profile, error) {
	p, _, err := captureProfile(fn, opts)
	return p, err
}

// captureStats is what a capture cost, for Capture's log line.
type captureStats struct {
	samples    int64
	runs       int
	wall, cpu  time.Duration
	iterations float64
	reason     string
	top        string
	rse        float64
	lost       string // the lost-samples warning, if samples were lost
	sampler    string // which sampler ran, at what rate (samplerText)
	period     string // why a perf capture is judged at a longer period than the perf event's
	checked    string // what the check of the perf sampler found, or why it was not used
	fellBack   bool   // runtime/pprof sampled because the perf sampler was refused or wrong
}

func captureProfile(fn func(), opts []CaptureOption) (*profile.Profile, *captureStats, error) {
	c := captureConfig{minSamples: defaultMinSamples, maxDuration: defaultMaxDuration, hz: defaultRate,
		minRuns: defaultMinRuns, precision: defaultPrecision, name: "capture"}
	for _, o := range opts {
		if o != nil {
			o.applyCapture(&c)
		}
	}
	if c.err != nil {
		return nil, nil, c.err
	}
	if fn == nil {
		return nil, nil, errors.New("perfassert: Capture of a nil function")
	}
	if c.exact {
		return nil, nil, errors.New("perfassert: Instructions counts in a child process of the test binary: use Capture, with the test's *testing.T")
	}
	if _, _, ok := exactChild(); ok {
		return nil, nil, errNotCounted // time is not measured under valgrind
	}
	if err := resolveSampler(&c); err != nil {
		return nil, nil, err
	}
	// A baseline is recorded once and compared with every later capture:
	// it gets recordScale times the samples and time, so that the
	// comparison's error is mostly the later capture's.
	scale := int64(1)
	if updating() && !multiProcess() {
		scale = recordScale
	}
	if c.sampler == samplerPerf {
		// Thousands of samples a second: precise shares within the time
		// a test can spend.
		if !c.minSamplesSet {
			c.minSamples = perfMinSamples
		}
		if !c.precisionSet {
			c.precision = perfPrecision
		}
		if !c.maxDurationSet {
			c.maxDuration = perfMaxDuration
		}
	}
	if !c.minSamplesSet {
		c.minSamples *= scale
	}
	if c.sampler == samplerPerf {
		// Goroutines the function starts are sampled by runtime/pprof at
		// c.hz: the capture lasts for childPeriods of its periods at
		// least, so that a goroutine doing a fair share of the work is
		// seen.
		c.minSamples = max(c.minSamples, int64(math.Ceil(childPeriods*c.sampleHz()/float64(c.hz))))
	}
	if !c.maxDurationSet {
		c.maxDuration *= time.Duration(scale)
	}
	s := &session{cfg: c, fn: fn, fnName: funcName(fn),
		verdict: make(chan bool, 1), admitted: make(chan error, 1), finished: make(chan struct{})}
	if err := s.sampleCPU(); err != nil {
		return nil, nil, err
	}
	p, rec, err := s.assemble()
	if err != nil {
		return nil, nil, err
	}
	facts := meta.Facts{Record: rec, HasRecord: true}
	checked := ""
	if c.sampler == samplerPerf && c.checked != nil {
		// The capture's own check: a sampler found wrong now is not
		// judged; the capture is made again with runtime/pprof.
		if r, wrong, ok := checkedAfter(); wrong != nil {
			return captureProfile(fn, append(slices.Clone(opts), redoWith(misattributed{r: wrong, during: true})))
		} else if ok {
			checked = fmt.Sprintf("perf sampler checked before and after: within %.1f points of the thread's CPU clock (%.1f allowed, %d samples)", math.Abs(r.Err), r.Limit, r.Samples)
		}
	}
	if !c.noAllocs && !recordingChild() {
		// Then the function's allocations, exactly (see captureAllocs).
		ap, err := captureAllocs(fn, s.fnName, c.name, c.maxDuration)
		if err != nil {
			return nil, nil, err
		}
		facts.Allocs = ap
	}
	// The capture as a typed value, from here to its checks; its
	// comments are its saved form (comments.go).
	if err := keepCapture(p, facts); err != nil {
		return nil, nil, err
	}
	// The samples and the CPU time they stand for: the whole profile's
	// table, as every check reads it.
	t, err := analysis.Functions(p)
	if err != nil {
		return nil, nil, fmt.Errorf("perfassert: the capture's profile: %w", err)
	}
	if t.Unit != analysis.UnitTime {
		return nil, nil, fmt.Errorf("perfassert: the capture's profile measures %s, not CPU time", t.SampleType)
	}
	st := &captureStats{samples: t.TotalSamples, wall: time.Duration(p.DurationNanos),
		cpu: time.Duration(t.Total), reason: s.reason, top: s.top, rse: s.rse, checked: checked}
	if r := c.redo.r; r != nil {
		st.checked = fmt.Sprintf("redone with runtime/pprof: the perf sampler's check after the first try found %s %+.1f points off its measured share (%.1f allowed)", r.Worst, r.Err, r.Limit)
	}
	st.fellBack = c.sampler == samplerPprof && c.refused != nil
	for _, r := range rec.Runs {
		st.iterations += r.Work
	}
	st.runs = len(rec.Runs)
	st.lost = rec.LostSamplesWarning()
	if s.periodBy != "" {
		// Said, since it costs the comparison power: judged at
		// runtime/pprof's period, a function's count of samples is a
		// twentieth of the perf sampler's.
		st.period = fmt.Sprintf("judged at a sample period of %s, not %s: runtime/pprof's samples of goroutines the function started (%s among them) stand for that much time each", textfmt.Duration(time.Duration(p.Period)), textfmt.Duration(perfPeriod), suggest.ShortName(s.periodBy))
	}
	delivered := 0.0
	if s.perf != nil {
		s.mu.Lock()
		if s.perf.cpu > 0 {
			delivered = float64(s.perf.n) / s.perf.cpu.Seconds()
		}
		if s.perf.lost > 0 {
			st.lost = strings.TrimPrefix(st.lost+"; ", "; ") + fmt.Sprintf("the perf ring buffer overflowed: %d samples lost", s.perf.lost)
		}
		s.mu.Unlock()
	}
	st.sampler = samplerText(c, delivered)
	return p, st, nil
}

// sampleCPU takes the capture's CPU samples: the runs of fn under the
// coordinator's profiler, with no allocation phase running meanwhile
// (memPhase).
func (s *session) sampleCPU() error {
	memPhase.RLock()
	defer memPhase.RUnlock()
	if err := coord.join(s); err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned { // fn panicked or called runtime.Goexit (t.FailNow)
			coord.leave(s)
		}
	}()
	pprof.Do(context.Background(), pprof.Labels(captureLabel, s.id, meta.LabelRun, "1"), s.run)
	returned = true
	<-s.finished
	if s.err != nil {
		return s.err
	}
	if s.perfErr != nil {
		return fmt.Errorf("perfassert: the perf sampler on the capturing thread: %w", s.perfErr)
	}
	return nil
}

// String is Capture's log line: what the capture holds and what it cost.
func (st *captureStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples in %d runs, %s wall, %s CPU, %.0f iterations", st.samples, st.runs, textfmt.Duration(st.wall), textfmt.Duration(st.cpu), st.iterations)
	if st.iterations > 0 {
		fmt.Fprintf(&b, " (%s CPU each)", textfmt.Duration(time.Duration(float64(st.cpu)/st.iterations)))
	}
	fmt.Fprintf(&b, "; stopped: %s", st.reason)
	if st.top != "" && !math.IsInf(st.rse, 0) {
		fmt.Fprintf(&b, ", share of %s known to ±%.1f%%", suggest.ShortName(st.top), st.rse*100)
	}
	if st.lost != "" {
		fmt.Fprintf(&b, "; warning: %s", st.lost)
	}
	if st.period != "" {
		fmt.Fprintf(&b, "; %s", st.period)
	}
	if st.checked != "" {
		fmt.Fprintf(&b, "; %s", st.checked)
	}
	if v := st.visible(); v != "" {
		fmt.Fprintf(&b, "; %s", v)
	}
	return b.String()
}

// Iterations returns how many times Capture ran the function profiled in p
// (the work of the runs in its hotbudget record, rounded), for per-iteration
// limits (PerIteration); ok is false when p records no iteration count.
func Iterations(p *profile.Profile) (n int64, ok bool) {
	w, ok := iterations(p)
	return int64(math.Round(w)), ok
}

// iterations is the work of p's runs, when p counts it in iterations.
func iterations(p *profile.Profile) (float64, bool) {
	return capturedOf(p).iterations()
}

// countSamples is the number of samples of p: the sum of its count value
// (samples/count in Go CPU profiles) over all samples, as the TotalSamples
// of its table (analysis.Functions); 0 when p has no count value, or no time
// value beside it.
func countSamples(p *profile.Profile) int64 {
	_, ci, _, err := pbuild.ValueIndex(p, "")
	if err != nil || ci < 0 {
		return 0
	}
	var n int64
	for _, s := range p.Sample {
		if s != nil && len(s.Value) > ci {
			n += s.Value[ci]
		}
	}
	return n
}

// Capture is CaptureProfile for tests: it names the profile after the test
// and reports errors to t. When the CPU profiler is busy (go test
// -cpuprofile) and t can skip (testing.TB can), the test is skipped with a
// message saying why, since its assertions cannot be checked in this run;
// otherwise the error is reported with Errorf and Capture returns nil (on
// which every assertion fails rather than passes). When t has Logf, Capture
// logs what the capture holds and cost (shown by go test -v):
//
//	perfassert.Capture: capture of TestParse: 204 samples in 10 runs, 2.06s wall, 2.04s CPU, 1630 iterations (1.25ms CPU each); stopped: precise enough, share of parse.normalizeKey known to ±7.9%
func Capture(t TestingT, fn func(), opts ...CaptureOption) *profile.Profile {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	name := "capture"
	if n, ok := t.(namer); ok {
		name = "capture of " + n.Name()
	}
	opts = append([]CaptureOption{CaptureName(name)}, opts...)
	if exactAsked(opts) {
		return captureInstructions(t, fn, opts)
	}
	p, st, err := captureProfile(fn, opts)
	if errors.Is(err, errNotCounted) {
		return nil // a child process counting another capture of the test
	}
	if err != nil {
		if errors.Is(err, ErrProfilerBusy) {
			if s, ok := t.(interface{ Skipf(string, ...any) }); ok {
				s.Skipf("perfassert.Capture: %s; this test's profile assertions need the profiler to themselves: run it without -cpuprofile", strings.TrimPrefix(err.Error(), "perfassert: "))
				return nil
			}
		}
		t.Errorf("perfassert.Capture: %s", strings.TrimPrefix(err.Error(), "perfassert: "))
		return nil
	}
	samplerNote.Do(func() { logf(t, "perfassert.Capture: %s", st.sampler) })
	logf(t, "perfassert.Capture: %s: %s", name, st)
	return p
}
