package diff

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Exact counts (perfassert.Instructions): nothing in them is sampled, so
// they are judged without statistics. A function's count per iteration
// repeats across processes to a few instructions in a million, except where
// its work depends on the per-process random hash seed (map lookups,
// hashing, memequal: up to 3% of themselves) or on the wall clock (the
// runtime's monitor thread) or on the process's type-assertion caches (an
// inlined probe walks as far as that process placed its types). A side
// recorded in several processes shows each function's own spread; a
// function is changed when its count moved beyond the spread of either
// side and beyond a minimum.
const (
	// countTolerance is the smallest change of a function's count, as a
	// fraction of its baseline count, that is a verdict: 0.5%. Counts of
	// functions whose work does not depend on the hash seed repeated
	// across 10 processes to within 0.0022% of themselves (median
	// 0.0003%), so 0.5% is two hundred times that, and a quarter of the
	// smallest slowdown a golden baseline is asked to catch (2% of a
	// function).
	countTolerance = 0.005
	// countFloor is the smallest change, as a fraction of the whole
	// program's count per iteration, that is a verdict: 0.01%, so that a
	// function of a few instructions that gains one is not a regression
	// of the program. A function holding 3% of the count made 2% slower
	// moves 0.06%.
	countFloor = 0.0001
	// MissCost is how many instructions of a function's own count one
	// call into the runtime's type-assertion or type-switch miss path
	// (meta.Run.Misses) may add or take away beside a hit: the generated
	// code probes the call site's cache before it calls, and the runtime
	// fills that cache at random (on about one miss in 1,024, chosen per
	// process), so how often a process misses, and how far each probe
	// walks, is the process's. Measured on BurntSushi/toml v1.6.0 under
	// callgrind, the function's count against its misses across processes:
	// (*Encoder).eElement (a type switch) 7 to 23 instructions a miss,
	// (*MetaData).unify 6, indirect (assertions of many types, which go on
	// missing) 1.3; 32 is above all three.
	MissCost = 32
)

// CountRow is one function's counts per iteration on both sides.
type CountRow struct {
	Name string `json:"name"`
	// Base and Head are the function's self count per iteration in each
	// process of each side (0 where it did not run).
	Base []float64 `json:"base"`
	Head []float64 `json:"head"`
	// Allowed is how far the head's count may move from the baseline's
	// range without a verdict: the largest of the baseline's own spread,
	// the head's (when it holds several processes too), countTolerance of
	// its count, and countFloor of the program's.
	Allowed float64 `json:"allowed"`
	// Misses is the largest number of type-cache misses per iteration
	// (meta.Run.Misses) of the function in a process of the baseline,
	// plus the largest in a process of the head: Allowed is at least
	// MissCost times as many instructions. 0: none counted.
	Misses float64 `json:"type_cache_misses,omitempty"`
	// Change is the head's median count minus the baseline's median.
	Change  float64 `json:"change"`
	Verdict Verdict `json:"verdict"`
	// InlinedInto are the report's other changed functions that this
	// function's code was compiled into, inlined (NoteInlined; sorted, nil:
	// none known). A function's count holds its inlined copies, which the
	// compiler makes anew inside each function that calls it: a change
	// to that function can change the copy's instructions (a register
	// spilled, a check moved) while the inlined function's source stayed
	// as it was.
	InlinedInto []string `json:"inlined_into,omitempty"`
}

