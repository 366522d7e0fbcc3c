package diff

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/stats"
)

// engine is one comparison under way: its settings, and the matching keys
// of every function of its runs, interned to dense ids so that the
// per-function work is done on arrays.
type engine struct {
	Settings
	keys []keyInfo        // by key id, in order of first appearance
	ids  map[string]int32 // matching key -> key id
	// order is the key ids sorted by key (keyOrder).
	order []int32
	// runOps is the most operations one run did (WithOps), which turns
	// a time per operation back into time per run for MinAbsolute.
	runOps float64
	// renamed holds the names of Settings.Rename met in the runs.
	renamed map[string]bool
	// byProcess: some profile holds the captures of several processes,
	// so every profile of both sides counts by process (byProcesses).
	byProcess bool
}

// byProcesses reports whether some index of xs holds the captures of
// several processes (a baseline perfassert.MatchBaseline recorded in
// more processes of the test binary): a comparison with one is made
// process against process, every profile of both sides counting as its
// processes (analysis.Index.Processes), each process one unit whose runs
// are merged, so that the noise learned is how processes differ, as
// MatchBaseline judges it.
func byProcesses(xs ...[]*analysis.Index) bool {
	for _, side := range xs {
		for _, x := range side {
			if x == nil {
				continue
			}
			if r, ok := (*indexload.Index)(x).Index().Facts.Known(); ok && r.Processes() > 1 {
				return true
			}
		}
	}
	return false
}

// keyInfo is one matching key and the name and file of the first function
// seen with it.
type keyInfo struct {
	key, name, file string
}

