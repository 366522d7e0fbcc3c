package chrometrace

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/hotbudget/hotbudget/internal/nearsort"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

// cpuProf is one CPU profile being assembled from Profile and ProfileChunk
// events (or one old CpuProfile event).
type cpuProf struct {
	pid, id  string
	tid      string // the Profile event's tid: the sampled thread
	chunkTid string // the first chunk's tid, used when there is no Profile event
	hasHead  bool
	old      bool // a CpuProfile event
	// Times in µs.
	startTime, endTime int64
	hasStart, hasEnd   bool
	nodes              []v8.Node
	samples            store
	events             int // chunks
}

// blockBits sets the size of the blocks samples are stored in: big arrays
// grow block by block, never copied.
const blockBits = 16

// blocks is a growable array stored in fixed-size blocks.
type blocks[T int32 | int64] struct {
	b [][]T
	n int
}

func (a *blocks[T]) add(v T) {
	if len(a.b) == 0 || len(a.b[len(a.b)-1]) == 1<<blockBits {
		c := 1 << blockBits
		if len(a.b) == 0 {
			c = 64 // the first block grows as needed: small profiles stay small
		}
		a.b = append(a.b, make([]T, 0, c))
	}
	last := &a.b[len(a.b)-1]
	*last = append(*last, v)
	a.n++
}

func (a *blocks[T]) at(i int) T     { return a.b[i>>blockBits][i&(1<<blockBits-1)] }
func (a *blocks[T]) set(i int, v T) { a.b[i>>blockBits][i&(1<<blockBits-1)] = v }
func (a *blocks[T]) swap(i, j int)  { x := a.at(i); a.set(i, a.at(j)); a.set(j, x) }
func (a *blocks[T]) free()          { a.b, a.n = nil, 0 }

func widen(a *blocks[int32]) (w blocks[int64]) {
	for i := 0; i < a.n; i++ {
		w.add(int64(a.at(i)))
	}
	a.free()
	return w
}

// store holds a profile's samples compactly: node ids and times since
// startTime (µs, the running sum of timeDeltas) as int32 while they fit,
// int64 once one does not. A sample costs 8 bytes, not the 32 that a
// []int64 pair plus v8.Build's sort would.
type store struct {
	ids      blocks[int32]
	ids64    blocks[int64]
	wideIDs  bool
	ts       blocks[int32]
	ts64     blocks[int64]
	wideTs   bool
	sum      int64 // time of the last sample since startTime
	n        int
	unsorted bool
}

func (s *store) add(id, delta int64) error {
	t := s.sum + delta
	if (t > s.sum) != (delta > 0) || t > maxMicros || t < -maxMicros {
		return fmt.Errorf("sample %d: time overflows (timeDelta %d)", s.n, delta)
	}
	if delta < 0 && s.n > 0 {
		s.unsorted = true
	}
	s.sum = t
	if !s.wideIDs && id != int64(int32(id)) {
		s.ids64, s.wideIDs = widen(&s.ids), true
	}
	if s.wideIDs {
		s.ids64.add(id)
	} else {
		s.ids.add(int32(id))
	}
	if !s.wideTs && t != int64(int32(t)) {
		s.ts64, s.wideTs = widen(&s.ts), true
	}
	if s.wideTs {
		s.ts64.add(t)
	} else {
		s.ts.add(int32(t))
	}
	s.n++
	return nil
}

func (s *store) id(i int) int64 {
	if s.wideIDs {
		return s.ids64.at(i)
	}
	return int64(s.ids.at(i))
}

func (s *store) t(i int) int64 {
	if s.wideTs {
		return s.ts64.at(i)
	}
	return int64(s.ts.at(i))
}

func (s *store) free() { *s = store{} }

// iter returns a function giving sample i's node id and time, for a pass
// over all samples in order: with narrow ids and times (the usual case) it
// reads the blocks without checking the width for every sample.
func (s *store) iter() func(i int) (id, t int64) {
	if s.wideIDs || s.wideTs {
		return func(i int) (int64, int64) { return s.id(i), s.t(i) }
	}
	ids, ts := s.ids.b, s.ts.b
	return func(i int) (int64, int64) {
		b, j := i>>blockBits, i&(1<<blockBits-1)
		return int64(ids[b][j]), int64(ts[b][j])
	}
}

// sortByTime sorts s's samples by time, stably: by insertion while they
// are nearly in order (the usual case), else with sort.Stable.
func sortByTime(s *store) {
	if !nearsort.Insertion(s.n, s.Less, s.Swap) {
		sort.Stable(s)
	}
}

