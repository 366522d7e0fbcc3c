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
// functions, unless AllowMissing is given; an empty profile always fails; a
// sampled measurement of fewer than 10 samples is said out loud.
//
// Times are self time (pprof's flat: the function is the leaf frame) and
// total time (pprof's cum: the function is anywhere on the stack, once per
// sample), as the analysis package computes them; shares are of the time of
// all selected samples. When a selector matches several functions, their
// samples are pooled: a sample counts once in the total even if it passes
// through several of them.
package perfassert

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
)

// TestingT is the part of *testing.T the assertions use. It has the shape of
// testify's assert.TestingT. When the value also has Helper(), Logf or
// Skipf (as testing.TB does), they are used.
type TestingT interface {
	Errorf(format string, args ...any)
}

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
			return fmt.Errorf("perfassert: negative %s limit %s", l.Quantity, fmtDur(l.Time))
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

// String is the bound with its unit: "50ms" or "30.0%".
func (l Limit) String() string {
	if l.Quantity.isShare() {
		return fmtShare(l.Share)
	}
	return fmtDur(l.Time)
}

// An Option changes how a check selects functions and samples. Options are
// values from a closed set; an invalid one makes the check return an error.
type Option interface{ apply(*config) }

type config struct {
	regexp        bool
	allowMissing  bool
	perIteration  bool
	skipRace      bool
	dropSynthetic bool
	threads       []string
	processes     []string
	sampleType    string
	name          string
	err           error
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Regexp makes the selector an RE2 regular expression, matched anywhere in
// the function name (anchor it with ^ and $ to match whole names), instead
// of an exact pprof function name.
func Regexp() Option { return optionFunc(func(c *config) { c.regexp = true }) }

// AllowMissing lets a check pass when the selector matches no function
// (the code was not reached or was inlined away). Without it such a check
// fails, so that a renamed function cannot make a budget pass vacuously.
func AllowMissing() Option { return optionFunc(func(c *config) { c.allowMissing = true }) }

// DropSynthetic removes samples whose leaf is a synthetic frame such as
// (idle), (program) or (garbage collector) (see analysis.Synthetic), so
// shares are of the time the program's own code ran.
func DropSynthetic() Option { return optionFunc(func(c *config) { c.dropSynthetic = true }) }

// Thread keeps only samples of the thread with this name or tid (labels set
// by the loaders). Several Thread options select the union.
func Thread(nameOrTID string) Option {
	return optionFunc(func(c *config) {
		if nameOrTID == "" {
			c.err = errors.New("perfassert: empty Thread selector")
		}
		c.threads = append(c.threads, nameOrTID)
	})
}

// Process keeps only samples of the process with this name or pid. Several
// Process options select the union.
func Process(nameOrPID string) Option {
	return optionFunc(func(c *config) {
		if nameOrPID == "" {
			c.err = errors.New("perfassert: empty Process selector")
		}
		c.processes = append(c.processes, nameOrPID)
	})
}

// SampleType picks the profile value by type name ("cpu", "wall"); by
// default the profile's default sample type, as pprof does.
func SampleType(name string) Option { return optionFunc(func(c *config) { c.sampleType = name }) }

// Named names the profile in failure text (for example its file name).
// Without it the name recorded by Capture is used, else "profile".
func Named(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// PerIteration makes time limits bound the time per run of the function
// Capture ran: the measured time divided by Iterations. A capture runs its
// function until it has enough samples, so its total times say more about
// MinSamples than about the code; per run they are comparable. It is an
// error on a profile without an iteration count; shares are unaffected.
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

func (c *config) analysisOptions() []analysis.Option {
	var out []analysis.Option
	if c.dropSynthetic {
		out = append(out, analysis.DropSynthetic())
	}
	for _, th := range c.threads {
		out = append(out, analysis.Thread(th))
	}
	for _, pr := range c.processes {
		out = append(out, analysis.Process(pr))
	}
	if c.sampleType != "" {
		out = append(out, analysis.SampleType(c.sampleType))
	}
	return out
}

func (c *config) profileName(p *profile.Profile) string {
	if c.name != "" {
		return c.name
	}
	if n := ProfileName(p); n != "" {
		return n
	}
	return "profile"
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
// text; the fields are for programs (the CLI and budget files).
type Result struct {
	Check    string // assertion name, e.g. "MaxSelfTime"
	Profile  string // profile name (Named, or the name Capture recorded)
	Selector string
	Regexp   bool // Selector is a regular expression
	Limit    Limit

	Passed  bool
	Missing bool // the selector matched no function

	// Matched lists the functions the selector matched, as the analysis
	// package computes them (several when a regexp or a name in several
	// files matches).
	Matched []analysis.Function
	// Time is the measured self or total time of the selection, Share its
	// share of Total, Samples the samples (events, for exact data) behind it.
	Time    time.Duration
	Share   float64
	Samples int64

	Functions    int           // functions in the profile (after selection)
	Total        time.Duration // time of all selected samples
	TotalSamples int64
	Exact        bool // values are measured durations, not samples

	// Suggestions are the closest function names when nothing matched.
	Suggestions []string
	// Top are the functions with the most of the checked metric (self or
	// total), for context; Stacks the heaviest stacks through the selection.
	Top    []analysis.Function
	Stacks []Stack
	// Warnings are notes on the measurement (too few samples, loader
	// warnings); they are printed with the result.
	Warnings []string
	// FewSamples is set when the measurement rests on fewer than 10
	// samples of sampled data (a relative error above 30%).
	FewSamples bool
	// LostSamples is set when Capture found that the samples account for
	// much less CPU time than the process used: absolute times read low.
	LostSamples bool
	// Iterations is the number of runs Time is divided by (PerIteration),
	// 0 when Time is the profile's whole time.
	Iterations int64
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
// (nil, no time-valued sample type, an invalid option or regexp); a
// selector that matches nothing is a failed Result (Missing), or a passing
// one with AllowMissing. p is not modified.
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
	if fn == "" {
		return nil, errors.New("perfassert: empty function selector")
	}
	if _, ok := Iterations(p); c.perIteration && !ok {
		return nil, errors.New("perfassert: PerIteration on a profile without an iteration count (only Capture records one)")
	}
	match := func(name string) bool { return name == fn }
	if c.regexp {
		re, err := regexp.Compile(fn)
		if err != nil {
			return nil, fmt.Errorf("perfassert: selector: %w", err)
		}
		match = re.MatchString
	}
	table, err := analysis.Functions(p, c.analysisOptions()...)
	if err != nil {
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	r := &Result{
		Check:        limit.Quantity.checkName(),
		Profile:      c.profileName(p),
		Selector:     fn,
		Regexp:       c.regexp,
		Limit:        limit,
		Functions:    len(table.Functions),
		Total:        table.Total,
		TotalSamples: table.TotalSamples,
		Exact:        table.Exact,
		Warnings:     append([]string(nil), table.Warnings...),
	}
	for i, w := range r.Warnings {
		if strings.HasPrefix(w, lostSamplesText) {
			r.LostSamples = true
			if limit.Quantity.isShare() { // lost samples leave shares alone
				r.Warnings = slices.Delete(r.Warnings, i, i+1)
				break
			}
		}
	}
	for _, f := range table.Functions {
		if match(f.Name) {
			r.Matched = append(r.Matched, f)
		}
	}
	r.Top = topFunctions(table.Functions, limit.Quantity.isSelf(), topN)
	race, known := capturedUnderRace(p)
	r.Race = race
	skipRace := c.skipRace && (race || !known && raceEnabled)

	if len(table.Functions) == 0 || (table.Total == 0 && table.TotalSamples == 0) {
		r.Warnings = append(r.Warnings, "the profile has no samples (after thread, process and synthetic-frame selection): nothing can be asserted")
		r.Missing = len(r.Matched) == 0
		return r, nil
	}
	if len(r.Matched) == 0 {
		r.Missing = true
		r.Passed = c.allowMissing
		r.Suggestions = suggest(fn, c.regexp, table.Functions, 5)
		return r, nil
	}

	m, err := measure(p, match, &c, limit.Quantity.isSelf())
	if err != nil {
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	r.Time, r.Samples, r.Stacks = m.time, m.samples, m.stacks
	if r.Total > 0 {
		r.Share = float64(m.time) / float64(r.Total)
		for i := range r.Stacks {
			r.Stacks[i].Share = float64(r.Stacks[i].Time) / float64(r.Total)
		}
	}
	if !r.Exact && m.hasCount && r.Samples < minSamples {
		r.FewSamples = true
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"only %d samples in the measured %s: a sampled measurement this small is noise (±%.0f%%); profile for longer (Capture: MinSamples)",
			r.Samples, limit.Quantity, relErr(r.Samples)*100))
	}
	if w, ok := iterations(p); ok && w > 0 && !limit.Quantity.isShare() {
		if c.perIteration {
			r.Iterations = int64(math.Round(w))
			r.Time = time.Duration(float64(m.time) / w)
		} else {
			n := int64(math.Round(w))
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"the profile holds %d runs of a captured function: the time is their sum, which depends on how long the capture ran; PerIteration() bounds the time per run", n))
		}
	}
	if limit.Quantity.isShare() {
		r.Passed = r.Share <= limit.Share
	} else {
		r.Passed = r.Time <= limit.Time
		switch {
		case skipRace:
			r.SkippedRace = !r.Passed
			r.Passed = true
		case r.Race && !r.Passed:
			r.Warnings = append(r.Warnings, "the profile was captured with the race detector on (go test -race), which slows code several times over: a time limit chosen without it rarely holds; perfassert.SkipUnderRace() checks it only without -race")
		}
	}
	return r, nil
}

// relErr is the relative standard error of a Poisson count of n samples.
func relErr(n int64) float64 {
	if n <= 0 {
		return 1
	}
	return 1 / math.Sqrt(float64(n))
}

func topFunctions(fs []analysis.Function, self bool, n int) []analysis.Function {
	out := make([]analysis.Function, 0, len(fs))
	for _, f := range fs {
		if !isHarness(f.Name) {
			out = append(out, f)
		}
	}
	if !self {
		sortByTotal(out)
	}
	if len(out) > n {
		out = out[:n]
	}
	return out
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
