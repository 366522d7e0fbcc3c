package speedscope

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// unitNanos returns how many nanoseconds one value of unit stands for.
func unitNanos(unit string) (float64, error) {
	switch unit {
	case "nanoseconds":
		return 1, nil
	case "microseconds":
		return 1e3, nil
	case "milliseconds":
		return 1e6, nil
	case "seconds":
		return 1e9, nil
	case "none":
		return float64(NoneUnitNanos), nil
	case "bytes":
		return 0, errors.New(`unit "bytes" is a memory profile; only time units are supported`)
	}
	return 0, fmt.Errorf("unknown unit %q (want none, nanoseconds, microseconds, milliseconds or seconds)", unit)
}

func toNanos(v, factor float64) (int64, bool) {
	x := math.Round(v * factor)
	if math.IsNaN(x) || x > maxNanos || x < -maxNanos {
		return 0, false
	}
	return int64(x), true
}

// builder holds what build needs while adding profiles.
type builder struct {
	f      *file
	b      *pbuild.Builder
	locs   []*profile.Location
	stack  []*profile.Location // leaf first, reused
	total  int64
	start  int64
	end    int64
	spans  bool
	frames int64   // stack frames added from evented profiles
	weight []int64 // positive sample weights, for Period
}

func (f *file) build(m *membudget.Meter) (*profile.Profile, error) {
	if f.hasSchema && f.schema != Schema {
		return nil, fmt.Errorf("\"$schema\" is %q, want %q", truncate(f.schema, 100), Schema)
	}
	if !f.hasProfs {
		return nil, errors.New(`no "profiles"`)
	}
	if len(f.profiles) == 0 {
		return nil, errors.New(`"profiles" is empty`)
	}
	active := -1
	if f.hasActive {
		if f.active >= 0 && f.active < float64(len(f.profiles)) && f.active == math.Trunc(f.active) {
			active = int(f.active)
		} else {
			f.warnings = append(f.warnings, fmt.Sprintf("activeProfileIndex %g is not an index of the %d profiles; ignored", f.active, len(f.profiles)))
		}
	}
	chosen := f.profiles[0]
	if active >= 0 {
		chosen = f.profiles[active]
	}
	var kind pbuild.Kind
	switch chosen.typ {
	case typeEvented:
		kind = pbuild.Exact
	case typeSampled:
		kind = pbuild.Sampled
	default:
		return nil, profileError(chosen, fmt.Errorf("type %q, want %q or %q", chosen.typ, typeEvented, typeSampled))
	}
	bd := &builder{f: f, b: pbuild.New(kind), locs: make([]*profile.Location, len(f.frames))}
	bd.b.SetMeter(m)
	if !f.hasSchema {
		bd.b.Warnf(`no "$schema": read as speedscope because of its keys`)
	}
	for _, w := range f.warnings {
		bd.b.Warnf("%s", w)
	}
	if active >= 0 {
		pr := bd.b.Profile()
		pr.Comments = append(pr.Comments, fmt.Sprintf("speedscope activeProfileIndex: %d (%s)", active, profileName(chosen)))
	}
	for _, p := range f.profiles {
		var err error
		switch p.typ {
		case typeEvented:
			err = bd.evented(p, kind == pbuild.Exact)
		case typeSampled:
			err = bd.sampled(p, kind == pbuild.Sampled)
		default:
			err = fmt.Errorf("type %q, want %q or %q", p.typ, typeEvented, typeSampled)
		}
		if err != nil {
			return nil, profileError(p, err)
		}
		if p.typ != chosen.typ {
			bd.b.Warnf("profile %d (%s) is %s but profile %d is %s: skipped, exact and sampled data are not mixed",
				p.index, profileName(p), p.typ, chosen.index, chosen.typ)
		}
	}
	var period int64
	if kind == pbuild.Sampled {
		period = pbuild.Median(bd.weight)
	}
	var dur int64
	if bd.spans {
		dur = bd.end - bd.start
	}
	return bd.b.Finish("speedscope", period, dur)
}

func profileName(p *rawProfile) string {
	if p.name == "" {
		return "profile " + strconv.Itoa(p.index)
	}
	return p.name
}

func profileError(p *rawProfile, err error) error {
	if p.name == "" {
		return fmt.Errorf("profile %d: %w", p.index, err)
	}
	return fmt.Errorf("profile %d (%q): %w", p.index, truncate(p.name, 100), err)
}

func (bd *builder) factor(p *rawProfile) (float64, error) {
	if !p.hasUnit {
		return 0, errors.New(`no "unit"`)
	}
	fac, err := unitNanos(p.unit)
	if err != nil {
		return 0, err
	}
	if p.unit == "none" {
		bd.b.Warnf("unit \"none\": each unit taken as %s", timeString(NoneUnitNanos))
	}
	return fac, nil
}