// Len, Less and Swap let sort.Stable sort samples by time in place.
func (s *store) Len() int           { return s.n }
func (s *store) Less(i, j int) bool { return s.t(i) < s.t(j) }
func (s *store) Swap(i, j int) {
	if s.wideIDs {
		s.ids64.swap(i, j)
	} else {
		s.ids.swap(i, j)
	}
	if s.wideTs {
		s.ts64.swap(i, j)
	} else {
		s.ts.swap(i, j)
	}
}

// profile returns the profile for (pid, id), creating it.
func (p *parser) profile(pid, id string) *cpuProf {
	return p.profs.get(pid, id, func() *cpuProf { return &cpuProf{pid: pid, id: id} })
}

// profileHead handles a Profile event.
func (p *parser) profileHead() error {
	e := &p.ev
	cp := p.profile(e.pid, e.id)
	if cp.hasHead {
		p.warnf("profile %s of pid %s has two Profile events; the first names its thread", e.id, e.pid)
	} else {
		cp.hasHead, cp.tid = true, e.tid
	}
	if e.typeErr != nil {
		return e.typeErr
	}
	if e.hasStart {
		cp.startTime, cp.hasStart = e.startTime, true
	}
	return p.addParts(cp)
}

// profileChunk handles a ProfileChunk event.
func (p *parser) profileChunk() error {
	e := &p.ev
	cp := p.profile(e.pid, e.id)
	if cp.events == 0 {
		cp.chunkTid = e.tid
	}
	cp.events++
	if e.typeErr != nil {
		return e.typeErr
	}
	if !e.data {
		return nil // real traces have chunks without args.data
	}
	if e.hasEnd {
		cp.endTime, cp.hasEnd = e.endTime, true
	}
	return p.addParts(cp)
}

// oldProfile handles a CpuProfile event that holds a whole profile.
func (p *parser) oldProfile(i int) error {
	e := &p.ev
	if e.typeErr != nil {
		return e.typeErr
	}
	cp := p.profile(e.pid, fmt.Sprintf("CpuProfile@%d", i))
	cp.tid, cp.hasHead, cp.old = e.tid, true, true
	if e.hasStart {
		cp.startTime, cp.hasStart = e.startTime, true
	}
	if e.hasEnd {
		cp.endTime, cp.hasEnd = e.endTime, true
	}
	return p.addParts(cp)
}

// addParts adds the event's nodes and samples to cp.
func (p *parser) addParts(cp *cpuProf) error {
	e := &p.ev
	cp.nodes = append(cp.nodes, e.nodes...)
	if len(e.samples) != len(e.deltas) {
		return fmt.Errorf("profile %s: samples and timeDeltas have different lengths (%d and %d)", cp.id, len(e.samples), len(e.deltas))
	}
	if len(e.samples) > 0 && p.view != pbuild.ViewDurations && !p.dropDur {
		// The samples view will be shown: stop keeping duration events.
		p.dropDur = true
		for _, t := range p.threads.order {
			t.evs = nil
		}
	}
	for i, id := range e.samples {
		if err := cp.samples.add(id, e.deltas[i]); err != nil {
			return fmt.Errorf("profile %s: %w", cp.id, err)
		}
	}
	return nil
}

// batchMax is the most samples handed to v8.Build sample by sample.
// Profiles up to this size are built exactly as the .cpuprofile loader
// does; bigger ones are summed per node first.
var batchMax = 1 << 20

