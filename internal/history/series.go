package history

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/internal/modname"
)

// countTolerance and countFloor are record's rule for a function's
// instructions (diff's countTolerance and countFloor, which the package
// keeps unexported): a step beyond 0.5% of the function's own count and
// 0.01% of its benchmark's.
const (
	countTolerance = 0.005
	countFloor     = 0.0001
)

// Measure is one value a series follows.
type Measure struct {
	// Key is the record's JSON key ("ns_op", "instr_op", "b_op",
	// "allocs_op"), or "self_share" / "self_instr" for a function.
	Key string
	// Label names it in reports ("time/op").
	Label string
	// Unit is textfmt.Value's: "ns", "bytes", "count", or "share".
	Unit string
	// Exact measures change in steps (Steps); the others are noisy
	// (EDivisive).
	Exact bool
}

// The measures of benchmarks and functions.
var (
	MeasureTime   = Measure{Key: "ns_op", Label: "time/op", Unit: "ns"}
	MeasureInstr  = Measure{Key: "instr_op", Label: "instructions/op", Unit: "count", Exact: true}
	MeasureBytes  = Measure{Key: "b_op", Label: "B/op", Unit: "bytes", Exact: true}
	MeasureAllocs = Measure{Key: "allocs_op", Label: "allocs/op", Unit: "count", Exact: true}
	// A function's self share of its benchmark's CPU profile: shares,
	// unlike CPU time, do not move when the whole machine is faster or
	// slower (the runners of CI are not all alike).
	MeasureSelfShare = Measure{Key: "self_share", Label: "self share", Unit: "share"}
	// A function's self instructions per op.
	MeasureSelfInstr = Measure{Key: "self_instr", Label: "self instructions/op", Unit: "count", Exact: true}
)

// Tolerance is how far an exact measure may move between two commits
// without a step: the thresholds of hotbudget record's exact verdicts.
// Instructions: 0.5% (diff's count tolerance; hash-seeded work varies
// between processes). Bytes: 8 bytes and 1%. Allocations: half an object
// and 1%.
func (m Measure) Tolerance(prev float64) float64 {
	prev = math.Abs(prev)
	switch m.Key {
	case MeasureBytes.Key:
		return math.Max(8, 0.01*prev)
	case MeasureAllocs.Key:
		return math.Max(0.5, 0.01*prev)
	}
	return 0.005 * prev
}

// Point is a series' value at one commit.
type Point struct {
	// Record is the index of the record (commit) in the records Build was
	// given, oldest first.
	Record int
	Value  float64
	// Lo and Hi are the range over the record's runs (time/op); equal to
	// Value otherwise.
	Lo, Hi float64
}

// Change is a change point of a series, at a commit.
type Change struct {
	ChangePoint
	// Commit is the first commit at the new level; Prev the commit of
	// the point before it.
	Commit, Prev string
	// Context says what else changed between the two commits (the Go
	// version, the machine, the instrument), which may explain the change.
	Context string
	// By names the functions whose change is the benchmark's (its
	// instructions), with theirs; Functions are their names, sorted.
	By        string
	Functions []string
}

// Series is one benchmark's (or one function's) measure across commits.
type Series struct {
	Benchmark string
	// Function is empty for the benchmark's own measures.
	Function string
	Measure  Measure
	Points   []Point
	Changes  []Change
}

