package perfassert

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/modname"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// NoRegression asserts that no function of current regressed against base,
// by the diff package's verdicts at its default settings unless opts change
// them. A profile that holds several runs (a capture: see SplitRuns) is
// compared run against run. As in every comparison of this package, only
// the functions of the module under test are judged unless opts say
// otherwise (see CheckRegression). The failure text is the diff report
// restricted to the regressed functions; "base" is the baseline argument and
// "head" is current. Captures that count instructions (Instructions) are
// judged as MatchBaseline judges them: exactly, without statistics.
func NoRegression(t TestingT, base, current *profile.Profile, opts ...diff.Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if base == nil || current == nil {
		t.Errorf("perfassert.NoRegression: nil profile (base %v, current %v)", base != nil, current != nil)
		return false
	}
	b, c := capturedOf(base), capturedOf(current)
	if b.isExact() || c.isExact() {
		// Counts (Instructions): judged exactly, function by function.
		if why := exactMismatch(b.rec, c.rec); why != "" {
			t.Errorf("perfassert.NoRegression: the baseline %s", why)
			return false
		}
		return judgeCounts(t, "NoRegression", "base = baseline, head = current", b, c)
	}
	bs, err := SplitRuns(base)
	if err != nil {
		t.Errorf("perfassert.NoRegression: base: %v", err)
		return false
	}
	cs, err := SplitRuns(current)
	if err != nil {
		t.Errorf("perfassert.NoRegression: current: %v", err)
		return false
	}
	cpu := reportRegression(t, "NoRegression", "base = baseline"+runsNote(len(bs))+", head = current"+runsNote(len(cs)), bs, cs, opts)
	allocs := judgeAllocs(t, "NoRegression", "base = baseline, head = current", b, c)
	return cpu && allocs
}

// plural is "1 process" or "3 processes".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// profiles is "1 baseline profile" or "5 baseline profiles".
func profiles(n int, kind string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s profile", kind)
	}
	return fmt.Sprintf("%d %s profiles", n, kind)
}

// runsNote is " (N runs)" for a side of several runs.
func runsNote(runs int) string {
	if runs < 2 {
		return ""
	}
	return fmt.Sprintf(" (%d runs)", runs)
}

// SplitRuns returns the runs p holds: one profile per run of a capture (or
// of any profile whose hotbudget record lists runs with labelled samples),
// each recording its own iterations (Iterations), or p alone when it holds
// one run. A capture is made of several runs (MinRuns) so that comparisons
// can see run-to-run noise; NoRegression and MatchBaseline split their
// profiles this way, and NoRegressionRuns takes runs you split yourself. p
// is not modified; the runs share its locations and functions.
func SplitRuns(p *profile.Profile) ([]*profile.Profile, error) {
	if p == nil {
		return nil, errors.New("nil profile")
	}
	return splitRuns(p)
}

// NoRegressionRuns is NoRegression with several profiles a side, which lets
// the diff package learn each function's run-to-run noise from the runs
// instead of relying on one profile's sampling noise. A profile of Capture
// holds several runs of its function already; each counts as a run.
func NoRegressionRuns(t TestingT, base, current []*profile.Profile, opts ...diff.Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	for i, p := range base {
		if p == nil {
			t.Errorf("perfassert.NoRegressionRuns: base run %d is nil", i+1)
			return false
		}
	}
	for i, p := range current {
		if p == nil {
			t.Errorf("perfassert.NoRegressionRuns: current run %d is nil", i+1)
			return false
		}
	}
	return reportRegression(t, "NoRegressionRuns", fmt.Sprintf("base = %s, head = %s", profiles(len(base), "baseline"), profiles(len(current), "current")), base, current, opts)
}

// CheckRegression compares current with base and returns the diff report
// and an error when the comparison is impossible or vacuous: no runs, or a
// side whose selected samples give the functions judged no time, which
// diff.Compare refuses with an *analysis.NoTimeError naming the side
// (errors.Is(err, analysis.ErrNoTime)). The report's Regressions are the
// failures.
//
// By default only the functions of the module under test are judged: those
// whose names start with the main module's path, as the test binary's build
// information gives it (runtime/debug.ReadBuildInfo; for `go test` in
// module example.com/m, diff.WithOnly(^example.com/m[./]) and its _test
// packages). The runtime's share moves with the machine, the garbage
// collector and the race detector, and a gate on your code should not fail
// on it; runtime functions still count in every total. The default applies
// only when some function of the profiles belongs to the module. To judge
// something else, pass your own diff.WithOnly(re), which replaces the
// default; diff.WithOnly(nil) judges every function.
func CheckRegression(base, current []*profile.Profile, opts ...diff.Option) (*diff.Report, error) {
	if len(base) == 0 || len(current) == 0 {
		return nil, fmt.Errorf("no profiles to compare (%d base, %d current)", len(base), len(current))
	}
	bx, err := indexAll("base", base)
	if err != nil {
		return nil, err
	}
	cx, err := indexAll("head", current)
	if err != nil {
		return nil, err
	}
	return checkIndexes(bx, cx, opts...)
}

