package analysis

import (
	"errors"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/index"
)

// Stack is one sample of a profile as Functions counts it.
type Stack struct {
	// Frames are indices into Table.Functions, leaf first; every inlined
	// frame is a frame, as in Functions. A recursive function appears as
	// often as it is on the stack.
	Frames []int32
	// Value is the sample's time; Samples the samples (or events) behind it.
	Value   time.Duration
	Samples int64
}

// Stacks returns the Table Functions returns for p and opts, and the
// stacks of the samples behind its rows: the samples that opts select and
// keep (Thread, Process, DropSynthetic, Focus, Ignore, ToCaller) and that
// have a frame, in the profile's order. Each function's Self is the sum of
// the values of the stacks whose first frame is that function, and its
// Total the sum over the stacks that contain it. Samples that Focus or
// Ignore drop count in Table.Total but have no stack. p is not modified.
func Stacks(p *profile.Profile, opts ...Option) (*Table, []Stack, error) {
	x, err := NewIndex(p)
	if err != nil {
		return nil, nil, err
	}
	return x.Stacks(opts...)
}

// Stacks is the package-level Stacks for the indexed profile.
func (x *Index) Stacks(opts ...Option) (*Table, []Stack, error) {
	return x.stacks(opts, nil, false)
}

// Through returns the Table Table returns for opts, and the distinct
// stacks of the samples (as Stacks counts them) that pass through a
// function whose name match accepts, or whose leaf is one when leaf is
// set: the samples of one stack are merged into one Stack holding their
// summed value and samples, in the order the stacks first appear. The
// values add up to the pooled self (leaf) or total time of the matching
// functions, each sample counted once however many matching frames it
// has; a function's own row holds the same numbers when it is the only
// one that matches.
func (x *Index) Through(match func(name string) bool, leaf bool, opts ...Option) (*Table, []Stack, error) {
	if match == nil {
		return nil, nil, errors.New("analysis: Through without a match function")
	}
	return x.stacks(opts, match, leaf)
}

// stacks is Stacks, or Through when match is not nil.
func (x *Index) stacks(opts []Option, match func(string) bool, leaf bool) (*Table, []Stack, error) {
	sel, err := selectionOf(opts)
	if err != nil {
		return nil, nil, err
	}
	t, rowOf, err := x.table(sel)
	if err != nil {
		return nil, nil, err
	}
	ix := x.x
	ff := ix.FrameFunc
	var (
		hit   []bool  // per function id: match accepts its name
		merge []int32 // per stack id: its Stack + 1, 0 before it is seen
	)
	if match != nil {
		hit = make([]bool, len(ix.Funcs))
		for i, f := range ix.Funcs {
			hit[i] = match(f.Name)
		}
		merge = make([]int32, ix.NumStacks())
	}
	var (
		stacks []Stack
		depth  []int
		buf    []int32
	)
	err = ix.Each(sel.index(), func(k index.Kept) {
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
				stacks[i-1].Value += time.Duration(k.Value)
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
				buf = append(buf, rowOf[ff[f]])
			}
		}
		stacks = append(stacks, Stack{Value: time.Duration(k.Value), Samples: k.Count})
		depth = append(depth, len(buf)-start)
	})
	if err != nil {
		return nil, nil, err
	}
	// Slices of buf only once it has stopped moving.
	off := 0
	for i := range stacks {
		n := depth[i]
		stacks[i].Frames = buf[off : off+n : off+n]
		off += n
	}
	return t, stacks, nil
}