func timeString(ns int64) string {
	return fmt.Sprint(float64(ns)/1e6) + "ms"
}

func (bd *builder) loc(i int32) *profile.Location {
	if l := bd.locs[i]; l != nil {
		return l
	}
	fr := bd.f.frames[i]
	// A frame is a function: (name, file, line, col) tell functions apart,
	// as speedscope keeps every frame apart. The line goes to StartLine and
	// the column to SystemName so that pbuild keys functions by all four.
	sys := fr.name
	if fr.col != 0 {
		sys = fr.name + ":" + strconv.FormatInt(fr.line, 10) + ":" + strconv.FormatInt(fr.col, 10)
	}
	l := bd.b.Location(pbuild.Frame{Name: fr.name, SystemName: sys, File: fr.file, StartLine: fr.line, Line: fr.line, Column: fr.col})
	bd.locs[i] = l
	return l
}

func (bd *builder) frameName(i int32) string {
	return fmt.Sprintf("%d (%q)", i, truncate(bd.f.frames[i].name, 100))
}

// addTime adds ns to the running total, failing on overflow.
func (bd *builder) addTime(ns int64) error {
	if ns > math.MaxInt64-bd.total {
		return errors.New("total time overflows int64 nanoseconds")
	}
	bd.total += ns
	return nil
}

// span extends the covered time by [start, end] in nanoseconds.
func (bd *builder) span(start, end int64) {
	if !bd.spans {
		bd.start, bd.end, bd.spans = start, end, true
		return
	}
	bd.start = min(bd.start, start)
	bd.end = max(bd.end, end)
}

// declared returns the profile's [startValue, endValue] in nanoseconds if usable.
func declared(p *rawProfile, fac float64) (int64, int64, bool) {
	if !p.hasStart || !p.hasEnd {
		return 0, 0, false
	}
	s, ok1 := toNanos(p.start, fac)
	e, ok2 := toNanos(p.end, fac)
	if !ok1 || !ok2 || e <= s {
		return 0, 0, false
	}
	return s, e, true
}

// evented checks an evented profile and, if add, adds its time.
func (bd *builder) evented(p *rawProfile, add bool) error {
	if len(p.ends) > 0 || len(p.weights) > 0 {
		return errors.New(`an evented profile has "samples" or "weights"`)
	}
	fac, err := bd.factor(p)
	if err != nil {
		return err
	}
	labels := pbuild.NewLabels(pbuild.LabelProfile, profileName(p), pbuild.LabelThread, profileName(p))
	// Time and closed-frame counts are summed in a call tree, O(1) per
	// event whatever the depth; the tree's nodes become samples at the end.
	t := newCallTree()
	cur := int32(0)  // current node; 0 is the root
	var open []int32 // frame indexes, root first
	var opened []int // event index that opened each open frame
	var prevAt float64
	var prevNs int64
	for i, ev := range p.events {
		if int(ev.frame) >= len(bd.f.frames) {
			return fmt.Errorf("event %d: frame index %d out of range (%d frames)", i, ev.frame, len(bd.f.frames))
		}
		ns, ok := toNanos(ev.at, fac)
		if !ok {
			return fmt.Errorf("event %d: at %g is out of range", i, ev.at)
		}
		if i > 0 && ev.at < prevAt {
			return fmt.Errorf("event %d: at %g is before the previous event's at %g (events must be in time order)", i, ev.at, prevAt)
		}
		dt := int64(0)
		if i > 0 {
			dt = ns - prevNs
		}
		prevAt, prevNs = ev.at, ns
		if cur != 0 && dt > 0 {
			if err := bd.addTime(dt); err != nil {
				return err
			}
			t.nodes[cur].ns += dt
		}
		if ev.open {
			cur = t.child(cur, ev.frame)
			open = append(open, ev.frame)
			opened = append(opened, i)
			continue
		}
		if len(open) == 0 {
			return fmt.Errorf("event %d: closes frame %s but no frame is open", i, bd.frameName(ev.frame))
		}
		if top := open[len(open)-1]; top != ev.frame {
			return fmt.Errorf("event %d: closes frame %s but the innermost open frame is %s, opened at event %d (events must be properly nested)",
				i, bd.frameName(ev.frame), bd.frameName(top), opened[len(opened)-1])
		}
		t.nodes[cur].count++
		cur = t.nodes[cur].parent
		open = open[:len(open)-1]
		opened = opened[:len(opened)-1]
	}
	if len(open) > 0 {
		return fmt.Errorf("frame %s opened at event %d is never closed (%d frames left open)",
			bd.frameName(open[len(open)-1]), opened[len(opened)-1], len(open))
	}
	if !add {
		return nil
	}
	if err := bd.addTree(t, labels); err != nil {
		return err
	}
	if s, e, ok := declared(p, fac); ok {
		bd.span(s, e)
	} else if len(p.events) > 0 {
		s, _ := toNanos(p.events[0].at, fac)
		e, _ := toNanos(p.events[len(p.events)-1].at, fac)
		bd.span(s, e)
	}
	return nil
}

