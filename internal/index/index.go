// Package index turns a profile into dense integer tables once, so that
// self and total time per function, under any selection of samples, come
// from one pass over integer arrays instead of a walk over pointers and
// strings.
//
// An Index has:
//
//   - functions, identified as analysis identifies them (name, system name,
//     file, start line), with dense ids in the order they first appear in
//     the profile's locations; a location without symbols is the function
//     pbuild.UnsymbolizedName names;
//   - frames, one per Line of a location (inlined callee first), or one for
//     a location without lines, each with its function, line and column;
//   - stacks, the distinct location sequences of the samples (leaf first),
//     each with the list of its frames whose functions are distinct, in
//     leaf-first order of first occurrence: what a sample adds to the total
//     of each function once, however often it recurses;
//   - samples: stack id, label set id and the values, one row per sample in
//     the profile's order;
//   - label sets: the distinct string labels of the samples;
//   - the metadata analysis needs (sample types, period, duration, the
//     exact-durations marker, the loaders' warnings).
//
// FromProfile builds an Index from a *profile.Profile; Reader builds the
// same Index straight from pprof's protobuf encoding, without the
// *profile.Profile, and is the fast path for Go profiles. Both produce equal
// Index values for any input profile.Parse accepts (tests and a fuzz target
// hold them to it).
//
// Reader is also the project's one decoder of pprof's protobuf encoding:
// the loaders check every pprof file with it (framing, the limit on a
// field, the memory budget of package membudget) before pprof's parser
// takes the bytes, and LooksLikeProfile is their detection of the format.
package index

