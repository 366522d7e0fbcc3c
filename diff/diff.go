package diff

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
)

// Verdict is the judgement on one function.
type Verdict string

// Verdicts, as they appear in the JSON report.
const (
	Unchanged Verdict = "unchanged"
	Regressed Verdict = "regressed"
	Improved  Verdict = "improved"
	New       Verdict = "new"
	Gone      Verdict = "gone"
)

// Metric selects which per-function time is compared.
type Metric string

// Metrics.
const (
	Self  Metric = "self"  // pprof's flat
	Total Metric = "total" // pprof's cum
)

// Mode says how times are normalised before they are compared.
type Mode string

// Normalisation modes.
const (
	// Share compares each function's share of its profile's total time. It
	// is the default: it is unaffected by run length and by the overhead a
	// different sampling interval adds to the whole program.
	Share Mode = "share"
	// Absolute compares time per run as measured.
	Absolute Mode = "absolute"
	// PerOp compares time per operation: the operation counts of each side
	// (Settings.BaseOps, Settings.HeadOps; WithOps).
	PerOp Mode = "per-op"
	// PerAnchor compares time per unit of an anchor function's total time
	// (Settings.Anchor; WithAnchor): values are ratios to the anchor's
	// time, minimum changes are in share points (Settings.MinShare), and
	// the headline is judged only with WithSameWork. The JSON report names
	// it "per-op" with an "anchor", as its schema always has.
	PerAnchor Mode = "per-anchor"
)

// Key says how functions are matched between the two sides.
type Key string

// Matching keys.
const (
	// KeyName matches by function name only, like pprof. Default.
	KeyName Key = "name"
	// KeyNameFile matches by name and file path with build-specific
	// prefixes removed (module path or last path elements), ignoring lines.
	KeyNameFile Key = "name+file"
	// KeyNameFileLine also requires the function's start line to agree.
	KeyNameFileLine Key = "name+file+line"
)

// Assumption is what the caller assumes of the runs of one side, which
// picks the test that compares several runs a side.
type Assumption string

// Assumptions.
const (
	// AssumeModel is the default: counts per function vary by sampling
	// and by a run-to-run dispersion learned across all the functions of
	// the comparison, each function's own variance moderated toward it by
	// empirical Bayes (see the package documentation). It borrows strength
	// across functions, so five runs a side can flag one function among
	// many, and it judges one profile a side too.
	AssumeModel Assumption = "model"
	// AssumeNothing assumes nothing of the distribution of the runs: the
	// Mann–Whitney U test per function (benchmath). With five runs a side
	// its smallest p-value is 0.008, so once more than about six sizeable
	// functions are tested at once nothing can be flagged.
	AssumeNothing Assumption = "nothing"
	// AssumeNormal assumes each function's normalised per-run values are
	// normally distributed: Welch's t-test per function (benchmath), with
	// only that function's runs to estimate its noise.
	AssumeNormal Assumption = "normal"
)

