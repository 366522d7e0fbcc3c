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
// is made of several runs) or, for a golden baseline recorded in several
// processes, process against process, judging the module under test's own
// functions by default; NoBenchRegression compares `go test -bench`
// outputs.
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
// A time limit on a capture (MaxSelfTime, MaxTotalTime), passing or
// failing, also says how the value varied across the capture's runs and
// what limit would hold 99 times in 100 on this machine, and how often the
// limit given would fail unchanged code: the runs' spread widened by how
// much captures in separate processes differ, which one capture cannot see
// (docs/capture.md, "Headroom", has the method and its measurements).
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
// match rules.
//
// Which samples count is an analysis.Selection, given with WithSelection,
// the selection diff and budget files use too. Its fields choose threads
// and processes, the sample type, and drop synthetic frames such as a
// browser's (idle) and (program), so that shares are of the time the
// program's own code ran:
//
//	perfassert.MaxSelfShare(t, p, "main.parse", 0.50,
//		perfassert.WithSelection(analysis.Selection{DropSynthetic: true}))
//
// NoRegression, NoRegressionRuns, MatchBaseline and CheckRegression take
// diff's options, and the same value with diff.WithSelection.
//
// Options follow one rule in the module: an option that sets a value
// shared across packages or a setting of a computation is With + its name
// (WithSelection here, diff.WithAlpha, loaders.WithMaxBytes); the options
// of an assertion and of Capture are words of the test line they end
// (Regexp, EachMatch, AllowMissing, PerIteration, SkipUnderRace, Named;
// MinSamples, MaxDuration, Rate), as go-cmp's and goleak's are, because a
// With before each would lengthen every assertion and say nothing more.
//
// The checks themselves are package limits' (the options here are its, by
// alias or one-line wrapper): a program that wants a check's result
// rather than a test failure calls limits.Check, or a limits.Checker to
// index several profiles once, as the hotbudget command does for budget
// files, without linking package testing. Several profiles are runs of one
// program: times are means per profile, shares are of all of them pooled,
// and PerIteration divides the time of all by the work of all. A budget
// line and the assertion that bounds the same quantity are one check with
// one result text.
package perfassert

import (
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/checkname"
	"github.com/hotbudget/hotbudget/limits"
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

// report checks and reports to t; it is the body of every Max... adapter.
// A failure is reported with Errorf; a pass is logged with Logf, when t has
// it, with the measured value and the limit.
func report(t TestingT, p *profile.Profile, fn string, limit limits.Limit, opts []Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	r, err := limits.Check(p, fn, limit, opts...)
	if err != nil {
		t.Errorf("perfassert.%s(%q): %v", checkname.Of(string(limit.Quantity)), fn, err)
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
// as the leaf frame (pprof's flat time). On a capture its text says what
// limit would hold 99 times in 100 on this machine (see the package doc).
func MaxSelfTime(t TestingT, p *profile.Profile, fn string, max time.Duration, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, limits.Limit{Quantity: limits.SelfTime, Time: max}, opts)
}

// MaxTotalTime asserts that the samples through the functions fn selects
// add up to at most max (pprof's cum time). On a capture its text says what
// limit would hold 99 times in 100 on this machine (see the package doc).
func MaxTotalTime(t TestingT, p *profile.Profile, fn string, max time.Duration, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, limits.Limit{Quantity: limits.TotalTime, Time: max}, opts)
}

// MaxSelfShare asserts that the self time of the functions fn selects is at
// most max (0..1) of the profile's total.
func MaxSelfShare(t TestingT, p *profile.Profile, fn string, max float64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, limits.Limit{Quantity: limits.SelfShare, Share: max}, opts)
}

// MaxTotalShare asserts that the total time of the functions fn selects is
// at most max (0..1) of the profile's total.
func MaxTotalShare(t TestingT, p *profile.Profile, fn string, max float64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, limits.Limit{Quantity: limits.TotalShare, Share: max}, opts)
}

// An Option changes how a check selects functions and samples
// (limits.Option). The assertions' checks are package limits': a program
// that wants the result rather than a test failure calls limits.Check or a
// limits.Checker with the same options.
type Option = limits.Option

// Regexp makes the selector an RE2 regular expression (limits.Regexp).
func Regexp() Option { return limits.Regexp() }

// EachMatch judges each function name a Regexp selector matches on its
// own and reports the worst one (limits.EachMatch).
func EachMatch() Option { return limits.EachMatch() }

// AllowMissing lets a check pass when the selector matches no function
// (limits.AllowMissing).
func AllowMissing() Option { return limits.AllowMissing() }

// WithSelection sets which samples count (limits.WithSelection): an
// analysis.Selection, the one way to choose threads, processes, the sample
// type, or to drop synthetic frames. Of several, the last counts.
func WithSelection(sel analysis.Selection) Option { return limits.WithSelection(sel) }

// Named names the profile in failure text (limits.Named).
func Named(name string) Option { return limits.Named(name) }

// PerIteration makes time and allocation limits bound the quantity per
// unit of work the profile records: per run of the function Capture ran,
// or per benchmark op (limits.PerIteration).
func PerIteration() Option { return limits.PerIteration() }

// SkipUnderRace makes a time limit pass, logging what it measured, when the
// profile was captured with the race detector on (limits.SkipUnderRace).
func SkipUnderRace() Option { return limits.SkipUnderRace() }