// indexAll indexes the profiles of one side (analysis.NewIndex), with
// diff.Compare's errors.
func indexAll(side string, ps []*profile.Profile) ([]*analysis.Index, error) {
	xs := make([]*analysis.Index, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("diff: %s profile %d is nil", side, i+1)
		}
		x, err := analysis.NewIndex(p)
		if err != nil {
			return nil, fmt.Errorf("diff: %s profile %d: %w", side, i+1, err)
		}
		xs[i] = x
	}
	return xs, nil
}

// checkIndexes is CheckRegression for profiles indexed already: its one
// comparison, which MatchBaseline calls with the baseline as
// loaders.LoadIndex read it.
func checkIndexes(base, current []*analysis.Index, opts ...diff.Option) (*diff.Report, error) {
	if len(base) == 0 || len(current) == 0 {
		return nil, fmt.Errorf("no profiles to compare (%d base, %d current)", len(base), len(current))
	}
	if err := sameBuild(base, current); err != nil {
		return nil, err
	}
	if re := moduleFuncs(); re != nil && (anyFunc(base, re) || anyFunc(current, re)) {
		// First, so that a caller's WithOnly replaces it.
		opts = append([]diff.Option{diff.WithOnly(re)}, opts...)
	}
	return diff.CompareIndex(base, current, opts...)
}

// anyFunc reports whether some index of xs has a function matching re.
func anyFunc(xs []*analysis.Index, re *regexp.Regexp) bool {
	for _, x := range xs {
		for _, f := range (*indexload.Index)(x).Index().Funcs {
			if re.MatchString(f.Name) {
				return true
			}
		}
	}
	return false
}

// sameBuild refuses to compare captures made with and without the race
// detector: it slows memory accesses far more than arithmetic and leaves a
// third or more of the samples in its C runtime, where stacks end, so every
// share differs between the two builds and the comparison would judge the
// build, not the code.
func sameBuild(base, current []*analysis.Index) error {
	side := func(xs []*analysis.Index) (race, known bool) {
		for _, x := range xs {
			if r, k := raceOf(recordOf(x)); k {
				if r {
					return true, true
				}
				known = true
			}
		}
		return false, known
	}
	br, bk := side(base)
	cr, ck := side(current)
	if bk && ck && br != cr {
		with := map[bool]string{true: "with", false: "without"}
		return fmt.Errorf("base was captured %s the race detector and current %s it: profiles of the two builds are not comparable (under -race MatchBaseline keeps a baseline of its own, NAME.race.pb.gz)", with[br], with[cr])
	}
	return nil
}

func reportRegression(t TestingT, check, sides string, base, current []*profile.Profile, opts []diff.Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	rep, err := CheckRegression(base, current, opts...)
	if err != nil {
		failRegression(t, check, sides, err)
		return false
	}
	return reportReport(t, check, sides, "function", rep)
}

// failRegression fails t with the error of a comparison that could not be
// made; nothing to judge on one side names both sides.
func failRegression(t TestingT, check, sides string, err error) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	var none *analysis.NoTimeError
	if errors.As(err, &none) {
		t.Errorf("perfassert.%s: %v (%s)", check, none, sides)
		return
	}
	t.Errorf("perfassert.%s: %s", check, textfmt.Lines(err.Error()))
}

// reportReport fails t with the regressed rows of rep, if any.
func reportReport(t TestingT, check, sides, noun string, rep *diff.Report) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	regs := rep.Regressions()
	if !rep.Failed() && rep.Judged() == 0 && !rep.Headline.Judged {
		// Nothing judged is not a pass.
		t.Errorf("perfassert.%s: %s (%s)", check, nothingJudged(rep, noun), sides)
		return false
	}
	if !rep.Failed() {
		msg := fmt.Sprintf("perfassert.%s: no regression (%s)%s", check, sides, passSummary(rep, noun))
		if len(rep.Warnings) > 0 {
			msg += "; warnings:\n" + strings.Join(rep.Warnings, "\n")
		}
		logf(t, "%s", msg)
		return true
	}
	var b bytes.Buffer
	if err := rep.Write(&b, "regressions"); err != nil {
		b.Reset()
		for _, r := range regs {
			fmt.Fprintf(&b, "%s: %+.1f%% (p=%.3g)\n", r.Name, r.Relative*100, r.P)
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(&b, "warning: %s\n", w)
		}
	}
	// Out of those judged, in the words of diff's summary line.
	judged := rep.Judged()
	if judged != 1 {
		noun += "s"
	}
	what := fmt.Sprintf("%d of %d %s judged regressed", len(regs), judged, noun)
	if h := rep.Headline; h.Verdict == diff.Regressed {
		what = fmt.Sprintf("the time per %s regressed %+.1f%%, and %s", h.Per, 100*h.Relative, what)
	}
	t.Errorf("perfassert.%s: %s (%s):\n%s", check, what, sides, strings.TrimRight(b.String(), "\n"))
	return false
}

