package v8

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/nearsort"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Names of V8's synthetic frames.
const (
	RootName      = "(root)"
	AnonymousName = "(anonymous)"
)

// Build adds the samples of p to b and reports the span they cover.
//
// The call tree is built from Children and Parent both, once all nodes are
// known; duplicate links are ignored. Where a node's Parent disagrees with the
// node whose Children list it, Children wins (as in Chrome DevTools) and a
// warning is recorded. The root is the one node without a parent; none (a
// cycle), two, a node listed as a child of two nodes, an unknown child or
// parent id and duplicate node ids are errors.
//
// Sample i happens at StartTime+sum(TimeDeltas[:i+1]) µs (or Timestamps[i]
// for the legacy layout). Samples are stably sorted by time, as DevTools does
// when deltas are negative. A sample lasts until the next one; the last lasts
// the average interval (or until Timestamps[len(Samples)] when given). Each
// sample adds the value [1, duration in ns] to the stack of its node, leaf
// first, without the (root) node; a sample of the root itself gets a single
// (root) frame so that self times add up to the total. Samples naming an
// unknown node are dropped with a warning. hitCount is only used when there
// are no samples at all: each node then gets hitCount samples of the average
// interval (endTime-startTime)/sum(hitCount), with a warning.
//
// Build does not modify p. labels is attached to every sample (nil for none).
func Build(b *pbuild.Builder, p *Profile, labels pbuild.Labels) (Span, error) {
	t, err := newTree(b, p)
	if err != nil {
		return Span{}, err
	}
	if len(p.Samples) == 0 {
		return t.addHitCounts(labels)
	}
	return t.addSamples(labels)
}

// BuildPerNode adds samples already summed per node: count[i] samples
// lasting nanos[i] in all on the stack of nodes[i], one merged sample a
// node, for callers that stream samples too many to hand over one by one.
// The tree is built and checked as Build does; count and nanos have one
// entry per node.
func BuildPerNode(b *pbuild.Builder, nodes []Node, count, nanos []int64, labels pbuild.Labels) error {
	if len(count) != len(nodes) || len(nanos) != len(nodes) {
		return fmt.Errorf("BuildPerNode: %d nodes but %d counts and %d times", len(nodes), len(count), len(nanos))
	}
	t, err := newTree(b, &Profile{Nodes: nodes})
	if err != nil {
		return err
	}
	t.addPerNode(count, nanos, labels)
	return nil
}

// tree is the call tree of a profile, by node index.
type tree struct {
	b      *pbuild.Builder
	p      *Profile
	index  map[int64]int32 // node id → index in p.Nodes
	parent []int32         // -1 for the root
	root   int32
	locs   []*profile.Location // per node, created on first use
	stack  []*profile.Location // scratch
}

func newTree(b *pbuild.Builder, p *Profile) (*tree, error) {
	n := len(p.Nodes)
	if n > math.MaxInt32-1 {
		return nil, fmt.Errorf("too many nodes (%d)", n)
	}
	t := &tree{b: b, p: p, index: make(map[int64]int32, n), parent: make([]int32, n), root: -1}
	for i := range p.Nodes {
		id := p.Nodes[i].ID
		if j, dup := t.index[id]; dup {
			return nil, fmt.Errorf("duplicate node id %d (nodes[%d] and nodes[%d])", id, j, i)
		}
		t.index[id] = int32(i)
		t.parent[i] = -1
	}
	if n == 0 {
		return t, nil
	}
	// Links from children lists first: they are what DevTools follows.
	fromChildren := make([]bool, n)
	for i := range p.Nodes {
		nd := &p.Nodes[i]
		for _, c := range nd.Children {
			j, ok := t.index[c]
			if !ok {
				return nil, fmt.Errorf("node %d lists unknown child %d", nd.ID, c)
			}
			switch pj := t.parent[j]; {
			case pj == int32(i):
				// duplicate link
			case pj >= 0:
				return nil, fmt.Errorf("node %d is a child of both node %d and node %d", c, p.Nodes[pj].ID, nd.ID)
			case j == int32(i):
				return nil, fmt.Errorf("cycle: node %d is its own child", c)
			default:
				t.parent[j] = int32(i)
				fromChildren[j] = true
			}
		}
	}
	for i := range p.Nodes {
		nd := &p.Nodes[i]
		if !nd.HasParent {
			continue
		}
		j, ok := t.index[nd.Parent]
		if !ok {
			return nil, fmt.Errorf("node %d has unknown parent %d", nd.ID, nd.Parent)
		}
		switch pi := t.parent[i]; {
		case pi == j:
		case fromChildren[i]:
			b.Warnf("node %d: parent %d disagrees with node %d that lists it as a child; following children as DevTools does", nd.ID, nd.Parent, p.Nodes[pi].ID)
		case j == int32(i):
			return nil, fmt.Errorf("cycle: node %d is its own parent", nd.ID)
		default:
			t.parent[i] = j
		}
	}
	for i, pi := range t.parent {
		if pi >= 0 {
			continue
		}
		if t.root >= 0 {
			return nil, fmt.Errorf("two roots: nodes %d and %d have no parent", p.Nodes[t.root].ID, p.Nodes[i].ID)
		}
		t.root = int32(i)
	}
	if t.root < 0 {
		return nil, fmt.Errorf("no root: every one of the %d nodes has a parent, so the links form a cycle", n)
	}
	// With one root and one parent per node, the links form a tree unless
	// some nodes are on a cycle, unreachable from the root. Walk up from
	// every node, iteratively, marking nodes known to reach the root.
	const (
		unseen = iota
		onPath
		reaches
	)
	state := make([]uint8, n)
	state[t.root] = reaches
	path := make([]int32, 0, 64)
	for i := range state {
		j := int32(i)
		path = path[:0]
		for state[j] == unseen {
			state[j] = onPath
			path = append(path, j)
			j = t.parent[j]
		}
		if state[j] == onPath {
			return nil, fmt.Errorf("cycle: node %d is its own ancestor", p.Nodes[j].ID)
		}
		for _, k := range path {
			state[k] = reaches
		}
	}
	t.locs = make([]*profile.Location, n)
	return t, nil
}

