package diff

import (
	"fmt"
	"math"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// The figures a report shows, computed in one place for every writer:
// each side's line, a metric in its unit, the shown shares and changes,
// p-values, counts and the power lines.

func (r *Report) sideLine(name string, sd Side) string {
	kind := "sampled"
	if sd.Exact {
		kind = "exact"
	} else if sd.Period > 0 {
		kind = "sampled every " + textfmt.Duration(sd.Period)
	}
	one, many := sd.units()
	runs := fmt.Sprintf("%d %s", sd.Runs, many)
	if sd.Runs == 1 {
		runs = "1 " + one
	}
	return fmt.Sprintf("%s: %s, %s total per %s (mean), %d samples (%s)", name, runs, r.fmtValue(float64(sd.Total)), one, sd.Samples, kind)
}

// units names what the side's Runs count: runs, or processes
// (Side.Processes).
func (sd Side) units() (one, many string) {
	if sd.Processes {
		return "process", "processes"
	}
	return "run", "runs"
}

// formatMetric renders a value of the compared metric (Row.Base.Metric,
// Row.Head.Metric, a call path's values) as every writer does: a share as a
// percentage, a ratio to the anchor as "0.400x", bytes and objects as such,
// else a time. Annotations and budget results use it too, so every output
// says the same.
func (r *Report) formatMetric(v float64) string {
	s := r.Settings
	switch {
	case s.Mode == Share:
		return textfmt.Percent(v)
	case s.Mode == PerAnchor:
		return fmt.Sprintf("%.3fx", v)
	case unitOf(r.Base) != analysis.UnitTime:
		return r.fmtValue(v)
	}
	return textfmt.Duration(roundNanos(v))
}

// Figures are one row's figures as every writer shows them (text,
// Markdown, HTML, annotations, budget results): formatted here once so
// that no writer computes its own.
type Figures struct {
	// Base and Head are the sides' measured values. In Share mode each is
	// the side's real share (shownValues: the function's mean time over
	// the side's, as go tool pprof -top's flat% or cum% of the side's
	// profiles merged), so that a column sums to what it covers.
	Base, Head string
	// Change is the judged change (Row.Relative): in Share mode the
	// function's time relative to the rest of the profile's, labelled by
	// ChangeHeader; "new", "gone" or "~" when there is no ratio.
	Change string
	P      string // "p=0.0012", "-" when untested
}

// shownValues returns the numbers Figures formats as Base and Head: in
// Share mode the function's time over the side's, both means over its
// runs (Value.Self / Side.Total), which is go tool pprof -top's flat% (cum%
// for total time) of the side's profiles merged.
func (r *Report) shownValues(row Row) (base, head float64) {
	if r.Settings.Mode != Share {
		return row.Base.Metric, row.Head.Metric
	}
	return r.shownShare(row.Base, r.Base), r.shownShare(row.Head, r.Head)
}

// shownShare is a side's share of v (see shownValues).
func (r *Report) shownShare(v Value, sd Side) float64 {
	if sd.Total <= 0 {
		return 0
	}
	if r.Settings.Metric == Total {
		return float64(v.Total) / float64(sd.Total)
	}
	return float64(v.Self) / float64(sd.Total)
}

// Figures formats row's figures (see Figures).
func (r *Report) Figures(row Row) Figures {
	b, h := r.shownValues(row)
	return Figures{Base: r.formatMetric(b), Head: r.formatMetric(h), Change: r.change(row), P: pString(row)}
}

// ChangeHeader names the change column: in Share mode the change is not
// head/base of the shares shown, but the function's change relative to
// the rest of the profile (one function's growth shrinks every other
// share), and the header says so.
func (r *Report) ChangeHeader() string {
	if r.Settings.Mode == Share {
		return "vs rest"
	}
	return "change"
}

// changeLegend says what the change column means, for the header lines;
// empty when "change" says it all.
func (r *Report) changeLegend() string {
	if r.Settings.Mode != Share {
		return ""
	}
	merged := "as go tool pprof -top of them merged"
	if tc := r.Settings.Selection.ToCaller; tc != nil {
		// What makes them differ from pprof's flat%, said.
		merged += ", with the frames matching /" + textfmt.Line(tc.String()) + "/ charged to their callers"
	}
	return "base and head are each side's share of its profiles (" + merged + "); vs rest is the change in the function's time relative to the rest of the profile's (its share's change had the rest not moved)"
}

func (r *Report) change(row Row) string {
	switch {
	case row.Verdict == New:
		return "new"
	case row.Verdict == Gone:
		return "gone"
	case row.Base.Metric == 0 || row.Head.Metric == 0:
		return "~"
	}
	return fmt.Sprintf("%+.1f%%", row.Relative*100)
}

func pString(row Row) string {
	switch row.Test {
	case "none":
		return "-"
	case "exact": // exact values, no p-value
		return "exact"
	}
	return fmtP(row.P)
}

// Judged returns how many functions the report judged: those tested for
// a change and large enough on one side for it to reach the minimum
// change (the false-discovery family), and those tested for being new or
// gone; functions outside the gate (WithGate) apart. The counts of every
// writer and of perfassert's messages are out of it.
func (r *Report) Judged() int {
	if r.judgedSet {
		return r.judged
	}
	min := r.minimum()
	n := 0
	for i := range r.Rows {
		row := &r.Rows[i]
		switch {
		case row.Ungated:
		case row.Verdict != Unchanged, row.presence != "":
			n++
		case row.tested && min.sizeable(math.Max(row.Base.Metric, row.Head.Metric)):
			n++
		}
	}
	return n
}

// minimum is the minimum change the report's comparison counted: its
// Settings' for a Report that no comparison made.
func (r *Report) minimum() minimum {
	if r.min.mode == "" {
		return minimumOf(&r.Settings, 0)
	}
	return r.min
}

// showNoise reports whether the writers print the noise line: when
// several runs a side learned it, or could not for want of functions (no
// warning then says what was assumed).
func (r *Report) showNoise() bool {
	n := r.Noise
	return n.Source == noiseRuns || (n.ResidualDF > 0 && n.present < minRunsFunctions && (n.Source == noiseFloor || n.Source == noiseWhole))
}

// noiseLine says what noise the comparison learned from its runs
// (Noise.Source noiseRuns; the writers say nothing else: with one run a
// side, or too few functions, a warning says what was assumed).
func (r *Report) noiseLine() string {
	n := r.Noise
	cv := 100 * math.Sqrt(n.Dispersion)
	u, _ := r.Base.units()
	if n.Source != noiseRuns {
		how := "the least assumed"
		if n.Source == noiseWhole {
			how = "the whole profile's own spread"
		}
		return fmt.Sprintf("functions taken to vary %.1f%% from %s to %s beyond sampling noise (%s): %d functions have samples in every run, too few to learn it from (%d needed)", cv, u, u, how, n.present, minRunsFunctions)
	}
	prior := "every function's noise alike"
	if n.PriorDF >= 0 {
		prior = fmt.Sprintf("each function's own moderated by a prior worth %.3g runs' df", n.PriorDF)
	}
	out := ""
	if n.Outliers > 0 {
		out = fmt.Sprintf("; %d judged on their own noise, far beyond the rest", n.Outliers)
	}
	return fmt.Sprintf("functions vary %.1f%% from %s to %s beyond sampling noise (learned from %d functions, %g residual df; %s%s)", cv, u, u, n.Functions, n.ResidualDF, prior, out)
}

// powerRows are the rows that get power advice: every regression, and the
// rows that look slower without being judged so (suspicious), largest
// change first, at most five.
func (r *Report) powerRows() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.MinDetectable <= 0 || row.RunsNeeded <= 0 {
			continue
		}
		// Suspicious: as large as the minimum change, not shown to be real;
		// one that would need more than a hundred runs is listed too, as a
		// change these runs could not have seen.
		suspicious := row.Verdict == Unchanged && !row.Ungated && row.Delta > 0 && row.Relative >= r.Settings.MinRelative
		if row.Verdict == Regressed || suspicious {
			out = append(out, row)
		}
	}
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// powerHeader introduces the power advice in every writer.
const powerHeader = "power (the smallest slowdown these runs catch 4 times in 5, were it the only change)"

