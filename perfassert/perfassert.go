// Package perfassert turns CPU profiles into test assertions.
//
// A test captures a profile of its own code with Capture (or loads one with
// the loaders package) and bounds the time a function takes:
//
//	p := perfassert.Capture(t, func() { parse.Parse(input) })
//	perfassert.MaxSelfTime(t, p, "example.com/m/parse.normalizeKey", 50*time.Microsecond, perfassert.PerIteration())
//	perfassert.MaxSelfShare(t, p, "example.com/m/parse.normalizeKey", 0.30)
//
// (a capture runs its function until it has enough samples, so its times
// are bounded per run, PerIteration, or as shares; a capture keeps only the
// samples of its own goroutine and those it starts, and captures in
// parallel tests share the profiler),
//
// or compares it with a baseline: NoRegression, NoRegressionRuns and
// MatchBaseline use the diff package's verdicts, run against run (a capture
// is made of several runs), judging the module under test's own functions
// by default; NoBenchRegression compares `go test -bench` outputs.
//
// # Design
//
// Every assertion is a check that returns a structured result (Check,
// CheckRegression, ...), which the CLI and budget files use too, and a thin
// adapter that reports the result's text to a TestingT and returns whether it
// passed. TestingT is the smallest interface that works: only Errorf, the
// shape of testify's assert.TestingT, so *testing.T, *testing.B, testing.TB
// and testify suites (s.T()) all fit. Helper is called when the value has it;
// Logf, when present, receives a line for every check that passed, with
// what it measured and the limit (go test -v shows it), and Capture's
// account of what a capture cost.
//
// Functions are selected by pprof's fully qualified name
// (`pkg.(*T).Method`, `pkg.Func.func1`), exactly; the Regexp option makes
// the selector an RE2 regular expression. An assertion never passes
// vacuously: a selector that matches no function fails and names the closest
// functions, unless AllowMissing is given; a profile whose selected samples
// give no function any time (empty, or a Thread it does not have) always
// fails, AllowMissing or not (Check's error is an *analysis.NoTimeError); a
// sampled measurement of fewer than 10 samples is said out loud.
//
// Times are self time (pprof's flat: the function is the leaf frame) and
// total time (pprof's cum: the function is anywhere on the stack, once per
// sample), as the analysis package computes them; shares are of the time of
// all selected samples. When a selector matches several functions, their
// samples are pooled: a sample counts once in the total even if it passes
// through several of them. EachMatch judges each matched function alone
// instead and reports the worst, which is how budget files read their
// match rules. Which samples count is an analysis.Selection
// (WithSelection, or DropSynthetic, Thread, Process and SampleType for
// one field each), the selection diff and budget files use too.
//
// A Checker indexes one or more profiles once and checks any number of
// limits on them; Check is a Checker of one profile. Several profiles are
// runs of one program: times are means per profile, shares are of all of
// them pooled, and PerIteration divides the time of all by the work of
// all. Budget files check their limits with a Checker, so that a budget
// line and the assertion that bounds the same quantity are one check with
// one result text.
package perfassert

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// TestingT is the part of *testing.T the assertions use. It has the shape of
// testify's assert.TestingT. When the value also has Helper(), Logf or
// Skipf (as testing.TB does), they are used.
type TestingT interface {
	Errorf(format string, args ...any)
}

// testing.TB satisfies TestingT: a compile-time proof, kept in the package
// rather than in a test so that every build of perfassert makes it. It
// costs no import: perfassert imports package testing anyway, to register
// -hotbudget.update only in test binaries (testing.Testing).
var _ TestingT = testing.TB(nil)

type helper interface{ Helper() }

type logger interface {
	Logf(format string, args ...any)
}

type namer interface{ Name() string }

// logf logs when t can. Helper-marking only reaches one frame up, so
// callers of logf mark themselves and logf marks itself.
func logf(t TestingT, format string, args ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if l, ok := t.(logger); ok {
		l.Logf(format, args...)
	}
}

// Quantity is what a limit bounds.
type Quantity string

// Quantities.
const (
	SelfTime   Quantity = "self time"   // time as the leaf frame (pprof flat)
	TotalTime  Quantity = "total time"  // time anywhere on the stack (pprof cum)
	SelfShare  Quantity = "self share"  // SelfTime / profile total
	TotalShare Quantity = "total share" // TotalTime / profile total
)

