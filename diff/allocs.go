package diff

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// Exact allocation comparison.
//
// An allocation profile recorded with runtime.MemProfileRate = 1 (Capture
// records one beside its CPU samples; `hotbudget record` runs each
// benchmark with -memprofilerate=1) counts every allocation its program
// made: per unit of work, a function's allocations are a fact, not an
// estimate, and do not depend on the machine or its load. CompareAllocs
// judges them without statistics: a function whose allocations per unit of
// work grew beyond AllocTolerance regressed, on any machine, in one run.
//
// Sampled allocation profiles (Go's default rate of one sample per 512 KiB,
// V8's heap sampling) are estimates: Compare judges those statistically,
// like CPU samples. AllocTableOf refuses them.

// AllocCount is a number of allocations and the bytes they took.
type AllocCount struct {
	Objects float64 `json:"objects"`
	Bytes   float64 `json:"bytes"`
}

func (a AllocCount) add(b AllocCount, k float64) AllocCount {
	return AllocCount{Objects: a.Objects + k*b.Objects, Bytes: a.Bytes + k*b.Bytes}
}

// AllocFunc is what one function allocates: itself (Self: the allocations
// for which it is the innermost judged frame, so that what it allocates
// through the standard library or the runtime counts as its own), and with
// everything it calls (Total, a stack counted once where it recurses), and
// its self allocations by line ("file:line" of its frame: the line that
// allocates, or that calls what allocates).
type AllocFunc struct {
	Self  AllocCount            `json:"self"`
	Total AllocCount            `json:"total"`
	Lines map[string]AllocCount `json:"lines,omitempty"`
	// Blocks16 is the part of Self in 16-byte blocks, which the runtime's
	// tiny allocator shares among objects under 16 bytes without pointers.
	// The heap profile records a block under the allocation that opened
	// it, so these counts move between functions as their neighbours
	// change: counted in Self, shown and not judged (unless the
	// allocations were counted one by one: AllocTolerance.Counted).
	Blocks16 AllocCount `json:"blocks16,omitempty"`
}

// tinyBlock is the size of the blocks the Go runtime's tiny allocator
// packs objects under 16 bytes without pointers into. Its heap profile
// records one allocation of a block, with the stack of the allocation
// that opened it, and none for the objects that fit into a block already
// open (runtime/malloc.go, mallocgcTiny): whose stack a tiny object is
// counted under depends on its neighbours, and one function's change moves
// counts onto functions nobody touched, and an ordinary 16-byte object
// (one with a pointer) cannot be told from a block. CompareAllocs
// therefore judges a memory profile's allocations without its 16-byte
// blocks, and shows them.
const tinyBlock = 16

// AllocTable is an exact allocation profile summed by function, with the
// work it did (iterations of a captured function, benchmark ops).
type AllocTable struct {
	Work float64 // units of work the profile covers
	// Funcs are the judged functions (those matching the table's only
	// expression, or all), by name.
	Funcs map[string]*AllocFunc
	// Judged is every allocation attributed to a judged function; All is
	// every allocation of the profile.
	Judged, All AllocCount
	// Stacks are the allocations by call path (function names, outermost
	// first, joined by stackSep), for the flame graph.
	Stacks map[string]AllocCount
}

// stackSep joins the names of a call path in AllocTable.Stacks.
const stackSep = "\x00"

// ErrSampledAllocs is returned by AllocTableOf for an allocation profile
// that sampled allocations (Period above one byte): its values are
// estimates and cannot be judged exactly.
var ErrSampledAllocs = errors.New("the allocation profile is sampled (runtime.MemProfileRate above 1): its values are estimates, not exact counts")

