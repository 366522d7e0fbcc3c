package diff

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// The runs of a comparison: each profile's functions, by matching key, with
// its time, samples and work, and the checks that the runs can be compared.

// run is one run reduced to per-key measurements.
type run struct {
	table  *analysis.Table
	stacks []analysis.RowStack // the samples behind table's rows (analysis.Index.Stacks)
	rowKey []int32             // key id of each row of table
	fn     []runFunc           // by key id; ids past its end are absent
	period float64             // nanoseconds one effective sample stands for
	unit   float64             // Absolute: 1; PerOp: operations; PerAnchor: the anchor's total (ns)
	cpu    float64             // the run's time without (idle), ns: the headline's numerator
	work   float64             // units of work the run did (0: unknown)
	// workUnit names what work counts ("iteration", "op", ...).
	workUnit string
	// unitErr says the run lacks the time its unit needs (Absolute and
	// PerOp modes): side reports it once the side as a whole has time.
	unitErr error
}

type runFunc struct {
	present             bool
	self, total         int64 // in Side.Unit
	selfSamp, totalSamp int64
	selfShare, totShare float64
	local               int64 // analysis.Function.Local
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

func (f *runFunc) metric(m Metric) (int64, int64) {
	switch m {
	case Total:
		return f.total, f.totalSamp
	case local:
		return f.local, f.localSamp
	}
	return f.self, f.selfSamp
}

type side struct {
	name string
	runs []*run
	sum  Side
}

// side reduces one side's profiles to runs: a profile holding several
// labelled runs is split into them, or, comparing by process
// (engine.byProcess), into its processes, each process's runs merged.
func (s *engine) side(name string, xs []*analysis.Index, ops float64) (*side, error) {
	sd := &side{name: name}
	sd.sum.Processes = s.byProcess
	unit := "run"
	if s.byProcess {
		unit = "process"
	}
	var total int64
	exact := true
	for i, x := range xs {
		split := x.Runs
		if s.byProcess {
			split = x.Processes
		}
		parts, err := split()
		if err != nil {
			return nil, fmt.Errorf("diff: %s profile %d: %w", name, i+1, err)
		}
		first := len(sd.runs)
		for k, q := range parts {
			where := fmt.Sprintf("%s profile %d", name, i+1)
			if len(parts) > 1 {
				where += fmt.Sprintf(" (%s %d of %d)", unit, k+1, len(parts))
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
				return nil, fmt.Errorf("diff: %s: the total %s of its runs overflows int64", name, quantity(t.Unit))
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
		if s.Mode == PerOp {
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
	sd.sum.Total = total / int64(len(sd.runs))
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
		e.Samples += (*indexload.Index)(x).Index().NumSamples()
	}
	return e
}

// addTime is a + b, false when the sum of the two (never negative)
// overflows.
func addTime(a, b int64) (int64, bool) { return pbuild.CheckedAdd(a, b) }

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
		r.work, r.workUnit = r.unit, string(meta.WorkOp)
		s.runOps = math.Max(s.runOps, r.unit)
	}
}

// run measures one run.
func (s *engine) run(ix *analysis.Index) (*run, error) {
	// The stacks with the table, in one pass over the samples: the
	// explanations and the flame graph read them.
	t, stacks, err := ix.Stacks(s.analysisOptions()...)
	if err != nil {
		return nil, err
	}
	r := &run{table: t, stacks: stacks, rowKey: make([]int32, len(t.Functions)), cpu: float64(t.Total)}
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
	case PerAnchor:
		var at int64
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
	case PerOp:
		// side shares the operation counts among the runs.
	}
	if t.Total <= 0 && s.Mode != Share {
		r.unitErr = errors.New("no time to compare")
	}
	return r, nil
}

// begin is the first stage: the runs of both sides, checked comparable,
// the report's sides and the warnings that the runs differ in how they
// were taken.
func (s *engine) begin(b, h *side) (*comparison, error) {
	minAbsNote := ""
	if b.sum.Unit != analysis.UnitTime && b.sum.Unit != "" && s.MinAbsolute != 0 && (s.Mode == Absolute || s.Mode == PerOp) {
		// MinAbsolute is a time: it says nothing of bytes or objects.
		minAbsNote = fmt.Sprintf("the values are %s: the minimum absolute change, a time (%s), does not apply; changes are judged by the minimum relative change alone",
			quantity(b.sum.Unit), textfmt.Duration(s.MinAbsolute))
		s.MinAbsolute = 0
	}
	c := &comparison{eng: s, b: b, h: h, min: s.minimum()}
	c.rep = &Report{Settings: s.Settings, Base: b.sum, Head: h.sum, min: c.min}
	rep := c.rep
	if minAbsNote != "" {
		rep.Warnings = append(rep.Warnings, minAbsNote)
	}
	c.runs = append(append([]*run(nil), b.runs...), h.runs...)
	c.head = make([]bool, len(c.runs))
	for j := len(b.runs); j < len(c.runs); j++ {
		c.head[j] = true
	}
	if b.sum.Unit != h.sum.Unit {
		return nil, fmt.Errorf("diff: base measures %s (%s), head %s (%s): not comparable",
			b.runs[0].table.SampleType, b.sum.Unit, h.runs[0].table.SampleType, h.sum.Unit)
	}
	c.exact = b.sum.Exact && h.sum.Exact
	c.multi = len(b.runs) >= 2 && len(h.runs) >= 2
	if b.sum.Period > 0 && h.sum.Period > 0 && !samePeriod(b.sum.Period, h.sum.Period) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"base sampled every %v, head every %v: compared as times, not sample counts", textfmt.Duration(b.sum.Period), textfmt.Duration(h.sum.Period)))
	}
	if bt, ht := b.runs[0].table.SampleType, h.runs[0].table.SampleType; bt != ht {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("base measures %s, head %s", bt, ht))
	}
	return c, nil
}
