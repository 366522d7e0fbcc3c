package diff

import (
	"errors"
	"fmt"
	"regexp"
	"time"
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
	// PerOp compares time per unit of work: per call of an anchor function's
	// total time (Settings.Anchor) or per operation (Settings.BaseOps,
	// Settings.HeadOps).
	PerOp Mode = "per-op"
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
// picks the test that compares several runs a side (benchmath's
// assumptions).
type Assumption string

// Assumptions.
const (
	// AssumeNothing assumes nothing of the distribution of the runs: the
	// Mann–Whitney U test. Default. With five runs a side its smallest
	// p-value is 0.008, so once more than about six sizeable functions
	// are tested at once nothing can be flagged: take more runs, or
	// AssumeNormal.
	AssumeNothing Assumption = "nothing"
	// AssumeNormal assumes each function's normalised per-run values are
	// normally distributed, as counts of many samples nearly are: Welch's
	// t-test, whose p-values are not bounded below by the number of runs.
	// A run far off the others (a JIT that compiled differently) weighs
	// more than under AssumeNothing.
	AssumeNormal Assumption = "normal"
)

// Settings holds every knob of a comparison. Start from DefaultSettings.
type Settings struct {
	Metric Metric
	Mode   Mode
	Key    Key
	// Assume picks the test for several runs a side (CompareBench too).
	Assume Assumption

	// Anchor is the function (pprof name) whose total time is one unit of
	// work in PerOp mode. BaseOps and HeadOps give operation counts instead.
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

	// Filters applied to both sides before comparing.
	Focus, Ignore   *regexp.Regexp
	DropSynthetic   bool
	Thread, Process string

	// Only, when set, limits the verdicts to the functions whose names
	// match it. The others still count in every total and yardstick, but
	// get no row: they are neither tested nor reported.
	Only *regexp.Regexp
}

// DefaultSettings are the settings used when no option changes them.
var DefaultSettings = Settings{
	Metric:      Self,
	Mode:        Share,
	Key:         KeyName,
	Assume:      AssumeNothing,
	Alpha:       0.05,
	MinRelative: 0.10,
	MinAbsolute: time.Millisecond,
	MinShare:    0.005,
}

// Option changes Settings. Options are checked when built: an invalid one
// makes Compare return an error.
type Option interface{ apply(*Settings) error }

type optionFunc func(*Settings) error

func (f optionFunc) apply(s *Settings) error { return f(s) }

// WithSettings replaces all settings at once.
func WithSettings(s Settings) Option {
	return optionFunc(func(d *Settings) error { *d = s; return nil })
}

// Side summarises one side of a comparison.
type Side struct {
	Runs    int           `json:"runs"`
	Total   time.Duration `json:"total_ns"` // mean total per run
	Samples int64         `json:"samples"`  // all runs
	Exact   bool          `json:"exact"`
	Period  time.Duration `json:"period_ns"`
}

// Value is one function's measurement on one side (means over runs).
type Value struct {
	Self       time.Duration `json:"self_ns"`
	Total      time.Duration `json:"total_ns"`
	SelfShare  float64       `json:"self_share"`
	TotalShare float64       `json:"total_share"`
	Samples    int64         `json:"samples"` // of the compared metric, all runs
	// Metric is the compared quantity after normalisation: nanoseconds
	// (Absolute, PerOp) or a share in [0,1] (Share).
	Metric float64 `json:"metric"`
}

// Row is one function's comparison.
type Row struct {
	Name     string  `json:"name"`
	File     string  `json:"file,omitempty"`
	Base     Value   `json:"base"`
	Head     Value   `json:"head"`
	Delta    float64 `json:"delta"`    // head.Metric - base.Metric
	Relative float64 `json:"relative"` // head/base - 1; 0 for new/gone
	P        float64 `json:"p"`        // raw p-value, 1 when untested
	Q        float64 `json:"q"`        // FDR-adjusted p-value; 1 below the minimum effect
	Test     string  `json:"test"`     // "sampling", "mann-whitney", "welch-t", "exact", "none"
	// Scale is how much the rest of the profile's shares moved, factored
	// out of Delta and Relative in Share mode (1 otherwise): see the
	// package documentation.
	Scale    float64  `json:"scale"`
	Verdict  Verdict  `json:"verdict"`
	Warnings []string `json:"warnings,omitempty"`
	// Explain splits the change of a regressed or improved function over
	// its call paths (Compare only; see Explanation).
	Explain *Explanation `json:"explain,omitempty"`

	poolP float64 // several sampled runs: sampling test on the pooled samples
	key   string  // matching key (Settings.key)
}

// Report is the result of a comparison.
type Report struct {
	Settings Settings `json:"-"`
	Base     Side     `json:"base"`
	Head     Side     `json:"head"`
	Rows     []Row    `json:"functions"`
	Warnings []string `json:"warnings,omitempty"`
	bench    bool     // rows are benchmarks (CompareBench)
	in       *inputs  // what Compare judged: explanations and flame graphs
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

// WithMode sets the normalisation mode (Share by default).
func WithMode(m Mode) Option {
	return optionFunc(func(s *Settings) error {
		switch m {
		case Share, Absolute, PerOp:
			s.Mode = m
			return nil
		}
		return fmt.Errorf("diff: unknown mode %q (want share, absolute or per-op)", m)
	})
}

// WithAnchor selects PerOp mode with the named function's total time as one
// unit of work on each side.
func WithAnchor(function string) Option {
	return optionFunc(func(s *Settings) error {
		if function == "" {
			return errors.New("diff: empty anchor function")
		}
		s.Mode, s.Anchor = PerOp, function
		return nil
	})
}

// WithOps selects PerOp mode with the given operation counts per side.
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
// AssumeNothing (Mann–Whitney U, the default) or AssumeNormal (Welch's
// t-test).
func WithAssumption(a Assumption) Option {
	return optionFunc(func(s *Settings) error {
		switch a {
		case AssumeNothing, AssumeNormal:
			s.Assume = a
			return nil
		}
		return fmt.Errorf("diff: unknown assumption %q (want nothing or normal)", a)
	})
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

// WithMinChange sets the smallest relative change (0.10 = 10%) and the
// smallest absolute time change that can be judged regressed or improved.
func WithMinChange(relative float64, absolute time.Duration) Option {
	return optionFunc(func(s *Settings) error {
		if relative < 0 || absolute < 0 {
			return fmt.Errorf("diff: negative minimum change %v, %v", relative, absolute)
		}
		s.MinRelative, s.MinAbsolute = relative, absolute
		return nil
	})
}

// WithOnly judges only the functions whose names match re (Settings.Only):
// "did my package get slower?", while the runtime's share moves with the
// machine and the garbage collector. Unlike WithFocus it removes no
// samples.
func WithOnly(re *regexp.Regexp) Option {
	return optionFunc(func(s *Settings) error { s.Only = re; return nil })
}

// WithFocus keeps only samples through functions matching re (pprof -focus).
func WithFocus(re *regexp.Regexp) Option {
	return optionFunc(func(s *Settings) error { s.Focus = re; return nil })
}

// WithIgnore drops samples through functions matching re (pprof -ignore).
func WithIgnore(re *regexp.Regexp) Option {
	return optionFunc(func(s *Settings) error { s.Ignore = re; return nil })
}

// WithoutSynthetic drops synthetic frames such as (idle) and (program).
func WithoutSynthetic() Option {
	return optionFunc(func(s *Settings) error { s.DropSynthetic = true; return nil })
}

// WithThread keeps only samples of the thread with this name or tid.
func WithThread(nameOrTID string) Option {
	return optionFunc(func(s *Settings) error { s.Thread = nameOrTID; return nil })
}

// WithProcess keeps only samples of the process with this name or pid.
func WithProcess(nameOrPID string) Option {
	return optionFunc(func(s *Settings) error { s.Process = nameOrPID; return nil })
}