// Settings are the settings of a comparison: those a Report was made with
// (Report.Settings). Options set them, one option a setting; those no
// option sets are DefaultSettings'.
type Settings struct {
	Metric Metric
	Mode   Mode
	Key    Key
	// Assume picks the test for several runs a side.
	Assume Assumption

	// SameWork declares that every run of both sides did the same work, so
	// that the time per run is judged (the headline).
	SameWork bool
	// NoHeadline shows the whole program's time per unit of work without
	// judging it (WithHeadline(false)).
	NoHeadline bool

	// Anchor is the function (pprof name) whose total time is one unit of
	// work in PerAnchor mode. BaseOps and HeadOps are the operation counts
	// of PerOp mode.
	Anchor           string
	BaseOps, HeadOps float64

	// Alpha is the false-discovery rate controlled across all functions
	// tested at once (Benjamini–Hochberg), slower and faster ones apart.
	Alpha float64
	// MinRelative and MinAbsolute are the smallest changes reported as
	// regressed or improved: both must be exceeded. MinAbsolute is a time
	// (Absolute and PerOp modes); MinShare is the same in share points.
	MinRelative float64
	MinAbsolute time.Duration
	MinShare    float64
	// minAbsoluteSet: WithMinAbsolute set MinAbsolute, which Compare
	// refuses in the modes that do not use it.
	minAbsoluteSet bool

	// Selection says which samples of both sides count: threads,
	// processes, synthetic frames, focus and ignore patterns, the
	// functions whose time is their caller's, the sample type
	// (analysis.Selection, the module's one selection type). By default
	// Selection.ToCaller is Go's runtime.asyncPreempt, the landing place
	// of the scheduler's preemption signal, whose share follows machine
	// load: on identical Go runs it alone made one profile a side fail the
	// gate in 10-15% of pairs. WithSelection sets it.
	Selection analysis.Selection

	// Only, when set, limits the verdicts to the functions whose names
	// match it. The others still count in every total and yardstick, but
	// get no row: they are neither tested nor reported. It is a filter of
	// judging, not a selection of samples: unlike Selection.Focus it
	// removes no sample from any total.
	Only *regexp.Regexp
	// Gate, when set, is the functions the gate judges (WithGate): the
	// others are tested and shown, count in every total, but never
	// regressed, improved, new or gone, and take no part in the
	// false-discovery control of the gated ones (Row.Ungated). hotbudget
	// record sets it to the module's own functions; perfassert judges them
	// alone (Only).
	Gate *regexp.Regexp

	// Rename maps a base function's name to the name it has in head: the
	// two are matched as one function, reported under the new name
	// (Row.RenamedFrom), so that a function renamed in the change is
	// judged instead of showing as gone and new. Several names may map to
	// one (functions merged). Set it with WithRename.
	Rename map[string]string
}

// DefaultSettings returns the settings used when no option changes them, a
// new value on every call (its ToCaller regexp included): changing it
// changes no one else's. The default Selection charges
// runtime.asyncPreempt, the frame of an asynchronous preemption, to its
// caller.
func DefaultSettings() Settings {
	return Settings{
		Metric:      Self,
		Mode:        Share,
		Key:         KeyName,
		Assume:      AssumeModel,
		Alpha:       0.05,
		MinRelative: 0.10,
		MinAbsolute: time.Millisecond,
		MinShare:    0.005,
		Selection:   analysis.Selection{ToCaller: regexp.MustCompile(`^runtime\.asyncPreempt$`)},
	}
}

// Option changes Settings. Options are checked when built: an invalid one
// makes Compare return an error.
type Option interface{ apply(*Settings) error }

type optionFunc func(*Settings) error

func (f optionFunc) apply(s *Settings) error { return f(s) }

// Side summarises one side of a comparison.
type Side struct {
	// Runs is how many runs the side holds, or processes when Processes
	// is set: a comparison with a profile holding the captures of several
	// processes (a perfassert baseline) counts every profile of both
	// sides by process, each process's runs merged.
	Runs      int   `json:"runs"`
	Processes bool  `json:"processes,omitempty"`
	Total     int64 `json:"total"`   // mean total per run, in Unit
	Samples   int64 `json:"samples"` // all runs
	Exact     bool  `json:"exact"`
	// Period is the sampling interval of a time profile (0 when unknown,
	// exact, or the values are not times).
	Period time.Duration `json:"period_ns"`
	// Unit is what Total and the rows' values count (analysis.Table.Unit):
	// "ns" for time, "bytes" or "count" (objects, instructions, events)
	// for heap, allocation and instruction profiles.
	Unit string `json:"unit"`
}

// Value is one function's measurement on one side (means over runs).
// Self and Total are in the side's unit (Side.Unit): nanoseconds, bytes
// or a count.
type Value struct {
	Self       int64   `json:"self"`
	Total      int64   `json:"total"`
	SelfShare  float64 `json:"self_share"`
	TotalShare float64 `json:"total_share"`
	Samples    int64   `json:"samples"` // of the compared metric, all runs
	// Metric is the compared quantity after normalisation: in the side's
	// unit (Absolute), in it per operation (PerOp), a ratio to the
	// anchor's total (PerAnchor) or a share in [0,1] (Share).
	Metric float64 `json:"metric"`
}