// denseIndex returns a node lookup by id that avoids the map when ids are
// small integers close together, as V8 writes them.
func (t *tree) denseIndex() func(int64) (int32, bool) {
	mapped := func(id int64) (int32, bool) {
		j, ok := t.index[id]
		return j, ok
	}
	n := len(t.p.Nodes)
	if n == 0 {
		return mapped
	}
	lo, hi := t.p.Nodes[0].ID, t.p.Nodes[0].ID
	for i := range t.p.Nodes {
		lo, hi = min(lo, t.p.Nodes[i].ID), max(hi, t.p.Nodes[i].ID)
	}
	if hi-lo < 0 || hi-lo >= int64(4*n+64) {
		return mapped
	}
	dense := make([]int32, hi-lo+1)
	for i := range dense {
		dense[i] = -1
	}
	for i := range t.p.Nodes {
		dense[t.p.Nodes[i].ID-lo] = int32(i)
	}
	return func(id int64) (int32, bool) {
		if id < lo || id > hi {
			return -1, false
		}
		j := dense[id-lo]
		return j, j >= 0
	}
}

// location returns the location of node i.
func (t *tree) location(i int32) *profile.Location {
	if l := t.locs[i]; l != nil {
		return l
	}
	l := t.b.Location(FrameOf(t.p.Nodes[i].CallFrame))
	t.locs[i] = l
	return l
}

// dropsRoot reports whether the root is V8's synthetic (root) node, left out of stacks.
func (t *tree) dropsRoot() bool {
	return t.p.Nodes[t.root].CallFrame.FunctionName == RootName
}

// stackOf returns the leaf-first stack of node i in a scratch slice that the
// next call reuses (Builder.Add copies it).
func (t *tree) stackOf(i int32) []*profile.Location {
	s := t.stack[:0]
	if t.b.Err() != nil {
		// Over the memory budget: Add adds nothing and Finish fails;
		// walking deep stacks would only take time.
		return append(s, t.location(i))
	}
	drop := t.dropsRoot()
	for j := i; j >= 0; j = t.parent[j] {
		if j == t.root && drop {
			break
		}
		s = append(s, t.location(j))
	}
	if len(s) == 0 { // a sample of the (root) node itself
		s = append(s, t.b.Location(pbuild.Frame{Name: RootName}))
	}
	t.stack = s
	return s
}

// addPerNode adds, for every node with count > 0, one merged sample.
func (t *tree) addPerNode(count, nanos []int64, labels pbuild.Labels) {
	for i, c := range count {
		if c == 0 {
			continue
		}
		t.b.Add(t.stackOf(int32(i)), c, nanos[i], labels)
	}
}