func (q Quantity) isShare() bool { return q == SelfShare || q == TotalShare }
func (q Quantity) isSelf() bool  { return q == SelfTime || q == SelfShare }

// checkName is the assertion that bounds q, used in failure text.
func (q Quantity) checkName() string {
	switch q {
	case SelfTime:
		return "MaxSelfTime"
	case TotalTime:
		return "MaxTotalTime"
	case SelfShare:
		return "MaxSelfShare"
	case TotalShare:
		return "MaxTotalShare"
	}
	return "Check"
}

// Limit is an upper bound on one quantity: Time for SelfTime and TotalTime,
// Share (0..1) for SelfShare and TotalShare.
type Limit struct {
	Quantity Quantity
	Time     time.Duration
	Share    float64
}

func (l Limit) validate() error {
	switch l.Quantity {
	case SelfTime, TotalTime:
		if l.Time < 0 {
			return fmt.Errorf("perfassert: negative %s limit %s", l.Quantity, textfmt.Duration(l.Time))
		}
	case SelfShare, TotalShare:
		if !(l.Share >= 0 && l.Share <= 1) {
			return fmt.Errorf("perfassert: %s limit %v is not a share in [0,1]", l.Quantity, l.Share)
		}
	default:
		return fmt.Errorf("perfassert: unknown quantity %q", l.Quantity)
	}
	return nil
}

// String is the bound with its unit: "50ms" or "30.00%".
func (l Limit) String() string {
	if l.Quantity.isShare() {
		return textfmt.Percent(l.Share)
	}
	return textfmt.Duration(l.Time)
}

// An Option changes how a check selects functions and samples. Options are
// values from a closed set; an invalid one makes the check return an error.
type Option interface{ apply(*config) }