// Row is one function's comparison.
type Row struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	// Base and Head: Metric is the fitted value of the compared metric on
	// each side (share mode: head is corrected for how the rest of the
	// profile moved, see Scale), so that Relative = Head/Base − 1 agrees
	// with the two values shown.
	Base     Value   `json:"base"`
	Head     Value   `json:"head"`
	Delta    float64 `json:"delta"`    // Head.Metric − Base.Metric
	Relative float64 `json:"relative"` // Head.Metric/Base.Metric − 1; 0 for new and gone
	// P is the one-sided p-value in the direction of the change (slower
	// when Delta > 0), 1 when untested; Q its false-discovery-rate
	// adjusted value, 1 below the minimum effect.
	P float64 `json:"p"`
	Q float64 `json:"q"`
	// Test is the test that gave P: "moderated-t" (several runs a side,
	// the package's model), "pair-t" (one run a side), "exact" and
	// "exact-t" (exact counts, one or several runs a side),
	// "mann-whitney" and "welch-t" (WithAssumption), "presence" (new or
	// gone), or "none" (not judged).
	Test string `json:"test"`
	// Scale is how much the rest of the profile's shares moved, head over
	// base, factored out of Head.Metric in Share mode (1 otherwise).
	Scale float64 `json:"scale"`
	// MinDetectable is the smallest slowdown (0.12 = +12%) these runs
	// would detect with 80% probability, were this function the only one
	// that changed; RunsNeeded is how many runs a side would detect the
	// minimum change (Settings.MinRelative). Both are 0 when untested.
	MinDetectable float64 `json:"min_detectable"`
	RunsNeeded    int     `json:"runs_needed"`
	Verdict       Verdict `json:"verdict"`
	// Ungated is true for a function outside Settings.Gate: shown, never
	// judged regressed, improved, new or gone.
	Ungated bool `json:"ungated,omitempty"`
	// NearMiss, when not empty, says why an unchanged row is suspicious:
	// slower by at least the minimum change with a small p-value whose
	// adjusted q is above the false-discovery rate, or a significant
	// change of an ungated function. A near miss never fails the gate.
	NearMiss string `json:"near_miss,omitempty"`
	// MovedIn, when set, is why a function whose time grew significantly
	// is a near miss and not a regression: it grew by less than its whole
	// program got faster per unit of work (see MovedIn).
	MovedIn  *MovedIn `json:"moved_in,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// RenamedFrom lists the base names matched with this function by
	// Settings.Rename (WithRename, --rename).
	RenamedFrom []string `json:"renamed_from,omitempty"`
	// Explain splits the change of a regressed or improved function over
	// its call paths (Compare only; see Explanation).
	Explain *Explanation `json:"explain,omitempty"`

	tested     bool
	pUp, pDown float64 // one-sided p-values, slower and faster
	// presence is a row on one side only, sizeable, whose P tests that it
	// could not have fallen so by chance: New or Gone when its Q passes.
	presence Verdict
	// tooFew is the runs a side of a Mann–Whitney test whose smallest
	// possible p-value is not below alpha (zero otherwise).
	tooFew [2]int
	idx    int // the function's column in its comparison (comparison.fns)
}

// The tests a comparison runs, the words Row.Test holds.
const (
	// testModeratedT is the moderated t-test of several runs a side, the
	// functions sharing what they say about the noise (see the package
	// documentation).
	testModeratedT = "moderated-t"
	// testPairT is the t-test of one run a side against the noise the
	// functions' changes spread with.
	testPairT = "pair-t"
	// testExact compares exact (measured, not sampled) values of one run
	// a side: any difference is a change.
	testExact = "exact"
	// testExactT is the moderated t-test of exact (measured, not sampled)
	// values of several runs a side.
	testExactT = "exact-t"
	// testMannWhitney is the Mann–Whitney U test (WithAssumption(AssumeNothing)).
	testMannWhitney = "mann-whitney"
	// testWelchT is Welch's t-test (WithAssumption(AssumeNormal)).
	testWelchT = "welch-t"
	// testPresence judges a function present on one side only (New, Gone).
	testPresence = "presence"
	// testNone is no test: the function was not judged.
	testNone = "none"
)

// The sources of a comparison's run-to-run noise, the words Noise.Source
// holds.
const (
	// noiseRuns is learned from the residuals of several runs a side.
	noiseRuns = "runs"
	// noisePair is learned, with one run a side, from the spread of the
	// functions' changes.
	noisePair = "pair"
	// noiseWhole is the whole profile's run-to-run dispersion: several
	// runs a side, but too few functions to learn from.
	noiseWhole = "whole"
	// noiseFloor is the least noise assumed: too few functions to learn
	// from.
	noiseFloor = "floor"
)

// Noise describes the noise model a comparison learned (see the package
// documentation).
type Noise struct {
	// Source says where the dispersion came from: "runs", the residuals
	// of several runs a side; "pair", with one run a side, the spread of
	// the functions' changes; "whole", the whole profile's run-to-run
	// dispersion (several runs a side, too few functions to learn from);
	// "floor", the least noise assumed (too few functions). Only runs and
	// pair are learned from the functions; a report's warnings say when
	// not.
	Source string `json:"source"`
	// Whole is the whole profile's run-to-run dispersion (several runs a
	// side, times compared, not shares; 0 otherwise), the least
	// Dispersion taken.
	Whole float64 `json:"whole_dispersion,omitempty"`
	// Dispersion is the run-to-run variance of a function's log time
	// beyond sampling noise: its square root is the coefficient of
	// variation between runs.
	Dispersion float64 `json:"dispersion"`
	// Functions is how many functions it was learned from; ResidualDF the
	// runs' residual degrees of freedom (runs − 2); PriorDF what the
	// moderation's prior is worth in degrees of freedom (−1: infinite,
	// every function's noise alike); Outliers the functions whose own
	// noise is far beyond the rest's, judged on their own.
	Functions  int     `json:"functions"`
	ResidualDF float64 `json:"residual_df"`
	PriorDF    float64 `json:"prior_df"`
	Outliers   int     `json:"outliers"`

	present int // functions with samples in every run (several runs a side)
}

// Report is the result of a comparison.
type Report struct {
	Settings Settings `json:"-"`
	// Name names the comparison among several (CompareEach: a benchmark).
	Name string `json:"name,omitempty"`
	Base Side   `json:"base"`
	Head Side   `json:"head"`
	// Headline is the verdict on the whole profile's time per unit of work.
	Headline Headline `json:"headline"`
	// Noise is the noise model the comparison learned.
	Noise    Noise    `json:"noise"`
	Rows     []Row    `json:"functions"`
	Warnings []string `json:"warnings,omitempty"`
	// min is the minimum change the comparison counted, in its units
	// (Judged, the flame graph); zero for a Report not made by a
	// comparison, which then takes its Settings' (minimum).
	min minimum
	// flame is what the HTML report's flame graph is drawn from (nil:
	// none), plain data like the rest of the Report.
	flame *flameData
	// judged is Judged's answer kept for a copy whose Rows were cut
	// (Write "regressions"), when judgedSet.
	judged    int
	judgedSet bool
}

// Failed reports whether the gate fails: a function regressed, or the
// whole program's time per unit of work did (Headline).
func (r *Report) Failed() bool {
	return len(r.Regressions()) > 0 || r.Headline.Verdict == Regressed
}

// nearMisses returns the rows with a NearMiss: suspicious, not failing.
func (r *Report) nearMisses() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.NearMiss != "" {
			out = append(out, row)
		}
	}
	return out
}

// Regressions returns the rows whose verdict is Regressed.
func (r *Report) Regressions() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == Regressed {
			out = append(out, row)
		}
	}
	return out
}

// WithMetric compares self (default) or total time.
func WithMetric(m Metric) Option {
	return optionFunc(func(s *Settings) error {
		if m != Self && m != Total {
			return fmt.Errorf("diff: unknown metric %q (want self or total)", m)
		}
		s.Metric = m
		return nil
	})
}

// WithMode sets the normalisation mode: Share (the default) or Absolute.
// The per-unit-of-work modes are set by the unit itself, one option each:
// WithOps (PerOp, operation counts) and WithAnchor (PerAnchor, an anchor
// function's time); WithSameWork declares a run the unit of the headline.
func WithMode(m Mode) Option {
	return optionFunc(func(s *Settings) error {
		switch m {
		case Share, Absolute:
			s.Mode = m
			return nil
		case PerOp, PerAnchor:
			return fmt.Errorf("diff: mode %q is set by its unit of work: WithOps(base, head) or WithAnchor(function)", m)
		}
		return fmt.Errorf("diff: unknown mode %q (want share or absolute)", m)
	})
}

// WithAnchor selects PerAnchor mode with the named function's total time as
// one unit of work on each side.
func WithAnchor(function string) Option {
	return optionFunc(func(s *Settings) error {
		if function == "" {
			return errors.New("diff: empty anchor function")
		}
		s.Mode, s.Anchor = PerAnchor, function
		return nil
	})
}

// WithOps selects PerOp mode with the given operation counts: every
// profile of the base side did base operations, every profile of the head
// side head. A profile holding several runs (a perfassert capture, a
// hotbudget record baseline) shares its count among its runs in proportion
// to the work each run records, evenly when they record none.
func WithOps(base, head float64) Option {
	return optionFunc(func(s *Settings) error {
		if !(base > 0) || !(head > 0) {
			return fmt.Errorf("diff: operation counts must be positive, got %v and %v", base, head)
		}
		s.Mode, s.BaseOps, s.HeadOps = PerOp, base, head
		return nil
	})
}

// WithKey sets how functions are matched between sides.
func WithKey(k Key) Option {
	return optionFunc(func(s *Settings) error {
		switch k {
		case KeyName, KeyNameFile, KeyNameFileLine:
			s.Key = k
			return nil
		}
		return fmt.Errorf("diff: unknown key %q (want name, name+file or name+file+line)", k)
	})
}

// WithAssumption picks the test that compares several runs a side:
// AssumeModel (the default), AssumeNothing (Mann–Whitney U) or
// AssumeNormal (Welch's t-test).
func WithAssumption(a Assumption) Option {
	return optionFunc(func(s *Settings) error {
		switch a {
		case AssumeModel, AssumeNothing, AssumeNormal:
			s.Assume = a
			return nil
		}
		return fmt.Errorf("diff: unknown assumption %q (want model, nothing or normal)", a)
	})
}

// WithHeadline says whether the whole program's time per unit of work is
// judged (the headline; Settings.NoHeadline is its opposite). By default
// it is, when the work is known (WithSameWork, WithOps, or recorded by
// perfassert.Capture and hotbudget record). WithHeadline(false) shows it
// without judging it: for baselines recorded on another machine, where
// time per iteration measures the hardware as much as the code; functions
// are still judged, as shares. perfassert's MatchBaseline starts with
// WithHeadline(false), which a later WithHeadline(true) undoes.
func WithHeadline(judge bool) Option {
	return optionFunc(func(s *Settings) error { s.NoHeadline = !judge; return nil })
}

// WithSameWork declares that every run of both sides did the same work
// (the same input, the same number of operations), so that the whole
// program's time per run is judged: a program that got slower everywhere
// leaves every share as it was and is caught only there.
func WithSameWork() Option {
	return optionFunc(func(s *Settings) error { s.SameWork = true; return nil })
}

// WithAlpha sets the false-discovery rate across functions (0 < alpha < 1).
func WithAlpha(alpha float64) Option {
	return optionFunc(func(s *Settings) error {
		if !(alpha > 0 && alpha < 1) {
			return fmt.Errorf("diff: alpha must be in (0,1), got %v", alpha)
		}
		s.Alpha = alpha
		return nil
	})
}

// WithMinChange sets the smallest relative change (0.10 = 10%) that can
// be judged regressed or improved, in every mode (Settings.MinRelative;
// bench.WithMinChange is the same setting for benchmarks).
func WithMinChange(relative float64) Option {
	return optionFunc(func(s *Settings) error {
		if relative < 0 {
			return fmt.Errorf("diff: negative minimum change %v", relative)
		}
		s.MinRelative = relative
		return nil
	})
}

// WithMinAbsolute sets the smallest change of time per run (per operation's
// run in PerOp mode) that can be judged regressed or improved in Absolute
// and PerOp modes (Settings.MinAbsolute, 1ms by default); the relative
// minimum must be reached too. Share and PerAnchor modes measure changes
// in share points (Settings.MinShare), where a time means nothing:
// Compare refuses the option there rather than ignore it.
func WithMinAbsolute(d time.Duration) Option {
	return optionFunc(func(s *Settings) error {
		if d < 0 {
			return fmt.Errorf("diff: negative minimum change %v", d)
		}
		s.MinAbsolute, s.minAbsoluteSet = d, true
		return nil
	})
}

// WithOnly judges only the functions whose names match re (Settings.Only):
// "did my package get slower?", while the runtime's share moves with the
// machine and the garbage collector. It is a filter of judging, not of
// samples: unlike Selection.Focus it removes no sample from any total.
func WithOnly(re *regexp.Regexp) Option {
	return optionFunc(func(s *Settings) error { s.Only = re; return nil })
}

// WithGate gates only the functions whose names match re (Settings.Gate):
// the others, the runtime's and the standard library's for a module, are
// still tested and shown, and a sizeable significant change of one of them
// is a near miss (Row.NearMiss), but they never fail the gate and do not
// share the false-discovery budget of the functions the user owns. Nil
// gates every function (the default).
func WithGate(re *regexp.Regexp) Option {
	return optionFunc(func(s *Settings) error { s.Gate = re; return nil })
}

// WithRename matches the base's function old with head's function new
// (Settings.Rename): a function renamed in the change is judged as one
// function, under its new name, instead of showing as gone and new (which
// no gate fails on). Names are as the report shows them; with
// KeyNameFile the file must match too. When the report warns that a
// gone and a new function share a file, this is the option it suggests.
func WithRename(old, new string) Option {
	return optionFunc(func(s *Settings) error {
		switch {
		case old == "" || new == "":
			return fmt.Errorf("diff: rename %q to %q: empty function name", old, new)
		case old == new:
			return fmt.Errorf("diff: rename %q to itself", old)
		}
		if prev, ok := s.Rename[old]; ok && prev != new {
			return fmt.Errorf("diff: %q is renamed twice, to %q and to %q", old, prev, new)
		}
		if _, ok := s.Rename[new]; ok {
			return fmt.Errorf("diff: rename %q to %q: %q is renamed itself", old, new, new)
		}
		for o, n := range s.Rename {
			if n == old {
				return fmt.Errorf("diff: rename %q to %q: %q is already the new name of %q", old, new, old, o)
			}
		}
		// Copied: Settings are values, and an option must not change a
		// map that other Settings share.
		m := make(map[string]string, len(s.Rename)+1)
		for o, n := range s.Rename {
			m[o] = n
		}
		m[old] = new
		s.Rename = m
		return nil
	})
}

// WithSelection sets which samples both sides count (Settings.Selection),
// an analysis.Selection, the value limits, perfassert and budget rules
// take too. It replaces the whole selection, diff's default ToCaller
// (runtime.asyncPreempt) included: to keep that default and change one
// field, start from DefaultSettings().Selection, as the example shows. It
// is the one selection option; of several, the last counts.
func WithSelection(sel analysis.Selection) Option {
	return optionFunc(func(s *Settings) error {
		if err := sel.Validate(); err != nil {
			return fmt.Errorf("diff: %w", err)
		}
		s.Selection = sel
		s.Selection.Threads = slices.Clone(sel.Threads)
		s.Selection.Processes = slices.Clone(sel.Processes)
		return nil
	})
}
