// Package samplercheck measures whether the Linux cpu-clock perf event
// gives each function the share of CPU time it really took, on the machine
// it runs on, before hotbudget trusts it.
//
// Both of hotbudget's perf samplers (perfassert's event on the capturing
// thread and `hotbudget record`'s inherited event) stand on the kernel's
// cpu-clock timer. On some virtual machines of one kind its samples were
// seen to misattribute time by up to 2x in code that sleeps and wakes
// around a goroutine handoff, while on others they agree with a direct
// measurement within a point or two (docs/samplers.md has the study). So
// the samplers are checked, once per boot of the machine, against a
// workload that measures itself: Check runs functions of different
// instruction mixes (an ALU loop with an inlined callee, a loop calling a
// frameless leaf, a chain of divisions), preceded in each iteration by a
// handoff to a goroutine on another thread that the iteration waits for,
// and times every call with the thread's CPU clock (the reference), while
// a cpu-clock event samples the thread at the period the sampler uses.
// Each function's sampled share is compared with its reference share; a
// difference beyond what the sample count explains (Bound) marks the
// machine's samples as misattributed, and the callers fall back to
// runtime/pprof, whose timer signals agreed with the reference where perf
// events did not.
package samplercheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hotbudget/hotbudget/internal/atomicfile"
)

// Group is one timed function of the workload.
type Group struct {
	Name string
	// Ref is its share of the workload's CPU time, measured by the
	// thread's CPU clock around every call; Sampled is its share of the
	// samples that fell in the workload's functions.
	Ref, Sampled float64
}

// Result is what one check measured.
type Result struct {
	Period  time.Duration // the sampling period checked
	Samples int64         // samples in the workload's functions
	Groups  []Group       // by name
	// Worst is the group whose sampled share is furthest from its
	// reference, relative to Bound.
	Worst string
	// Err is Worst's sampled share minus its reference, in percentage
	// points; Limit the largest difference the check allows it.
	Err, Limit float64
	Boot       string    // the boot the result holds for
	When       time.Time // when it was measured
}

// Misattributes reports whether the samples gave some function a share
// beyond Limit of its measured share.
func (r *Result) Misattributes() bool { return math.Abs(r.Err) > r.Limit }

// String says what the check found, in one line.
func (r *Result) String() string {
	var parts []string
	for _, g := range r.Groups {
		parts = append(parts, fmt.Sprintf("%s %.1f%% sampled, %.1f%% measured", g.Name, 100*g.Sampled, 100*g.Ref))
	}
	verdict := "agree with"
	if r.Misattributes() {
		verdict = "disagree with"
	}
	return fmt.Sprintf("cpu-clock samples every %s %s the thread's CPU clock on a workload of known cost: %s (furthest: %s %+.1f points, %.1f allowed with %d samples)",
		r.Period, verdict, strings.Join(parts, "; "), r.Worst, r.Err, r.Limit, r.Samples)
}

// Bound is the largest difference, in percentage points, allowed between
// a sampled share p of n samples and its measured share: 3 points for what
// a sampler may do at the edges of a function (the study measured at most
// 1.4 on machines whose samples agree) plus four standard errors of the
// sampled proportion.
func Bound(p float64, n int64) float64 {
	if n <= 0 {
		return math.Inf(1)
	}
	return 3 + 4*100*math.Sqrt(p*(1-p)/float64(n))
}

// Judge compares reference CPU times and sample counts per group and fills
// a Result (Period, Boot and When left to the caller).
func Judge(ref map[string]time.Duration, samples map[string]int64) *Result {
	r := &Result{}
	var refSum time.Duration
	for _, v := range ref {
		refSum += v
	}
	for name := range ref {
		r.Samples += samples[name]
	}
	names := make([]string, 0, len(ref))
	for name := range ref {
		names = append(names, name)
	}
	sort.Strings(names)
	worst := -1.0
	for _, name := range names {
		g := Group{Name: name}
		if refSum > 0 {
			g.Ref = float64(ref[name]) / float64(refSum)
		}
		if r.Samples > 0 {
			g.Sampled = float64(samples[name]) / float64(r.Samples)
		}
		r.Groups = append(r.Groups, g)
		err := 100 * (g.Sampled - g.Ref)
		limit := Bound(g.Ref, r.Samples)
		if q := math.Abs(err) / limit; q > worst {
			worst, r.Worst, r.Err, r.Limit = q, name, err, limit
		}
	}
	return r
}

// ErrNotChecked is returned where the check cannot run: not on Linux, or
// perf events refused (the samplers are not used there anyway).
var ErrNotChecked = errors.New("samplercheck: perf events cannot be checked here")

// ErrRace is returned under the race detector, whose instrumentation
// moves time into functions of its own: the samples charge it to them,
// the reference to the workload's functions, so the check would fail
// every machine. It matches ErrNotChecked; nothing is kept.
var ErrRace = fmt.Errorf("%w: the race detector is on", ErrNotChecked)

// Env names the environment variable that turns the check off ("off"):
// the samplers then trust perf events as they did before it.
const Env = "HOTBUDGET_SAMPLER_CHECK"

// Cached returns the check's result for period on this boot of the
// machine: read from the user's cache directory when a process measured
// it before (for this boot, this period), else measured now (about a
// second of CPU time) and kept there. Processes of one test run share it;
// a reboot, or another machine, measures again. Under the race detector it
// returns ErrRace.
func Cached(period time.Duration) (*Result, error) {
	if raceEnabled {
		// Not even a result kept by a process without the race detector:
		// under it the workload's reference is what the check cannot trust.
		return nil, ErrRace
	}
	mu.Lock()
	defer mu.Unlock()
	if r, ok := memo[period]; ok {
		return r, nil
	}
	boot := bootID()
	path := cachePath(boot, period)
	if path != "" {
		if b, err := os.ReadFile(path); err == nil {
			var r Result
			if json.Unmarshal(b, &r) == nil && r.Boot == boot && r.Period == period && len(r.Groups) > 0 {
				memo[period] = &r
				return &r, nil
			}
		}
	}
	r, err := Check(period)
	if err != nil {
		return nil, err
	}
	r.Boot = boot
	memo[period] = r
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			atomicfile.Write(path, func(f *os.File) error { return json.NewEncoder(f).Encode(r) })
		}
	}
	return r, nil
}

var (
	mu   sync.Mutex
	memo = map[time.Duration]*Result{}
)

// cachePath is where a result of this boot for period is kept: under the
// user's cache directory, or the temporary directory when there is none.
func cachePath(boot string, period time.Duration) string {
	if boot == "" {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "hotbudget", fmt.Sprintf("samplercheck-v%d-%s-%d.json", cacheVersion, boot, period.Microseconds()))
}

// cacheVersion names the check's workload and bound in the cache: a
// hotbudget whose check differs does not read another's results.
const cacheVersion = 1

// bootID names this boot of the machine (Linux's random boot id).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
