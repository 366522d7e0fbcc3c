package analysis

import (
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
// keep (Thread, Process, DropSynthetic, Focus, Ignore) and that have a
// frame, in the profile's order. Each function's Self is the sum of the
// values of the stacks whose first frame is that function, and its Total
// the sum over the stacks that contain it. Samples that Focus or Ignore
// drop count in Table.Total but have no stack. p is not modified.
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
	// Frames per location, leaf first, as appendFrames makes them:
	// locations are shared by many samples.
	byLoc := make(map[*profile.Location][]int32)
	var (
		stacks []Stack
		depth  []int   // frames of each stack
		buf    []int32 // backing store of every stack's frames
		frames []frame
		one    [1]*profile.Location
	)
	for _, s := range p.Sample {
		if !c.selects(s) {
			continue
		}
		start := len(buf)
		for _, l := range s.Location {
			fs, ok := byLoc[l]
			if !ok {
				one[0] = l
				frames = appendFrames(frames[:0], &profile.Sample{Location: one[:]})
				fs = make([]int32, 0, len(frames))
				for _, f := range frames {
					i, ok := index[f.key]
					if !ok {
						fs = nil // not a frame of any kept sample
						break
					}
					fs = append(fs, i)
				}
				byLoc[l] = fs
			}
			if fs == nil {
				// Only samples that Functions counted have rows for
				// all their frames; this one is dropped below.
				buf = append(buf, -1)
				continue
			}
			buf = append(buf, fs...)
		}
		fr := buf[start:]
		if len(fr) == 0 || !c.kept(t, fr) {
			buf = buf[:start]
			continue
		}
		var n int64
		if ci >= 0 && ci < len(s.Value) {
			n = s.Value[ci]
		}
		stacks = append(stacks, Stack{Value: time.Duration(s.Value[ti] * toNanos), Samples: n})
		depth = append(depth, len(fr))
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

// kept applies DropSynthetic, Focus and Ignore to a stack of table rows
// (leaf first) as Functions applies them to frames. A frame of -1 has no
// row: Functions dropped the sample.
func (c *config) kept(t *Table, fr []int32) bool {
	for _, f := range fr {
		if f < 0 {
			return false
		}
	}
	if c.dropSynthetic && IsSynthetic(t.Functions[fr[0]].Name) {
		return false
	}
	if c.focus != nil {
		found := false
		for _, f := range fr {
			if c.focus.MatchString(t.Functions[f].Name) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if c.ignore != nil {
		for _, f := range fr {
			if c.ignore.MatchString(t.Functions[f].Name) {
				return false
			}
		}
	}
	return true
}
