package bench

import (
	"fmt"
	"slices"

	"github.com/hotbudget/hotbudget/diff"
)

// Settings holds every knob of a benchmark comparison: what Compare uses,
// nothing else. Start from DefaultSettings().
type Settings struct {
	// Assume picks the test that compares a benchmark's runs:
	// diff.AssumeNormal is Welch's t-test; diff.AssumeNothing the
	// Mann–Whitney U test. diff.AssumeModel, the default, names diff's
	// noise model learned across a family of functions; benchmarks give
	// no such family, so under it bench judges as benchstat does, with
	// Mann–Whitney U, and every report says so ("Mann-Whitney U as
	// benchstat"). The confidence intervals follow the same choice.
	Assume diff.Assumption
	// Alpha is the false-discovery rate controlled across all the results
	// (Benjamini–Hochberg), slower and faster ones apart.
	Alpha float64
	// MinRelative is the smallest relative change of a median (0.10 =
	// 10%) judged regressed or improved.
	MinRelative float64
	// Ignore lists the configuration keys benchmarks are not told apart
	// by (benchstat's -ignore): "cpu" when the two sides ran on different
	// machines, "/gomaxprocs" for different core counts.
	Ignore []string
}

// DefaultSettings returns the settings used when no option changes them,
// a new value on every call.
func DefaultSettings() Settings {
	return Settings{Assume: diff.AssumeModel, Alpha: 0.05, MinRelative: 0.10}
}

// Option changes Settings. An invalid option makes Compare return an
// error.
type Option interface{ apply(*Settings) error }

type optionFunc func(*Settings) error

func (f optionFunc) apply(s *Settings) error { return f(s) }

// WithAlpha sets the false-discovery rate across results (0 < alpha < 1).
func WithAlpha(alpha float64) Option {
	return optionFunc(func(s *Settings) error {
		if !(alpha > 0 && alpha < 1) {
			return fmt.Errorf("bench: alpha must be in (0,1), got %v", alpha)
		}
		s.Alpha = alpha
		return nil
	})
}

// WithMinChange sets the smallest relative change of a median (0.10 = 10%)
// that can be judged regressed or improved.
func WithMinChange(relative float64) Option {
	return optionFunc(func(s *Settings) error {
		if !(relative >= 0) {
			return fmt.Errorf("bench: minimum change must not be negative, got %v", relative)
		}
		s.MinRelative = relative
		return nil
	})
}

// WithAssumption picks the test that compares a benchmark's runs
// (Settings.Assume): diff.AssumeNothing (Mann–Whitney U), diff.AssumeNormal
// (Welch's t-test) or diff.AssumeModel (the default: Mann–Whitney U as
// benchstat, said so in the report).
func WithAssumption(a diff.Assumption) Option {
	return optionFunc(func(s *Settings) error {
		switch a {
		case diff.AssumeModel, diff.AssumeNothing, diff.AssumeNormal:
			s.Assume = a
			return nil
		}
		return fmt.Errorf("bench: unknown assumption %q (want model, nothing or normal)", a)
	})
}

// WithIgnore ignores these configuration keys when telling benchmarks
// apart (Settings.Ignore; benchstat's -ignore): a file-level key such as
// "cpu" or "goos", or a sub-name key such as "/gomaxprocs".
func WithIgnore(keys ...string) Option {
	return optionFunc(func(s *Settings) error {
		for _, k := range keys {
			if err := checkIgnore(k); err != nil {
				return err
			}
		}
		s.Ignore = append(slices.Clip(s.Ignore), keys...)
		return nil
	})
}

// checkIgnore says what is wrong with a key to ignore.
func checkIgnore(k string) error {
	if !keyRE.MatchString(k) {
		return fmt.Errorf("bench: cannot ignore %q: want a configuration key such as cpu or goos, or a sub-name key such as /gomaxprocs", k)
	}
	return nil
}
