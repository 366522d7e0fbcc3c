package diff

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
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
// recorded by perfassert or hotbudget record) counts as its runs. The
// profiles are not modified.
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
	js := make([]*judging, len(pairs))
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
		b, err := s.side("base", xs[0], s.BaseOps)
		if err != nil {
			return nil, fmt.Errorf("diff: %s: %w", p.Name, err)
		}
		h, err := s.side("head", xs[1], s.HeadOps)
		if err != nil {
			return nil, fmt.Errorf("diff: %s: %w", p.Name, err)
		}
		if js[i], err = s.prepare(b, h); err != nil {
			return nil, fmt.Errorf("diff: %s: %w", p.Name, err)
		}
		js[i].rep.Name = p.Name
	}
	decide(js)
	reps := make([]*Report, len(js))
	for i, j := range js {
		j.finish()
		if err := j.rep.explain(); err != nil {
			return nil, fmt.Errorf("diff: %s: %w", pairs[i].Name, err)
		}
		reps[i] = j.rep
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
// (analysis.Index.Runs). The indexes are not modified.
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
	b, err := s.side("base", base, s.BaseOps)
	if err != nil {
		return nil, err
	}
	h, err := s.side("head", head, s.HeadOps)
	if err != nil {
		return nil, err
	}
	rep, err := s.judge(b, h)
	if err != nil {
		return nil, err
	}
	if err := rep.explain(); err != nil {
		return nil, err
	}
	return rep, nil
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
	case PerOp:
		if s.Anchor == "" && !(s.BaseOps > 0 && s.HeadOps > 0) {
			return errors.New("diff: per-op mode needs an anchor function or operation counts for both sides")
		}
	default:
		return fmt.Errorf("diff: unknown mode %q", s.Mode)
	}
	if !(s.Alpha > 0 && s.Alpha < 1) {
		return fmt.Errorf("diff: alpha must be in (0,1), got %v", s.Alpha)
	}
	if s.MinRelative < 0 || s.MinAbsolute < 0 || s.MinShare < 0 {
		return errors.New("diff: negative minimum change")
	}
	return nil
}

// judge compares the two sides function by function, and as a whole.
func (s *engine) judge(b, h *side) (*Report, error) {
	j, err := s.prepare(b, h)
	if err != nil {
		return nil, err
	}
	decide([]*judging{j})
	j.finish()
	return j.rep, nil
}

// judging is one comparison whose rows are measured and tested but not
// yet decided: decide adjusts the p-values of one or several of them
// together (CompareEach), finish completes each.
type judging struct {
	s            *engine
	rep          *Report
	b, h         *side
	ms           []*measured
	runs         []*run
	head         []bool
	expo, ev     [][]float64
	display      []float64
	exact, multi bool
	nz           noise
}

