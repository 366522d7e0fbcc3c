package perfassert

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// ErrProfilerBusy is returned by CaptureProfile when the process's CPU
// profiler is already running outside perfassert: Go allows one CPU profile
// at a time, and `go test -cpuprofile` holds it for the whole test binary.
var ErrProfilerBusy = errors.New("the CPU profiler is already in use (go test -cpuprofile, or another pprof.StartCPUProfile in this process)")

// A CaptureOption changes how Capture profiles.
type CaptureOption interface{ applyCapture(*captureConfig) }

type captureConfig struct {
	minSamples  int64
	maxDuration time.Duration
	hz          int
	name        string
	err         error
}

type captureFunc func(*captureConfig)

func (f captureFunc) applyCapture(c *captureConfig) { f(c) }

// Default capture settings.
const (
	DefaultMinSamples  = 200
	DefaultMaxDuration = 5 * time.Second
	DefaultRate        = 100 // Hz, as runtime/pprof
)

// MinSamples sets how many CPU samples Capture collects before it stops
// (default 200: a function with 10% of them has a relative error near 22%).
func MinSamples(n int) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if n <= 0 {
			c.err = fmt.Errorf("perfassert: MinSamples(%d): want a positive count", n)
		}
		c.minSamples = int64(n)
	})
}

// MaxDuration bounds the wall time Capture spends running fn (default 5s).
// Capture stops there even with fewer samples than MinSamples; fn always
// runs at least once.
func MaxDuration(d time.Duration) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if d <= 0 {
			c.err = fmt.Errorf("perfassert: MaxDuration(%v): want a positive duration", d)
		}
		c.maxDuration = d
	})
}

// Rate sets the sampling rate in Hz (default 100, runtime/pprof's rate; at
// most 10000). The kernel may deliver fewer samples than asked above its
// timer frequency (often 250 Hz on Linux: 500 Hz gave about 230 samples a
// second here); each sample still counts one period, so absolute times then
// read low. Capture compares the samples with the CPU time the process used
// and adds a warning to the profile, shown in failure text, when they fall
// short. Any other rate is set with runtime.SetCPUProfileRate before
// profiling starts, which makes the runtime print "cannot set cpu profile
// rate until previous profile has finished" to stderr once per capture;
// the profile is nevertheless sampled at the requested rate and its Period
// says so.
func Rate(hz int) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		if hz <= 0 || hz > 10000 {
			c.err = fmt.Errorf("perfassert: Rate(%d): want 1..10000 Hz", hz)
		}
		c.hz = hz
	})
}

// CaptureName names the captured profile in failure text (default: "capture
// of " and the test's name, or "capture").
func CaptureName(name string) CaptureOption {
	return captureFunc(func(c *captureConfig) { c.name = name })
}

// captureMu serialises captures: the CPU profiler is process-wide, so
// parallel tests (t.Parallel) take turns. Samples of other goroutines that
// run meanwhile are in the profile too; select on function names.
var captureMu sync.Mutex

// iterationsComment records how many times Capture ran fn.
const iterationsComment = "hotbudget iterations: "

// buildComment records the build a capture ran in (see buildOf).
const buildComment = "hotbudget build: "

// buildOf describes this binary's build as far as it shapes a profile: the
// Go version, the platform, and "race" when the race detector is compiled
// in.
func buildOf() string {
	s := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if raceEnabled {
		s += " race"
	}
	return s
}

// capturedUnderRace reports whether p was captured by a binary built with
// the race detector, and whether p says at all (only captures do).
func capturedUnderRace(p *profile.Profile) (race, known bool) {
	for _, c := range p.Comments {
		if b, ok := strings.CutPrefix(c, buildComment); ok {
			return strings.HasSuffix(b, " race"), true
		}
	}
	return false, false
}

