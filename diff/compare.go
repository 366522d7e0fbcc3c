package diff

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"golang.org/x/perf/benchmath"
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

// run is one run reduced to per-key measurements.
type run struct {
	index  *analysis.Index
	table  *analysis.Table
	rowKey []int32   // key id of each row of table
	fn     []runFunc // by key id; ids past its end are absent
	period float64   // nanoseconds one effective sample stands for
	unit   float64   // Absolute: 1; PerOp: operations or the anchor's total (ns)
	cpu    float64   // the run's time without (idle), ns: the headline's numerator
	work   float64   // units of work the run did (0: unknown)
	// workUnit names what work counts ("iteration", "op", ...).
	workUnit string
	// unitErr says the run lacks the time its unit needs (Absolute and
	// PerOp modes): side reports it once the side as a whole has time.
	unitErr error
}

type runFunc struct {
	present             bool
	self, total         time.Duration
	selfSamp, totalSamp int64
	selfShare, totShare float64
	local               time.Duration // analysis.Function.Local
	localSamp           int64
}

// get returns the run's measurements of key id, nil when absent.
func (r *run) get(id int32) *runFunc {
	if int(id) >= len(r.fn) || !r.fn[id].present {
		return nil
	}
	return &r.fn[id]
}

// local is a metric of its own: self time plus the direct callees' self
// time under the function (analysis.Function.Local). It checks self-time
// changes against time the JIT moved between a function and its callees.
const local Metric = "local"

