package limits

import (
	"fmt"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// String is the result as a test failure (or log) message: the check, the
// profile and Summary's sentence (got before want, with units, and the
// share of the total), then the matched functions; for a time limit on a
// profile of runs (a capture's), how the value varied across them and the
// limit that would hold 99 times in 100 on this machine (see headroom.go);
// then the top functions and the heaviest stacks for context, and the
// warnings. The text is for people and may change between versions; it is
// deterministic.
func (r *Result) String() string {
	var b strings.Builder
	// Names, profile names and warnings come from the profiles: each is
	// escaped for a terminal or CI log (no line break, control character
	// or workflow command) and bounded (textfmt.Name, textfmt.Line).
	fmt.Fprintf(&b, "perfassert.%s: %s\n", r.Check, textfmt.Line(r.Profile+": "+r.headline()))
	if r.Missing && len(r.Suggestions) > 0 {
		b.WriteString("did you mean:\n")
		for _, s := range r.Suggestions {
			fmt.Fprintf(&b, "    %s\n", textfmt.Name(s))
		}
	}
	if !r.Missing && len(r.Matched) > 1 {
		b.WriteString("matched:\n")
		for i, f := range r.Matched {
			if i == topN {
				fmt.Fprintf(&b, "    ... and %d more\n", len(r.Matched)-topN)
				break
			}
			fmt.Fprintf(&b, "    %s (self %s, total %s)\n", textfmt.Name(f.Name), r.fmtValue(f.Self), r.fmtValue(f.Total))
		}
	}
	if h := r.headroomText(); h != "" {
		b.WriteString(h + "\n")
	}
	if len(r.Top) > 0 && !r.Passed {
		metric := "self"
		if !r.Limit.Quantity.isSelf() {
			metric = "total"
		}
		fmt.Fprintf(&b, "top functions by %s %s:\n", metric, r.noun())
		fmt.Fprintf(&b, "    %10s %7s %10s %7s  %s\n", "self", "self%", "total", "total%", "function")
		for _, f := range r.Top {
			fmt.Fprintf(&b, "    %10s %7s %10s %7s  %s\n", r.fmtValue(f.Self), textfmt.Percent(f.SelfShare), r.fmtValue(f.Total), textfmt.Percent(f.TotalShare), textfmt.Name(f.Name))
		}
	}
	if len(r.Stacks) > 0 && !r.Passed {
		b.WriteString("heaviest stacks (leaf first):\n")
		for _, s := range r.Stacks {
			fmt.Fprintf(&b, "    %10s %7s  %s\n", r.fmtValue(s.Value), textfmt.Percent(s.Share), textfmt.Line(textfmt.Stack(s.Frames, max(s.Through+3, 4))))
		}
	}
	for _, w := range r.ProfileWarnings {
		fmt.Fprintf(&b, "warning: %s\n", textfmt.Line(w))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", textfmt.Line(w))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Summary is the result in one line, without the check's and the
// profile's names: what was measured against what limit, or that nothing
// matched and the closest names. A budget line prints it as its message,
// so a budget line and the assertion that bounds the same quantity read
// the same.
func (r *Result) Summary() string {
	s := r.headline()
	if r.Missing && len(r.Suggestions) > 0 {
		s += "; did you mean " + strings.Join(r.Suggestions, ", ") + "?"
	}
	return s
}

// headline is the sentence String and Summary share.
func (r *Result) headline() string {
	var b strings.Builder
	what := fmt.Sprintf("%q", r.Selector)
	if r.Regexp {
		what = "regexp " + what
	}
	n := int64(max(r.Profiles, 1))
	if r.Missing {
		if r.Regexp {
			fmt.Fprintf(&b, "no function matches %s", what)
		} else {
			fmt.Fprintf(&b, "no function named %s", what)
		}
		fmt.Fprintf(&b, " among %d functions (%s total, %d samples", r.Functions, r.fmtValue(r.Total), r.TotalSamples)
		if r.Profiles > 1 {
			fmt.Fprintf(&b, " in %d profiles", r.Profiles)
		}
		if sel := r.Selection.String(); sel != "" {
			fmt.Fprintf(&b, "; %s", sel)
		}
		b.WriteString(")")
		if r.Passed {
			b.WriteString("; allowed by AllowMissing")
		}
		return b.String()
	}
	name := r.Selector
	switch {
	case r.EachMatch:
		name = fmt.Sprintf("%s (worst of %d functions matching %s)", r.Matched[0].Name, r.Names, what)
	case r.Regexp || len(r.Matched) > 1:
		name = fmt.Sprintf("%d functions matching %s", len(r.Matched), what)
	}
	perWork := ""
	if r.Iterations > 0 {
		perWork = " per " + r.workWord()
	}
	fmt.Fprintf(&b, "%s %s %s%s (", name, r.metric(), r.fmtMeasured(r.Value), perWork)
	switch {
	case r.Iterations > 0:
		fmt.Fprintf(&b, "%s of %s total over %d %ss", textfmt.Percent(r.Share), r.fmtMeasured(r.Total), r.Iterations, r.workWord())
		if r.Profiles > 1 {
			fmt.Fprintf(&b, " in %d profiles", r.Profiles)
		}
	case r.Profiles > 1:
		fmt.Fprintf(&b, "mean of %d profiles: %s of %s total", r.Profiles, textfmt.Percent(r.Share), r.fmtValue(r.Total/n))
	default:
		fmt.Fprintf(&b, "%s of %s total", textfmt.Percent(r.Share), r.fmtMeasured(r.Total))
	}
	switch {
	case r.Exact:
		b.WriteString(", exact")
	case r.Profiles > 1 && r.Iterations == 0:
		fmt.Fprintf(&b, ", %d samples in all", r.Samples)
	default:
		fmt.Fprintf(&b, ", %d samples", r.Samples)
	}
	b.WriteString(")")
	if r.Limit.Quantity.isShare() {
		fmt.Fprintf(&b, ", share %s", textfmt.Percent(r.Share))
	}
	switch {
	case r.SkippedRace:
		fmt.Fprintf(&b, ", over %s but not checked: the race detector is on (SkipUnderRace)", r.Limit)
	case r.Passed:
		fmt.Fprintf(&b, ", within %s (%s of the limit)", r.Limit, textfmt.Percent(r.used()))
	default:
		fmt.Fprintf(&b, ", want at most %s", r.Limit)
	}
	return b.String()
}

// workWord is the unit of work in text: a Capture's iteration is one call
// of its function, named as Capture's log names it ("42 runs, 168
// iterations"), where a run is a group of iterations.
func (r *Result) workWord() string {
	if meta.WorkUnit(r.WorkUnit) == "" {
		return string(meta.WorkIteration)
	}
	return r.WorkUnit
}

// used is the measured value as a fraction of the limit.
func (r *Result) used() float64 {
	if r.Limit.Quantity.isShare() {
		if r.Limit.Share == 0 {
			return 0 // passed: nothing measured
		}
		return r.Share / r.Limit.Share
	}
	if r.Limit.Quantity.isCount() {
		if r.Limit.Count == 0 {
			return 0
		}
		return float64(r.Value) / float64(r.Limit.Count)
	}
	if r.Limit.Time == 0 {
		return 0
	}
	return float64(r.Value) / float64(r.Limit.Time)
}

// metric is the word for the measured value in failure text.
func (r *Result) metric() string {
	if isCounted(r.Selection.SampleType) && r.unit() == analysis.UnitCount {
		if r.Limit.Quantity.isSelf() {
			return "self count"
		}
		return "total count"
	}
	return r.Limit.Quantity.metric()
}

// metric is the word for the measured time in failure text.
func (q Quantity) metric() string {
	if q.isCount() {
		return string(q)
	}
	if q.isSelf() {
		return "self time"
	}
	return "total time"
}