// powerLine is one line of power advice for what, whose observed change is
// rel; flagged says the report calls it regressed. The words never
// contradict the flag beside them: a regression found below the size
// these runs catch reliably is called found, and the advice says only
// that a repeat may miss it.
func (r *Report) powerLine(what string, rel float64, flagged bool, mde float64, runs int, have int) string {
	one, many := r.Base.units()
	these := fmt.Sprintf("%d %s a side catch", have, many)
	switch {
	case r.Base.Runs != r.Head.Runs:
		// Unequal sides (a baseline of eight processes against one
		// capture, or three): "1 run a side" or "3 runs a side" would
		// undersell the larger.
		these = fmt.Sprintf("%d base and %d head %s catch", r.Base.Runs, r.Head.Runs, many)
	case have == 1:
		these = "1 " + one + " a side catches"
	}
	var line string
	switch {
	case flagged && mde > rel:
		line = fmt.Sprintf("%s: regressed %+.1f%%, below the %.1f%% that %s 4 times in 5: the change is real at the false-discovery rate, but a repeat with as many %s may well miss it",
			what, 100*rel, 100*mde, these, many)
	case flagged:
		line = fmt.Sprintf("%s: regressed %+.1f%%; %s a slowdown of %.1f%% or more 4 times in 5", what, 100*rel, these, 100*mde)
	case rel > 0:
		line = fmt.Sprintf("%s: %+.1f%% but not shown to be slower: %s only a slowdown of %.1f%% or more 4 times in 5", what, 100*rel, these, 100*mde)
	default:
		line = fmt.Sprintf("%s: %s a slowdown of %.1f%% or more 4 times in 5", what, these, 100*mde)
	}
	switch {
	case runs <= 0:
	case runs <= have:
		line += fmt.Sprintf("; %d would catch %.0f%%", runs, 100*r.Settings.MinRelative)
	case runs > 100:
		line += fmt.Sprintf("; a change of %.0f%% could not have been seen: it needs %d %s a side, or more samples a %s (longer runs, a faster sampler)", 100*r.Settings.MinRelative, runs, many, one)
	default:
		line += fmt.Sprintf("; %d %s a side would catch %.0f%%", runs, many, 100*r.Settings.MinRelative)
	}
	return line
}

// powerLines is the power advice: the headline's and the rows', each name
// written by name.
func (r *Report) powerLines(name func(string) string) []string {
	have := min(r.Base.Runs, r.Head.Runs)
	var out []string
	if h := r.Headline; h.Judged && h.MinDetectable > 0 {
		out = append(out, r.powerLine("time per "+name(h.Per), h.Relative, h.Verdict == Regressed, h.MinDetectable, h.RunsNeeded, have))
	}
	for _, row := range r.powerRows() {
		out = append(out, r.powerLine(name(row.Name), row.Relative, row.Verdict == Regressed, row.MinDetectable, row.RunsNeeded, have))
	}
	return out
}