func (f *runFunc) metric(m Metric) (time.Duration, int64) {
	switch m {
	case Total:
		return f.total, f.totalSamp
	case local:
		return f.local, f.localSamp
	}
	return f.self, f.selfSamp
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
// or analysis.ParseIndex straight from a Go profile's bytes, which spares
// building a *profile.Profile): the same verdicts, from the same tables.
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

type side struct {
	name string
	runs []*run
	sum  Side
}

// side reduces one side's profiles to runs: a profile holding several
// labelled runs is split into them.
func (s *engine) side(name string, xs []*analysis.Index, ops float64) (*side, error) {
	sd := &side{name: name}
	var total time.Duration
	exact := true
	for i, x := range xs {
		parts, err := x.Runs()
		if err != nil {
			return nil, fmt.Errorf("diff: %s profile %d: %w", name, i+1, err)
		}
		first := len(sd.runs)
		for k, q := range parts {
			where := fmt.Sprintf("%s profile %d", name, i+1)
			if len(parts) > 1 {
				where += fmt.Sprintf(" (run %d of %d)", k+1, len(parts))
			}
			r, err := s.run(q)
			if err != nil {
				return nil, fmt.Errorf("diff: %s: %w", where, err)
			}
			if r.unitErr != nil {
				r.unitErr = fmt.Errorf("diff: %s: %w", where, r.unitErr)
			}
			sd.runs = append(sd.runs, r)
			t := r.table
			var ok bool
			if total, ok = addTime(total, t.Total); !ok {
				return nil, fmt.Errorf("diff: %s: the total time of its runs overflows int64 nanoseconds", name)
			}
			sd.sum.Samples += t.TotalSamples
			exact = exact && t.Exact
			if len(sd.runs) == 1 {
				sd.sum.Period = t.Period
				sd.sum.Unit = t.Unit
			} else if t.Unit != sd.sum.Unit {
				return nil, fmt.Errorf("diff: %s profile %d measures %s (%s), the profiles before it %s", name, i+1, t.SampleType, t.Unit, sd.sum.Unit)
			}
		}
		if s.Mode == PerOp && s.Anchor == "" {
			s.shareOps(sd.runs[first:], ops)
		}
	}
	// A side without time says so first; then a run without the time
	// its unit of work needs.
	if err := s.checkTime(name, xs, sd.runs); err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	for _, r := range sd.runs {
		if r.unitErr != nil {
			return nil, r.unitErr
		}
	}
	sd.sum.Runs = len(sd.runs)
	sd.sum.Total = total / time.Duration(len(sd.runs))
	sd.sum.Exact = exact
	return sd, nil
}

// checkTime refuses a side that has nothing to judge, by the module's one
// rule (analysis.CheckTime): its selected samples give no function any
// time, or, with Settings.Only, none to the functions judged (on the
// stack: one that only calls others still counts). A head
// profile that is empty, or whose thread the change renamed, would
// otherwise pass: no function of it regressed.
func (s *engine) checkTime(name string, xs []*analysis.Index, runs []*run) error {
	ts := make([]*analysis.Table, len(runs))
	for i, r := range runs {
		ts[i] = r.table
	}
	if err := analysis.CheckTime(name, s.Selection, xs, ts); err != nil || s.Only == nil {
		return err
	}
	judged := map[int32]bool{} // by key id
	for _, r := range runs {
		for j := range r.table.Functions {
			id := r.rowKey[j]
			only, ok := judged[id]
			if !ok {
				only = s.Only.MatchString(s.keys[id].name)
				judged[id] = only
			}
			if only && r.table.Functions[j].Total > 0 {
				return nil
			}
		}
	}
	e := &analysis.NoTimeError{Side: name, Profiles: len(xs), Selection: s.Selection, Only: s.Only.String()}
	for _, x := range xs {
		e.Samples += x.NumSamples()
	}
	return e
}

// addTime is a + b, false when the sum of the two (never negative)
// overflows.
func addTime(a, b time.Duration) (time.Duration, bool) {
	sum, ok := pbuild.CheckedAdd(int64(a), int64(b))
	return time.Duration(sum), ok
}

// shareOps gives the runs of one profile its ops operations (WithOps):
// each run its part in proportion to the work it records, evenly when a
// run records none. It keeps the most one run did (runOps).
func (s *engine) shareOps(runs []*run, ops float64) {
	var sum float64
	for _, r := range runs {
		if !(r.work > 0) {
			sum = 0
			break
		}
		sum += r.work
	}
	for _, r := range runs {
		r.unit = ops / float64(len(runs))
		if sum > 0 {
			r.unit = ops * r.work / sum
		}
		r.work, r.workUnit = r.unit, "op"
		s.runOps = math.Max(s.runOps, r.unit)
	}
}

// run measures one run.
func (s *engine) run(ix *analysis.Index) (*run, error) {
	t, err := ix.Table(s.analysisOptions()...)
	if err != nil {
		return nil, err
	}
	r := &run{index: ix, table: t, rowKey: make([]int32, len(t.Functions)), cpu: float64(t.Total)}
	for j := range t.Functions {
		f := &t.Functions[j]
		id := s.intern(s.key(f), f)
		r.rowKey[j] = id
		if int(id) >= len(r.fn) {
			r.fn = slices.Grow(r.fn, len(s.keys)-len(r.fn))[:len(s.keys)]
		}
		rf := &r.fn[id]
		rf.present = true
		rf.self += f.Self
		rf.total += f.Total
		rf.selfSamp += f.SelfSamples
		rf.local += f.Local
		rf.localSamp += f.LocalSamples
		rf.totalSamp += f.TotalSamples
		rf.selfShare += f.SelfShare
		rf.totShare += f.TotalShare
		if f.Name == "(idle)" {
			r.cpu -= float64(f.Self)
		}
	}
	switch {
	case t.Exact:
		r.period = float64(time.Microsecond) // a count is a microsecond of measured time
	case t.Period > 0:
		r.period = float64(t.Period)
	case t.TotalSamples > 0:
		r.period = float64(t.Total) / float64(t.TotalSamples)
	default:
		r.period = float64(time.Millisecond)
	}
	work, unit, err := ix.Work()
	if err != nil {
		return nil, err
	}
	r.work, r.workUnit = work, unit
	switch s.Mode {
	case Share:
		r.unit = float64(t.Total)
	case Absolute:
		r.unit = 1
	case PerOp:
		if s.Anchor != "" {
			var at time.Duration
			found := false
			for j := range t.Functions {
				if t.Functions[j].Name == s.Anchor {
					at += t.Functions[j].Total
					found = true
				}
			}
			if !found || at <= 0 {
				r.unitErr = fmt.Errorf("anchor function %q has no time", s.Anchor)
			}
			r.unit = float64(at)
		}
		// With operation counts, side shares them among the runs.
	}
	if t.Total <= 0 && s.Mode != Share {
		r.unitErr = errors.New("no time to compare")
	}
	return r, nil
}

// measured is one key's raw measurements over all runs (base runs first).
type measured struct {
	id     int32 // key id
	name   string
	file   string
	t      []float64 // the compared metric's time per run, ns
	k      []float64 // effective samples per run: t over the run's period
	inBase bool
	inHead bool
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

// measure gathers every key's metric per run, base runs first, in key
// order.
func (s *engine) measure(runs []*run, head []bool, metric Metric) []*measured {
	n := len(runs)
	all := make([]measured, len(s.keys))
	buf := make([]float64, 2*n*len(s.keys))
	for id := range all {
		m := &all[id]
		m.id, m.name, m.file = int32(id), s.keys[id].name, s.keys[id].file
		m.t, buf = buf[:n:n], buf[n:]
		m.k, buf = buf[:n:n], buf[n:]
	}
	for j, r := range runs {
		for id := range r.fn {
			f := &r.fn[id]
			if !f.present {
				continue
			}
			m := &all[id]
			t, _ := f.metric(metric)
			m.t[j] = float64(t)
			m.k[j] = float64(t) / r.period
			if t > 0 || f.self > 0 || f.total > 0 {
				if head[j] {
					m.inHead = true
				} else {
					m.inBase = true
				}
			}
		}
	}
	ms := make([]*measured, len(all))
	for i, id := range s.keyOrder() {
		ms[i] = &all[id]
	}
	return ms
}

// keyOrder returns the key ids sorted by key.
func (s *engine) keyOrder() []int32 {
	if len(s.order) != len(s.keys) {
		s.order = make([]int32, len(s.keys))
		for i := range s.order {
			s.order[i] = int32(i)
		}
		slices.SortFunc(s.order, func(a, b int32) int { return strings.Compare(s.keys[a].key, s.keys[b].key) })
	}
	return s.order
}

// overlap refuses two sides that share almost nothing (two different
// programs) and warns when they share little.
func overlap(ms []*measured, runs []*run, head []bool, rep *Report, key Key) error {
	var shared, all [2]float64
	for _, m := range ms {
		for j := range runs {
			g := grp(head[j])
			all[g] += m.t[j]
			if m.inBase && m.inHead {
				shared[g] += m.t[j]
			}
		}
	}
	if all[0] <= 0 || all[1] <= 0 {
		return nil
	}
	fb, fh := shared[0]/all[0], shared[1]/all[1]
	switch {
	case fb < 0.1 || fh < 0.1:
		hint := "they are not profiles of the same program (or one side is filtered to other threads or functions)"
		if key != KeyName {
			hint += fmt.Sprintf("; functions are matched by %s: do file paths or lines differ between the builds? (--key name)", key)
		}
		return &UnrelatedError{BaseShared: fb, HeadShared: fh, Hint: hint}
	case fb < 0.5 || fh < 0.5:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"base and head share functions holding only %.1f%% of the base's time and %.1f%% of the head's: most of the profile is new or gone, so per-function verdicts say little; are both sides the same program?", 100*fb, 100*fh))
	}
	return nil
}