// callTree sums an evented profile by call path.
type callTree struct {
	nodes    []treeNode
	children map[uint64]int32 // parent<<32 | frame → node
}

type treeNode struct {
	parent, frame, depth int32
	count, ns            int64
}

func newCallTree() *callTree {
	return &callTree{nodes: []treeNode{{frame: -1}}, children: make(map[uint64]int32)}
}

// child returns the node for frame under parent, creating it.
func (t *callTree) child(parent, frame int32) int32 {
	k := uint64(parent)<<32 | uint64(uint32(frame))
	if c, ok := t.children[k]; ok {
		return c
	}
	c := int32(len(t.nodes))
	t.nodes = append(t.nodes, treeNode{parent: parent, frame: frame, depth: t.nodes[parent].depth + 1})
	t.children[k] = c
	return c
}

// addTree adds one sample per call path that has time or closed frames.
// The frames all samples hold are bounded by MaxStackFrames, checked first.
func (bd *builder) addTree(t *callTree, labels pbuild.Labels) error {
	var frames int64
	for _, n := range t.nodes[1:] {
		if n.count > 0 || n.ns > 0 {
			frames += int64(n.depth)
		}
	}
	if bd.frames += frames; bd.frames > maxStackFrames {
		return fmt.Errorf("the stacks of its %d call paths hold %d frames, more than the limit of %d", len(t.nodes)-1, bd.frames, maxStackFrames)
	}
	for i := range t.nodes[1:] {
		n := &t.nodes[i+1]
		if n.count == 0 && n.ns == 0 {
			continue
		}
		st := bd.stack[:0]
		for x := int32(i + 1); x != 0; x = t.nodes[x].parent {
			st = append(st, bd.loc(t.nodes[x].frame))
		}
		bd.stack = st
		bd.b.Add(st, n.count, n.ns, labels)
	}
	return nil
}

// addStack adds a root-first stack of frame indexes.
func (bd *builder) addStack(rootFirst []int32, count, ns int64, labels pbuild.Labels) error {
	if err := bd.addTime(ns); err != nil {
		return err
	}
	st := bd.stack[:0]
	for i := len(rootFirst) - 1; i >= 0; i-- {
		st = append(st, bd.loc(rootFirst[i]))
	}
	bd.stack = st
	bd.b.Add(st, count, ns, labels)
	return nil
}

// sampled checks a sampled profile and, if add, adds its samples.
func (bd *builder) sampled(p *rawProfile, add bool) error {
	if len(p.events) > 0 {
		return errors.New(`a sampled profile has "events"`)
	}
	if len(p.ends) != len(p.weights) {
		return fmt.Errorf("%d samples but %d weights (want the same number)", len(p.ends), len(p.weights))
	}
	fac, err := bd.factor(p)
	if err != nil {
		return err
	}
	labels := pbuild.NewLabels(pbuild.LabelProfile, profileName(p), pbuild.LabelThread, profileName(p))
	var sum int64
	begin := 0
	for i, end := range p.ends {
		stack := p.stacks[begin:end]
		begin = end
		for _, fi := range stack {
			if int(fi) >= len(bd.f.frames) {
				return fmt.Errorf("sample %d: frame index %d out of range (%d frames)", i, fi, len(bd.f.frames))
			}
		}
		w := p.weights[i]
		if w < 0 {
			return fmt.Errorf("sample %d: negative weight %g", i, w)
		}
		ns, ok := toNanos(w, fac)
		if !ok {
			return fmt.Errorf("sample %d: weight %g is out of range", i, w)
		}
		if !add {
			continue
		}
		if err := bd.addStack(stack, 1, ns, labels); err != nil {
			return err
		}
		sum += ns
		if ns > 0 {
			bd.weight = append(bd.weight, ns)
		}
	}
	if !add {
		return nil
	}
	if s, e, ok := declared(p, fac); ok {
		bd.span(s, e)
	} else if len(p.ends) > 0 {
		s, _ := toNanos(p.start, fac)
		if s > maxNanos-sum {
			s = 0
		}
		bd.span(s, s+sum)
	}
	return nil
}