// prepare measures and tests every function of the two sides.
func (s *engine) prepare(b, h *side) (*judging, error) {
	minAbsNote := ""
	if b.sum.Unit != UnitTime && b.sum.Unit != "" && s.MinAbsolute != 0 && (s.Mode == Absolute || s.Mode == PerOp && s.Anchor == "") {
		// MinAbsolute is a time: it says nothing of bytes or objects.
		minAbsNote = fmt.Sprintf("the values are %s: the minimum absolute change, a time (%s), does not apply; changes are judged by the minimum relative change alone",
			quantity(b.sum.Unit), textfmt.Duration(s.MinAbsolute))
		s.MinAbsolute = 0
	}
	rep := &Report{Settings: s.Settings, Base: b.sum, Head: h.sum}
	if minAbsNote != "" {
		rep.Warnings = append(rep.Warnings, minAbsNote)
	}
	runs := append(append([]*run(nil), b.runs...), h.runs...)
	head := make([]bool, len(runs))
	for j := len(b.runs); j < len(runs); j++ {
		head[j] = true
	}
	if b.sum.Unit != h.sum.Unit {
		return nil, fmt.Errorf("diff: base measures %s (%s), head %s (%s): not comparable",
			b.runs[0].table.SampleType, b.sum.Unit, h.runs[0].table.SampleType, h.sum.Unit)
	}
	exact := b.sum.Exact && h.sum.Exact
	if b.sum.Period > 0 && h.sum.Period > 0 && !samePeriod(b.sum.Period, h.sum.Period) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"base sampled every %v, head every %v: compared as times, not sample counts", textfmt.Duration(b.sum.Period), textfmt.Duration(h.sum.Period)))
	}
	if bt, ht := b.runs[0].table.SampleType, h.runs[0].table.SampleType; bt != ht {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("base measures %s, head %s", bt, ht))
	}

	ms := s.measure(runs, head, s.Metric)
	if err := overlap(ms, runs, head, rep, s.Key); err != nil {
		return nil, err
	}
	expo, ev, display, scale, general := s.exposures(ms, runs, head, rep)

	// The model is fitted on every function present on both sides; the
	// rest are new, gone or too small to say.
	var both []int
	for i, m := range ms {
		if m.inBase && m.inHead {
			both = append(both, i)
		}
	}
	fs := make([]*feature, len(both))
	fb := make([]feature, len(both))
	for n, i := range both {
		fb[n] = feature{k: ms[i].k, e: expo[i], ev: ev[i]}
		fs[n] = &fb[n]
	}
	// Total times nest (a caller's total holds its callees'), so one
	// change moves several of them together; with one run a side the
	// noise is learned from self times, which do not.
	var calib []*feature
	if s.Metric == Total && (len(b.runs) == 1 || len(h.runs) == 1) {
		self := s.measure(runs, head, Self)
		se, sev, _, _, _ := s.exposures(self, runs, head, &Report{})
		for i, m := range self {
			if m.inBase && m.inHead {
				calib = append(calib, &feature{k: m.k, e: se[i], ev: sev[i]})
			}
		}
	}
	var whole *feature
	if s.Mode != Share {
		// The whole profile's time per run: its run-to-run spread is a
		// noise every function shares, learned even when no function has
		// the samples to show its own.
		whole = &feature{k: make([]float64, len(runs)), e: general, ev: make([]float64, len(runs))}
		for j, r := range runs {
			whole.k[j] = r.cpu / r.period
		}
	}
	fits, nz, mdl := fitModel(fs, head, calib, whole)
	rep.Noise = noiseReport(nz)
	fitOf := make([]*fit, len(ms))
	for n, i := range both {
		fitOf[i] = &fits[n]
	}
	multi := len(b.runs) >= 2 && len(h.runs) >= 2
	rep.in = &inputs{eng: s, b: b, h: h, runs: runs, head: head, multi: multi, exact: exact,
		model: mdl, expo: expo, ev: ev, scale: scale, general: general}
	rep.Rows = make([]Row, 0, len(ms))
	for i, m := range ms {
		if s.Only != nil && !s.Only.MatchString(m.name) {
			continue
		}
		rep.Rows = append(rep.Rows, s.row(m, runs, head, display[i], scale[i], fitOf[i], exact, multi, expo[i]))
		row := &rep.Rows[len(rep.Rows)-1]
		row.idx, row.id = i, m.id
		row.Ungated = s.Gate != nil && !s.Gate.MatchString(m.name)
	}
	return &judging{s: s, rep: rep, b: b, h: h, ms: ms, runs: runs, head: head, expo: expo, ev: ev,
		display: display, exact: exact, multi: multi, nz: nz}, nil
}

// finish completes a decided comparison: JIT moves confirmed, warnings,
// renames, the headline, near misses, rows sorted.
func (j *judging) finish() {
	s, rep, b, h, ms, runs, head := j.s, j.rep, j.b, j.h, j.ms, j.runs, j.head
	exact, multi, nz := j.exact, j.multi, j.nz
	if s.Metric == Self && s.Assume == AssumeModel && !exact {
		s.confirm(rep, ms, runs, head, j.expo, j.ev, j.display)
	}
	s.nearMisses(rep)
	if !multi && !exact {
		rep.Warnings = append(rep.Warnings, pairWarning(len(b.runs), len(h.runs), nz))
	}
	if multi && s.Assume == AssumeNothing && !exact {
		fam := 0
		for _, row := range rep.Rows {
			if row.tested && s.sizeable(math.Max(row.Base.Metric, row.Head.Metric)) {
				fam++
			}
		}
		if w := rankLimit(len(b.runs), len(h.runs), fam, s.Alpha); w != "" {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	s.renames(rep)
	rep.Headline = s.headline(b, h)
	rep.Headline.unit = b.sum.Unit
	sortRows(rep.Rows)
	rep.Warnings = append(rep.Warnings, testWarnings(rep.Rows, "functions", s.Alpha)...)
	if w := noiseWarning(nz); w != "" && s.Assume == AssumeModel {
		rep.Warnings = append(rep.Warnings, w)
	}
}

func samePeriod(a, b time.Duration) bool {
	// Intervals are medians of measured sample gaps: 1.089 ms and 1.084 ms
	// are the same setting.
	return math.Abs(float64(a)-float64(b)) <= 0.05*math.Max(float64(a), float64(b))
}