// AllocTableOf sums p, an allocation profile with sample types
// alloc_objects and alloc_space recorded at runtime.MemProfileRate = 1
// (Period 1 or unset), by function. work is the units of work p covers
// (positive). A sample's self allocations go to its innermost frame whose
// function only matches (the leaf when only is nil); samples without such
// a frame count only in All.
func AllocTableOf(p *profile.Profile, work float64, only *regexp.Regexp) (*AllocTable, error) {
	if p == nil {
		return nil, errors.New("nil allocation profile")
	}
	if !(work > 0) || math.IsInf(work, 0) {
		return nil, fmt.Errorf("allocation profile: work %v: want a positive count", work)
	}
	oi, bi := -1, -1
	for i, st := range p.SampleType {
		switch {
		case st == nil:
		case st.Type == "alloc_objects" && st.Unit == "count":
			oi = i
		case st.Type == "alloc_space" && st.Unit == "bytes":
			bi = i
		}
	}
	if oi < 0 || bi < 0 {
		return nil, errors.New("not an allocation profile: it has no alloc_objects/count and alloc_space/bytes sample types")
	}
	if p.Period > 1 {
		return nil, fmt.Errorf("%w (one sample per %d bytes)", ErrSampledAllocs, p.Period)
	}
	t := &AllocTable{Work: work, Funcs: map[string]*AllocFunc{}, Stacks: map[string]AllocCount{}}
	type frame struct {
		name, line string
	}
	var frames []frame
	var seen []string
	for _, s := range p.Sample {
		if s == nil || len(s.Value) <= max(oi, bi) {
			continue
		}
		c := AllocCount{Objects: float64(s.Value[oi]), Bytes: float64(s.Value[bi])}
		if c.Objects == 0 && c.Bytes == 0 {
			continue
		}
		t.All = t.All.add(c, 1)
		frames = frames[:0]
		for _, l := range s.Location {
			if l == nil {
				continue
			}
			for _, ln := range l.Line {
				if ln.Function == nil {
					continue
				}
				line := "" // none known: counted allocations name functions only
				if ln.Line > 0 || ln.Function.Filename != "" {
					line = ln.Function.Filename + ":" + strconv.FormatInt(ln.Line, 10)
				}
				frames = append(frames, frame{ln.Function.Name, line})
			}
		}
		names := make([]string, len(frames))
		for i, f := range frames {
			names[len(frames)-1-i] = f.name
		}
		k := strings.Join(names, stackSep)
		t.Stacks[k] = t.Stacks[k].add(c, 1)
		self := -1
		for i, f := range frames {
			if only == nil || only.MatchString(f.name) {
				self = i
				break
			}
		}
		if self < 0 {
			continue
		}
		t.Judged = t.Judged.add(c, 1)
		fn := t.fn(frames[self].name)
		fn.Self = fn.Self.add(c, 1)
		if c.Bytes == tinyBlock*c.Objects {
			fn.Blocks16 = fn.Blocks16.add(c, 1)
		}
		if l := frames[self].line; l != "" {
			fn.Lines[l] = fn.Lines[l].add(c, 1)
		}
		seen = seen[:0]
		for _, f := range frames[self:] {
			if only != nil && !only.MatchString(f.name) || slices.Contains(seen, f.name) {
				continue
			}
			seen = append(seen, f.name)
			g := t.fn(f.name)
			g.Total = g.Total.add(c, 1)
		}
	}
	return t, nil
}

func (t *AllocTable) fn(name string) *AllocFunc {
	f := t.Funcs[name]
	if f == nil {
		f = &AllocFunc{Lines: map[string]AllocCount{}}
		t.Funcs[name] = f
	}
	return f
}

// AllocTolerance is how much a function's allocations per unit of work may
// grow before CompareAllocs calls it regressed. Exact counts still move a
// little in unchanged code: a sync.Pool is emptied by every other garbage
// collection, and collections come as the whole process allocates (a
// parallel test allocating beside a capture makes more of them); a slice
// grown by append reallocates at sizes that depend on how many times the
// code ran.
type AllocTolerance struct {
	// Objects per unit of work (default 0.5: one more allocation per call
	// of a function called once per unit is caught; a pool refilled once
	// in a hundred iterations is not).
	Objects float64 `json:"objects"`
	// Relative growth of bytes per unit of work, over Bytes (defaults 1%
	// and 8 bytes): a function that allocates as many objects but larger
	// ones.
	Relative float64 `json:"relative"`
	Bytes    float64 `json:"bytes"`
	// Once is what a run may allocate once without it counting as a
	// cost per unit of work, divided by the run's work and added to the
	// tolerance (default 16 objects and 16KiB): a pooled object allocated
	// anew, a reused slice grown (a parser's cache, 9KiB once, moved an
	// unchanged benchmark of 166 ops by 54 bytes an op). CompareAllocs
	// applies it with the smaller side's work; a run of few units of work
	// therefore tolerates more per unit.
	Once AllocCount `json:"once"`
	// Counted is set for allocations counted one by one (under
	// callgrind: perfassert.Instructions, record --instructions), where
	// no object shares a block with another: their 16-byte objects are
	// judged like any other.
	Counted bool `json:"counted,omitempty"`
}

