package limits

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// How much headroom an absolute time limit needs (issue 32).
//
// A capture is made of runs (meta.Record.Runs, samples labelled
// meta.LabelRun), and the value a time limit checks is the capture's pooled
// value: the time of all runs over the work of all runs (PerIteration). The
// runs say how that value varies within the capture: the ratio estimator's
// standard error across runs, which holds the sampling noise and whatever
// moved from run to run. They cannot say how it varies between captures:
// the runs are consecutive stretches of one process, about a second and a
// half of the machine, while another capture runs in another process (its
// own memory layout, its garbage collector's pace) at another moment of
// the machine (other work on it, which comes and goes in minutes).
// Measured on a 2-core VM at load 13-19, eight functions of four workloads
// (docs/capture.md#headroom): captures in separate processes varied with a
// log SD of 0.13-0.21 beyond their own runs' error (0.06-0.18), which one
// capture cannot see; that is betweenFloor. Where a capture's runs move
// more than that (a machine noisier than the one measured), the spread
// between captures is how much the runs' whole time per iteration moved
// beyond its sampling noise, as a CV (robustly: excessCV): the eight
// functions moved between captures 0.8-1.5 times as much as that. It is
// read from all the runs' samples, not the function's alone, whose few
// samples a run would pass their own noise, and its clumps, for the
// machine's.
//
// A capture's value is taken as log-normal around the code's typical
// value, with log SD sigma = hypot(within, between). The limit suggested is
// value * exp((z99 + z95) * sigma): unless this capture came out among the
// lowest twentieth of captures, at most one capture in a hundred of
// unchanged code exceeds it (a 95%-confidence bound on the 99th
// percentile, sigma taken as known). A 90%-confidence bound failed 3 of
// 100 fresh captures of a 40-sample function whose reference capture came
// out low (docs/capture.md#headroom). The share of captures the limit
// actually checked would fail is the predictive estimate,
// 1 - Phi(ln(limit/value) / (sqrt 2 sigma)): the future capture and this
// one both vary.
const (
	// headroomMinRuns is the fewest runs whose spread is estimated (as
	// the capture's own precision estimate: session.precision).
	headroomMinRuns = 5
	// betweenFloor is the log SD between captures in separate processes
	// that a capture's runs do not show.
	betweenFloor = 0.20
	// z99 is the standard normal's 99th percentile, z95 its 95th.
	z99 = 2.3263
	z95 = 1.6449
)

// headroom is what a capture's runs say about how the value a time limit
// checks varies, and the limit that would hold.
type headroom struct {
	runs     int
	perWork  bool    // values are per unit of work (PerIteration)
	lo, hi   float64 // the runs' values: per unit of work, or each run's time
	cv       float64 // the runs' coefficient of variation
	within   float64 // relative standard error of the value within the capture
	between  float64 // log SD allowed between captures
	sigma    float64 // log SD of a capture's value
	value    float64 // the capture's value, from the runs
	suggest  time.Duration
	failRate float64 // of the limit checked, in captures of unchanged code
}

// estimateHeadroom estimates the headroom of a value made of runs: v[i] is
// the measured time of run i, w[i] its weight (its work, with PerIteration;
// else 1/len(v), so that the value is their sum), samples the samples
// behind all of them (0 for exact data: no sampling noise). all[i] is the
// time of all of run i's samples, allSamples their number: how much the
// runs moved beyond their sampling noise is read from them, so that a
// function with few samples a run does not take its own sampling noise
// for the machine's (nil all: from v). limit is the limit checked. ok is
// false with fewer than headroomMinRuns runs, or runs without weight.
func estimateHeadroom(v, w []float64, samples int64, all []float64, allSamples int64, limit time.Duration, perWork bool) (h headroom, ok bool) {
	r := len(v)
	if r < headroomMinRuns || len(w) != r {
		return headroom{runs: r}, false
	}
	var sv, sw float64
	for i := range v {
		if !(w[i] > 0) || v[i] < 0 {
			return headroom{runs: r}, false
		}
		sv += v[i]
		sw += w[i]
	}
	h = headroom{runs: r, perWork: perWork, value: sv / sw, lo: math.Inf(1), hi: math.Inf(-1)}
	if !(h.value > 0) {
		return h, false // nothing measured: nothing to scale
	}
	for i := range v {
		x := v[i] / w[i]
		if !perWork {
			x = v[i]
		}
		h.lo, h.hi = min(h.lo, x), max(h.hi, x)
	}
	rse := ratioRSE(v, w)
	h.cv = rse * math.Sqrt(float64(r))
	h.within = rse
	if samples > 0 {
		// Sampling noise alone: a Poisson count of samples, a relative
		// variance of 1/samples. The runs cannot show less noise than
		// that.
		h.within = max(rse, 1/math.Sqrt(float64(samples)))
	}
	if len(all) != r {
		all, allSamples = v, samples
	}
	h.between = max(betweenFloor, excessCV(all, w, allSamples))
	h.sigma = math.Hypot(h.within, h.between)
	h.suggest = roundUp(h.value * math.Exp((z99+z95)*h.sigma))
	h.failRate = 1
	if limit > 0 {
		z := math.Log(float64(limit)/h.value) / (math.Sqrt2 * h.sigma)
		h.failRate = 0.5 * math.Erfc(z/math.Sqrt2)
	}
	return h, true
}

