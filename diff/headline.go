package diff

import (
	"fmt"
	"math"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Headline is the verdict on the whole profile: the program's time per
// unit of work. Per-function shares cannot see a program that got slower
// as a whole (every share stays put), so the gate also asks whether the
// time per unit of work grew. It is judged when the work is known to be
// comparable: per iteration of a perfassert capture, per benchmark
// operation (both recorded in the profile), per operation with WithOps, or
// per run when the caller declares both sides did the same work
// (WithSameWork, --same-work).
type Headline struct {
	// Judged is false when the work per run is unknown; Reason says why
	// and how to declare it. The change is still measured.
	Judged bool   `json:"judged"`
	Reason string `json:"reason,omitempty"`
	// Per names the unit of work: "iteration", "op", "run".
	Per string `json:"per"`
	// Base and Head are the time (without idle time) per unit of work,
	// in the report's unit (Side.Unit; nanoseconds for a time):
	// geometric means over runs.
	Base float64 `json:"base"`
	Head float64 `json:"head"`
	// Relative is Head/Base − 1; P the one-sided p-value in the direction
	// of the change.
	Relative float64 `json:"relative"`
	P        float64 `json:"p"`
	// Q is P adjusted over the headlines of several comparisons judged
	// together (CompareEach); 0 when judged alone.
	Q       float64 `json:"q,omitempty"`
	Test    string  `json:"test"`
	Verdict Verdict `json:"verdict"`
	// MinDetectable is the smallest slowdown the runs given detect with
	// 80% probability; RunsNeeded the runs a side that would detect the
	// minimum change.
	MinDetectable float64 `json:"min_detectable"`
	RunsNeeded    int     `json:"runs_needed"`

	unit string // of Base and Head: Side.Unit
	idle bool   // some run had idle time, left out of Base and Head
}

// floorHeadline is the run-to-run dispersion of a whole program's time
// assumed with one run a side (a 10% coefficient of variation), where the
// runs' own spread cannot be seen. Measured: identical runs of the verdict
// benchmark's Go programs (testdata/verdict, 10 runs each, six sets)
// differ in CPU time by a standard deviation of 4-9% of the log, and now
// and then by 20% (a first run); sampled at 2 kHz, where sampling noise no
// longer hides it, a 5% floor failed 4 of 20 one-a-side comparisons of
// identical runs in both perf-event sets, 10% none and one.
const floorHeadline = 0.01

// minHeadlineSamples is the fewest samples each run must hold for the
// headline to be judged from one run a side: with fewer, sampling noise
// alone is over 7% of the time per unit of work.
const minHeadlineSamples = 200

// headline judges the time per unit of work.
func (s *engine) headline(b, h *side) Headline {
	hl := Headline{P: 1, Test: "none", Verdict: Unchanged}
	runs := append(append([]*run(nil), b.runs...), h.runs...)
	head := make([]bool, len(runs))
	for j := len(b.runs); j < len(runs); j++ {
		head[j] = true
	}
	work := make([]float64, len(runs))
	units := map[string]bool{}
	known := true
	for j, r := range runs {
		work[j] = r.work
		units[r.workUnit] = true
		known = known && r.work > 0
	}
	switch {
	case s.NoHeadline:
		hl.Reason = "not asked for (WithHeadline(false): a golden baseline's time was measured in another process, where the machine's speed alone moves it; its functions' shares are judged)"
	case s.SameWork:
		hl.Judged, hl.Per = true, "run"
		for j := range work {
			work[j] = 1
		}
	case s.Mode == PerAnchor:
		hl.Reason = "per-op mode with an anchor measures functions against the anchor's time; declare equal work with diff.WithSameWork() to judge the time per run"
	case known && len(units) == 1:
		hl.Judged = true
		for u := range units {
			hl.Per = u
		}
		if hl.Per == "" {
			hl.Per = "unit of work"
		}
	case known:
		hl.Reason = "the two sides count work in different units"
	default:
		hl.Reason = "the work per run is unknown; pass diff.WithSameWork() when every run did the same work, or record work per run (perfassert.Capture, hotbudget record)"
	}
	if !hl.Judged {
		hl.Per = "run"
		for j := range work {
			work[j] = 1
		}
	}
	y := make([]float64, len(runs))
	c := make([]float64, len(runs))
	ones := make([]float64, len(runs))
	var lb float64
	for j, r := range runs {
		if r.cpu <= 0 || work[j] <= 0 {
			hl.Judged, hl.Reason = false, "a run has no time to compare"
			return hl
		}
		y[j] = math.Log(r.cpu / work[j])
		hl.idle = hl.idle || r.cpu != float64(r.table.Total)
		if !r.table.Exact {
			c[j] = r.period / r.cpu // sampling: 1/samples
		}
		ones[j] = 1
		if !head[j] {
			lb += y[j]
		}
	}
	lfc, unscaled, s2, df := stats.TwoGroup(y, ones, head)
	hl.Base = math.Exp(lb / float64(len(b.runs)))
	hl.Head = hl.Base * math.Exp(lfc)
	hl.Relative = math.Expm1(lfc)
	var v [2]float64 // variance of one run's log time, per side
	if df > 0 {
		// The runs' spread, but never below sampling noise.
		s2 = math.Max(s2, mean(c)+floorRuns)
		v = [2]float64{s2, s2}
		hl.Test = "t"
	} else {
		df = math.Inf(1)
		v = [2]float64{c[0] + floorHeadline, c[len(c)-1] + floorHeadline}
		unscaled = 1
		s2 = v[0] + v[1]
		hl.Test = "z, assumed noise"
	}
	se := math.Sqrt(s2 * unscaled)
	up, down := stats.TailT(lfc/se, df)
	hl.P = up
	if lfc < 0 {
		hl.P = down
	}
	hl.MinDetectable, hl.RunsNeeded = detectable(se, df, s.Alpha, s.MinRelative, v)
	if hl.Judged && len(runs) == 2 && !runs[0].table.Exact {
		// One run a side: no spread of runs to see, only the samples.
		// A run of a few samples is mostly what surrounds the timed
		// work (a benchmark's setup before its loop, start-up), which
		// does not scale with the work: 23 samples against 48 is no
		// evidence that the time per op doubled.
		if k := min(runs[0].table.TotalSamples, runs[1].table.TotalSamples); k < minHeadlineSamples {
			hl.Judged = false
			hl.Reason = fmt.Sprintf("one run a side of %d and %d samples cannot tell a change of the time per %s from sampling noise and the time outside the timed work (setup), which does not grow with the work; %d samples a run are needed: longer runs or several a side",
				runs[0].table.TotalSamples, runs[1].table.TotalSamples, textfmt.Name(hl.Per), minHeadlineSamples)
		}
	}
	if !hl.Judged {
		return hl
	}
	switch {
	case math.Abs(hl.Relative) < s.MinRelative || hl.P >= s.Alpha:
	case lfc > 0:
		hl.Verdict = Regressed
	default:
		hl.Verdict = Improved
	}
	return hl
}

// text is the headline in one line for people.
func (hl Headline) text() string {
	unit := hl.unit
	if unit == "" {
		unit = analysis.UnitTime
	}
	// Base and Head are geometric means over runs, without idle time:
	// said, so that they are not read as the sides' mean total per run
	// printed above them.
	how := "geometric mean over runs"
	if hl.idle {
		how += ", idle time left out"
	}
	what := quantity(unit) + " per " + textfmt.Name(hl.Per) + " (" + how + ")"
	base, head := hl.Base, hl.Head
	if unit == analysis.UnitTime {
		base, head = float64(roundNanos(base)), float64(roundNanos(head))
	}
	if !hl.Judged {
		// Unjudged, the two values are shown side by side without a
		// change: a signed percentage in a report's header reads as a
		// verdict, and a time per run that fell because the head ran
		// less work, or a baseline's time measured on a machine that
		// was slower then, is not the code getting faster.
		return fmt.Sprintf("%s not compared: base %s, head %s; %s", what, textfmt.Value(unit, base), textfmt.Value(unit, head), hl.Reason)
	}
	change := fmt.Sprintf("%s -> %s (%+.1f%%, %s)", textfmt.Value(unit, base), textfmt.Value(unit, head), 100*hl.Relative, fmtP(hl.P))
	return fmt.Sprintf("%s %s: %s", what, change, hl.Verdict)
}

// roundNanos rounds nanoseconds to a Duration.
func roundNanos(ns float64) time.Duration { return time.Duration(math.Round(ns)) }

// fmtP formats a p-value, saying "p<1e-15" below what a double resolves.
func fmtP(p float64) string {
	if p < 1e-15 {
		return "p<1e-15"
	}
	return fmt.Sprintf("p=%.3g", p)
}