// CountedAllocTolerance is the tolerance of allocations counted one by one
// under callgrind (perfassert.Instructions, record --instructions): any
// growth per unit of work, beyond the few objects a process may allocate
// once where another did not (Once: callgrind's chains of callers follow
// its shadow stack across the runtime's goroutine switches, so that the
// few allocations of other goroutines around a switch are charged to the
// function that was running), spread over the work.
var CountedAllocTolerance = AllocTolerance{Counted: true, Once: AllocCount{Objects: 8}}

// DefaultAllocTolerance is CompareAllocs' tolerance when none is given.
var DefaultAllocTolerance = AllocTolerance{Objects: 0.5, Relative: 0.01, Bytes: 8, Once: AllocCount{Objects: 16, Bytes: 16 << 10}}

// grew reports whether head exceeds base beyond the tolerance, for runs of
// work units of work (0: no Once term).
func (tol AllocTolerance) grew(base, head AllocCount, work float64) bool {
	var once AllocCount
	if work > 0 {
		once = AllocCount{}.add(tol.Once, 1/work)
	}
	return head.Objects-base.Objects > tol.Objects+once.Objects ||
		head.Bytes-base.Bytes > max(tol.Bytes, tol.Relative*base.Bytes)+once.Bytes
}

// AllocRow is one function's allocations per unit of work on both sides.
type AllocRow struct {
	Name    string   `json:"name"`
	Verdict Verdict  `json:"verdict"`
	Base    AllocPer `json:"base"`
	Head    AllocPer `json:"head"`
	// Lines are the function's lines whose self allocations changed, the
	// most grown first (at most allocLines).
	Lines []AllocLine `json:"lines,omitempty"`
}

// AllocPer is a function's self and total allocations per unit of work.
type AllocPer struct {
	Self  AllocCount `json:"self"`
	Total AllocCount `json:"total"`
	// Blocks16 is the part of Self in 16-byte blocks, which the runtime's
	// tiny allocator shares among objects under 16 bytes without pointers
	// (AllocFunc.Blocks16 says when they are judged).
	Blocks16 AllocCount `json:"blocks16,omitempty"`
}

// judged is the part of a function's self allocations CompareAllocs
// judges: without its 16-byte blocks unless blocks16 (allocations
// counted one by one).
func (a AllocPer) judged(blocks16 bool) AllocCount {
	if blocks16 {
		return a.Self
	}
	return a.Self.add(a.Blocks16, -1)
}

// AllocLine is a line's self allocations per unit of work on both sides.
type AllocLine struct {
	Line string     `json:"line"` // file:line
	Base AllocCount `json:"base"`
	Head AllocCount `json:"head"`
}

// allocLines is how many changed lines a row lists.
const allocLines = 5

// AllocReport is an exact comparison of allocations per unit of work.
type AllocReport struct {
	// Name says what was compared (a benchmark, a capture); may be empty.
	Name string `json:"name,omitempty"`
	// Unit is the unit of work ("iteration", "op").
	Unit string `json:"unit"`
	// Exact is always true: the values are counts, not estimates.
	Exact     bool           `json:"exact"`
	Tolerance AllocTolerance `json:"tolerance"`
	// Work is the units of work of the smaller side's run, over which
	// Tolerance.Once is spread.
	Work float64 `json:"work"`
	// Base and Head are every allocation of the judged functions per
	// unit of work.
	Base  AllocCount `json:"base"`
	Head  AllocCount `json:"head"`
	Rows  []AllocRow `json:"functions"`
	Notes []string   `json:"notes,omitempty"`

	base, head *AllocTable // for the flame graph
}