// CountReport is the exact comparison of two sides of counts
// (CompareCounts).
type CountReport struct {
	// Event is what was counted ("instructions").
	Event string `json:"event"`
	// BaseProcesses and HeadProcesses are how many processes each side
	// holds.
	BaseProcesses int `json:"base_processes"`
	HeadProcesses int `json:"head_processes"`
	// BaseTotal and HeadTotal are the median whole count per iteration
	// of each side: shown, not judged (it holds the runtime's monitor
	// thread, whose count follows the wall clock).
	BaseTotal float64 `json:"base_total"`
	HeadTotal float64 `json:"head_total"`
	// Judged is how many functions were judged.
	Judged int `json:"judged"`
	// Negative are the functions judge accepted whose count is below zero
	// in a process of either side, sorted: such a count is a difference of
	// two processes (record --instructions counts 2N ops less N), where
	// their runtimes' work differed, not what the function executes, so it
	// is shown and never judged (never Regressed).
	Negative []string `json:"negative,omitempty"`
	// Missing are the judged functions whose allowance their type-cache
	// misses set (CountRow.Misses), above the others: judged within what
	// the runtime's random filling of those caches can move, sorted by
	// name.
	Missing []MissAllowance `json:"type_cache_missing,omitempty"`
	// Traded are the functions Trade took out of Rows: regressed or new,
	// by less than the whole count per iteration fell (see Trade). Shown,
	// never failed; sorted by name.
	Traded []Trade `json:"traded,omitempty"`
	// Rows are the judged functions whose count changed (a verdict other
	// than Unchanged), the largest change first.
	Rows []CountRow `json:"rows"`

	// The whole count per iteration of each process of each side.
	baseTotals, headTotals []float64
}

// Trade forgives the work a change added to a function and paid for in
// the same iteration: a function regressed or new whose count grew by less
// than the whole count per iteration fell, between every process of the
// baseline and every process of the head, moves from Rows to Traded. The
// whole count holds the runtime's varying work, which moved a
// comment-only change's op by up to 8% between single processes in record
// (fxamacker/cbor, go-viper/mapstructure), enough to hide a real slowdown;
// so the fall counts only where it is more than that work's spread: where
// allocs (the exact allocations of the same runs, CompareAllocs; nil:
// none) shows every allocation of the run fewer per unit of work beyond
// its tolerance, or where each side holds tradeProcesses processes or
// more, every one of the head's below every one of the baseline's (by
// chance 1 time in 70 with four a side; a slowdown raises the head's). A
// buffer of 32 bytes made once in place of one grown by append
// (hashicorp/go-version's (*Version).bytes: 6 instructions more an op,
// 70 fewer in all over four processes a side, as many objects) is such a
// trade.
func (r *CountReport) Trade(allocs *AllocReport) {
	if len(r.baseTotals) == 0 || len(r.headTotals) == 0 {
		return
	}
	fewer := false
	if a := allocs; a != nil && a.base != nil && a.head != nil && a.base.Work > 0 && a.head.Work > 0 {
		b := AllocCount{}.add(a.base.All, 1/a.base.Work)
		h := AllocCount{}.add(a.head.All, 1/a.head.Work)
		tol := AllocTolerance{Objects: a.Tolerance.Objects, Once: a.Tolerance.Once}
		fewer = tol.grew(h, AllocCount{Objects: b.Objects}, a.Work)
	}
	apart := len(r.baseTotals) >= tradeProcesses && len(r.headTotals) >= tradeProcesses
	if !fewer && !apart {
		return
	}
	saved := slices.Min(r.baseTotals) - slices.Max(r.headTotals)
	r.Rows = slices.DeleteFunc(r.Rows, func(row CountRow) bool {
		if (row.Verdict != Regressed && row.Verdict != New) || !(row.Change < saved) {
			return false
		}
		r.Traded = append(r.Traded, Trade{Name: row.Name, Change: row.Change, Saved: saved})
		return true
	})
	slices.SortFunc(r.Traded, func(a, b Trade) int { return strings.Compare(a.Name, b.Name) })
}

// NoteInlined sets each changed row's InlinedInto: of the functions into
// gives for its name (the compiled functions its code is inlined into, as
// the binary's debug information says, for example), those that are
// changed rows of r too. It changes no verdict: an inlined copy's count is
// work the function's own lines execute, and a change around it is still a
// change; the note says where to look.
func (r *CountReport) NoteInlined(into map[string][]string) {
	changed := map[string]bool{}
	for _, row := range r.Rows {
		changed[row.Name] = true
	}
	for i, row := range r.Rows {
		var in []string
		for _, g := range into[row.Name] {
			if g != row.Name && changed[g] && !slices.Contains(in, g) {
				in = append(in, g)
			}
		}
		slices.Sort(in)
		r.Rows[i].InlinedInto = in
	}
}