// exposures returns, per key and run, the exposure the model divides
// counts by, the known variance of its logarithm, the factor that turns a
// fitted rate into the displayed metric, and the scale (how the rest of
// the profile moved, head over base; 1 outside Share mode).
func (s *engine) exposures(ms []*measured, runs []*run, head []bool, rep *Report) (e, ev [][]float64, display, scale, general []float64) {
	n := len(runs)
	e = make([][]float64, len(ms))
	ev = make([][]float64, len(ms))
	display = make([]float64, len(ms))
	scale = make([]float64, len(ms))
	general = make([]float64, n)
	if s.Mode != Share {
		for j, r := range runs {
			general[j] = r.unit / r.period
		}
		zero := make([]float64, n) // read-only, shared
		for i := range ms {
			e[i], ev[i] = general, zero
			display[i], scale[i] = 1, 1
		}
		return e, ev, display, scale, general
	}
	// Share: each run's effective samples, corrected for how the rest of
	// the profile moved (median of ratios over the reference functions).
	total := make([]float64, n)
	for j, r := range runs {
		total[j] = float64(r.table.Total) / r.period
	}
	copy(general, total)
	var refs []int
	for i, m := range ms {
		if isReference(m, total, head) {
			refs = append(refs, i)
		}
	}
	if len(refs) < 3 {
		// Too few functions to tell how the rest moved: each function is
		// compared with the rest of its own profile.
		for i, m := range ms {
			if !m.inBase || !m.inHead {
				// New or gone: its share of its own profile (against the
				// rest of the profile it would read as odds, 69% as 223%).
				e[i], ev[i] = slices.Clone(total), make([]float64, n)
				display[i], scale[i] = 1, 1
				continue
			}
			e[i], ev[i] = make([]float64, n), make([]float64, n)
			var lb, lh float64
			var nb, nh int
			for j := range runs {
				rest := total[j] - m.k[j]
				if rest >= 1 && m.k[j] <= 0.9*total[j] {
					e[i][j], ev[i][j] = rest, 1/rest
				} else {
					e[i][j] = total[j] // nearly everything: no rest to compare with
				}
				l := math.Log(e[i][j] / total[j])
				if head[j] {
					lh += l
					nh++
				} else {
					lb += l
					nb++
				}
			}
			display[i] = math.Exp(lb / float64(nb))
			scale[i] = math.Exp(lh/float64(nh) - lb/float64(nb))
		}
		return e, ev, display, scale, general
	}
	// The yardstick: the majority of the reference functions whose ratio
	// head/base is closest to the typical (median) ratio. A function is
	// measured against the yardstick without itself, run by run, so that
	// neither its own change nor another changed function moves it, and
	// the yardstick's own sampling noise (the variance of the log of its
	// samples) counts.
	ratio := make([]float64, len(refs))
	for r, i := range refs {
		var sh [2]float64
		var nr [2]int
		for j := range runs {
			g := grp(head[j])
			sh[g] += ms[i].k[j] / total[j]
			nr[g]++
		}
		ratio[r] = math.Log(sh[1] / float64(nr[1]) / (sh[0] / float64(nr[0])))
	}
	typical := stats.Median(ratio)
	order := make([]int, len(refs))
	for r := range order {
		order[r] = r
	}
	sort.SliceStable(order, func(a, b int) bool {
		return math.Abs(ratio[order[a]]-typical) < math.Abs(ratio[order[b]]-typical)
	})
	majority := map[int]bool{} // index into ms
	for _, r := range order[:len(refs)/2+1] {
		majority[refs[r]] = true
	}
	var members []int
	for i := range majority {
		members = append(members, i)
	}
	sort.Ints(members)
	yard := make([]float64, n) // the whole yardstick's samples per run
	for _, i := range members {
		for j := range runs {
			yard[j] += ms[i].k[j]
		}
	}
	// With enough members, a run's factor is the median of the members'
	// log shares (each centred on its mean over the runs), as DESeq2's
	// size factors: robust to the one member whose time a JIT moved in
	// that run. With few, their summed samples.
	centred := map[int][]float64{}
	if len(members) > yardMedian {
		for _, i := range members {
			c := make([]float64, n)
			var sum float64
			for j := range runs {
				c[j] = math.Log(ms[i].k[j] / total[j])
				sum += c[j]
			}
			for j := range c {
				c[j] -= sum / float64(n)
			}
			centred[i] = c
		}
	}
	medianFactor := func(skip int) ([]float64, []float64) {
		f := make([]float64, n)
		v := make([]float64, n)
		col := make([]float64, 0, len(members))
		for j := range runs {
			col = col[:0]
			var inv float64
			for _, i := range members {
				if i != skip {
					col = append(col, centred[i][j])
					inv += 1 / ms[i].k[j]
				}
			}
			f[j] = math.Exp(stats.Median(col))
			// The variance of a median of m values, each with sampling
			// variance 1/k: about π/2 times that of their mean.
			v[j] = math.Pi / 2 * inv / float64(len(col)*len(col))
		}
		return f, v
	}
	var allF, allV []float64
	if len(centred) > 0 {
		allF, allV = medianFactor(-1)
	}
	// exposure is the exposures of function i (-1: any function outside
	// the yardstick, which all share them), and its scale.
	exposure := func(i int) (e, ev []float64, scale float64) {
		e, ev = make([]float64, n), make([]float64, n)
		ys := make([]float64, n) // ln of the yardstick's share per run
		if len(centred) > 0 {
			f, v := allF, allV
			if i >= 0 {
				f, v = medianFactor(i)
			}
			for j := range runs {
				e[j], ev[j] = total[j]*f[j], v[j]
				ys[j] = math.Log(f[j])
			}
		} else {
			for j := range runs {
				y := yard[j]
				if i >= 0 {
					y -= ms[i].k[j]
				}
				e[j], ev[j] = y, 1/y
				ys[j] = math.Log(y / total[j])
			}
		}
		// Exposures are the yardstick's samples over its mean base share,
		// so that base rates read as shares.
		var lb, lh float64
		var nb, nh int
		for j := range runs {
			if head[j] {
				lh += ys[j]
				nh++
			} else {
				lb += ys[j]
				nb++
			}
		}
		ref := math.Exp(lb / float64(nb))
		for j := range runs {
			e[j] /= ref
		}
		return e, ev, math.Exp(lh/float64(nh) - lb/float64(nb))
	}
	var moved float64
	var rest struct {
		e, ev []float64
		scale float64
	}
	for i := range ms {
		display[i] = 1
		if majority[i] {
			e[i], ev[i], scale[i] = exposure(i)
			continue
		}
		if rest.e == nil {
			rest.e, rest.ev, rest.scale = exposure(-1)
			copy(general, rest.e) // the whole yardstick, as any other function's
			moved = rest.scale
		}
		// Read-only, shared by every function outside the yardstick.
		e[i], ev[i], scale[i] = rest.e, rest.ev, rest.scale
	}
	if len(majority) == len(ms) {
		moved = scale[0]
	}
	if sc := moved; sc < 0.5 || sc > 2 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the shares of most functions moved by a factor of %.3g: the comparison assumes most functions did not change; are both sides the same program and build (one under -race, say)?", sc))
	}
	return e, ev, display, scale, general
}

// isReference reports whether a function may stand for how the rest of
// the profile moved: present in every run with enough samples for its
// share to be measured, and at least 1% of the profile on one side.
func isReference(m *measured, total []float64, head []bool) bool {
	var sum float64
	var sh [2]float64
	var n [2]int
	for j, k := range m.k {
		if k <= 0 || total[j] <= 0 {
			return false
		}
		sum += k
		g := grp(head[j])
		sh[g] += k / total[j]
		n[g]++
	}
	if sum/float64(len(m.k)) < 2*minNoiseCount {
		return false
	}
	return sh[0]/float64(n[0]) >= 0.01 || sh[1]/float64(n[1]) >= 0.01
}