// nothingJudged says why a comparison that judged no function (nor the
// program's time) is not a pass: the functions it kept (diff.WithOnly, the
// module under test by default) matched none, or none was large enough
// to reach the minimum change.
func nothingJudged(rep *diff.Report, noun string) string {
	var names []suggest.Candidate
	for _, row := range rep.Rows {
		names = append(names, suggest.Candidate{Name: row.Name, Weight: max(row.Base.Self, row.Head.Self)})
	}
	if only := rep.Settings.Only; only != nil && len(rep.Rows) == 0 {
		if only == moduleFuncs() {
			return modname.Unmatched("the functions of "+mainModule()+" (the module under test)", []string{mainModule()}, "", names)
		}
		return modname.Unmatched("the functions matching "+only.String(), nil, only.String(), names)
	}
	what := fmt.Sprintf("%d compared", len(rep.Rows)) + onlyText(rep)
	return fmt.Sprintf("judged no %s, and nothing judged is not a pass: each of the %s is too small on both sides to reach the minimum change, or absent from most runs; judge every function with diff.WithOnly(nil), or capture more", noun, what)
}

// onlyText says which functions rep kept (diff.WithOnly): those of the
// module under test, by default, or those a caller's expression matches.
func onlyText(rep *diff.Report) string {
	switch only := rep.Settings.Only; {
	case only == nil:
		return ""
	case only == moduleFuncs():
		return " (the functions of " + mainModule() + ")"
	default:
		return " (matching " + only.String() + ")"
	}
}

// passSummary says what a passing comparison judged and its largest change
// towards slower, for go test -v: how close the gate came.
func passSummary(rep *diff.Report, noun string) string {
	judged := rep.Judged()
	// What came closest to failing by the gate's own measure: the slower
	// judged function with the smallest q (a near miss first), not the
	// largest ratio, which a tiny function's noise wins.
	var closest *diff.Row
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if r.Verdict == diff.New || r.Verdict == diff.Gone || r.Ungated || r.Relative <= 0 || r.Test == "none" {
			continue
		}
		if closest == nil || (r.NearMiss != "") != (closest.NearMiss != "") && r.NearMiss != "" ||
			(r.NearMiss != "") == (closest.NearMiss != "") && r.Q < closest.Q {
			closest = r
		}
	}
	if judged != 1 {
		noun += "s"
	}
	s := fmt.Sprintf(": %d %s judged of %d compared", judged, noun, len(rep.Rows))
	s += onlyText(rep)
	if closest != nil {
		s += fmt.Sprintf("; closest to failing: %s %+.1f%% (q=%.2g against a false-discovery rate of %.2g)", closest.Name, closest.Relative*100, closest.Q, rep.Settings.Alpha)
	}
	return s
}

// NoBenchRegression asserts that no benchmark of head (`go test -bench`
// output) regressed against base, judged by bench.Compare with opts.
func NoBenchRegression(t TestingT, base, head io.Reader, opts ...bench.Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	const check, sides = "NoBenchRegression", "base = old benchmark output, head = new"
	rep, err := bench.Compare(base, head, opts...)
	if err != nil {
		t.Errorf("perfassert.%s: %v", check, err)
		return false
	}
	if len(rep.Rows) == 0 {
		t.Errorf("perfassert.%s: no benchmark appears on both sides: nothing was compared", check)
		return false
	}
	regs := rep.Regressions()
	if len(regs) == 0 {
		// Every result is judged; for go test -v, how close the gate
		// came by its own measure.
		noun := "benchmarks"
		if len(rep.Rows) == 1 {
			noun = "benchmark"
		}
		msg := fmt.Sprintf("perfassert.%s: no regression (%s): %d %s judged of %d compared", check, sides, len(rep.Rows), noun, len(rep.Rows))
		var closest *bench.Row // the slower result with the smallest q
		for i := range rep.Rows {
			r := &rep.Rows[i]
			worse := r.Relative > 0 != r.HigherIsBetter
			if r.Verdict != diff.New && r.Verdict != diff.Gone && r.Relative != 0 && worse && r.Test != "none" && (closest == nil || r.Q < closest.Q) {
				closest = r
			}
		}
		if closest != nil {
			msg += fmt.Sprintf("; closest to failing: %s %s %+.1f%% (q=%.2g)", closest.Name, closest.Unit, closest.Relative*100, closest.Q)
		}
		if len(rep.Warnings) > 0 {
			msg += "; warnings:\n" + strings.Join(rep.Warnings, "\n")
		}
		logf(t, "%s", msg)
		return true
	}
	// The report of the regressions alone.
	only := *rep
	only.Rows = regs
	var b bytes.Buffer
	if err := only.Write(&b, "text"); err != nil {
		b.Reset()
		for _, r := range regs {
			fmt.Fprintf(&b, "%s: %+.1f%% (p=%.3g)\n", r.Name, r.Relative*100, r.P)
		}
	}
	t.Errorf("perfassert.%s: %d of %d benchmark results regressed (%s):\n%s", check, len(regs), len(rep.Rows), sides, strings.TrimRight(b.String(), "\n"))
	return false
}
