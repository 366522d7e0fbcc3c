// Package samplercheck measures whether the Linux cpu-clock perf event
// gives each function the share of CPU time it really took, on the machine
// it runs on and at the time it is used, before hotbudget trusts it.
//
// Both of hotbudget's perf samplers (perfassert's event on the capturing
// thread and `hotbudget record`'s inherited event) stand on the kernel's
// cpu-clock timer. On some virtual machines its samples were seen to
// misattribute time by up to 2x, and on one the check passed a minute
// after boot and failed twenty minutes later, while on others they agree
// with a direct measurement within a point or two (docs/samplers.md has
// the study). So the samplers are checked while they are used: a probe
// runs functions of different instruction mixes (an ALU loop with an
// inlined callee, a loop calling a frameless leaf, a chain of divisions),
// preceded in each iteration by a handoff to a goroutine on another
// thread that the iteration waits for, and times every call with the
// thread's CPU clock (the reference), while a cpu-clock event samples the
// thread at the period the sampler uses. Each function's sampled share is
// compared with its reference share; a difference beyond what the sample
// count explains (Bound) marks the samples as misattributed, and the
// callers use runtime/pprof, whose timer signals agreed with the
// reference where perf events did not. Recent judges the newest probes
// (made within Window) before a capture, Again a probe made after it.
package samplercheck

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
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
	When       time.Time // when its newest probe was measured
	Probes     int       // the probes pooled in it
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
	return fmt.Sprintf("cpu-clock samples every %s %s the thread's CPU clock on a workload of known cost: %s (furthest: %s %+.1f points, %.1f allowed with %d samples%s)",
		r.Period, verdict, strings.Join(parts, "; "), r.Worst, r.Err, r.Limit, r.Samples, r.probes())
}

// probes says how many probes a pooled result holds.
func (r *Result) probes() string {
	if r.Probes <= 1 {
		return ""
	}
	return fmt.Sprintf(" of %d probes", r.Probes)
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
// a Result (Period, When and Probes left to the caller).
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
// the samplers then trust perf events as they did before it. Biased
// simulates a wrong sampler.
const Env = "HOTBUDGET_SAMPLER_CHECK"

// Tally is what one probe counted: the CPU time of each group of the
// workload by the thread's clock, and the samples whose innermost frame
// was in it. Tallies of one period add up (Pool).
type Tally struct {
	Period  time.Duration
	Ref     map[string]time.Duration
	Samples map[string]int64
	When    time.Time
}

// Pool judges the tallies together (nil when there are none).
func Pool(ts []*Tally) *Result {
	if len(ts) == 0 {
		return nil
	}
	ref := map[string]time.Duration{}
	samples := map[string]int64{}
	var when time.Time
	for _, t := range ts {
		for k, v := range t.Ref {
			ref[k] += v
		}
		for k, v := range t.Samples {
			samples[k] += v
		}
		if t.When.After(when) {
			when = t.When
		}
	}
	r := Judge(ref, samples)
	r.Period, r.When, r.Probes = ts[0].Period, when, len(ts)
	return r
}

// count is the tally's samples in the workload's groups.
func (t *Tally) count() int64 {
	var n int64
	for k := range t.Ref {
		n += t.Samples[k]
	}
	return n
}

// Check probes now, at the given sampling period, for CheckSamples
// periods of CPU time and judges the probe alone (see the package
// comment).
func Check(period time.Duration) (*Result, error) {
	t, err := Probe(period, CheckSamples)
	if err != nil {
		return nil, err
	}
	return Pool([]*Tally{t}), nil
}