// row measures one function on both sides and, when it can be decided
// without a test, gives its verdict; tested rows are decided by decide.
func (s *engine) row(m *measured, runs []*run, head []bool, display, scale float64, f *fit, exact, multi bool, e []float64) Row {
	row := Row{Name: m.name, File: m.file, P: 1, Q: 1, Test: "none", Scale: scale}
	row.Base, row.Head = s.values(m, runs, head)
	pooled := func(g int) float64 {
		var sk, se float64
		for j := range runs {
			if grp(head[j]) == g {
				sk += m.k[j]
				se += e[j]
			}
		}
		if se <= 0 {
			return 0
		}
		return sk / se * display
	}
	// distinct is the p-value of the samples a function has on side g,
	// and none on the other, falling so by chance: were its rate the
	// same on both sides, each sample would land on side g with
	// probability e(g)/e(both), and all k do with probability that^k.
	// Samples come in runs, which vary beyond sampling: with several runs
	// a side the runs it was seen in must also all be on side g, which
	// the m of them are with probability C(n_g, m)/C(n, m) (a function of
	// two samples in each of five runs is 1 in 252 so, not 1 in 1,024).
	distinct := func(g int) float64 {
		var k, eg, eo float64
		var seen, ng, no int
		for j := range runs {
			if grp(head[j]) == g {
				k += m.k[j]
				eg += e[j]
				ng++
				if m.k[j] > 0 {
					seen++
				}
			} else {
				eo += e[j]
				no++
			}
		}
		if !(eg > 0) || !(eo > 0) {
			return 1
		}
		p := math.Exp(k * math.Log(eg/(eg+eo)))
		if multi {
			pr := 1.0
			for i := 0; i < seen; i++ {
				pr *= float64(ng-i) / float64(ng+no-i)
			}
			p = math.Max(p, pr)
		}
		return math.Min(p, 1)
	}
	switch {
	case !m.inBase:
		// New only when it matters: a function that appears with a
		// sample or two is noise, not news. decide adjusts P with the
		// other functions' tests.
		row.Head.Metric = pooled(1)
		row.Delta = row.Head.Metric
		row.Verdict = Unchanged
		if s.sizeable(row.Head.Metric) {
			row.presence, row.P, row.Test = New, distinct(1), "presence"
		}
		return row
	case !m.inHead:
		row.Base.Metric = pooled(0)
		row.Delta = -row.Base.Metric
		row.Verdict = Unchanged
		if s.sizeable(row.Base.Metric) {
			row.presence, row.P, row.Test = Gone, distinct(0), "presence"
		}
		return row
	}
	row.Base.Metric = f.rate[0] * display
	row.Head.Metric = f.rate[1] * display
	row.Relative = math.Expm1(f.lfc)
	if seenInEveryRun(m) {
		// The fitted (weighted geometric) means, in the metric's unit.
		row.Base.Metric = math.Exp(logMean(m, e, head, 0)) * display
		row.Head.Metric = row.Base.Metric * math.Exp(f.lfc)
	} else if row.Base.Metric > 0 && row.Head.Metric > 0 {
		// Absent from some runs: the pooled rates, and their ratio.
		row.Relative = row.Head.Metric/row.Base.Metric - 1
	} else {
		row.Relative = 0 // absent from every run of a side: no ratio
	}
	row.Delta = row.Head.Metric - row.Base.Metric
	row.fit = f
	switch {
	case exact && !multi:
		row.Test = "exact"
		row.pUp, row.pDown = 1, 1
		if row.Delta > 0 {
			row.pUp = 0
		} else if row.Delta < 0 {
			row.pDown = 0
		}
	case multi && s.Assume != AssumeModel:
		b, h := perRunValues(m, e, head, display)
		var c benchmath.Comparison
		row.Test, c = s.compareRuns(b, h)
		for _, w := range c.Warnings {
			row.Warnings = append(row.Warnings, w.Error())
		}
		if row.Test == "mann-whitney" {
			row.tooFew = rankTooFew(c)
		}
		row.pUp, row.pDown = c.P/2, 1-c.P/2
		if f.lfc < 0 {
			row.pUp, row.pDown = row.pDown, row.pUp
		}
	default:
		row.Test = "moderated-t"
		if !multi {
			row.Test = "pair-t"
		}
		row.pUp, row.pDown = f.pUp, f.pDwn
		if exact {
			row.Test = "exact-t"
		}
	}
	row.P = row.pUp
	if row.Delta < 0 {
		row.P = row.pDown
	}
	row.tested = true
	return row
}

// weight is a function's share of the false-discovery budget, before its
// test is seen: in proportion to how small a relative change of it can
// count (both minimum effects reached), up to 1 for functions so large
// that the relative minimum alone decides. A function of 0.5% of the
// profile must double to change by 0.5 share points; one of 5% needs 10%.
// Spreading the budget so keeps the many small functions of a real
// profile, which seldom change by enough to count, from hiding a
// regression of a large one.
func (s *engine) weight(row *Row) float64 {
	v := math.Max(row.Base.Metric, row.Head.Metric)
	var floor float64
	switch {
	case s.Mode == Share, s.Mode == PerOp && s.Anchor != "":
		floor = s.MinShare
	case s.Mode == PerOp:
		floor = float64(s.MinAbsolute) / s.runOps
	default:
		floor = float64(s.MinAbsolute)
	}
	if !(floor > 0) || !(s.MinRelative > 0) {
		return 1
	}
	return math.Min(1, v*s.MinRelative/floor)
}

