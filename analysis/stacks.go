package analysis

import (
	"errors"

	"github.com/hotbudget/hotbudget/internal/index"
)

// RowStack is one sample of a profile as Functions counts it, its frames
// rows of the Table (limits.Stack, a check's stack, names its frames).
type RowStack struct {
	// Frames are indices into Table.Functions, leaf first; every inlined
	// frame is a frame, as in Functions. A recursive function appears as
	// often as it is on the stack.
	Frames []int32
	// Value is the sample's value in Table.Unit (a time in nanoseconds,
	// bytes or a count); Samples the samples (or events) behind it.
	Value   int64
	Samples int64
}

// Stacks returns the Table x.Table returns for opts, and the stacks of
// the samples behind its rows: the samples that opts select and keep (the
// Selection's Threads, Processes, DropSynthetic, Focus, Ignore and
// ToCaller) and that have a frame, in the profile's order. Each
// function's Self is the sum of the values of the stacks whose first
// frame is that function, and its Total the sum over the stacks that
// contain it. Samples that Focus or Ignore drop count in Table.Total but
// have no stack.
func (x *Index) Stacks(opts ...Option) (*Table, []RowStack, error) {
	sel, err := selectionOf(opts)
	if err != nil {
		return nil, nil, err
	}
	t, rowOf, err := x.table(sel)
	if err != nil {
		return nil, nil, err
	}
	stacks, err := x.stacks(sel, rowOf, nil, false)
	return t, stacks, err
}

// Through returns the distinct stacks of the samples opts select (as
// Stacks counts them) that pass through a function whose name match
// accepts, or whose leaf is one when leaf is set: the samples of one stack
// are merged into one RowStack holding their summed value and samples, in
// the order the stacks first appear. The values add up to the pooled self
// (leaf) or total time of the matching functions, each sample counted once
// however many matching frames it has; a function's own row holds the
// same numbers when it is the only one that matches.
//
// The frames index t.Functions, where t must be the Table x.Table(opts...)
// returned, unmodified: build it once, and ask Through for as many sets
// of functions as needed. A frame without a row in t (t is another
// index's, or of another selection) makes it an error.
func (x *Index) Through(t *Table, match func(name string) bool, leaf bool, opts ...Option) ([]RowStack, error) {
	if t == nil || match == nil {
		return nil, errors.New("analysis: Through needs a table and a match function")
	}
	sel, err := selectionOf(opts)
	if err != nil {
		return nil, err
	}
	rowOf := x.rows(t)
	return x.stacks(sel, rowOf, match, leaf)
}

// rows maps the function ids of x to the rows of t (-1 without one).
func (x *Index) rows(t *Table) []int32 {
	if l := x.data().Last(); l != nil && l.Table == any(t) {
		return l.RowOf
	}
	at := make(map[FuncKey]int32, len(t.Functions))
	for i := range t.Functions {
		at[t.Functions[i].Key] = int32(i)
	}
	rowOf := make([]int32, len(x.ix().Funcs))
	for id, f := range x.ix().Funcs {
		r, ok := at[FuncKey(f)]
		if !ok {
			r = -1
		}
		rowOf[id] = r
	}
	return rowOf
}

// stacks is Stacks, or Through when match is not nil. Frames of functions
// without a row make it an error.
func (x *Index) stacks(sel Selection, rowOf []int32, match func(string) bool, leaf bool) ([]RowStack, error) {
	ix := x.ix()
	ff := ix.FrameFunc
	var (
		hit   []bool  // per function id: match accepts its name
		merge []int32 // per stack id: its RowStack + 1, 0 before it is seen
	)
	if match != nil {
		hit = make([]bool, len(ix.Funcs))
		for i, f := range ix.Funcs {
			hit[i] = match(f.Name)
		}
		merge = make([]int32, ix.NumStacks())
	}
	var (
		stacks  []RowStack
		depth   []int
		buf     []int32
		missing bool
	)
	err := ix.Each(sel.index(), func(k index.Kept) {
		if k.Uniq == nil {
			return
		}
		if match != nil {
			through := hit[ff[k.Uniq[0]]]
			for i := 1; !leaf && !through && i < len(k.Uniq); i++ {
				through = hit[ff[k.Uniq[i]]]
			}
			if !through {
				return
			}
			if i := merge[k.Stack]; i > 0 {
				stacks[i-1].Value += k.Value
				stacks[i-1].Samples += k.Count
				return
			}
			merge[k.Stack] = int32(len(stacks) + 1)
		}
		start := len(buf)
		skip := k.Skip
		for _, l := range ix.Stack(k.Stack) {
			lo, hi := ix.Frames(l)
			for f := lo; f < hi; f++ {
				if skip > 0 {
					skip--
					continue
				}
				r := rowOf[ff[f]]
				if r < 0 {
					missing = true
				}
				buf = append(buf, r)
			}
		}
		stacks = append(stacks, RowStack{Value: k.Value, Samples: k.Count})
		depth = append(depth, len(buf)-start)
	})
	if err != nil {
		return nil, err
	}
	if missing {
		return nil, errors.New("analysis: Through with a table that is not this index's under these options")
	}
	// Slices of buf only once it has stopped moving.
	off := 0
	for i := range stacks {
		n := depth[i]
		stacks[i].Frames = buf[off : off+n : off+n]
		off += n
	}
	return stacks, nil
}