// CompareAllocs compares two exact allocation tables per unit of work. A
// function regressed when its self allocations per unit grew beyond tol; a
// function new in head regressed when it allocates beyond tol and the
// judged allocations as a whole grew beyond tol too (a renamed function
// moves its allocations, it does not add any). Counted one by one
// (tol.Counted), a function regressed only when every allocation of the
// run (AllocTable.All) grew beyond tol too, by at least half of what the
// function gained: the others moved between functions, which a note says. Rows are ordered
// regressions first, then by how much self allocations grew. unit names
// the work ("iteration", "op").
func CompareAllocs(base, head *AllocTable, unit string, tol AllocTolerance) *AllocReport {
	r := &AllocReport{Unit: unit, Exact: true, Tolerance: tol, base: base, head: head}
	per := func(t *AllocTable, f *AllocFunc) AllocPer {
		if f == nil {
			return AllocPer{}
		}
		return AllocPer{Self: AllocCount{}.add(f.Self, 1/t.Work), Total: AllocCount{}.add(f.Total, 1/t.Work), Blocks16: AllocCount{}.add(f.Blocks16, 1/t.Work)}
	}
	r.Base = AllocCount{}.add(base.Judged, 1/base.Work)
	r.Head = AllocCount{}.add(head.Judged, 1/head.Work)
	work := min(base.Work, head.Work)
	r.Work = work
	grewAll := tol.grew(r.Base, r.Head, work)
	// Counted one by one, every allocation of the run is in All, exactly,
	// wherever it is charged: where callgrind cannot tell which of the
	// inlined functions sharing a call made it, or loses a chain of
	// callers after a stack switch, an allocation moves between
	// functions from one process to the next (fxamacker/cbor's
	// (*decMode).Unmarshal 0.50 -> 0.99 objects an op, its benchmark 0.50
	// -> 0, the op 4.004 -> 4.006), never in or out of All. A function
	// regressed only when the run allocates more as a whole too, by at
	// least half of what the function gained (the whole moves by a few
	// objects a process on its own: fxamacker/cbor 27 over 3,704 ops).
	allBase, allHead := AllocCount{}.add(base.All, 1/base.Work), AllocCount{}.add(head.All, 1/head.Work)
	allGrew := tol.grew(allBase, allHead, work)
	whole := func(row AllocRow) bool {
		return !tol.Counted || (allGrew && allHead.Objects-allBase.Objects >= (row.Head.Self.Objects-row.Base.Self.Objects)/2)
	}
	var shifted []string // functions that allocate more while the whole does not
	// 16-byte blocks are judged only where allocations were counted one
	// by one: a memory profile records a tiny-allocator block under the
	// allocation that opened it, so its counts move between functions
	// whose code and allocations did not change, and an ordinary 16-byte
	// object looks the same as a block.
	blocks16 := tol.Counted
	var moved []string // functions whose 16-byte blocks changed, not judged
	names := map[string]bool{}
	for n := range base.Funcs {
		names[n] = true
	}
	for n := range head.Funcs {
		names[n] = true
	}
	for name := range names {
		bf, hf := base.Funcs[name], head.Funcs[name]
		row := AllocRow{Name: name, Base: per(base, bf), Head: per(head, hf)}
		switch {
		case (bf == nil || bf.Total == (AllocCount{})) && (hf == nil || hf.Total == (AllocCount{})):
			// Named on both sides without allocating on either
			// (MustParse, init in a benchmark's profile): no news.
			row.Verdict = Unchanged
		case tol.Counted && (bf == nil || bf.Total == (AllocCount{}) || hf == nil || hf.Total == (AllocCount{})) &&
			!tol.grew(AllocCount{}, row.Base.Self, work) && !tol.grew(AllocCount{}, row.Head.Self, work):
			// Counted, on one side only, its own allocations within
			// what a process allocates once (a cache filled in one
			// process of the two: fxamacker/cbor's getTypeInfo, one
			// object over 324 ops), or none, on the stacks of others'
			// (callgrind's chains of callers differ between processes:
			// BurntSushi/toml's (*lexer).next, 0 -> 44.64 objects an
			// op in all, none its own): no news either.
			row.Verdict = Unchanged
		case bf == nil || bf.Total == (AllocCount{}):
			row.Verdict = New
			if grewAll && tol.grew(AllocCount{}, row.Head.judged(blocks16), work) {
				row.Verdict = Regressed
				if !whole(row) {
					row.Verdict = New
					shifted = append(shifted, fmt.Sprintf("%s %.4g -> %.4g", name, row.Base.Self.Objects, row.Head.Self.Objects))
				}
			}
		case hf == nil || hf.Total == (AllocCount{}):
			row.Verdict = Gone
		case tol.grew(row.Base.judged(blocks16), row.Head.judged(blocks16), work) && (blocks16 || tol.grew(row.Base.Self, row.Head.Self, work)):
			// Without its 16-byte blocks, and, where they are not
			// judged, with them too: objects that moved out of
			// 16-byte blocks into a larger one (a buffer sized once
			// instead of grown) add no allocation.
			row.Verdict = Regressed
			if !whole(row) {
				row.Verdict = Unchanged
				shifted = append(shifted, fmt.Sprintf("%s %.4g -> %.4g", name, row.Base.Self.Objects, row.Head.Self.Objects))
			}
		case tol.grew(row.Head.judged(blocks16), row.Base.judged(blocks16), work):
			row.Verdict = Improved
		default:
			row.Verdict = Unchanged
		}
		if d := row.Head.Blocks16.Objects - row.Base.Blocks16.Objects; !blocks16 && math.Abs(d) >= max(tol.Objects, 0.005) {
			moved = append(moved, fmt.Sprintf("%s %+.3g", name, d))
		}
		row.Lines = changedLines(base, head, bf, hf)
		r.Rows = append(r.Rows, row)
	}
	rank := func(v Verdict) int {
		switch v {
		case Regressed:
			return 0
		case Improved:
			return 1
		case New, Gone:
			return 2
		}
		return 3
	}
	if len(shifted) > 0 {
		slices.Sort(shifted)
		r.Notes = append(r.Notes, fmt.Sprintf("objects per %s moved between functions, shown, not judged: %s, while the run as a whole allocates %.4g -> %.4g objects per %s, every allocation counted: callgrind charges an allocation made in inlined code, or after a stack switch, to one of the functions on its stack, not always the same one", unit, strings.Join(shifted, ", "), base.All.Objects/base.Work, head.All.Objects/head.Work, unit))
	}
	if len(moved) > 0 {
		slices.Sort(moved)
		r.Notes = append(r.Notes, fmt.Sprintf("16-byte blocks per %s changed in %s: shown, not judged: the runtime packs objects under 16 bytes without pointers into shared 16-byte blocks and the memory profile records each block under the allocation that opened it, so these counts move between functions whose code did not change, and a 16-byte object looks the same; counted allocations judge them exactly (perfassert.Instructions, hotbudget record --instructions)", unit, strings.Join(moved, ", ")))
	}
	slices.SortFunc(r.Rows, func(a, b AllocRow) int {
		return cmp.Or(cmp.Compare(rank(a.Verdict), rank(b.Verdict)),
			cmp.Compare(b.Head.Self.Objects-b.Base.Self.Objects, a.Head.Self.Objects-a.Base.Self.Objects),
			cmp.Compare(b.Head.Self.Bytes-b.Base.Self.Bytes, a.Head.Self.Bytes-a.Base.Self.Bytes),
			cmp.Compare(b.Head.Total.Bytes, a.Head.Total.Bytes),
			cmp.Compare(a.Name, b.Name))
	})
	return r
}