// confirm checks every function judged regressed or improved for time a
// JIT moved rather than a change of cost. V8 inlines a callee into its
// caller in some runs and not in others; the callee's samples are then the
// caller's, so one function's self time rises as a neighbour's falls, and
// only their sum is the cost of the code.
//
// With several runs a side the runs show which neighbours are so coupled
// with the function: their log times move against it from run to run
// within a side (correlation of the residuals below −coupling). The change
// is then judged on the function and its coupled neighbours together, and
// stands only if that sum changed the same way (level Alpha): a move
// between them cancels in the sum, a change of the function's own cost
// does not. Neighbours are its direct callers (their self time, each) and
// its direct callees (their self time under it, together).
//
// With one run a side nothing shows coupling: a change is taken for a move
// when a neighbour moved the other way, by at least half as much, and
// significantly.
func (s *engine) confirm(rep *Report, ms []*measured, runs []*run, head []bool, expo, ev [][]float64, display []float64) {
	var cand []*Row
	names := map[string]bool{}
	for i := range rep.Rows {
		if v := rep.Rows[i].Verdict; v == Regressed || v == Improved {
			cand = append(cand, &rep.Rows[i])
			names[rep.Rows[i].Name] = true
		}
	}
	if len(cand) == 0 {
		return
	}
	nb := 0
	for _, h := range head {
		if !h {
			nb++
		}
	}
	multi := nb >= 2 && len(head)-nb >= 2
	callers := directCallers(runs, names)
	// The key ids of every caller's name (several under name+file keys).
	keysOf := map[string][]int32{}
	for _, cs := range callers {
		for c := range cs {
			keysOf[c] = nil
		}
	}
	for id, k := range s.keys {
		if ids, ok := keysOf[k.name]; ok {
			keysOf[k.name] = append(ids, int32(id))
		}
	}
	type neighbour struct {
		what string
		k    []float64
	}
	type check struct {
		row  *Row
		what string
		sum  bool // the function with its coupled neighbours
	}
	var checks []check
	var fs []*feature
	for _, row := range cand {
		m := ms[row.idx]
		e := expo[row.idx]
		var nbs []neighbour
		cn := make([]string, 0, len(callers[m.name]))
		for c := range callers[m.name] {
			if len(keysOf[c]) > 0 {
				cn = append(cn, c)
			}
		}
		sort.Strings(cn)
		for _, c := range cn {
			each := make([]float64, len(runs))
			for _, id := range keysOf[c] {
				for j, r := range runs {
					if f := r.get(id); f != nil {
						each[j] += float64(f.self) / r.period
					}
				}
			}
			nbs = append(nbs, neighbour{"its caller " + c, each})
		}
		under := make([]float64, len(runs))
		for j, r := range runs {
			var l float64
			if f := r.get(m.id); f != nil {
				l = float64(f.local) / r.period
			}
			under[j] = math.Max(l-m.k[j], 0)
		}
		nbs = append(nbs, neighbour{"its direct callees under it", under})
		if multi {
			sum := append([]float64(nil), m.k...)
			var with []string
			for _, nb := range nbs {
				if residualCorrelation(m.k, nb.k, e, head) < -coupling {
					for j := range sum {
						sum[j] += nb.k[j]
					}
					with = append(with, nb.what)
				}
			}
			if len(with) == 0 {
				continue
			}
			checks = append(checks, check{row, strings.Join(with, " and "), true})
			fs = append(fs, &feature{k: sum, e: e, ev: ev[row.idx]})
			continue
		}
		for _, nb := range nbs {
			checks = append(checks, check{row, nb.what, false})
			fs = append(fs, &feature{k: nb.k, e: e, ev: ev[row.idx]})
		}
	}
	if len(checks) == 0 {
		return
	}
	n0 := len(fs)
	for i, m := range ms {
		if m.inBase && m.inHead {
			fs = append(fs, &feature{k: m.k, e: expo[i], ev: ev[i]})
		}
	}
	fits, _, _ := fitModel(fs, head, nil, nil)
	done := map[*Row]bool{}
	for n := 0; n < n0; n++ {
		c, f := checks[n], fits[n]
		row := c.row
		if done[row] {
			continue
		}
		up := row.Delta > 0
		if c.sum {
			p := f.pUp
			if !up {
				p = f.pDwn
			}
			if p < s.Alpha && (f.lfc > 0) == up {
				continue
			}
			done[row] = true
			row.Verdict = Unchanged
			row.Warnings = append(row.Warnings, fmt.Sprintf(
				"self time %+.1f%%, but its runs trade time with %s (a JIT inlining in some runs and not in others), and together they changed %+.1f%% (p=%.2g): not a change shown in its cost",
				100*row.Relative, c.what, 100*math.Expm1(f.lfc), p))
			continue
		}
		self := math.Log1p(row.Relative)
		rel := f.rate[0] / ratePooled(ms[row.idx].k, expo[row.idx], head)
		// The neighbour's change in the function's own terms: how much of
		// its time it is.
		d := rel * math.Expm1(f.lfc)
		p := f.pDwn
		if !up {
			p = f.pUp
		}
		if p >= s.Alpha || math.IsNaN(d) || (up && d > -math.Expm1(self)/2) || (!up && d < -math.Expm1(self)/2) {
			continue
		}
		done[row] = true
		row.Verdict = Unchanged
		row.Warnings = append(row.Warnings, fmt.Sprintf(
			"self time %+.1f%%, while %s changed by %+.1f%% of the function's time (p=%.2g): time moved between them (a JIT inlining in some runs and not in others), not a change of its cost",
			100*row.Relative, c.what, 100*d, p))
	}
}

// coupling is how strongly a neighbour's time must move against a
// function's from run to run for the two to be judged together.
const coupling = 0.5