type config struct {
	regexp       bool
	allowMissing bool
	perIteration bool
	skipRace     bool
	eachMatch    bool
	sel          analysis.Selection
	name         string
	err          error
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Regexp makes the selector an RE2 regular expression, matched anywhere in
// the function name (anchor it with ^ and $ to match whole names), instead
// of an exact pprof function name. The functions it matches are pooled:
// their samples are measured together, each counted once (see EachMatch
// for the other reading).
func Regexp() Option { return optionFunc(func(c *config) { c.regexp = true }) }

// EachMatch judges each function name a Regexp selector matches on its
// own, as if it had been named alone, and reports the worst one: the name
// with the most of the bounded quantity (ties go to the first name in
// sorted order). A limit then says "no function under ^crypto/ above 1s",
// rather than "all of them together under 1s", which is what a Regexp
// selector says without it. Budget files check their match rules this way.
// On an exact selector it changes nothing.
func EachMatch() Option { return optionFunc(func(c *config) { c.eachMatch = true }) }

// AllowMissing lets a check pass when the selector matches no function
// (the code was not reached or was inlined away). Without it such a check
// fails, so that a renamed function cannot make a budget pass vacuously.
func AllowMissing() Option { return optionFunc(func(c *config) { c.allowMissing = true }) }

// WithSelection sets which samples count (analysis.Selection: threads,
// processes, synthetic frames, focus and ignore patterns, functions
// charged to their callers, the sample type), replacing the whole
// selection the options before it set. DropSynthetic, Thread, Process and
// SampleType change one field each, and may follow it. diff.WithSelection
// and budget rules take the same value.
func WithSelection(sel analysis.Selection) Option {
	return optionFunc(func(c *config) {
		if err := sel.Validate(); err != nil {
			c.err = fmt.Errorf("perfassert: %w", err)
		}
		c.sel = sel
		c.sel.Threads = slices.Clone(sel.Threads)
		c.sel.Processes = slices.Clone(sel.Processes)
	})
}

// DropSynthetic removes samples whose leaf is a synthetic frame such as
// (idle), (program) or (garbage collector) (see analysis.Synthetic), so
// shares are of the time the program's own code ran
// (Selection.DropSynthetic).
func DropSynthetic() Option { return optionFunc(func(c *config) { c.sel.DropSynthetic = true }) }

// Thread keeps only samples of the thread with this name or tid (labels set
// by the loaders). Several Thread options select the union
// (Selection.Threads).
func Thread(nameOrTID string) Option {
	return optionFunc(func(c *config) {
		if nameOrTID == "" {
			c.err = errors.New("perfassert: empty Thread selector")
		}
		c.sel.Threads = append(slices.Clip(c.sel.Threads), nameOrTID)
	})
}

// Process keeps only samples of the process with this name or pid. Several
// Process options select the union (Selection.Processes).
func Process(nameOrPID string) Option {
	return optionFunc(func(c *config) {
		if nameOrPID == "" {
			c.err = errors.New("perfassert: empty Process selector")
		}
		c.sel.Processes = append(slices.Clip(c.sel.Processes), nameOrPID)
	})
}

// SampleType picks the profile value by type name ("cpu", "wall"); by
// default the profile's default sample type, as pprof does
// (Selection.SampleType).
func SampleType(name string) Option { return optionFunc(func(c *config) { c.sel.SampleType = name }) }

// Named names the profile in failure text (for example its file name).
// Without it the name recorded by Capture is used, else "profile".
func Named(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// PerIteration makes time limits bound the time per unit of work the
// profile records: per run of the function Capture ran (its iterations),
// or per benchmark op in a profile `hotbudget record` wrote. A capture
// runs its function until it has enough samples, so its total times say
// more about MinSamples than about the code; per run they are comparable.
// It is an error on a profile that records no work; shares are
// unaffected.
func PerIteration() Option { return optionFunc(func(c *config) { c.perIteration = true }) }

// SkipUnderRace makes a time limit pass, logging what it measured, when the
// profile was captured with the race detector on (`go test -race`; for a
// profile that does not say, when this test binary has it). The detector
// slows code several times over, unevenly, so a time limit chosen without
// it rarely holds under it, while shares and baselines (which keep a race
// baseline of their own) still mean something. Share limits ignore it.
func SkipUnderRace() Option { return optionFunc(func(c *config) { c.skipRace = true }) }

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// Stack is one call stack through the selected functions.
type Stack struct {
	Frames []string // function names, leaf first
	// Through is the index in Frames of the outermost selected function.
	Through int
	Time    time.Duration
	Share   float64 // of the profile total
}

// Result is the outcome of one check. Its String method is the failure
// text, Summary the same in one line; the fields are for programs (the
// CLI and budget files).
type Result struct {
	Check    string // assertion name, e.g. "MaxSelfTime"
	Profile  string // profile name (Named, or the name Capture recorded)
	Selector string
	Regexp   bool // Selector is a regular expression
	Limit    Limit
	// Selection is the selection of samples the check used.
	Selection analysis.Selection

	Passed  bool
	Missing bool // the selector matched no function

	// Matched lists the functions the selector matched, as the analysis
	// package computes them (several when a regexp or a name in several
	// files matches); with EachMatch, the functions of the judged name.
	Matched []analysis.Function
	// Names is the number of distinct function names the selector matched.
	Names int
	// EachMatch is set when the check judged the worst matched name alone
	// (the EachMatch option, with more than one name matched).
	EachMatch bool
	// Time is the measured self or total time of the selection, Share its
	// share of Total, Samples the samples (events, for exact data) behind it.
	// Over several profiles (a Checker's) Time is the mean per profile,
	// Share the share of all of them pooled, Samples their sum.
	Time    time.Duration
	Share   float64
	Samples int64

	Functions    int           // functions in the profiles (after selection)
	Total        time.Duration // time of all selected samples, of all profiles
	TotalSamples int64
	Exact        bool // values are measured durations, not samples
	// Profiles is the number of profiles checked: 1 for Check.
	Profiles int

	// Suggestions are the closest function names when nothing matched.
	Suggestions []string
	// Top are the functions with the most of the checked metric (self or
	// total), for context; Stacks the heaviest stacks through the selection.
	Top    []analysis.Function
	Stacks []Stack
	// Warnings are notes on the measurement (too few samples, lost
	// samples, the race detector); ProfileWarnings the loaders' warnings
	// about the profiles. Both are printed with the result.
	Warnings        []string
	ProfileWarnings []string
	// FewSamples is set when the measurement rests on fewer than 10
	// samples of sampled data (a relative error above 30%).
	FewSamples bool
	// LostSamples is set when Capture found that the samples account for
	// much less CPU time than the process used: absolute times read low.
	LostSamples bool
	// Iterations is the number of units of work (WorkUnit) Time is divided
	// by (PerIteration), 0 when Time is the profiles' whole time.
	Iterations int64
	// WorkUnit names what Iterations counts: "iteration" (a run of the
	// function Capture ran) or "op" (a benchmark op); "" without
	// PerIteration.
	WorkUnit string
	// Race is set when the profile was captured with the race detector on.
	Race bool
	// SkippedRace is set when a time limit passed only because of
	// SkipUnderRace; Passed is then true and Time what was measured.
	SkippedRace bool
}

// minSamples is the sample count below which a sampled measurement is
// reported as unreliable: with n samples the relative standard error of a
// Poisson count is 1/sqrt(n), over 30% below 10.
const minSamples = 10

const (
	topN    = 5
	stacksN = 3
)

// Check measures the functions fn selects in p and compares them with limit.
// It returns an error only for a programming error or an unusable profile
// (nil, no time-valued sample type, an invalid option or regexp, or no
// time under the selection: an *analysis.NoTimeError); a
// selector that matches nothing is a failed Result (Missing), or a passing
// one with AllowMissing. p is not modified. It is NewChecker(p).Check: a
// budget line that bounds the same quantity of the same function is the
// same check, with the same result.
func Check(p *profile.Profile, fn string, limit Limit, opts ...Option) (*Result, error) {
	c := newConfig(opts)
	if c.err != nil {
		return nil, c.err
	}
	if err := limit.validate(); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("perfassert: nil profile")
	}
	ck, err := NewChecker(p)
	if err != nil {
		return nil, err
	}
	return ck.Check(fn, limit, opts...)
}

// relErr is the relative standard error of a Poisson count of n samples.
func relErr(n int64) float64 {
	if n <= 0 {
		return 1
	}
	return 1 / math.Sqrt(float64(n))
}

// topFunctions returns the n functions of fs, but the harness's, with the
// most self time (fs's order: analysis sorts tables by self time) or the
// most total time (ties by self time, then name), without sorting all of
// fs.
func topFunctions(fs []analysis.Function, self bool, n int) []analysis.Function {
	var out []analysis.Function
	for i := range fs {
		f := &fs[i]
		if isHarness(f.Name) {
			continue
		}
		if self {
			if out = append(out, *f); len(out) == n {
				break
			}
			continue
		}
		at := len(out) // after the functions that come before or tie with f
		for at > 0 && byTotal(f, &out[at-1]) < 0 {
			at--
		}
		if at < n {
			out = slices.Insert(out, at, *f)
			out = out[:min(len(out), n)]
		}
	}
	return out
}

// byTotal orders functions by total time, then self time (both
// descending), then name.
func byTotal(a, b *analysis.Function) int {
	return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(b.Self, a.Self), strings.Compare(a.Name, b.Name))
}