// tradeProcesses is the fewest processes a side with which the whole
// count's fall alone pays for a function's growth (CountReport.Trade).
const tradeProcesses = 4

// Trade is a function whose count grew by less than the whole count fell
// (CountReport.Traded): Change is its head's median count per iteration
// minus the baseline's, Saved the whole count's fall, the smallest
// baseline process's whole count less the largest head process's.
type Trade struct {
	Name   string  `json:"name"`
	Change float64 `json:"change"`
	Saved  float64 `json:"saved"`
}

// MissAllowance is a function's allowance set by its type-cache misses.
type MissAllowance struct {
	Name string `json:"name"`
	// Allowed is the allowance per iteration; Base the function's median
	// baseline count per iteration.
	Allowed float64 `json:"allowed"`
	Base    float64 `json:"base"`
}

// Failed reports whether a judged function regressed or is new.
func (r *CountReport) Failed() bool {
	for _, row := range r.Rows {
		if row.Verdict == Regressed || row.Verdict == New {
			return true
		}
	}
	return false
}

// CompareCounts judges the exact counts of head against base, function by
// function (self count per iteration), for the functions judge accepts
// (nil: all). Each side may hold several processes (meta.MergeProcesses);
// a function is Regressed (or New) when its head median exceeds the
// baseline's largest value by more than the allowed change, unless the
// whole count per iteration fell by more than it grew (CountReport.Traded),
// Improved (or Gone) when it falls below the smallest by as much. Both
// profiles must be exact counts of the same event with iterations
// recorded.
func CompareCounts(base, head *profile.Profile, judge func(name string) bool) (*CountReport, error) {
	bs, event, err := countSide("baseline", base, "")
	if err != nil {
		return nil, err
	}
	hs, _, err := countSide("current", head, event)
	if err != nil {
		return nil, err
	}
	rep := &CountReport{Event: event, BaseProcesses: len(bs), HeadProcesses: len(hs)}
	rep.BaseTotal = stats.Median(totals(bs))
	rep.HeadTotal = stats.Median(totals(hs))
	rep.baseTotals, rep.headTotals = totals(bs), totals(hs)
	names := map[string]bool{}
	for _, side := range [][]countProcess{bs, hs} {
		for _, p := range side {
			for name := range p.self {
				names[name] = true
			}
		}
	}
	for name := range names {
		if judge != nil && !judge(name) {
			continue
		}
		row := CountRow{Name: name}
		for _, p := range bs {
			row.Base = append(row.Base, p.self[name])
		}
		for _, p := range hs {
			row.Head = append(row.Head, p.self[name])
		}
		if slices.Min(row.Base) < 0 || slices.Min(row.Head) < 0 {
			rep.Negative = append(rep.Negative, name)
			continue
		}
		rep.Judged++
		lo, hi := slices.Min(row.Base), slices.Max(row.Base)
		mb, mh := stats.Median(row.Base), stats.Median(row.Head)
		row.Change = mh - mb
		row.Misses = mostMisses(bs, name) + mostMisses(hs, name)
		others := max(hi-lo, slices.Max(row.Head)-slices.Min(row.Head), countTolerance*mb, countFloor*rep.BaseTotal)
		row.Allowed = max(others, MissCost*row.Misses)
		if row.Allowed > others {
			rep.Missing = append(rep.Missing, MissAllowance{Name: name, Allowed: row.Allowed, Base: mb})
		}
		switch {
		case mh > hi+row.Allowed && hi == 0:
			row.Verdict = New
		case mh > hi+row.Allowed:
			row.Verdict = Regressed
		case mh < lo-row.Allowed && mh == 0:
			row.Verdict = Gone
		case mh < lo-row.Allowed:
			row.Verdict = Improved
		default:
			continue
		}
		rep.Rows = append(rep.Rows, row)
	}
	slices.SortFunc(rep.Rows, func(a, b CountRow) int {
		return cmp.Or(cmp.Compare(math.Abs(b.Change), math.Abs(a.Change)), strings.Compare(a.Name, b.Name))
	})
	slices.Sort(rep.Negative)
	slices.SortFunc(rep.Missing, func(a, b MissAllowance) int { return strings.Compare(a.Name, b.Name) })
	return rep, nil
}