// newEngine applies opts to the default settings and checks the result.
func newEngine(opts []Option) (*engine, error) {
	s := &engine{Settings: DefaultSettings(), ids: map[string]int32{}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&s.Settings); err != nil {
			return nil, err
		}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// intern returns the id of matching key k, given the function it came from.
func (s *engine) intern(k string, f *analysis.Function) int32 {
	if id, ok := s.ids[k]; ok {
		return id
	}
	id := int32(len(s.keys))
	s.keys = append(s.keys, keyInfo{key: k, name: s.name(f.Name), file: f.File})
	s.ids[k] = id
	return id
}

// Compare judges head against base. Each side is one or more runs of the
// same program; a profile that holds several labelled runs (a baseline
// recorded by perfassert or hotbudget record) counts as its runs. When a
// profile of either side holds the captures of several processes (a
// baseline perfassert.MatchBaseline recorded in several), the comparison
// is process against process, as MatchBaseline makes it: every profile of
// both sides counts as its processes, each process's runs merged into one
// (Side.Processes). The profiles are not modified.
func Compare(base, head []*profile.Profile, opts ...Option) (*Report, error) {
	index := func(name string, ps []*profile.Profile) ([]*analysis.Index, error) {
		xs := make([]*analysis.Index, len(ps))
		for i, p := range ps {
			if p == nil {
				return nil, fmt.Errorf("diff: %s profile %d is nil", name, i+1)
			}
			x, err := analysis.NewIndex(p)
			if err != nil {
				return nil, fmt.Errorf("diff: %s profile %d: %w", name, i+1, err)
			}
			xs[i] = x
		}
		return xs, nil
	}
	s, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	bx, err := index("base", base)
	if err != nil {
		return nil, err
	}
	hx, err := index("head", head)
	if err != nil {
		return nil, err
	}
	return s.compare(bx, hx)
}

// Pair is one comparison of several judged together (CompareEach): the
// base and head profiles of one benchmark, say, under a name.
type Pair struct {
	Name       string
	Base, Head []*profile.Profile
}

// CompareEach judges every pair on its own, as Compare does (its own
// functions, noise, headline and report, named Pair.Name), but decides all
// their functions together: one Benjamini–Hochberg adjustment over every
// pair's tests holds the false-discovery rate across all of them. A
// function holding 10% of one benchmark is judged at 10%, not at its 0.5%
// of a profile merging forty benchmarks, and forty benchmarks judged
// apart do not multiply the false alarms by forty.
func CompareEach(pairs []Pair, opts ...Option) ([]*Report, error) {
	cs := make([]*comparison, len(pairs))
	for i, p := range pairs {
		s, err := newEngine(opts)
		if err != nil {
			return nil, err
		}
		if len(p.Base) == 0 || len(p.Head) == 0 {
			return nil, fmt.Errorf("diff: %s: no base or no head profiles", p.Name)
		}
		xs := [2][]*analysis.Index{}
		for k, ps := range [][]*profile.Profile{p.Base, p.Head} {
			for n, q := range ps {
				if q == nil {
					return nil, fmt.Errorf("diff: %s: %s profile %d is nil", p.Name, [2]string{"base", "head"}[k], n+1)
				}
				x, err := analysis.NewIndex(q)
				if err != nil {
					return nil, fmt.Errorf("diff: %s: %s profile %d: %w", p.Name, [2]string{"base", "head"}[k], n+1, err)
				}
				xs[k] = append(xs[k], x)
			}
		}
		s.byProcess = byProcesses(xs[0], xs[1])
		b, err := s.side("base", xs[0], s.BaseOps)
		if err != nil {
			return nil, fmt.Errorf("diff: %s: %w", p.Name, err)
		}
		h, err := s.side("head", xs[1], s.HeadOps)
		if err != nil {
			return nil, fmt.Errorf("diff: %s: %w", p.Name, err)
		}
		if cs[i], err = s.prepare(b, h); err != nil {
			return nil, fmt.Errorf("diff: %s: %w", p.Name, err)
		}
		cs[i].rep.Name = p.Name
	}
	decide(cs)
	reps := make([]*Report, len(cs))
	for i, c := range cs {
		c.finish()
		reps[i] = c.rep
	}
	// The headlines too are judged with one false-discovery control.
	var hp []float64
	var hi []int
	for i, r := range reps {
		if r.Headline.Judged {
			hp = append(hp, r.Headline.P)
			hi = append(hi, i)
		}
	}
	for k, q := range stats.BH(hp) {
		h := &reps[hi[k]].Headline
		h.Q = q
		if (h.Verdict == Regressed || h.Verdict == Improved) && q >= reps[hi[k]].Settings.Alpha {
			h.Verdict = Unchanged
		}
	}
	return reps, nil
}

// CompareIndex is Compare for profiles already indexed (analysis.NewIndex,
// or loaders.LoadIndex, which reads a Go profile straight into an Index
// without building a *profile.Profile): the same verdicts, from the same tables.
// An Index of a profile holding several labelled runs counts as its runs
// (analysis.Index.Runs), or as its processes (analysis.Index.Processes)
// when an Index of either side holds several processes, as in Compare.
// The indexes are not modified.
func CompareIndex(base, head []*analysis.Index, opts ...Option) (*Report, error) {
	s, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	for i, x := range base {
		if x == nil {
			return nil, fmt.Errorf("diff: base profile %d is nil", i+1)
		}
	}
	for i, x := range head {
		if x == nil {
			return nil, fmt.Errorf("diff: head profile %d is nil", i+1)
		}
	}
	return s.compare(base, head)
}

func (s *engine) compare(base, head []*analysis.Index) (*Report, error) {
	if len(base) == 0 {
		return nil, errors.New("diff: no base profiles")
	}
	if len(head) == 0 {
		return nil, errors.New("diff: no head profiles")
	}
	s.byProcess = byProcesses(base, head)
	b, err := s.side("base", base, s.BaseOps)
	if err != nil {
		return nil, err
	}
	h, err := s.side("head", head, s.HeadOps)
	if err != nil {
		return nil, err
	}
	c, err := s.prepare(b, h)
	if err != nil {
		return nil, err
	}
	decide([]*comparison{c})
	c.finish()
	return c.rep, nil
}

func (s *engine) check() error {
	switch s.Metric {
	case Self, Total:
	default:
		return fmt.Errorf("diff: unknown metric %q", s.Metric)
	}
	switch s.Key {
	case KeyName, KeyNameFile, KeyNameFileLine:
	default:
		return fmt.Errorf("diff: unknown key %q", s.Key)
	}
	switch s.Assume {
	case AssumeModel, AssumeNothing, AssumeNormal:
	case "":
		s.Assume = AssumeModel // Settings from before the field existed
	default:
		return fmt.Errorf("diff: unknown assumption %q", s.Assume)
	}
	switch s.Mode {
	case Share, Absolute:
		if s.Anchor != "" || s.BaseOps > 0 {
			// WithMode after WithAnchor or WithOps: the unit of work would
			// be ignored.
			return fmt.Errorf("diff: %s mode contradicts the unit of work WithAnchor or WithOps set", s.Mode)
		}
	case PerOp:
		if s.Anchor != "" {
			// WithOps with WithAnchor: an anchor has always made per-op
			// mode per anchor.
			s.Mode = PerAnchor
			break
		}
		if !(s.BaseOps > 0 && s.HeadOps > 0) {
			return errors.New("diff: per-op mode needs an anchor function or operation counts for both sides")
		}
	case PerAnchor:
		if s.Anchor == "" {
			return errors.New("diff: per-anchor mode needs an anchor function (WithAnchor)")
		}
	default:
		return fmt.Errorf("diff: unknown mode %q", s.Mode)
	}
	if s.minAbsoluteSet && (s.Mode == Share || s.Mode == PerAnchor) {
		return fmt.Errorf("diff: a minimum time change (WithMinAbsolute) applies in absolute and per-op modes; %s mode measures changes in share points", s.Mode)
	}
	if !(s.Alpha > 0 && s.Alpha < 1) {
		return fmt.Errorf("diff: alpha must be in (0,1), got %v", s.Alpha)
	}
	if s.MinRelative < 0 || s.MinAbsolute < 0 || s.MinShare < 0 {
		return errors.New("diff: negative minimum change")
	}
	return nil
}

// comparison is one comparison under way, as data: its settings, its runs
// and a column per function, which the stages fill in turn, each in its
// own file:
//
//   - begin (runs.go): the runs of both sides, checked comparable;
//     comparison.runs, head, exact, multi, min and the report's sides.
//   - normalise (normalise.go): every function's metric per run and the
//     exposures the model divides it by; the function columns measured,
//     e, ev, display, scale, and general.
//   - fitNoise (model.go): the noise model fitted on the functions on
//     both sides; the column fit, model and noise.
//   - tabulate (rows.go): a Row per function judged, tested but not
//     decided.
//   - decide (verdict.go): the false-discovery control across one or
//     several comparisons (CompareEach) and the rows' verdicts.
//   - couple (coupling.go): JIT moves between a function and its
//     neighbours confirmed or undone.
//   - conclude (verdict.go): near misses, warnings, renames, the headline,
//     the rows' order.
//   - explain (explain.go): the call paths of every changed function, and
//     the flame graph's data, kept on the Report as plain data.
type comparison struct {
	eng  *engine
	rep  *Report
	b, h *side
	// runs are the base runs, then the head runs; head says which are
	// head's.
	runs         []*run
	head         []bool
	exact, multi bool
	min          minimum // the minimum changes, in the comparison's units

	fns     []function // by function, in key order (normalise on)
	general []float64  // normalise: the exposures of a function outside the yardstick
	model   *model     // fitNoise: what judged the functions, to judge call paths alike
	noise   noise      // fitNoise
}

// function is one function's column of a comparison.
type function struct {
	measured // normalise: its metric per run, which sides have it
	// e and ev are the exposures the model divides its counts by, and
	// the variance of their logarithm; display turns a fitted rate into
	// the displayed metric; scale is how the rest of the profile moved,
	// head over base (1 outside Share mode). Normalise.
	e, ev          []float64
	display, scale float64
	fit            *fit // fitNoise: nil unless on both sides
}

// prepare runs the stages up to decide: every function of the two sides
// normalised, fitted and tabulated.
func (s *engine) prepare(b, h *side) (*comparison, error) {
	c, err := s.begin(b, h)
	if err != nil {
		return nil, err
	}
	if err := normalise(c); err != nil {
		return nil, err
	}
	fitNoise(c)
	tabulate(c)
	return c, nil
}

// finish runs the stages after decide.
func (c *comparison) finish() {
	couple(c)
	conclude(c)
	explain(c)
}

func samePeriod(a, b time.Duration) bool {
	// Intervals are medians of measured sample gaps: 1.089 ms and 1.084 ms
	// are the same setting.
	return math.Abs(float64(a)-float64(b)) <= 0.05*math.Max(float64(a), float64(b))
}
