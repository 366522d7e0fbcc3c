package analysis

import (
	"fmt"
	"time"

	"github.com/google/pprof/profile"
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
// keep (Thread, Process, DropSynthetic, Focus, Ignore), in the profile's
// order. Each function's Self is the sum of the values of the stacks whose
// first frame is that function, and its Total the sum over the stacks that
// contain it. Samples that Focus or Ignore drop count in Table.Total but
// have no stack. p is not modified.
func Stacks(p *profile.Profile, opts ...Option) (*Table, []Stack, error) {
	t, err := Functions(p, opts...)
	if err != nil {
		return nil, nil, err
	}
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	ti, ci, toNanos, err := ValueIndex(p, c.sampleType)
	if err != nil {
		return nil, nil, err
	}
	index := make(map[Key]int32, len(t.Functions))
	for i := range t.Functions {
		index[t.Functions[i].Key] = int32(i)
	}
	var (
		stacks []Stack
		depth  []int   // frames of each stack
		buf    []int32 // backing store of every stack's frames
		frames []frame
	)
	for si, s := range p.Sample {
		if !c.selects(s) {
			continue
		}
		frames = appendFrames(frames[:0], s)
		if c.dropSynthetic && len(frames) > 0 && IsSynthetic(frames[0].key.Name) {
			continue
		}
		if !c.keeps(frames) {
			continue
		}
		var n int64
		if ci >= 0 && ci < len(s.Value) {
			n = s.Value[ci]
		}
		for _, f := range frames {
			i, ok := index[f.key]
			if !ok {
				// Functions made a row for every frame of a kept sample.
				return nil, nil, fmt.Errorf("sample %d: frame %s has no row", si, f.key.Name)
			}
			buf = append(buf, i)
		}
		stacks = append(stacks, Stack{Value: time.Duration(s.Value[ti] * toNanos), Samples: n})
		depth = append(depth, len(frames))
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