// ratioRSE is the relative standard error of sum(v)/sum(w) across the
// runs (the ratio estimator's, as the capture's own precision estimate);
// the runs' coefficient of variation is it times the root of their
// number.
func ratioRSE(v, w []float64) float64 {
	var sv, sw, ss float64
	for i := range v {
		sv += v[i]
		sw += w[i]
	}
	x := sv / sw
	if !(x > 0) {
		return 0
	}
	for i := range v {
		d := v[i] - x*w[i]
		ss += d * d
	}
	r := float64(len(v))
	return math.Sqrt(r/(r-1)*ss) / sw / x
}

// excessCV is how much the runs' values per unit of weight moved beyond
// their sampling noise, as a coefficient of variation: the spread of their
// logarithms, by the median absolute deviation (scaled to a normal SD) so
// that a run unlike the others, as the first often is (caches, pools and
// lazily built tables warming up, in every capture alike), does not pass
// for a noisy machine; less the spread of a Poisson count of a run's
// share of the samples (none for exact data, samples 0).
func excessCV(v, w []float64, samples int64) float64 {
	var logs []float64
	var sv, sw float64
	for i := range v {
		sv += v[i]
		sw += w[i]
		if v[i] > 0 && w[i] > 0 {
			logs = append(logs, math.Log(v[i]/w[i]))
		}
	}
	if len(logs) < headroomMinRuns {
		return 0
	}
	mad := 1.4826 * stats.Median(absDev(logs, stats.Median(logs)))
	if samples <= 0 {
		return mad
	}
	// A run of weight w holds about samples*w/sw samples.
	var poisson float64
	for i := range v {
		poisson += sw / (w[i] * float64(samples))
	}
	poisson /= float64(len(v))
	return math.Sqrt(max(0, mad*mad-poisson))
}

func absDev(x []float64, m float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v - m)
	}
	return out
}

// roundUp rounds ns up to two significant digits, so that the limit
// suggested reads as one a person would write.
func roundUp(ns float64) time.Duration {
	if !(ns > 0) {
		return 0
	}
	scale := math.Pow(10, math.Floor(math.Log10(ns))-1)
	return time.Duration(math.Ceil(ns/scale-1e-9) * scale)
}

// runHeadroom measures the judged functions in each run of the Checker's
// one profile and estimates the headroom of the value r holds; nil when
// the profile has no runs to tell it by, or tooFew with fewer than
// headroomMinRuns. work is true with PerIteration.
func (ck *Checker) runHeadroom(r *Result, sel analysis.Selection, judged func(string) bool, self, perWork bool) (h *headroom, tooFew int, err error) {
	runs, err := ck.runIndexes()
	if err != nil || len(runs) < 2 {
		return nil, 0, err
	}
	if len(runs) < headroomMinRuns {
		return nil, len(runs), nil
	}
	v := make([]float64, len(runs))
	w := make([]float64, len(runs))
	all := make([]float64, len(runs))
	var allSamples int64
	for i, x := range runs {
		t, err := ck.runTable(i, x, sel)
		if err != nil {
			return nil, 0, err
		}
		all[i] = float64(t.Total)
		allSamples += t.TotalSamples
		stacks, err := x.Through(t, judged, self, sel)
		if err != nil {
			return nil, 0, fmt.Errorf("perfassert: %w", err)
		}
		for _, s := range stacks {
			v[i] += float64(s.Value)
		}
		w[i] = 1 / float64(len(runs))
		if perWork {
			if w[i], _, err = x.Work(); err != nil {
				return nil, 0, fmt.Errorf("perfassert: %w", err)
			}
		}
	}
	var samples int64
	if !r.Exact && ck.counted(sel.SampleType) {
		samples, allSamples = max(r.Samples, 1), max(allSamples, 1)
	} else {
		allSamples = 0
	}
	e, ok := estimateHeadroom(v, w, samples, all, allSamples, r.Limit.Time, perWork)
	if !ok {
		return nil, 0, nil
	}
	return &e, 0, nil
}

