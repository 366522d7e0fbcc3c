package analysis

import (
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
	t, rowOf, err := x.table(opts)
	if err != nil {
		return nil, nil, err
	}
	ix := x.x
	var (
		stacks []Stack
		depth  []int
		buf    []int32
	)
	err = ix.Each(selection(opts), func(k index.Kept) {
		if k.Uniq == nil {
			return
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
				buf = append(buf, rowOf[ix.FrameFunc[f]])
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