import (
	"errors"
	"hash/maphash"
	"slices"
	"strings"
	"unsafe"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Func is a function as analysis identifies it.
type Func struct {
	Name, SystemName, File string
	StartLine              int64
}

// Label is one label key of a label set and its values in the order the
// sample lists them.
type Label struct {
	Key    string
	Values []string
}

// Index is a profile in dense integer tables. The fields are read-only
// once built.
type Index struct {
	Funcs []Func

	// Frames: FrameFunc[i], FrameLine[i], FrameCol[i] describe frame i.
	FrameFunc []int32
	FrameLine []int64
	FrameCol  []int64

	// LocFrames[l]:LocFrames[l+1] are the frames of location l, innermost first.
	LocFrames []int32

	// StackOff[s]:StackOff[s+1] index StackLocs, the locations of stack s,
	// leaf first; UniqOff[s]:UniqOff[s+1] index Uniq, the frames of stack s
	// with distinct functions, in leaf-first order of first occurrence.
	StackOff  []int32
	StackLocs []int32
	UniqOff   []int32
	Uniq      []int32

	// Sample i has stack SampleStack[i], label set SampleLabels[i] and
	// values Values[i*len(Types):(i+1)*len(Types)].
	SampleStack  []int32
	SampleLabels []int32
	Values       []int64
	// Short holds the samples (by index) with fewer values than Types, and
	// how many they have; their missing values read as 0. Only profiles
	// built in memory have them: a parsed profile fails CheckValid.
	Short map[int32]int32

	// LabelSets[0] is the empty set; every set is sorted by key.
	LabelSets [][]Label

	Types         []pbuild.ValueType
	DefaultType   string
	PeriodUnit    string // unit of the period type, "" when there is none
	Period        int64
	DurationNanos int64
	Comments      []string
	// Facts are the comments read once (meta.Read), set whenever Comments
	// is: the record, the exact mark, the warnings.
	Facts meta.Facts
}

// NumSamples is the number of samples.
func (x *Index) NumSamples() int { return len(x.SampleStack) }

// NumStacks is the number of distinct stacks.
func (x *Index) NumStacks() int { return len(x.StackOff) - 1 }

// Stack returns the location ids of stack s, leaf first. The slice must not be modified.
func (x *Index) Stack(s int32) []int32 { return x.StackLocs[x.StackOff[s]:x.StackOff[s+1]] }

// Frames returns the frame ids of location l, innermost first: lo up to, not including, hi.
func (x *Index) Frames(l int32) (lo, hi int32) { return x.LocFrames[l], x.LocFrames[l+1] }

// UniqFrames returns the frames of stack s whose functions are distinct,
// leaf first. The slice must not be modified.
func (x *Index) UniqFrames(s int32) []int32 { return x.Uniq[x.UniqOff[s]:x.UniqOff[s+1]] }

// SplitRuns is meta.Split for an index: one index per run, sharing x's
// functions, frames and stacks, each with the samples of its run and a
// record of its one run. An index without run labels is returned as it is,
// alone. x is not modified.
func (x *Index) SplitRuns() ([]*Index, error) {
	r, err := x.Facts.Record, x.Facts.RecordErr
	if err != nil {
		return nil, err
	}
	groups, err := r.GroupRuns(x.NumSamples(), func(i int) []string { return x.Label(int32(i), meta.LabelRun) })
	if err != nil || groups == nil {
		return []*Index{x}, err
	}
	out := make([]*Index, len(groups))
	for j, g := range groups {
		out[j] = x.Subset(g, r.RunComments(x.Comments, j), r.Run(j))
	}
	return out, nil
}

// SplitProcesses is meta.SplitProcesses for an index: one index per
// process of x's record (meta.Record.ProcessParts), sharing x's functions,
// frames and stacks, each with the samples of all the process's runs as
// one run labelled "1", "2", ... and the process's own sampling period. An
// index without a record of runs is returned as it is, alone. x is not
// modified.
func (x *Index) SplitProcesses() ([]*Index, error) {
	r, err := x.Facts.Record, x.Facts.RecordErr
	if err != nil {
		return nil, err
	}
	if !x.Facts.HasRecord || len(r.Runs) == 0 {
		return []*Index{x}, nil
	}
	parts, err := r.ProcessParts(x.Comments, x.Period, x.NumSamples(), func(i int) []string { return x.Label(int32(i), meta.LabelRun) })
	if err != nil {
		return nil, err
	}
	out := make([]*Index, len(parts))
	for k, part := range parts {
		y := x.Subset(part.Samples, part.Comments, part.Record)
		y.Period = part.Period
		y.relabel(meta.LabelRun, part.Label)
		out[k] = y
	}
	return out, nil
}

// relabel sets label key to the one value v on every sample of x, whose
// label sets it replaces by new ones appended to a copy of the list (the
// old ones, shared with the index x was cut from, stay as they are).
func (x *Index) relabel(key, v string) {
	sets := slices.Clip(x.LabelSets)
	if len(sets) == 0 {
		sets = [][]Label{nil} // set 0 is the empty set
	}
	to := map[int32]int32{}
	byKey := map[string]int32{}
	var buf []byte
	for k, id := range x.SampleLabels {
		if nid, ok := to[id]; ok {
			x.SampleLabels[k] = nid
			continue
		}
		ls := make([]Label, 0, len(sets[id])+1)
		added := false
		for _, l := range sets[id] {
			switch {
			case l.Key == key:
				continue
			case !added && l.Key > key:
				ls = append(ls, Label{Key: key, Values: []string{v}})
				added = true
			}
			ls = append(ls, l)
		}
		if !added {
			ls = append(ls, Label{Key: key, Values: []string{v}})
		}
		buf = appendLabelKey(buf[:0], ls)
		nid, ok := byKey[string(buf)]
		if !ok {
			nid = int32(len(sets))
			sets = append(sets, ls)
			byKey[string(buf)] = nid
		}
		to[id] = nid
		x.SampleLabels[k] = nid
	}
	x.LabelSets = sets
}

// errTooLarge guards the int32 ids.
var errTooLarge = errors.New("profile too large to index (more than 2^31 frames)")

const maxID = 1<<31 - 2

// builder holds what both constructors share: function, frame, stack and
// label-set interning.
type builder struct {
	x        *Index
	funcIDs  map[Func]int32
	slots    []int32 // stack table: stack id + 1, 0 when empty
	seed     maphash.Seed
	stamp    []int32 // stamp[f] == stack+1 while stack's uniq list is built
	labelIDs map[string]int32
	keyBuf   []byte
	err      error
}

func newBuilder(funcs, locs, samples int) *builder {
	x := &Index{
		Funcs:        make([]Func, 0, funcs),
		LocFrames:    make([]int32, 1, locs+1),
		StackOff:     make([]int32, 1, samples+1),
		UniqOff:      make([]int32, 1, samples+1),
		SampleStack:  make([]int32, 0, samples),
		SampleLabels: make([]int32, 0, samples),
		LabelSets:    [][]Label{nil},
	}
	b := &builder{
		x:        x,
		funcIDs:  make(map[Func]int32, funcs),
		seed:     maphash.MakeSeed(),
		labelIDs: map[string]int32{"": 0},
	}
	b.rehash(2 * samples)
	return b
}

// fn interns a function.
func (b *builder) fn(f Func) int32 {
	if id, ok := b.funcIDs[f]; ok {
		return id
	}
	id := int32(len(b.x.Funcs))
	b.x.Funcs = append(b.x.Funcs, f)
	b.funcIDs[f] = id
	return id
}

// frame appends a frame to the location being built.
func (b *builder) frame(f int32, line, col int64) {
	b.x.FrameFunc = append(b.x.FrameFunc, f)
	b.x.FrameLine = append(b.x.FrameLine, line)
	b.x.FrameCol = append(b.x.FrameCol, col)
}

// endLocation closes the location whose frames were just added.
func (b *builder) endLocation() int32 {
	x := b.x
	if len(x.FrameFunc) > maxID {
		b.err = errTooLarge
	}
	x.LocFrames = append(x.LocFrames, int32(len(x.FrameFunc)))
	return int32(len(x.LocFrames) - 2)
}

// reserve makes room for stacks of refs location references in all, and
// their distinct frames (estimated from the frames per location), so that
// the big arrays are allocated once: growing them by appending costs more
// than the work itself.
func (b *builder) reserve(refs int) {
	x := b.x
	x.StackLocs = slices.Grow(x.StackLocs, refs)
	perLoc := 1.0
	if n := len(x.LocFrames) - 1; n > 0 {
		perLoc = float64(len(x.FrameFunc)) / float64(n)
	}
	x.Uniq = slices.Grow(x.Uniq, int(float64(refs)*perLoc)+16)
}

// hashLocs hashes a location sequence.
func (b *builder) hashLocs(locs []int32) uint64 {
	if len(locs) == 0 {
		return 0
	}
	return maphash.Bytes(b.seed, unsafe.Slice((*byte)(unsafe.Pointer(&locs[0])), len(locs)*4))
}

// stack interns the location sequence already appended to StackLocs after
// StackOff's last entry, returning its id; a repeated sequence is removed
// again. Stacks are found through an open-addressing table of stack ids
// keyed by the hash of their locations, compared in StackLocs itself.
func (b *builder) stack() int32 {
	x := b.x
	start := x.StackOff[len(x.StackOff)-1]
	locs := x.StackLocs[start:]
	n := len(x.StackOff) - 1
	if 2*(n+1) > len(b.slots) {
		b.rehash(max(1024, 4*(n+1)))
	}
	mask := uint64(len(b.slots) - 1)
	h := b.hashLocs(locs)
	i := h & mask
	for ; b.slots[i] != 0; i = (i + 1) & mask {
		if id := b.slots[i] - 1; slices.Equal(x.StackLocs[x.StackOff[id]:x.StackOff[id+1]], locs) {
			x.StackLocs = x.StackLocs[:start]
			return id
		}
	}
	id := int32(n)
	b.slots[i] = id + 1
	if len(x.StackLocs) > maxID || len(x.Uniq) > maxID {
		b.err = errTooLarge
	}
	x.StackOff = append(x.StackOff, int32(len(x.StackLocs)))
	if len(b.stamp) < len(x.Funcs) {
		b.stamp = slices.Grow(b.stamp, len(x.Funcs)-len(b.stamp))[:len(x.Funcs)]
	}
	mark := id + 1
	for _, l := range locs {
		for fr := x.LocFrames[l]; fr < x.LocFrames[l+1]; fr++ {
			f := x.FrameFunc[fr]
			if b.stamp[f] != mark {
				b.stamp[f] = mark
				x.Uniq = append(x.Uniq, fr)
			}
		}
	}
	x.UniqOff = append(x.UniqOff, int32(len(x.Uniq)))
	return id
}

// rehash makes the stack table size slots (a power of two at least size).
func (b *builder) rehash(size int) {
	n := 1
	for n < size {
		n <<= 1
	}
	b.slots = make([]int32, n)
	mask := uint64(n - 1)
	x := b.x
	for id := 0; id < len(x.StackOff)-1; id++ {
		i := b.hashLocs(x.StackLocs[x.StackOff[id]:x.StackOff[id+1]]) & mask
		for b.slots[i] != 0 {
			i = (i + 1) & mask
		}
		b.slots[i] = int32(id + 1)
	}
}

// labelSet interns a label set given sorted by key.
func (b *builder) labelSet(ls []Label) int32 {
	if len(ls) == 0 {
		return 0
	}
	k := appendLabelKey(b.keyBuf[:0], ls)
	b.keyBuf = k
	if id, ok := b.labelIDs[string(k)]; ok {
		return id
	}
	id := int32(len(b.x.LabelSets))
	cp := make([]Label, len(ls))
	for i, l := range ls {
		cp[i] = Label{Key: l.Key, Values: slices.Clone(l.Values)}
	}
	b.x.LabelSets = append(b.x.LabelSets, cp)
	b.labelIDs[string(k)] = id
	return id
}

// appendLabelKey appends the key that tells label set ls from every other.
func appendLabelKey(b []byte, ls []Label) []byte {
	for _, l := range ls {
		b = appendStr(b, l.Key)
		b = appendUvarint(b, uint64(len(l.Values)))
		for _, v := range l.Values {
			b = appendStr(b, v)
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = appendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// FromProfile builds the index of p. p is not modified. Profiles that fail
// CheckValid are indexed as analysis reads them: a line without a function
// and a nil location name an unsymbolized frame, nil samples are skipped,
// and samples with too few values are recorded in Short.
func FromProfile(p *profile.Profile) (*Index, error) {
	return FromProfileFacts(p, meta.Read(p.Comments))
}

// FromProfileFacts is FromProfile for a caller that read p's facts
// already (f is meta.Read(p.Comments)): the index keeps f rather than
// reading the comments again.
func FromProfileFacts(p *profile.Profile, f meta.Facts) (*Index, error) {
	b := newBuilder(len(p.Function)+1, len(p.Location), len(p.Sample))
	x := b.x
	x.Types = make([]pbuild.ValueType, len(p.SampleType))
	for i, st := range p.SampleType {
		if st != nil {
			x.Types[i] = pbuild.ValueType{Type: st.Type, Unit: st.Unit}
		}
	}
	x.DefaultType = p.DefaultSampleType
	if p.PeriodType != nil {
		x.PeriodUnit = p.PeriodType.Unit
	}
	x.Period = p.Period
	x.DurationNanos = p.DurationNanos
	x.Comments = slices.Clone(p.Comments)
	x.Facts = f

	// Locations by ID when the IDs are compact (every writer's are), by
	// pointer otherwise; the pointer check keeps duplicate or foreign IDs
	// of unvalidated profiles apart.
	var dense []int32 // ID -> index into p.Location + 1
	maxLocID := uint64(0)
	for _, l := range p.Location {
		if l != nil {
			maxLocID = max(maxLocID, l.ID)
		}
	}
	if maxLocID <= uint64(4*len(p.Location)+1024) {
		dense = make([]int32, maxLocID+1)
	}
	locIdx := make([]int32, len(p.Location)) // index into p.Location -> location id
	locID := make(map[*profile.Location]int32)
	find := func(l *profile.Location) (int32, bool) {
		if l != nil && l.ID < uint64(len(dense)) {
			if i := dense[l.ID]; i != 0 && p.Location[i-1] == l {
				return locIdx[i-1], true
			}
		}
		id, ok := locID[l]
		return id, ok
	}
	addLoc := func(l *profile.Location) int32 {
		if l == nil || len(l.Line) == 0 {
			b.frame(b.fn(Func{Name: pbuild.UnsymbolizedName(l)}), 0, 0)
			return b.endLocation()
		}
		for _, ln := range l.Line {
			var f Func
			if fn := ln.Function; fn != nil {
				f = Func{SystemName: fn.SystemName, File: fn.Filename, StartLine: fn.StartLine}
			}
			f.Name = pbuild.LineName(l, ln)
			b.frame(b.fn(f), ln.Line, ln.Column)
		}
		return b.endLocation()
	}
	for i, l := range p.Location {
		if id, ok := find(l); ok {
			locIdx[i] = id // the same pointer twice
			continue
		}
		locIdx[i] = addLoc(l)
		if l != nil && l.ID < uint64(len(dense)) && dense[l.ID] == 0 {
			dense[l.ID] = int32(i + 1)
		} else {
			locID[l] = locIdx[i]
		}
	}

	stride := len(x.Types)
	x.Values = make([]int64, 0, len(p.Sample)*stride)
	refs := 0
	for _, s := range p.Sample {
		if s != nil {
			refs += len(s.Location)
		}
	}
	b.reserve(refs)
	var ls []Label
	for _, s := range p.Sample {
		if s == nil {
			continue
		}
		for _, l := range s.Location {
			id, ok := find(l)
			if !ok {
				id = addLoc(l)
				locID[l] = id
			}
			x.StackLocs = append(x.StackLocs, id)
		}
		si := int32(len(x.SampleStack))
		x.SampleStack = append(x.SampleStack, b.stack())
		ls = ls[:0]
		for k, vs := range s.Label {
			if len(vs) > 0 {
				ls = append(ls, Label{Key: k, Values: vs})
			}
		}
		slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
		x.SampleLabels = append(x.SampleLabels, b.labelSet(ls))
		n := min(len(s.Value), stride)
		x.Values = append(x.Values, s.Value[:n]...)
		if n < stride {
			if x.Short == nil {
				x.Short = make(map[int32]int32)
			}
			x.Short[si] = int32(n)
			for ; n < stride; n++ {
				x.Values = append(x.Values, 0)
			}
		}
		if b.err != nil {
			return nil, b.err
		}
	}
	return x, b.err
}

// Label returns the values of label key on sample i.
func (x *Index) Label(i int32, key string) []string {
	return lookup(x.LabelSets[x.SampleLabels[i]], key)
}

// Subset returns an index of the given samples of x (by index, in that
// order) with the given comments, which are x's with rec as their record
// (meta.Record.RunComments, meta.ProcessPart), sharing x's functions, frames, stacks and
// label sets, which are read-only, and without a duration. Its tables
// equal those of the index of a profile holding only those samples, except
// that stacks no sample uses may be listed: code that walks stacks rather than samples must skip them
// (UsedStacks).
func (x *Index) Subset(samples []int32, comments []string, rec meta.Record) *Index {
	y := *x
	stride := len(x.Types)
	y.SampleStack = make([]int32, len(samples))
	y.SampleLabels = make([]int32, len(samples))
	y.Values = make([]int64, 0, len(samples)*stride)
	y.Short = nil
	for k, i := range samples {
		y.SampleStack[k] = x.SampleStack[i]
		y.SampleLabels[k] = x.SampleLabels[i]
		y.Values = append(y.Values, x.Values[int(i)*stride:int(i+1)*stride]...)
		if n, ok := x.Short[i]; ok {
			if y.Short == nil {
				y.Short = make(map[int32]int32)
			}
			y.Short[int32(k)] = n
		}
	}
	// The comments differ from x's by their record alone: x's other facts
	// hold, and the record is rec, not read again from its JSON.
	y.Comments = comments
	y.Facts.Record, y.Facts.HasRecord, y.Facts.RecordErr = rec, true, nil
	y.DurationNanos = 0 // the span of a part is unknown
	return &y
}

// UsedStacks reports, per stack, whether a sample has it.
func (x *Index) UsedStacks() []bool {
	used := make([]bool, x.NumStacks())
	for _, st := range x.SampleStack {
		used[st] = true
	}
	return used
}
