package index

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Selection says which samples count, and by which value.
type Selection struct {
	// SampleType picks the value by type name; "" is the default type.
	SampleType string
	// Threads and Processes keep samples whose thread name or tid (process
	// name or pid) label is one of them; an empty list keeps all.
	Threads, Processes []string
	// Synthetic, when not nil, drops the samples whose leaf function it
	// reports synthetic, from the sums and from the total.
	Synthetic func(name string) bool
	// Focus keeps only samples with a frame whose function name matches;
	// Ignore drops samples with one. Neither changes the total.
	Focus, Ignore *regexp.Regexp
	// ToCaller, when not nil, names functions whose time is their
	// caller's: a sample whose leaf is one of them counts as if its leaf
	// were the next function up (nothing changes when there is none).
	ToCaller func(name string) bool
}

// Sums are self and total time per function under a Selection, or
// allocated bytes or objects (Unit says which).
type Sums struct {
	TimeIdx, CountIdx int   // value indexes (CountIdx -1 when none)
	ToNanos           int64 // time value unit in nanoseconds (1 for bytes and counts)
	// Unit is what the values count: pbuild.UnitTime (nanoseconds),
	// UnitBytes or UnitCount.
	Unit string
	// Total and TotalSamples are the value (in Unit) and count of all selected samples.
	Total, TotalSamples int64
	// Per function id: self and total time (ns) and counts.
	Self, Tot, SelfN, TotN []int64
	// Per function id: local time (ns) and counts: samples whose leaf is
	// the function, or whose nearest function above a leaf of another
	// function is it (its self time and its direct callees' self time
	// under it).
	Local, LocalN []int64
	// Per function id: line and column of the function's first frame in
	// the first kept sample that has it (leaf first).
	Line, Col []int64
	// Order lists the functions of the kept samples in order of first appearance.
	Order []int32
}