// runIndexes is the runs of the Checker's profile, each an index (nil for
// several profiles: their runs' labels are each profile's own, and pooled
// they are no longer one capture's runs; nil too for runs recorded in
// several processes, a golden baseline's, whose value is not one
// capture's).
func (ck *Checker) runIndexes() ([]*analysis.Index, error) {
	ck.runsOnce.Do(func() {
		if len(ck.records) != 1 || len(ck.records[0].Runs) < 2 {
			return
		}
		for _, run := range ck.records[0].Runs {
			if run.Process > 1 {
				return
			}
		}
		ck.runs, ck.runsErr = ck.index.Runs()
		if ck.runsErr != nil {
			ck.runsErr = fmt.Errorf("perfassert: %w", ck.runsErr)
		}
	})
	return ck.runs, ck.runsErr
}

// runTable is run i's table under sel, made once per selection.
func (ck *Checker) runTable(i int, x *analysis.Index, sel analysis.Selection) (*analysis.Table, error) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	k := sel.String()
	if ts, ok := ck.runTables[k]; ok && ts[i] != nil {
		return ts[i], nil
	}
	t, err := x.Table(sel)
	if err != nil {
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	if ck.runTables == nil {
		ck.runTables = map[string][]*analysis.Table{}
	}
	if ck.runTables[k] == nil {
		ck.runTables[k] = make([]*analysis.Table, len(ck.runs))
	}
	ck.runTables[k][i] = t
	return t, nil
}

// headroomText is the result's lines on how its value varies and the
// limit that would hold ("" when the profile has no runs to tell it by).
func (r *Result) headroomText() string {
	// Captures (perfassert.Capture's runs of iterations) are named so; a
	// profile of other runs (hotbudget record's) is a profile.
	what, capture := "profile", r.WorkUnit == string(meta.WorkIteration)
	if capture {
		what = "capture"
	}
	if r.tooFewRuns > 0 {
		s := fmt.Sprintf("headroom: the %s has %d runs, too few to tell how its value varies (%d are needed", what, r.tooFewRuns, headroomMinRuns)
		if capture {
			s += "; a longer MaxDuration, or more MinSamples, give a capture more"
		}
		return s + ")"
	}
	h := r.headroom
	if h == nil {
		return ""
	}
	var b strings.Builder
	each := " each"
	if h.perWork {
		each = " per " + r.workWord()
	}
	fmt.Fprintf(&b, "runs: the %s's %d runs measured %s-%s%s (CV %s), so its value is known to ±%s", what, h.runs, textfmt.Nanos(h.lo), textfmt.Nanos(h.hi), each, pct(h.cv), pct(h.within))
	if h.within > h.between && capture {
		b.WriteString(" (more samples narrow it: Capture's MinSamples)")
	}
	fmt.Fprintf(&b, "; %ss in separate processes differ by a further ±%s (", what, pct(h.between))
	if h.between > betweenFloor {
		fmt.Fprintf(&b, "as much as the %s's runs moved beyond their sampling noise", what)
	} else {
		b.WriteString("as measured between processes on a loaded 2-core VM")
	}
	fmt.Fprintf(&b, "), which one %s cannot see\n", what)
	fmt.Fprintf(&b, "headroom: a limit of %s (%.2f times the value) would hold 99 times in 100 on this machine; at %s, %s (docs/capture.md#headroom)",
		textfmt.Duration(h.suggest), float64(h.suggest)/h.value, r.Limit, failWords(h.failRate, what))
	return b.String()
}

// failWords says how often profiles of unchanged code (captures, what
// names them) would fail a limit.
func failWords(p float64, what string) string {
	switch {
	case p < 0.01:
		return fmt.Sprintf("fewer than 1 %s in 100 of unchanged code would fail", what)
	case p < 0.015:
		return fmt.Sprintf("about 1 %s in 100 of unchanged code would fail", what)
	}
	return fmt.Sprintf("about %.0f %ss in 100 of unchanged code would fail", math.Min(99, math.Round(100*p)), what)
}

// pct is a relative spread in whole percent ("22%"), with one decimal
// below 10%.
func pct(f float64) string {
	if f < 0.1 {
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}