// Iterations returns how many times Capture ran the function profiled in p,
// for per-operation comparisons (diff.WithOps); ok is false when p was not
// made by Capture.
func Iterations(p *profile.Profile) (n int64, ok bool) {
	if p == nil {
		return 0, false
	}
	for _, c := range p.Comments {
		if s, found := strings.CutPrefix(c, iterationsComment); found {
			n, err := strconv.ParseInt(s, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// CaptureProfile runs fn repeatedly under the runtime/pprof CPU profiler
// until the profile holds MinSamples samples or MaxDuration has passed, and
// returns the parsed profile. The number of runs is recorded in the profile
// (see Iterations). Captures in one process take turns.
//
// When the CPU profiler is already running outside perfassert (as under
// `go test -cpuprofile`), CaptureProfile runs nothing and returns an error
// wrapping ErrProfilerBusy at once: a process has one CPU profile and its
// data cannot be shared.
func CaptureProfile(fn func(), opts ...CaptureOption) (*profile.Profile, error) {
	c := captureConfig{minSamples: DefaultMinSamples, maxDuration: DefaultMaxDuration, hz: DefaultRate, name: "capture"}
	for _, o := range opts {
		if o != nil {
			o.applyCapture(&c)
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	if fn == nil {
		return nil, errors.New("perfassert: Capture of a nil function")
	}
	captureMu.Lock()
	defer captureMu.Unlock()

	start := time.Now()
	cpu0, cpuOK := processCPU()
	var (
		merged     *profile.Profile
		samples    int64
		iterations int64
	)
	for {
		// Aim each round at the samples still missing, assuming fn keeps
		// one CPU busy, with a floor that keeps start/stop overhead small.
		need := c.minSamples - samples
		round := time.Duration(float64(need) / float64(c.hz) * 1.2 * float64(time.Second))
		round = max(round, 20*time.Millisecond)
		if left := c.maxDuration - time.Since(start); round > left {
			round = left
		}
		p, n, err := captureRound(fn, c.hz, round)
		if err != nil {
			return nil, err
		}
		iterations += n
		samples += countSamples(p)
		if merged == nil {
			merged = p
		} else if merged, err = profile.Merge([]*profile.Profile{merged, p}); err != nil {
			return nil, fmt.Errorf("perfassert: merging capture rounds: %w", err)
		}
		if samples >= c.minSamples || time.Since(start) >= c.maxDuration {
			break
		}
	}
	merged.Comments = []string{nameComment + c.name, iterationsComment + strconv.FormatInt(iterations, 10), buildComment + buildOf()}
	if cpu1, ok := processCPU(); ok && cpuOK {
		if w := lostSamples(sampledTime(merged), cpu1-cpu0); w != "" {
			merged.Comments = append(merged.Comments, warningPrefix+w)
		}
	}
	return merged, nil
}

// captureRound profiles fn, run at least once, for about d.
func captureRound(fn func(), hz int, d time.Duration) (*profile.Profile, int64, error) {
	var buf bytes.Buffer
	if hz != DefaultRate {
		// StartCPUProfile sets 100 Hz; a rate already set wins (and the
		// runtime complains on stderr). If the profiler is busy this is a
		// no-op for the running profile.
		runtime.SetCPUProfileRate(hz)
	}
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, 0, fmt.Errorf("perfassert: %w: %v", ErrProfilerBusy, err)
	}
	var n int64
	stopped := false
	defer func() {
		if !stopped { // fn panicked: leave the profiler free for others
			pprof.StopCPUProfile()
		}
	}()
	begin := time.Now()
	for n == 0 || time.Since(begin) < d {
		fn()
		n++
	}
	pprof.StopCPUProfile()
	stopped = true
	p, err := profile.Parse(&buf)
	if err != nil {
		return nil, 0, fmt.Errorf("perfassert: reading the captured profile: %w", err)
	}
	return p, n, nil
}

// warningPrefix marks a warning comment; the loaders and the analysis
// package read it back (internal/pbuild.WarningPrefix).
const warningPrefix = pbuild.WarningPrefix

// lostSamples returns a warning when a capture's samples account for much
// less CPU time than the process used: the kernel delivered fewer profiling
// signals than asked, as happens at rates above its timer frequency (often
// 250 Hz on Linux). Absolute times then read low; shares are unaffected.
func lostSamples(sampled, used time.Duration) string {
	if used < 50*time.Millisecond || float64(sampled) >= 0.7*float64(used) {
		return ""
	}
	return fmt.Sprintf(lostSamplesText+" %s of CPU time but the process used %s while capturing: samples were lost (a Rate above the kernel's timer frequency?), so absolute times read low; shares are unaffected",
		fmtDur(sampled), fmtDur(used))
}

// lostSamplesText starts the lost-samples warning; Check recognises it.
const lostSamplesText = "the samples account for"

// sampledTime is the CPU time the samples of a Go CPU profile stand for.
func sampledTime(p *profile.Profile) time.Duration {
	var d time.Duration
	for _, s := range p.Sample {
		if len(s.Value) > 1 {
			d += time.Duration(s.Value[1])
		}
	}
	return d
}

// countSamples sums the sample counts of p (its first value, samples/count
// in Go CPU profiles).
func countSamples(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}

// Capture is CaptureProfile for tests: it names the profile after the test
// and reports errors to t. When the CPU profiler is busy (go test
// -cpuprofile) and t can skip (testing.TB can), the test is skipped with a
// message saying why, since its assertions cannot be checked in this run;
// otherwise the error is reported with Errorf and Capture returns nil (on
// which every assertion fails rather than passes).
func Capture(t TestingT, fn func(), opts ...CaptureOption) *profile.Profile {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	name := "capture"
	if n, ok := t.(namer); ok {
		name = "capture of " + n.Name()
	}
	p, err := CaptureProfile(fn, append([]CaptureOption{CaptureName(name)}, opts...)...)
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
	return p
}