// countProcess is one process's self counts per iteration, by function.
type countProcess struct {
	self  map[string]float64
	total float64
	// misses are the type-cache misses per iteration, by function.
	misses map[string]float64
}

// mostMisses is the largest number of type-cache misses per iteration of
// function name in a process of side.
func mostMisses(side []countProcess, name string) float64 {
	var most float64
	for _, p := range side {
		most = max(most, p.misses[name])
	}
	return most
}

// countSide splits p into its processes and counts each per iteration;
// event is the sample type, which must equal want when want is set.
func countSide(side string, p *profile.Profile, want string) ([]countProcess, string, error) {
	if p == nil {
		return nil, "", fmt.Errorf("%s: nil profile", side)
	}
	if !meta.IsExact(p.Comments) || len(p.SampleType) == 0 || p.SampleType[0].Unit != "count" {
		return nil, "", fmt.Errorf("%s: not a profile of exact counts (perfassert.Instructions)", side)
	}
	event := p.SampleType[0].Type
	if want != "" && event != want {
		return nil, "", fmt.Errorf("%s counts %s, the baseline %s", side, event, want)
	}
	ps, err := meta.SplitProcesses(p)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", side, err)
	}
	var out []countProcess
	for i, q := range ps {
		rec, ok, err := meta.Get(q)
		if err != nil || !ok {
			return nil, "", fmt.Errorf("%s: process %d records no iterations", side, i+1)
		}
		var work float64
		for _, r := range rec.Runs {
			work += r.Work
		}
		if !(work > 0) {
			return nil, "", fmt.Errorf("%s: process %d records no iterations", side, i+1)
		}
		cp := countProcess{self: map[string]float64{}}
		for _, r := range rec.Runs {
			for name, n := range r.Misses {
				if n < 0 {
					return nil, "", fmt.Errorf("%s: process %d records %d type-cache misses of %s", side, i+1, n, textfmt.Line(name))
				}
				if cp.misses == nil {
					cp.misses = map[string]float64{}
				}
				cp.misses[name] += float64(n) / work
			}
		}
		for _, s := range q.Sample {
			if len(s.Value) == 0 || len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
				continue
			}
			v := float64(s.Value[0]) / work
			cp.self[s.Location[0].Line[0].Function.Name] += v
			cp.total += v
		}
		out = append(out, cp)
	}
	if len(out) == 0 {
		return nil, "", errors.New(side + ": no processes")
	}
	return out, event, nil
}

func totals(ps []countProcess) []float64 {
	var t []float64
	for _, p := range ps {
		t = append(t, p.total)
	}
	return t
}