// residualCorrelation is the correlation of two functions' log times
// across runs, each taken from its side's mean: how they move together
// from run to run, whatever the change between the sides.
func residualCorrelation(a, b, e []float64, head []bool) float64 {
	ra, rb := residuals(a, e, head), residuals(b, e, head)
	var sab, saa, sbb float64
	for j := range ra {
		sab += ra[j] * rb[j]
		saa += ra[j] * ra[j]
		sbb += rb[j] * rb[j]
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

func residuals(k, e []float64, head []bool) []float64 {
	y := make([]float64, len(k))
	var sum [2]float64
	var n [2]int
	for j := range k {
		y[j] = logRate(k[j], e[j])
		sum[grp(head[j])] += y[j]
		n[grp(head[j])]++
	}
	for j := range y {
		g := grp(head[j])
		y[j] -= sum[g] / float64(n[g])
	}
	return y
}

// ratePooled is the base side's pooled rate of counts k over exposures e.
func ratePooled(k, e []float64, head []bool) float64 {
	var sk, se float64
	for j := range k {
		if !head[j] {
			sk += k[j]
			se += e[j]
		}
	}
	return sk / se
}

// directCallers returns, for each name, the functions directly above it in
// the runs' stacks (itself excluded).
func directCallers(runs []*run, names map[string]bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for n := range names {
		out[n] = map[string]bool{}
	}
	for _, r := range runs {
		for n, callers := range r.index.DirectCallers(names) {
			for c := range callers {
				out[n][c] = true
			}
		}
	}
	return out
}

// seenInEveryRun reports whether the function has samples in every run.
func seenInEveryRun(m *measured) bool {
	for _, k := range m.k {
		if k <= 0 {
			return false
		}
	}
	return true
}

// logMean is the unweighted mean over one side's runs of ln(k/e), as the
// model takes it, for the displayed value.
func logMean(m *measured, e []float64, head []bool, g int) float64 {
	var sum float64
	var n int
	for j := range m.k {
		if grp(head[j]) == g {
			sum += logRate(m.k[j], e[j])
			n++
		}
	}
	return sum / float64(n)
}

// perRunValues are the normalised metric per run, for the rank and Welch
// tests.
func perRunValues(m *measured, e []float64, head []bool, display float64) (b, h []float64) {
	for j := range m.k {
		v := m.k[j] / e[j] * display
		if head[j] {
			h = append(h, v)
		} else {
			b = append(b, v)
		}
	}
	return b, h
}

// values are one function's raw means over each side's runs.
func (s *engine) values(m *measured, runs []*run, head []bool) (Value, Value) {
	var v [2]Value
	var n [2]int
	for j, r := range runs {
		g := grp(head[j])
		n[g]++
		f := r.get(m.id)
		if f == nil {
			continue
		}
		v[g].Self += f.self
		v[g].Total += f.total
		v[g].SelfShare += f.selfShare
		v[g].TotalShare += f.totShare
		_, k := f.metric(s.Metric)
		v[g].Samples += k
	}
	for g := range v {
		v[g].Self /= time.Duration(n[g])
		v[g].Total /= time.Duration(n[g])
		v[g].SelfShare /= float64(n[g])
		v[g].TotalShare /= float64(n[g])
	}
	return v[0], v[1]
}

// decide adjusts the p-values of the tested rows of one or several
// comparisons together (CompareEach: one per benchmark, the false-discovery
// rate held across all of them), decides them, and gives power advice.
//
// The family is every function present on both sides that is large
// enough on one of them for its change to reach the absolute minimum
// effect, and, in a family of their own, every sizeable function on one
// side only (whether it is new or gone): chosen by size, never by the observed change, since
// keeping only the functions that moved most would shrink the correction
// and let noise through. Benjamini–Hochberg runs over the whole family
// twice: on the one-sided p-values for "slower" (the gate's question) and
// for "faster". The minimum effect applies after the adjustment.
// Functions outside Settings.Gate are a family of their own, which only
// finds near misses.
func decide(js []*judging) {
	type member struct {
		j   *judging
		row *Row
	}
	// Families: gated and ungated, tested and on one side only. Functions
	// on one side only are adjusted among themselves: many of them are
	// small, and in one family their small weights would raise the
	// weights, and lower the q, of the large functions tested.
	fams := map[[2]bool][]member{}
	for _, j := range js {
		for i := range j.rep.Rows {
			row := &j.rep.Rows[i]
			switch {
			case row.presence != "":
			case !row.tested:
				continue
			case !j.s.sizeable(math.Max(row.Base.Metric, row.Head.Metric)):
				row.Verdict, row.Q = Unchanged, 1
				continue
			}
			k := [2]bool{row.Ungated, row.presence != ""}
			fams[k] = append(fams[k], member{j, row})
		}
	}
	for _, k := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		fam := fams[k]
		up := make([]float64, len(fam))
		down := make([]float64, len(fam))
		w := make([]float64, len(fam))
		for n, m := range fam {
			row := m.row
			up[n], down[n] = row.pUp, row.pDown
			switch row.presence {
			case New:
				up[n], down[n] = row.P, 1
			case Gone:
				up[n], down[n] = 1, row.P
			}
			w[n] = m.j.s.weight(row)
		}
		qUp, qDown := stats.WeightedBH(up, w), stats.WeightedBH(down, w)
		for n, m := range fam {
			s, row := m.j.s, m.row
			a := s.Alpha / math.Max(float64(len(fam)), 1)
			row.Q = qUp[n]
			if row.Delta < 0 {
				row.Q = qDown[n]
			}
			if row.presence != "" {
				if row.Q < s.Alpha && !row.Ungated {
					row.Verdict = row.presence
				}
				continue
			}
			if f := row.fit; f != nil && !(m.j.exact && !m.j.multi) {
				row.MinDetectable, row.RunsNeeded = detectable(f.se, f.df, a, s.MinRelative, f.perRun)
			}
			s.verdict(row, s.bigEnough(row))
			if row.Ungated && row.Verdict != Unchanged {
				if row.Verdict == Regressed {
					row.NearMiss = fmt.Sprintf("%s, %s, q=%.3g: significant, but not gated (outside the gated functions; gate every function with --gate '.')",
						pct(row.Relative), fmtP(row.P), row.Q)
				}
				row.Verdict = Unchanged
			}
		}
	}
}

// nearMissQ is the adjusted p-value, as a multiple of the false-discovery
// rate, below which a gated slowdown of at least the minimum change that
// is not a regression is a near miss: at alpha 0.05, q < 0.25.
const nearMissQ = 5

// nearMisses marks the gated rows that are suspicious without failing:
// slower by at least the minimum change, q above the false-discovery rate
// but within nearMissQ times it.
func (s *engine) nearMisses(rep *Report) {
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if !row.tested || row.Ungated || row.Verdict != Unchanged || !(row.Delta > 0) || !s.bigEnough(row) {
			continue
		}
		if row.Q >= s.Alpha && row.Q < math.Min(nearMissQ*s.Alpha, 0.5) {
			row.NearMiss = fmt.Sprintf("%s with %s, but q=%.3g is above the false-discovery rate %g: more runs would tell",
				pct(row.Relative), fmtP(row.P), row.Q, s.Alpha)
		}
	}
}

// verdict judges a tested row from its adjusted p-value, Q, once big says
// whether its change reaches the minimum effect: below it a change is no
// discovery, however certain, and Q says so.
func (s *engine) verdict(row *Row, big bool) {
	switch {
	case !big:
		row.Verdict, row.Q = Unchanged, 1
	case row.Q >= s.Alpha:
		row.Verdict = Unchanged
	case row.Delta > 0:
		row.Verdict = Regressed
	default:
		row.Verdict = Improved
	}
}