func (t *tree) addHitCounts(labels pbuild.Labels) (Span, error) {
	p := t.p
	span := Span{Start: p.StartTime, End: p.EndTime}
	var hits int64
	for i := range p.Nodes {
		h := p.Nodes[i].HitCount
		if h < 0 {
			return Span{}, fmt.Errorf("node %d has negative hitCount %d", p.Nodes[i].ID, h)
		}
		if hits > math.MaxInt64-h {
			return Span{}, fmt.Errorf("hitCount total overflows at node %d", p.Nodes[i].ID)
		}
		hits += h
	}
	if hits == 0 {
		if len(p.Timestamps) > 0 {
			return Span{}, fmt.Errorf("%d timestamps but no samples", len(p.Timestamps))
		}
		if len(p.TimeDeltas) > 0 {
			return Span{}, fmt.Errorf("samples and timeDeltas have different lengths (0 and %d)", len(p.TimeDeltas))
		}
		if d, ok := subNoOverflow(p.EndTime, p.StartTime); ok && d > 0 && d <= maxSpan {
			span.Nanos = d * 1000
		}
		return span, nil
	}
	if len(p.TimeDeltas) > 0 {
		return Span{}, fmt.Errorf("samples and timeDeltas have different lengths (0 and %d)", len(p.TimeDeltas))
	}
	var interval int64 // ns
	if d, ok := subNoOverflow(p.EndTime, p.StartTime); ok && d > 0 && d <= maxSpan {
		interval = d * 1000 / hits
	}
	t.b.Warnf("no samples: using hitCount (%d in all) × the average interval %dns from startTime to endTime", hits, interval)
	count := make([]int64, len(p.Nodes))
	nanos := make([]int64, len(p.Nodes))
	for i := range p.Nodes {
		count[i] = p.Nodes[i].HitCount
		nanos[i] = count[i] * interval
	}
	t.addPerNode(count, nanos, labels)
	span.Samples = int(min(hits, math.MaxInt))
	span.Nanos = interval * hits
	span.Period = interval
	return span, nil
}

type timedSample struct {
	t    int64 // µs
	node int32 // index, -1 when unknown
	idx  int32 // position in the file
}

func (t *tree) addSamples(labels pbuild.Labels) (Span, error) {
	p := t.p
	n := len(p.Samples)
	if n >= math.MaxInt32 {
		return Span{}, fmt.Errorf("too many samples (%d)", n)
	}
	ts := make([]timedSample, n)
	lastEnd, hasLastEnd := int64(0), false
	switch {
	case p.TimeDeltas != nil || p.Timestamps == nil:
		if len(p.TimeDeltas) != n {
			return Span{}, fmt.Errorf("samples and timeDeltas have different lengths (%d and %d)", n, len(p.TimeDeltas))
		}
		now := p.StartTime
		for i, d := range p.TimeDeltas {
			var ok bool
			if now, ok = addNoOverflow(now, d); !ok {
				return Span{}, fmt.Errorf("sample %d: time overflows (timeDelta %d)", i, d)
			}
			ts[i].t = now
		}
	default:
		switch len(p.Timestamps) {
		case n:
		case n + 1:
			lastEnd, hasLastEnd = p.Timestamps[n], true
		default:
			return Span{}, fmt.Errorf("samples and timestamps have different lengths (%d and %d)", n, len(p.Timestamps))
		}
		for i := range ts {
			ts[i].t = p.Timestamps[i]
		}
	}
	unknown := 0
	lookup := t.denseIndex()
	for i, id := range p.Samples {
		j, ok := lookup(id)
		if !ok {
			j = -1
			if unknown == 0 {
				t.b.Warnf("sample %d names unknown node %d: dropped", i, id)
			}
			unknown++
		}
		ts[i].node = j
		ts[i].idx = int32(i)
	}
	if unknown > 1 {
		t.b.Warnf("%d samples name unknown nodes: dropped", unknown)
	}
	sorted := true
	for i := 1; i < n; i++ {
		if ts[i].t < ts[i-1].t {
			sorted = false
			break
		}
	}
	if !sorted {
		sortByTime(ts)
		t.b.Warnf("sample times go backwards (negative timeDeltas): samples sorted by time, as DevTools does")
	}
	first, last := ts[0].t, ts[n-1].t
	if _, ok := subNoOverflow(last, first); !ok || last-first > maxSpan {
		return Span{}, fmt.Errorf("samples span too long a time (%d µs to %d µs)", first, last)
	}
	var lastDur int64 // ns
	switch {
	case hasLastEnd && lastEnd >= last:
		if _, ok := subNoOverflow(lastEnd, first); !ok || lastEnd-first > maxSpan {
			return Span{}, fmt.Errorf("last timestamp %d µs is too far after the first sample", lastEnd)
		}
		lastDur = (lastEnd - last) * 1000
	case n > 1:
		lastDur = (last - first) * 1000 / int64(n-1)
	case p.EndTime > last:
		if d, ok := subNoOverflow(p.EndTime, last); ok && d <= maxSpan {
			lastDur = d * 1000
		}
	default:
		t.b.Warnf("a single sample and no endTime after it: its duration is unknown (0)")
	}
	count := make([]int64, len(p.Nodes)+1) // last slot: the dropped samples
	nanos := make([]int64, len(p.Nodes)+1)
	var med median
	for i := range ts {
		d := lastDur
		if i+1 < n {
			d = (ts[i+1].t - ts[i].t) * 1000
			med.add(d)
		}
		k := ts[i].node
		if k < 0 {
			k = int32(len(p.Nodes))
		}
		count[k]++
		nanos[k] += d
	}
	t.addPerNode(count[:len(p.Nodes)], nanos[:len(p.Nodes)], labels)
	end, ok := addNoOverflow(last, lastDur/1000)
	if !ok {
		return Span{}, fmt.Errorf("sample times overflow (last sample at %d µs)", last)
	}
	span := Span{Start: first, End: end, Samples: n - unknown, Nanos: (last-first)*1000 + lastDur}
	span.Period = med.value()
	return span, nil
}