// buildProfile adds cp's samples to b.
func (p *parser) buildProfile(b *pbuild.Builder, cp *cpuProf, labels pbuild.Labels) (v8.Span, error) {
	st := &cp.samples
	n := st.n
	defer st.free()
	repairParents(b, cp)
	if n <= batchMax {
		vp := &v8.Profile{Nodes: cp.nodes, StartTime: cp.startTime, EndTime: cp.endTime,
			Samples: make([]int64, n), TimeDeltas: make([]int64, n)}
		prev := int64(0)
		for i := 0; i < n; i++ {
			vp.Samples[i] = st.id(i)
			t := st.t(i)
			vp.TimeDeltas[i] = t - prev
			prev = t
		}
		st.free()
		return v8.Build(b, vp, labels)
	}
	// A big profile: sorted in place by time (stable, as v8.Build does),
	// then each sample's duration (until the next one; the last lasts the
	// average interval, rounded to a µs) is summed per node, and each
	// node's stack gets one merged sample: the numbers v8.Build would give,
	// without handing it every sample.
	if st.unsorted {
		sortByTime(st)
		b.Warnf("sample times go backwards (negative timeDeltas): samples sorted by time, as DevTools does")
	}
	lookup := nodeIndex(cp.nodes)
	count := make([]int64, len(cp.nodes))
	nanos := make([]int64, len(cp.nodes))
	first, last := st.t(0), st.t(n-1)
	avg := int64(math.Round(float64(last-first) / float64(n-1)))
	var med median
	unknown := 0
	at := st.iter()
	id, t := at(0)
	for i := 0; i < n; i++ {
		d := avg
		var nextID, next int64
		if i+1 < n {
			nextID, next = at(i + 1)
			d = next - t
			med.add(d * 1000)
		}
		k, ok := lookup(id)
		if ok {
			count[k]++
			nanos[k] += d * 1000
		} else {
			if unknown == 0 {
				b.Warnf("sample %d names unknown node %d: dropped", i, id)
			}
			unknown++
		}
		id, t = nextID, next
	}
	if unknown > 1 {
		b.Warnf("%d samples name unknown nodes: dropped", unknown)
	}
	st.free()
	if err := v8.BuildPerNode(b, cp.nodes, count, nanos, labels); err != nil {
		return v8.Span{}, err
	}
	return v8.Span{Start: cp.startTime + first, End: cp.startTime + last + avg, Samples: n - unknown,
		Nanos: (last - first + avg) * 1000, Period: med.value()}, nil
}

// nodeIndex returns a lookup from node id to index: a slice when ids are
// small integers close together (as V8 writes them), else a map.
func nodeIndex(nodes []v8.Node) func(int64) (int32, bool) {
	m := make(map[int64]int32, len(nodes))
	for i := range nodes {
		m[nodes[i].ID] = int32(i)
	}
	byMap := func(id int64) (int32, bool) { k, ok := m[id]; return k, ok }
	if len(nodes) == 0 {
		return byMap
	}
	lo, hi := nodes[0].ID, nodes[0].ID
	for i := range nodes {
		lo, hi = min(lo, nodes[i].ID), max(hi, nodes[i].ID)
	}
	if hi-lo < 0 || hi-lo >= int64(4*len(nodes)+64) {
		return byMap
	}
	dense := make([]int32, hi-lo+1)
	for i := range dense {
		dense[i] = -1
	}
	for id, k := range m {
		dense[id-lo] = k
	}
	return func(id int64) (int32, bool) {
		if id < lo || id > hi {
			return -1, false
		}
		k := dense[id-lo]
		return k, k >= 0
	}
}

// median finds the upper median of the positive values added, counting
// distinct values (sampling intervals take few), as v8.Build does.
type median struct {
	small  []int // counts of whole µs below 1<<16
	counts map[int64]int
	n      int
}

func (m *median) add(v int64) {
	if v <= 0 {
		return
	}
	m.n++
	if v%1000 == 0 && v/1000 < 1<<16 {
		if m.small == nil {
			m.small = make([]int, 1<<16)
		}
		m.small[v/1000]++
		return
	}
	if m.counts == nil {
		m.counts = map[int64]int{}
	}
	m.counts[v]++
}

func (m *median) value() int64 {
	if m.n == 0 {
		return 0
	}
	if m.counts == nil {
		m.counts = map[int64]int{}
	}
	for us, c := range m.small {
		if c > 0 {
			m.counts[int64(us)*1000] += c
		}
	}
	keys := make([]int64, 0, len(m.counts))
	for k := range m.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := m.n / 2
	for _, k := range keys {
		want -= m.counts[k]
		if want < 0 {
			return k
		}
	}
	return keys[len(keys)-1]
}

// repairParents attaches nodes whose parent never appears in any chunk
// (real DevTools traces lose some) to the root, with a warning, so that
// one missing node does not make the whole profile unreadable.
func repairParents(b *pbuild.Builder, cp *cpuProf) {
	ids := make(map[int64]bool, len(cp.nodes))
	child := make(map[int64]bool)
	for i := range cp.nodes {
		ids[cp.nodes[i].ID] = true
		for _, c := range cp.nodes[i].Children {
			child[c] = true
		}
	}
	root, roots := int64(0), 0
	for i := range cp.nodes {
		nd := &cp.nodes[i]
		if !nd.HasParent && !child[nd.ID] {
			root = nd.ID
			roots++
		}
	}
	if roots != 1 {
		return // v8.Build reports it
	}
	for i := range cp.nodes {
		nd := &cp.nodes[i]
		if nd.HasParent && !ids[nd.Parent] && !child[nd.ID] {
			b.Warnf("profile %s: node %d names parent %d, which is in no chunk: attached to the root", cp.id, nd.ID, nd.Parent)
			nd.Parent = root
		}
	}
}