// Build returns every series the records hold, oldest record first: each
// benchmark's measures, then (when functions is set) each function's,
// sorted by benchmark, then function, then measure.
func Build(records []*Record, functions bool) []*Series {
	type key struct{ bench, fn, measure string }
	byKey := map[key]*Series{}
	var order []key
	add := func(k key, m Measure, rec int, v, lo, hi float64) {
		s := byKey[k]
		if s == nil {
			s = &Series{Benchmark: k.bench, Function: k.fn, Measure: m}
			byKey[k] = s
			order = append(order, k)
		}
		s.Points = append(s.Points, Point{Record: rec, Value: v, Lo: lo, Hi: hi})
	}
	rank := map[string]int{MeasureTime.Key: 0, MeasureInstr.Key: 1, MeasureBytes.Key: 2, MeasureAllocs.Key: 3}
	for i, r := range records {
		for _, b := range r.Benchmarks {
			if b.NsPerOp != nil {
				add(key{b.Name, "", MeasureTime.Key}, MeasureTime, i, b.NsPerOp.Median, b.NsPerOp.Min, b.NsPerOp.Max)
			}
			for _, m := range []struct {
				m Measure
				v *float64
			}{{MeasureInstr, b.InstrPerOp}, {MeasureBytes, b.BytesPerOp}, {MeasureAllocs, b.AllocsPerOp}} {
				if m.v != nil {
					add(key{b.Name, "", m.m.Key}, m.m, i, *m.v, *m.v, *m.v)
				}
			}
			if !functions {
				continue
			}
			for _, f := range b.Functions {
				if r.Instrument == InstrumentInstructions {
					add(key{b.Name, f.Name, MeasureSelfInstr.Key}, MeasureSelfInstr, i, f.PerOp, f.PerOp, f.PerOp)
				} else {
					add(key{b.Name, f.Name, MeasureSelfShare.Key}, MeasureSelfShare, i, f.Share, f.Share, f.Share)
				}
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.bench != b.bench {
			return a.bench < b.bench
		}
		if a.fn != b.fn {
			return a.fn < b.fn
		}
		return rank[a.measure] < rank[b.measure]
	})
	out := make([]*Series, len(order))
	for i, k := range order {
		out[i] = byKey[k]
	}
	return out
}

// Analyze finds the change points of every series: exact measures by
// Steps at their Tolerance, noisy ones by e.
//
// Instructions are judged as hotbudget record judges them, function by
// function, and only the functions record gates by default: those of the
// modules a record's counts are of (Record.CountsOf; every function when
// it names none). A runtime function (runtime.mallocgcSmallScanNoHeader,
// whose count follows the collector) is drawn, never a change point. A
// function's self instructions step when they move by more than 0.5% of
// themselves and 0.01% of their benchmark's (countTolerance, countFloor,
// diff's), and a benchmark's instructions change where one of its
// functions does, at the commit where it moved. Its total is drawn, not
// judged: it holds the runtime's varying work (the collector testing
// starts, the page allocator), which the difference of two processes does
// not cancel and which, divided by the N iterations record calibrated,
// moved fastjson's Validate/medium -1.1% and +2.0% at two commits that did
// not change it. Between two records of which one kept no functions
// (pruned), the total steps at 0.5%.
func Analyze(records []*Record, series []*Series, e EDivisive) {
	steps := countSteps(records)
	for _, s := range series {
		values := make([]float64, len(s.Points))
		for i, p := range s.Points {
			values[i] = p.Value
		}
		var cps []ChangePoint
		switch {
		case s.Measure.Key == MeasureInstr.Key && s.Function == "":
			cps = instrSteps(records, s, steps[s.Benchmark])
		case s.Measure.Key == MeasureSelfInstr.Key:
			cps = selfInstrSteps(s, steps[s.Benchmark])
		case s.Measure.Exact:
			cps = Steps(values, s.Measure.Tolerance)
		default:
			cps = e.Find(values)
		}
		s.Changes = s.Changes[:0]
		for _, cp := range cps {
			at, prev := records[s.Points[cp.Index].Record], records[s.Points[cp.Index-1].Record]
			ch := Change{ChangePoint: cp, Commit: at.Commit, Prev: prev.Commit, Context: differences(prev, at)}
			if s.Measure.Key == MeasureInstr.Key && s.Function == "" {
				moved := steps[s.Benchmark][s.Points[cp.Index].Record]
				var by []string
				for _, name := range slices.Sorted(maps.Keys(moved)) {
					ch.Functions = append(ch.Functions, name)
					by = append(by, name+" "+describe(MeasureSelfInstr, moved[name]))
				}
				ch.By = strings.Join(by, "; ")
			}
			s.Changes = append(s.Changes, ch)
		}
	}
}

// benchInstr is benchmark name's instructions per op in r, 0 without, and
// whether r kept its functions.
func benchInstr(r *Record, name string) (float64, bool) {
	for i := range r.Benchmarks {
		if b := &r.Benchmarks[i]; b.Name == name {
			kept := len(b.Functions) > 0 || b.CountTotal > 0
			if b.InstrPerOp == nil {
				return 0, kept
			}
			return *b.InstrPerOp, kept
		}
	}
	return 0, false
}

// gates is which functions record gates by default in each record: those
// of the modules of its counts (CountsOf), every function when it names
// none.
func gates(records []*Record) []func(string) bool {
	all := func(string) bool { return true }
	compiled := map[string]func(string) bool{}
	out := make([]func(string) bool, len(records))
	for i, r := range records {
		key := strings.Join(r.CountsOf, "\x00")
		g, ok := compiled[key]
		if !ok {
			g = all
			if re := modname.Pattern(r.CountsOf); re != nil {
				g = re.MatchString
			}
			compiled[key] = g
		}
		out[i] = g
	}
	return out
}

// gatedSelf is the self instructions per op of the functions of b that
// gate selects: its exact counts (Counts over Ops) when it holds them, and
// then complete (a function absent executed none); else its compacted
// functions, where one absent is unknown. (Notes.Load drops the counts,
// which only record --base-from-history reads.)
func gatedSelf(b *Benchmark, gate func(string) bool) (self map[string]float64, complete bool) {
	self = map[string]float64{}
	if len(b.Counts) > 0 && b.Ops > 0 {
		for _, c := range b.Counts {
			if gate(c.Name) {
				self[c.Name] += float64(c.N) / float64(b.Ops)
			}
		}
		return self, true
	}
	for _, f := range b.Functions {
		if gate(f.Name) {
			self[f.Name] = f.PerOp
		}
	}
	return self, false
}

// countSteps is, by benchmark, then by the record where it happened, the
// functions whose self instructions per op stepped from the benchmark's
// record of instructions before: record's rule (beyond countTolerance of
// the function's count and countFloor of the benchmark's), for the
// functions record gates (gates).
func countSteps(records []*Record) map[string]map[int]map[string]ChangePoint {
	gate := gates(records)
	type at struct {
		rec int
		b   *Benchmark
	}
	byBench := map[string][]at{}
	for i, r := range records {
		if r.Instrument != InstrumentInstructions {
			continue
		}
		for j := range r.Benchmarks {
			b := &r.Benchmarks[j]
			byBench[b.Name] = append(byBench[b.Name], at{i, b})
		}
	}
	out := map[string]map[int]map[string]ChangePoint{}
	for name, ats := range byBench {
		for k := 1; k < len(ats); k++ {
			a, b := ats[k-1], ats[k]
			both := func(fn string) bool { return gate[a.rec](fn) && gate[b.rec](fn) }
			sa, fullA := gatedSelf(a.b, both)
			sb, fullB := gatedSelf(b.b, both)
			total := 0.0
			if a.b.InstrPerOp != nil {
				total = *a.b.InstrPerOp
			}
			for _, fn := range slices.Sorted(maps.Keys(union(sa, sb))) {
				x, okA := sa[fn]
				y, okB := sb[fn]
				if (!okA && !fullA) || (!okB && !fullB) {
					continue // compacted away: unknown, not zero
				}
				if math.Abs(y-x) <= math.Max(countTolerance*math.Abs(x), countFloor*total) {
					continue
				}
				if out[name] == nil {
					out[name] = map[int]map[string]ChangePoint{}
				}
				if out[name][b.rec] == nil {
					out[name][b.rec] = map[string]ChangePoint{}
				}
				out[name][b.rec][fn] = ChangePoint{Before: x, After: y}
			}
		}
	}
	return out
}

func union(a, b map[string]float64) map[string]bool {
	u := make(map[string]bool, len(a)+len(b))
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// selfInstrSteps are the change points of a function's self instructions:
// the points at the records where it stepped (countSteps of its
// benchmark), none for a function record does not gate.
func selfInstrSteps(s *Series, steps map[int]map[string]ChangePoint) []ChangePoint {
	var out []ChangePoint
	for i := 1; i < len(s.Points); i++ {
		if cp, ok := steps[s.Points[i].Record][s.Function]; ok {
			out = append(out, ChangePoint{Index: i, Before: cp.Before, After: cp.After})
		}
	}
	return out
}

// instrSteps are the changes of a benchmark's instructions: where one of
// its gated functions stepped, when both records kept functions; at
// MeasureInstr's tolerance of the total otherwise.
func instrSteps(records []*Record, s *Series, moved map[int]map[string]ChangePoint) []ChangePoint {
	var out []ChangePoint
	for i := 1; i < len(s.Points); i++ {
		a, b := s.Points[i-1], s.Points[i]
		_, fa := benchInstr(records[a.Record], s.Benchmark)
		_, fb := benchInstr(records[b.Record], s.Benchmark)
		step := len(moved[b.Record]) > 0
		if !fa || !fb {
			step = math.Abs(b.Value-a.Value) > s.Measure.Tolerance(a.Value)
		}
		if step {
			out = append(out, ChangePoint{Index: i, Before: a.Value, After: b.Value})
		}
	}
	return out
}

// differences says what differs between two records besides the code.
func differences(a, b *Record) string {
	var what []string
	if a.Go != b.Go {
		what = append(what, "Go "+orUnknown(a.Go)+" -> "+orUnknown(b.Go))
	}
	if a.Machine != b.Machine {
		what = append(what, "machine "+orUnknown(a.Machine)+" -> "+orUnknown(b.Machine))
	}
	if a.Instrument != b.Instrument {
		what = append(what, "instrument "+a.Instrument+" -> "+b.Instrument)
	}
	s := ""
	for i, w := range what {
		if i > 0 {
			s += "; "
		}
		s += w
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