// changedLines lists a function's lines whose self allocations per unit
// changed, the most grown first.
func changedLines(base, head *AllocTable, bf, hf *AllocFunc) []AllocLine {
	lines := map[string]*AllocLine{}
	add := func(t *AllocTable, f *AllocFunc, isHead bool) {
		if f == nil {
			return
		}
		for l, c := range f.Lines {
			x := lines[l]
			if x == nil {
				x = &AllocLine{Line: l}
				lines[l] = x
			}
			if isHead {
				x.Head = AllocCount{}.add(c, 1/t.Work)
			} else {
				x.Base = AllocCount{}.add(c, 1/t.Work)
			}
		}
	}
	add(base, bf, false)
	add(head, hf, true)
	var out []AllocLine
	for _, l := range lines {
		if math.Abs(l.Head.Objects-l.Base.Objects) >= 0.005 || math.Abs(l.Head.Bytes-l.Base.Bytes) >= 0.5 {
			out = append(out, *l)
		}
	}
	slices.SortFunc(out, func(a, b AllocLine) int {
		return cmp.Or(cmp.Compare(b.Head.Objects-b.Base.Objects, a.Head.Objects-a.Base.Objects),
			cmp.Compare(b.Head.Bytes-b.Base.Bytes, a.Head.Bytes-a.Base.Bytes), cmp.Compare(a.Line, b.Line))
	})
	if len(out) > allocLines {
		out = out[:allocLines]
	}
	return out
}

// Regressions returns the rows that regressed.
func (r *AllocReport) Regressions() []AllocRow {
	var out []AllocRow
	for _, row := range r.Rows {
		if row.Verdict == Regressed {
			out = append(out, row)
		}
	}
	return out
}

// Failed reports whether some function's allocations regressed.
func (r *AllocReport) Failed() bool { return len(r.Regressions()) > 0 }