// writeText writes the report: a line with the whole count, then a line
// per changed function with the counts of both sides and the verdict.
func (r *CountReport) writeText(w io.Writer) error {
	var b strings.Builder
	verdict := "no function's count changed"
	if n := len(r.Rows); n > 0 {
		verdict = fmt.Sprintf("%d of %d functions changed", n, r.Judged)
	}
	if n := len(r.Traded); n > 0 {
		verdict += fmt.Sprintf(" (%d more grew by less than the whole fell: traded, below)", n)
	}
	sides := ""
	if r.BaseProcesses > 1 || r.HeadProcesses > 1 {
		sides = fmt.Sprintf(" (baseline: %d %s, current: %d %s)", r.BaseProcesses, plural(r.BaseProcesses, "process", "processes"), r.HeadProcesses, plural(r.HeadProcesses, "process", "processes"))
	}
	fmt.Fprintf(&b, "%s per iteration%s: %s -> %s (%s) in all, the runtime's varying work included, not judged; %s, each counted exactly\n",
		r.Event, sides, textfmt.Count(math.Round(r.BaseTotal)), textfmt.Count(math.Round(r.HeadTotal)), relChange(r.BaseTotal, r.HeadTotal), verdict)
	for _, row := range r.Rows {
		lo, hi := slices.Min(row.Base), slices.Max(row.Base)
		rng := textfmt.Count(math.Round(lo))
		if math.Round(hi) != math.Round(lo) {
			rng += "-" + textfmt.Count(math.Round(hi))
		}
		mb, mh := stats.Median(row.Base), stats.Median(row.Head)
		misses := ""
		if row.Misses > 0 && MissCost*row.Misses >= row.Allowed {
			misses = fmt.Sprintf(", its %s type-cache misses an iteration", textfmt.Count(row.Misses))
		}
		inlined := ""
		if len(row.InlinedInto) > 0 {
			names := make([]string, len(row.InlinedInto))
			for i, g := range row.InlinedInto {
				names[i] = textfmt.Line(g)
			}
			inlined = fmt.Sprintf("; inlined into %s, which changed too", strings.Join(names, ", "))
		}
		fmt.Fprintf(&b, "  %-9s %s: %s -> %s %s (%s; allowed ±%s%s)%s\n", row.Verdict, textfmt.Line(row.Name), rng,
			textfmt.Count(math.Round(mh)), r.Event, relChange(mb, mh), textfmt.Count(math.Round(row.Allowed)), misses, inlined)
	}
	if n := len(r.Negative); n > 0 {
		const shown = 4
		names := make([]string, 0, shown)
		for _, name := range r.Negative[:min(n, shown)] {
			names = append(names, textfmt.Line(name))
		}
		more := ""
		if n > shown {
			more = fmt.Sprintf(" and %d more", n-shown)
		}
		fmt.Fprintf(&b, "  not judged: %d %s below zero on a side (a difference of two processes whose runtimes' work differed, not a count): %s%s\n",
			n, plural(n, "function", "functions"), strings.Join(names, ", "), more)
	}
	if n := len(r.Missing); n > 0 {
		const shown = 4
		names := make([]string, 0, shown)
		for _, m := range r.Missing[:min(n, shown)] {
			share := ""
			if m.Base > 0 {
				share = fmt.Sprintf(", %.0f%% of its count", 100*m.Allowed/m.Base)
			}
			names = append(names, fmt.Sprintf("%s (±%s%s)", textfmt.Line(m.Name), textfmt.Count(math.Round(m.Allowed)), share))
		}
		more := ""
		if n > shown {
			more = fmt.Sprintf(" and %d more", n-shown)
		}
		fmt.Fprintf(&b, "  judged within their type-cache misses (the runtime fills those caches at random, %d instructions a miss allowed): %d %s: %s%s\n",
			MissCost, n, plural(n, "function", "functions"), strings.Join(names, ", "), more)
	}
	for _, tr := range r.Traded {
		fmt.Fprintf(&b, "  traded    %s: +%s %s an iteration, while the whole iteration executes %s fewer: paid for in the same iteration; shown, not failed\n",
			textfmt.Line(tr.Name), textfmt.Count(math.Round(tr.Change)), r.Event, textfmt.Count(math.Round(tr.Saved)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// relChange is the change from a to b in percent, "new" from 0.
func relChange(a, b float64) string {
	if a == 0 {
		if b == 0 {
			return "+0%"
		}
		return "new"
	}
	return fmt.Sprintf("%+.2f%%", 100*(b-a)/a)
}
