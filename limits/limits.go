// Package limits checks upper bounds on what functions cost in a profile:
// the self or total time of the functions a selector names, their share
// of the profile, or the objects and bytes they allocate. It is the engine
// behind perfassert's Max... assertions and budget files' limits, so that a
// test assertion and a budget line that bound the same quantity are one
// check with one result text; it does not import package testing, so a
// command that checks limits does not link it.
//
// Check measures one profile; a Checker indexes one or more profiles once
// (analysis.Index) and checks any number of limits on them. Several
// profiles are runs of one program: times are means per profile, shares
// are of all of them pooled. Which samples count is an analysis.Selection,
// given with WithSelection.
//
// Results and errors are worded as perfassert's, whose assertions present
// them ("perfassert.MaxSelfTime: ..."), and read the same when a budget
// file or a program checks the limit. A time limit on a profile made of
// runs (perfassert.Capture's) also says, in the result's text, how the
// value varied across the runs and what limit would hold 99 times in 100 on
// this machine, widened by how captures in separate processes differ.
package limits

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/checkname"
	"github.com/hotbudget/hotbudget/internal/harness"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

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
func (q Quantity) isSelf() bool {
	return q == SelfTime || q == SelfShare || q == SelfAllocs || q == SelfAllocBytes || q == SelfInstructions || q == SelfCycles
}

// checkName is the perfassert assertion that bounds q ("MaxSelfTime"), as
// a Result names its check (Result.Check) in failure text.
func (q Quantity) checkName() string { return checkname.Of(string(q)) }

// Limit is an upper bound on one quantity: Time for SelfTime and TotalTime,
// Share (0..1) for SelfShare and TotalShare, Count for the allocation
// quantities (objects or bytes) and the instruction quantities.
type Limit struct {
	Quantity Quantity
	Time     time.Duration
	Share    float64
	Count    int64
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
	case SelfAllocs, TotalAllocs, SelfAllocBytes, TotalAllocBytes, SelfInstructions, TotalInstructions, SelfCycles, TotalCycles:
		if l.Count < 0 {
			return fmt.Errorf("perfassert: negative %s limit %d", l.Quantity, l.Count)
		}
	default:
		return fmt.Errorf("perfassert: unknown quantity %q", l.Quantity)
	}
	return nil
}

// String is the bound with its unit: "50ms", "30.00%", "12 objects",
// "1.50KiB" or "1200 instructions".
func (l Limit) String() string {
	if l.Quantity.isShare() {
		return textfmt.Percent(l.Share)
	}
	if l.Quantity.isInstr() {
		return textfmt.Count(float64(l.Count)) + " " + l.Quantity.countType()
	}
	if l.Quantity.isAlloc() {
		if l.Quantity.allocUnit() == analysis.UnitBytes {
			return textfmt.Bytes(float64(l.Count))
		}
		return textfmt.Count(float64(l.Count)) + " objects"
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

// WithSelection sets which samples count: an analysis.Selection
// (threads, processes, synthetic frames, focus and ignore patterns,
// functions charged to their callers, the sample type), the value
// diff.WithSelection and budget rules take too. It is the one selection
// option; of several, the last counts. Without it every sample counts, by
// the profile's default sample type.
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

// Named names the profile in failure text (for example its file name).
// Without it the name recorded by perfassert.Capture is used, else
// "profile".
func Named(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// PerIteration makes time limits bound the time per unit of work the
// profile records: per run of the function perfassert.Capture ran (its
// iterations), or per benchmark op in a profile `hotbudget record` wrote.
// A capture runs its function until it has enough samples, so its total
// times say more about perfassert.MinSamples than about the code; per run
// they are comparable.
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
	// Value is the stacks' value in Result.Unit (nanoseconds, bytes or a
	// count), as Result.Value.
	Value int64
	Share float64 // of the profile total
}

// Result is the outcome of one check. Its String method is the failure
// text, Summary the same in one line; the fields are for programs (the
// CLI and budget files).
type Result struct {
	Check    string // assertion name, e.g. "MaxSelfTime"
	Profile  string // profile name (Named, or the name perfassert.Capture recorded)
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
	// Value is the measured self or total value of the selection in Unit
	// (for the time quantities nanoseconds: time.Duration(Value) is the
	// time), Share its share of Total, Samples the samples (events, for
	// exact data) behind it. Total, the rows and the stacks are in Unit
	// too, as analysis.Table's values are. Over several profiles (a
	// Checker's) Value is the mean per profile, Share the share of all of
	// them pooled, Samples their sum.
	Value   int64
	Share   float64
	Samples int64

	Functions    int   // functions in the profiles (after selection)
	Total        int64 // value of all selected samples, of all profiles, in Unit
	TotalSamples int64
	Exact        bool // values are measured durations or counts, not samples
	// Unit is what Value and Total count: analysis.UnitTime
	// (nanoseconds), or for the allocation quantities analysis.UnitCount
	// (objects) or UnitBytes, for the instruction quantities UnitCount.
	Unit string
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
	// LostSamples is set when perfassert.Capture found that the samples
	// account for much less CPU time than the process used: absolute times
	// read low.
	LostSamples bool
	// Iterations is the number of units of work (WorkUnit) Value is divided
	// by (PerIteration), 0 when Value is the profiles' whole value.
	Iterations int64
	// WorkUnit names what Iterations counts: "iteration" (a run of the
	// function perfassert.Capture ran) or "op" (a benchmark op); "" without
	// PerIteration.
	WorkUnit string
	// Race is set when the profile was captured with the race detector on.
	Race bool
	// SkippedRace is set when a time limit passed only because of
	// SkipUnderRace; Passed is then true and Value what was measured.
	SkippedRace bool

	// headroom is how a time varied across the runs of the capture and
	// the limit that would hold (String says it); tooFewRuns the runs of
	// a capture with too few to tell.
	headroom   *headroom
	tooFewRuns int
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
		if harness.IsFrame(f.Name) {
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