// sortByTime sorts samples by time, equal times in file order: by
// insertion while they are nearly in order (the usual case), else fully,
// idx breaking ties.
func sortByTime(ts []timedSample) {
	if nearsort.Insertion(len(ts), func(i, j int) bool { return ts[i].t < ts[j].t }, func(i, j int) { ts[i], ts[j] = ts[j], ts[i] }) {
		return
	}
	slices.SortFunc(ts, func(a, b timedSample) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
}

func addNoOverflow(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return c, false
	}
	return c, true
}

func subNoOverflow(a, b int64) (int64, bool) {
	if b == math.MinInt64 {
		return 0, false
	}
	return addNoOverflow(a, -b)
}

// FrameOf returns the frame Build uses for a call frame: the name (or
// (anonymous)), the url as the file, 1-based line and column (0 when
// unknown), and a system name that holds the full identity
// (name, scriptId, url, line, column) so that functions that share a name
// stay apart.
func FrameOf(cf CallFrame) pbuild.Frame {
	name := cf.FunctionName
	if name == "" {
		name = AnonymousName
	}
	line, col := oneBased(cf.LineNumber), oneBased(cf.ColumnNumber)
	f := pbuild.Frame{Name: name, File: cf.URL, StartLine: line, Line: line, Column: col}
	if (cf.ScriptID == "" || cf.ScriptID == "0") && cf.URL == "" && line == 0 && col == 0 {
		f.SystemName = name
		return f
	}
	buf := make([]byte, 0, len(name)+len(cf.ScriptID)+len(cf.URL)+24)
	buf = append(buf, name...)
	buf = append(buf, ' ')
	buf = append(buf, cf.ScriptID...)
	buf = append(buf, ' ')
	buf = append(buf, cf.URL...)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, line, 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, col, 10)
	f.SystemName = string(buf)
	return f
}

// oneBased turns a 0-based V8 line or column into pprof's 1-based form, 0 when unknown.
func oneBased(v int64) int64 {
	if v < 0 || v == math.MaxInt64 {
		return 0
	}
	return v + 1
}

// maxSpan bounds a profile's span in µs so that nanosecond sums cannot overflow.
const maxSpan = math.MaxInt64 / 4000

// median finds the (upper) median of the positive values added, as
// pbuild.MedianDelta does, counting distinct values: sampling intervals take
// few distinct values, so this is much cheaper than sorting millions.
type median struct {
	small  []int // counts of whole-µs values below medianSmall µs
	counts map[int64]int
	n      int
}

const medianSmall = 1 << 16 // values (in µs) counted in a slice

func (m *median) add(v int64) {
	if v <= 0 {
		return
	}
	m.n++
	if v%1000 == 0 && v/1000 < medianSmall {
		if m.small == nil {
			m.small = make([]int, medianSmall)
		}
		m.small[v/1000]++
		return
	}
	if m.counts == nil {
		m.counts = make(map[int64]int)
	}
	m.counts[v]++
}

func (m *median) value() int64 {
	if m.n == 0 {
		return 0
	}
	counts := m.counts
	if counts == nil {
		counts = make(map[int64]int)
	}
	for us, c := range m.small {
		if c > 0 {
			counts[int64(us)*1000] += c
		}
	}
	keys := make([]int64, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := m.n / 2 // index of the upper median in sorted order
	for _, k := range keys {
		want -= counts[k]
		if want < 0 {
			return k
		}
	}
	return keys[len(keys)-1]
}