// Sum computes self and total time per function in one pass over the
// samples; a sample adds to the total of each function of its stack once.
// Every sum is a sum of some of the samples' values, so none overflows
// once CheckValues has passed (analysis checks every index it builds).
func (x *Index) Sum(sel Selection) (*Sums, error) {
	v, err := x.Value(sel.SampleType)
	if err != nil {
		return nil, err
	}
	nf := len(x.Funcs)
	s := &Sums{
		TimeIdx: v.Idx, CountIdx: v.CountIdx, ToNanos: v.Scale, Unit: v.Unit,
		Self: make([]int64, nf), Tot: make([]int64, nf),
		SelfN: make([]int64, nf), TotN: make([]int64, nf),
		Local: make([]int64, nf), LocalN: make([]int64, nf),
		Line: make([]int64, nf), Col: make([]int64, nf),
	}
	seen := make([]bool, nf)
	ff := x.FrameFunc
	err = x.Each(sel, func(k Kept) {
		s.Total += k.Value
		s.TotalSamples += k.Count
		u := k.Uniq
		if u == nil {
			return
		}
		leaf := ff[u[0]]
		s.Self[leaf] += k.Value
		s.SelfN[leaf] += k.Count
		s.Local[leaf] += k.Value
		s.LocalN[leaf] += k.Count
		if len(u) > 1 {
			up := ff[u[1]]
			s.Local[up] += k.Value
			s.LocalN[up] += k.Count
		}
		for _, fr := range u {
			f := ff[fr]
			s.Tot[f] += k.Value
			s.TotN[f] += k.Count
			if !seen[f] {
				seen[f] = true
				s.Order = append(s.Order, f)
				s.Line[f], s.Col[f] = x.FrameLine[fr], x.FrameCol[fr]
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Value is the value a sample type selects (by name or index, as `go
// tool pprof -sample_index`; "" for the default), with its unit and count.
func (x *Index) Value(sampleType string) (pbuild.Value, error) {
	return pbuild.SelectValue(x.Types, x.DefaultType, sampleType, x.PeriodUnit, x.Period)
}

// Kept is one sample a Selection selects.
type Kept struct {
	Stack int32 // the sample's stack
	// Value (nanoseconds for a time, else bytes or objects: the unit of
	// Value) and Count (samples or events, 0 without a count type; for a
	// Go heap profile the sampled allocations, see pbuild.Value.Count) of
	// the sample.
	Value, Count int64
	// Uniq are the frames of the stack with distinct functions, leaf first
	// (UniqFrames), less the leaf's when Selection.ToCaller charged it to
	// its caller; nil when Focus or Ignore leave the sample out of the
	// functions (it still counts in the total) or it has no frame.
	Uniq []int32
	// Skip is how many frames at the leaf end of the full stack belong to
	// a function ToCaller charged to its caller (0 otherwise).
	Skip int
}

// Each calls fn for every sample sel selects, in the profile's order: the
// one place that decides which samples count and where.
func (x *Index) Each(sel Selection, fn func(Kept)) error {
	v, err := x.Value(sel.SampleType)
	if err != nil {
		return err
	}
	ti := v.Idx
	nf := len(x.Funcs)
	// Decisions per label set and per function, taken once.
	var labelOK []bool
	if len(sel.Threads) > 0 || len(sel.Processes) > 0 {
		labelOK = make([]bool, len(x.LabelSets))
		for i, ls := range x.LabelSets {
			labelOK[i] = pbuild.SelectsLabels(func(k string) []string { return lookup(ls, k) }, sel.Threads, sel.Processes)
		}
	}
	matches := func(pred func(string) bool) []bool {
		if pred == nil {
			return nil
		}
		m := make([]bool, nf)
		for i, f := range x.Funcs {
			m[i] = pred(f.Name)
		}
		return m
	}
	reMatch := func(re *regexp.Regexp) func(string) bool {
		if re == nil {
			return nil
		}
		return re.MatchString
	}
	synthetic := matches(sel.Synthetic)
	focus, ignore := matches(reMatch(sel.Focus)), matches(reMatch(sel.Ignore))
	toCaller := matches(sel.ToCaller)

	stride := len(x.Types)
	ff := x.FrameFunc
	var rest map[int32][]int32 // uniqAbove of the stacks that need it
	for i, st := range x.SampleStack {
		if labelOK != nil && !labelOK[x.SampleLabels[i]] {
			continue
		}
		u := x.Uniq[x.UniqOff[st]:x.UniqOff[st+1]]
		if synthetic != nil && len(u) > 0 && synthetic[ff[u[0]]] {
			continue
		}
		if x.Short != nil {
			if n, ok := x.Short[int32(i)]; ok && int(n) <= ti {
				return fmt.Errorf("sample %d has %d values, want at least %d", i, n, ti+1)
			}
		}
		row := x.Values[i*stride : (i+1)*stride]
		k := Kept{Stack: st, Value: row[ti] * v.Scale, Count: v.Count(row)}
		switch {
		case focus != nil && !anyFunc(focus, ff, u), ignore != nil && anyFunc(ignore, ff, u), len(u) == 0:
		case toCaller != nil && len(u) > 1 && toCaller[ff[u[0]]]:
			var again bool
			k.Skip, again = x.leafRun(st, ff[u[0]])
			k.Uniq = u[1:]
			if again {
				// The charged function is also called higher up, where
				// it keeps its place (pre;f;pre;main: pre's total).
				if rest == nil {
					rest = map[int32][]int32{}
				}
				if k.Uniq = rest[st]; k.Uniq == nil {
					k.Uniq = x.uniqAbove(st, k.Skip)
					rest[st] = k.Uniq
				}
			}
		default:
			k.Uniq = u
		}
		fn(k)
	}
	return nil
}

// leafRun returns how many frames at the leaf end of stack st belong to
// function leaf, and whether leaf appears again above them.
func (x *Index) leafRun(st, leaf int32) (skip int, again bool) {
	run := true
	for _, l := range x.Stack(st) {
		lo, hi := x.Frames(l)
		for f := lo; f < hi; f++ {
			switch {
			case run && x.FrameFunc[f] == leaf:
				skip++
			case run:
				run = false
			case x.FrameFunc[f] == leaf:
				return skip, true
			}
		}
	}
	return skip, false
}

// uniqAbove returns the frames of stack st above its first skip frames
// whose functions are distinct, leaf first, as UniqFrames does for the
// whole stack.
func (x *Index) uniqAbove(st int32, skip int) []int32 {
	var out []int32
	n := 0
	for _, l := range x.Stack(st) {
		lo, hi := x.Frames(l)
		for f := lo; f < hi; f++ {
			if n++; n <= skip {
				continue
			}
			if !slices.ContainsFunc(out, func(g int32) bool { return x.FrameFunc[g] == x.FrameFunc[f] }) {
				out = append(out, f)
			}
		}
	}
	return out
}

func anyFunc(m []bool, ff, frames []int32) bool {
	for _, fr := range frames {
		if m[ff[fr]] {
			return true
		}
	}
	return false
}

func lookup(ls []Label, key string) []string {
	for _, l := range ls {
		if l.Key == key {
			return l.Values
		}
	}
	return nil
}

// synthetic are the frame names that stand for no code of the program:
// V8's and speedscope's markers for idle time, the engine itself, garbage
// collection and the tree root (analysis.Selection.DropSynthetic).
var synthetic = [...]string{"(idle)", "(program)", "(garbage collector)", "(root)"}

// IsSynthetic reports whether name is a frame that stands for no code of
// the program: "(idle)", "(program)", "(garbage collector)", "(root)".
func IsSynthetic(name string) bool { return slices.Contains(synthetic[:], name) }