// pairWarning says what one run a side can and cannot tell.
func pairWarning(nb, nh int, nz noise) string {
	how := fmt.Sprintf("run-to-run noise is taken as a coefficient of variation of %.0f%% per function", 100*math.Sqrt(nz.phi))
	if nz.source == "pair" {
		how += fmt.Sprintf(", learned from how %d functions' shares spread between the two profiles", nz.used)
	} else {
		how += " (too few functions to learn it from the profiles)"
	}
	return fmt.Sprintf("%d base and %d head run(s): %s; changes smaller than that cannot be told from noise: compare several runs a side (hotbudget record)", nb, nh, how)
}

// noiseWarning says when several runs a side could not learn the noise
// from the functions, what was taken instead, and what fixes it.
func noiseWarning(nz noise) string {
	if nz.resDF <= 0 || nz.used >= minRunsFunctions {
		return ""
	}
	how := fmt.Sprintf("the least assumed, %.1f%%", 100*math.Sqrt(nz.phi))
	if nz.source == "whole" {
		how = fmt.Sprintf("the whole profile's own run-to-run spread, %.1f%%", 100*math.Sqrt(nz.phi))
	}
	return fmt.Sprintf("run-to-run noise not learned: only %d function(s) have %d samples a run in every run (%d needed), so functions are taken to vary as %s; longer runs (hotbudget record --benchtime, perfassert.MinSamples) learn it",
		nz.used, minNoiseCount, minRunsFunctions, how)
}

func noiseReport(nz noise) Noise {
	out := Noise{Source: nz.source, Dispersion: nz.phi, Functions: nz.used, ResidualDF: nz.resDF, Outliers: nz.outliers, Whole: nz.whole}
	if math.IsInf(nz.priorDF, 1) {
		out.PriorDF = -1
	} else {
		out.PriorDF = nz.priorDF
	}
	return out
}

// compareRuns tests several runs a side under s.Assume and names the test.
func (s *engine) compareRuns(base, head []float64) (string, benchmath.Comparison) {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = s.Alpha
	b, h := benchmath.NewSample(base, &th), benchmath.NewSample(head, &th)
	if s.Assume == AssumeNormal {
		return "welch-t", benchmath.AssumeNormal.Compare(b, h)
	}
	return "mann-whitney", benchmath.AssumeNothing.Compare(b, h)
}

// rankLimit warns when the Mann–Whitney test cannot flag a function that
// got slower on its own: its smallest one-sided p-value with n1 and n2
// runs, 1/C(n1+n2, n1), times the m functions tested (the
// Benjamini–Hochberg adjustment of the smallest p) is not below alpha.
func rankLimit(n1, n2, m int, alpha float64) string {
	if m == 0 {
		return ""
	}
	minP := rankMinP(n1, n2)
	if minP >= alpha || minP*float64(m) < alpha {
		return "" // too few runs for any test: benchmath says so itself
	}
	return fmt.Sprintf("with %d and %d runs the Mann-Whitney test's smallest p-value is %.2g, and %d functions are tested: a regression of one function alone cannot be flagged at false-discovery rate %g; take more runs, or use the default model (WithAssumption(AssumeModel), --assume model)",
		n1, n2, minP, m, alpha)
}

// rankMinP is the Mann–Whitney test's smallest one-sided p-value with n1
// and n2 runs and no ties, 1/C(n1+n2, n1).
func rankMinP(n1, n2 int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n1) + lg(n2) - lg(n1+n2))
}

// rankTooFew returns n1 and n2 when the Mann–Whitney test of c could not
// reach alpha whatever the runs measured: its smallest two-sided p-value,
// 2/C(n1+n2, n1), is not below alpha (benchmath then warns "need >= N
// samples" on the row).
func rankTooFew(c benchmath.Comparison) [2]int {
	if c.N1 == 0 || c.N2 == 0 {
		return [2]int{}
	}
	if 2*rankMinP(c.N1, c.N2) < c.Alpha {
		return [2]int{}
	}
	return [2]int{c.N1, c.N2}
}

// testWarnings says once per run count in the report, with how many rows
// it held for, that the Mann–Whitney test had too few runs to flag
// anything (Row.tooFew), so that a user who reads only the summary sees
// it; the rows keep benchmath's own words.
func testWarnings(rows []Row, noun string, alpha float64) []string {
	count := map[[2]int]int{}
	var order [][2]int
	for _, row := range rows {
		if row.Test != "mann-whitney" || row.tooFew == [2]int{} {
			continue
		}
		if count[row.tooFew] == 0 {
			order = append(order, row.tooFew)
		}
		count[row.tooFew]++
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		out = append(out, fmt.Sprintf("with %d and %d runs the Mann-Whitney test cannot reach p < %g whatever they measure: need >= %d runs a side (%d %s)",
			n[0], n[1], alpha, rankRunsNeeded(alpha), count[n], noun))
	}
	return out
}

// rankRunsNeeded is the fewest runs a side with which the Mann–Whitney
// test's smallest two-sided p-value, 2/C(2n, n), is below alpha.
func rankRunsNeeded(alpha float64) int {
	n := 1
	for ; n < 64; n++ {
		if rankTooFew(benchmath.Comparison{N1: n, N2: n, Alpha: alpha}) == [2]int{} {
			break
		}
	}
	return n
}

// benjaminiHochberg sets Row.Q of rows[idx...] to their adjusted p-values.
func benjaminiHochberg(rows []Row, idx []int) {
	p := make([]float64, len(idx))
	for k, i := range idx {
		p[k] = rows[i].P
	}
	for k, q := range stats.BH(p) {
		rows[idx[k]].Q = q
	}
}

// verdictRank puts what needs attention first.
func verdictRank(v Verdict) int {
	switch v {
	case Regressed:
		return 0
	case Improved:
		return 1
	case New:
		return 2
	case Gone:
		return 3
	}
	return 4
}

func sortRows(rows []Row) {
	// Sorted as small keys, then moved once: rows are large, and a stable
	// sort moves its elements O(n log n) times.
	type sortKey struct {
		rank int
		size float64 // |Delta|, or the larger metric when unchanged
		row  *Row
		at   int
	}
	keys := make([]sortKey, len(rows))
	for i := range rows {
		a := &rows[i]
		k := sortKey{rank: verdictRank(a.Verdict), size: math.Abs(a.Delta), row: a, at: i}
		if a.Verdict == Unchanged {
			k.size = math.Max(a.Base.Metric, a.Head.Metric)
		}
		if math.IsNaN(k.size) {
			k.size = math.Inf(-1) // last, and a consistent order
		}
		keys[i] = k
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.row.Name, b.row.Name); c != 0 {
			return c
		}
		if c := strings.Compare(a.row.File, b.row.File); c != 0 {
			return c
		}
		return a.at - b.at // stable
	})
	sorted := make([]Row, len(rows))
	for k, key := range keys {
		sorted[k] = *key.row
	}
	copy(rows, sorted)
}