// report checks and reports to t; it is the body of every Max... adapter.
// A failure is reported with Errorf; a pass is logged with Logf, when t has
// it, with the measured value and the limit.
func report(t TestingT, p *profile.Profile, fn string, limit Limit, opts []Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	r, err := Check(p, fn, limit, opts...)
	if err != nil {
		t.Errorf("perfassert.%s(%q): %v", limit.Quantity.checkName(), fn, err)
		return false
	}
	if !r.Passed {
		t.Errorf("%s", r)
		return false
	}
	// A passing check says what it measured (go test -v shows it), which
	// is how a limit is chosen.
	logf(t, "%s", r)
	return true
}

// MaxSelfTime asserts that the functions fn selects in p spend at most max
// as the leaf frame (pprof's flat time).
func MaxSelfTime(t TestingT, p *profile.Profile, fn string, max time.Duration, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: SelfTime, Time: max}, opts)
}

// MaxTotalTime asserts that the samples through the functions fn selects
// add up to at most max (pprof's cum time).
func MaxTotalTime(t TestingT, p *profile.Profile, fn string, max time.Duration, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: TotalTime, Time: max}, opts)
}

// MaxSelfShare asserts that the self time of the functions fn selects is at
// most max (0..1) of the profile's total.
func MaxSelfShare(t TestingT, p *profile.Profile, fn string, max float64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: SelfShare, Share: max}, opts)
}

// MaxTotalShare asserts that the total time of the functions fn selects is
// at most max (0..1) of the profile's total.
func MaxTotalShare(t TestingT, p *profile.Profile, fn string, max float64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, Limit{Quantity: TotalShare, Share: max}, opts)
}