// sizeable reports whether a normalised metric value reaches the minimum
// absolute change, so that a function appearing or vanishing at that size
// is worth a verdict of its own.
func (s *engine) sizeable(v float64) bool {
	switch {
	case s.Mode == Share, s.Mode == PerOp && s.Anchor != "":
		return v >= s.MinShare
	case s.Mode == PerOp:
		return v*s.runOps >= float64(s.MinAbsolute)
	}
	return v >= float64(s.MinAbsolute)
}

// bigEnough applies the minimum effect: both the relative and the absolute
// change must reach their minimum.
func (s *engine) bigEnough(row *Row) bool {
	if math.Abs(row.Relative) < s.MinRelative {
		return false
	}
	d := math.Abs(row.Delta)
	switch {
	case s.Mode == Share, s.Mode == PerOp && s.Anchor != "":
		return d >= s.MinShare
	case s.Mode == PerOp:
		// Per-operation times are small: the change summed over the
		// operations of a run must reach MinAbsolute.
		return d*s.runOps >= float64(s.MinAbsolute)
	}
	return d >= float64(s.MinAbsolute)
}

// key returns the matching key of a function under s.Key, after
// Settings.Rename.
func (s *engine) key(f *analysis.Function) string {
	name := s.name(f.Name)
	switch s.Key {
	case KeyNameFile:
		return name + "\x00" + CleanPath(f.File)
	case KeyNameFileLine:
		return name + "\x00" + CleanPath(f.File) + "\x00" + strconv.FormatInt(f.Line, 10)
	}
	return name
}

// name is a function's name as the report shows it: its new name when
// Settings.Rename renames it.
func (s *engine) name(n string) string {
	if r, ok := s.Rename[n]; ok {
		if s.renamed == nil {
			s.renamed = map[string]bool{}
		}
		s.renamed[n] = true
		return r
	}
	return n
}

// renames fills Row.RenamedFrom and warns of renames that matched no
// function, and of a gone and a new function in the same file, which may
// be one function renamed.
func (s *engine) renames(rep *Report) {
	if len(s.Rename) > 0 {
		from := map[string][]string{}
		for o, n := range s.Rename {
			if s.renamed[o] {
				from[n] = append(from[n], o)
			}
		}
		for i := range rep.Rows {
			if f := from[rep.Rows[i].Name]; f != nil {
				rep.Rows[i].RenamedFrom = slices.Sorted(slices.Values(f))
			}
		}
		for _, o := range slices.Sorted(maps.Keys(s.Rename)) {
			if !s.renamed[o] {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("rename %s → %s: no function %s in either side", o, s.Rename[o], o))
			}
		}
	}
	type pair struct{ gone, new []string }
	files := map[string]*pair{}
	for _, row := range rep.Rows {
		if row.File == "" || (row.Verdict != New && row.Verdict != Gone) {
			continue
		}
		f := CleanPath(row.File)
		p := files[f]
		if p == nil {
			p = &pair{}
			files[f] = p
		}
		if row.Verdict == New {
			p.new = append(p.new, row.Name)
		} else {
			p.gone = append(p.gone, row.Name)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if p := files[f]; len(p.gone) == 1 && len(p.new) == 1 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"%s is gone and %s is new, both in %s: if it was renamed, --rename '%s=%s' (diff.WithRename) judges them as one function", textfmt.Name(p.gone[0]), textfmt.Name(p.new[0]), textfmt.Name(f), textfmt.Name(p.gone[0]), textfmt.Name(p.new[0])))
		}
	}
}

// CleanPath reduces a source file path to the part that survives a change of
// machine, checkout directory or module version: a URL scheme
// ("file:///...") and "@version" suffixes of path elements are dropped, and
// only the last two elements are kept ("/home/runner/work/app/app/internal/
// parse/lex.go" and "/tmp/app/internal/parse/lex.go" both become
// "parse/lex.go"; ".../pkg/mod/example.com/m@v1.2.0/x/y.go" becomes "x/y.go").
func CleanPath(file string) string {
	if file == "" {
		return ""
	}
	if i := strings.Index(file, "://"); i >= 0 {
		file = file[i+3:]
	}
	if i := strings.IndexAny(file, "?#"); i >= 0 {
		file = file[:i]
	}
	file = strings.ReplaceAll(file, `\`, "/")
	elems := strings.Split(path.Clean(file), "/")
	for i, e := range elems {
		if at := strings.Index(e, "@"); at > 0 {
			elems[i] = e[:at]
		}
	}
	if len(elems) > 2 {
		elems = elems[len(elems)-2:]
	}
	return strings.Join(elems, "/")
}

// analysisOptions is the selection both sides are read with.
func (s *Settings) analysisOptions() []analysis.Option {
	return []analysis.Option{s.Selection}
}

// yardMedian is the yardstick size above which its per-run factor is a
// median rather than a sum.
const yardMedian = 5

// UnrelatedError is Compare's error when the two sides share almost no
// functions (under 10% of either side's time): a Go profile against a Node
// one, or a selection that leaves other functions on each side. Callers
// that know the files name them (Files).
type UnrelatedError struct {
	// BaseShared and HeadShared are the fractions of each side's time in
	// functions both sides have.
	BaseShared, HeadShared float64
	Hint                   string
	// Files names each side's files, when the caller sets them.
	Files [2][]string
}

func (e *UnrelatedError) Error() string {
	side := func(name string, files []string) string {
		if len(files) == 0 {
			return name
		}
		if len(files) > 3 {
			return fmt.Sprintf("%s (%s and %d more)", name, strings.Join(files[:2], ", "), len(files)-2)
		}
		return fmt.Sprintf("%s (%s)", name, strings.Join(files, ", "))
	}
	return fmt.Sprintf("diff: %s and %s share functions holding only %.1f%% of the base's time and %.1f%% of the head's: %s",
		side("base", e.Files[0]), side("head", e.Files[1]), 100*e.BaseShared, 100*e.HeadShared, e.Hint)
}
