package callgrind

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// maxPathSCC bounds the size of a call cycle inside which paths between
// its functions are searched; in larger ones a stack goes from the
// function the cost entered by straight to the one that spent it.
const maxPathSCC = 256

// maxWork bounds the frames the builder pushes and walks and the calls
// its path searches follow, in all: a bound on its time (a few seconds),
// as stacks deep and many, for many events, take little memory at a time
// but long to build.
const maxWork = 1 << 27

// costStep is the charge of a step: 8 bytes, the spare room of its
// growing slice, and its entry in the map that shares it.
const costStep = 64

// errWork is the error of a file past maxWork.
var errWork = fmt.Errorf("%w: its stacks take more than %d frames to build (the callgrind reader's limit, whatever %s says)",
	membudget.ErrTooLarge, maxWork, membudget.InputEnv)

// graph is one group's call graph for the decomposition, of the nodes
// the group names, numbered anew (local ids).
type graph struct {
	n     int
	glob  []int32   // the parser's node of each local id
	out   [][]int32 // arcs by caller, in the order of the file
	from  []int32
	to    []int32
	cost  []int64 // [arc*nev+event]
	self  []int64 // [node*nev+event]
	nev   int
	inArc []bool // node has an arc from another node (a real call)
}

// step is a node of the stacks under construction: a frame and its caller.
type step struct {
	fn     int32
	parent int32 // -1: none
}

// piece is cost on its way down the graph: the stack of its callers
// (-1: none) and the function it enters.
type piece struct {
	path  int32
	entry int32
	amt   int64
}

type builder struct {
	ps    *parser
	p     *profile.Profile
	locs  []*profile.Location // by node, nil until used
	funcs map[[2]string]*profile.Function
	maps  map[string]*profile.Mapping
	// steps are the frames of the stacks of the current group, a tree
	// shared by every event: a step is made once per caller's step and
	// function (stepOf), so that a stack is one step and its sample is
	// found by it (sampleOf).
	steps    []step
	stepOf   map[step]int32
	sampleOf map[int32]*profile.Sample
	glob     []int32 // the current graph's
	local    []int32 // by the parser's node: its local id in the current group; -1: none
	// charged is what the builder's reused buffers may hold without a
	// new charge: steps, live pieces, the inbox.
	stepsCharged, piecesCharged, live int
	work                              int64             // frames pushed and walked; see maxWork
	free                              [][]piece         // inboxes done with, for reuse
	pool                              []piece           // cost brought where nothing spends it
	deferred                          []lateSelf        // self cost no call brought, met at the end of the event
	roots                             []piece           // the stacks of cost no call brought: each a root step of its own
	stackless                         []int32           // the steps of the samples whose stacks are still to be made
	splits                            map[int32][]piece // root steps shared among stacks of the pool: see reparent
	// mismatch collects the functions whose calls carry more or less
	// cost than they spent.
	mismatch map[int32]bool
}

func (ps *parser) build() (*profile.Profile, error) {
	p := &profile.Profile{
		PeriodType: &profile.ValueType{Type: EventType(ps.events[0]), Unit: "count"},
		Period:     1,
	}
	for _, e := range ps.events {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: EventType(e), Unit: "count"})
	}
	p.DefaultSampleType = EventType(ps.events[0])
	if slices.Contains(ps.events, "Ir") {
		p.DefaultSampleType = EventType("Ir")
		p.PeriodType.Type = p.DefaultSampleType
	}
	p.Comments = meta.MarkExact(p.Comments)
	p.Comments = meta.AppendFormat(p.Comments, Format)
	if ps.creator != "" && !strings.HasPrefix(ps.creator, "callgrind") {
		ps.warn("written by %q, not callgrind", ps.creator)
	}
	if err := ps.charge(membudget.Node, int64(len(ps.nodes)), 12*int64(len(ps.nodes))); err != nil {
		return nil, err
	}
	b := &builder{
		ps: ps, p: p,
		local:    newLocal(len(ps.nodes)),
		locs:     make([]*profile.Location, len(ps.nodes)),
		funcs:    make(map[[2]string]*profile.Function),
		maps:     make(map[string]*profile.Mapping),
		mismatch: make(map[int32]bool),
	}
	for _, g := range ps.groups {
		var labels map[string][]string
		if ps.pid != "" || g.thread != "" || ps.cmd != "" {
			labels = make(map[string][]string)
			if ps.pid != "" {
				labels[pbuild.LabelPID] = []string{ps.pid}
			}
			if g.thread != "" {
				labels[pbuild.LabelTID] = []string{g.thread}
			}
			if proc := process(ps.cmd); proc != "" {
				labels[pbuild.LabelProcess] = []string{proc}
			}
		}
		if err := b.group(g, labels); err != nil {
			return nil, err
		}
	}
	if len(b.mismatch) > 0 {
		var names []string
		for id := range b.mismatch {
			names = append(names, ps.nodes[id].display())
		}
		sort.Strings(names)
		more := ""
		if len(names) > 5 {
			more = fmt.Sprintf(" and %d more", len(names)-5)
			names = names[:5]
		}
		ps.warn("%d functions are called with an inclusive cost other than what they spent (their self cost and their calls), as when the process ends inside a call, or for signal handlers and longjmp; their totals are what they spent: %s%s",
			len(b.mismatch), strings.Join(names, ", "), more)
	}
	return p, nil
}

func newLocal(n int) []int32 {
	l := make([]int32, n)
	for i := range l {
		l[i] = -1
	}
	return l
}

// graphOf makes the call graph of g: its calls, and for the code a
// function inlined from another file (fi=, fe=), an arc from the
// function to that code, when the function is called by others (its
// calls' cost includes that code) and that code is not (callgrind_annotate
// then takes its total as its self cost plus its calls).
func (b *builder) graphOf(g *group) (*graph, error) {
	ps := b.ps
	nev := ps.nev
	// b.local is -1 but for the nodes of the last graph's glob.
	for _, v := range b.glob {
		b.local[v] = -1
	}
	var glob []int32
	use := func(v int32) {
		if b.local[v] < 0 {
			b.local[v] = int32(len(glob))
			glob = append(glob, v)
		}
	}
	for _, k := range g.selfOf {
		use(k.from)
	}
	for _, k := range g.arcOf {
		use(k.from)
		use(k.to)
	}
	for _, k := range g.inlOf {
		use(k.from)
		use(k.to)
	}
	b.glob = glob
	n := len(glob)
	arcs := int64(len(g.arcOf) + len(g.inlOf))
	// The graph, and sccs' tables after it.
	if err := ps.charge(membudget.Node, int64(n), int64(n)*(8*int64(nev)+24+8+1+64)+arcs*(12+8*int64(nev))); err != nil {
		return nil, err
	}
	gr := &graph{n: n, glob: glob, out: make([][]int32, n), nev: nev, inArc: make([]bool, n)}
	gr.self = make([]int64, n*nev)
	for i, k := range g.selfOf {
		copy(gr.self[int(b.local[k.from])*nev:], g.selfC[i*nev:(i+1)*nev])
	}
	add := func(from, to int32, c []int64) {
		from, to = b.local[from], b.local[to]
		zero := true
		for _, x := range c {
			if x != 0 {
				zero = false
			}
		}
		if zero {
			return
		}
		a := int32(len(gr.from))
		gr.from = append(gr.from, from)
		gr.to = append(gr.to, to)
		gr.cost = append(gr.cost, c...)
		gr.out[from] = append(gr.out[from], a)
	}
	for a, k := range g.arcOf {
		add(k.from, k.to, g.arcC[a*nev:(a+1)*nev])
		if k.from != k.to {
			gr.inArc[b.local[k.to]] = true
		}
	}
	called := slices.Clone(gr.inArc)
	for a, k := range g.inlOf {
		// In address mode the code inlined into a function, or jumped to
		// from it, is its callee whoever else calls either.
		if ps.addr != nil || called[b.local[k.from]] && !called[b.local[k.to]] {
			add(k.from, k.to, g.inlC[a*nev:(a+1)*nev])
		}
	}
	return gr, nil
}

// sccs returns the strongly connected components of gr in topological
// order (callers first), by Tarjan's algorithm without recursion.
func sccs(gr *graph) (comp []int32, order [][]int32) {
	n := gr.n
	index := make([]int32, n)
	low := make([]int32, n)
	on := make([]bool, n)
	comp = make([]int32, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	type frame struct {
		v int32
		i int
	}
	var call []frame
	next := int32(0)
	for s := range n {
		if index[s] >= 0 {
			continue
		}
		call = append(call, frame{int32(s), 0})
		index[s], low[s] = next, next
		next++
		stack = append(stack, int32(s))
		on[s] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.i < len(gr.out[v]) {
				w := gr.to[gr.out[v][f.i]]
				f.i++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					on[w] = true
					call = append(call, frame{w, 0})
				} else if on[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				var c []int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					on[w] = false
					comp[w] = int32(len(order))
					c = append(c, w)
					if w == v {
						break
					}
				}
				slices.Sort(c)
				order = append(order, c)
			}
		}
	}
	// Tarjan finds callees first.
	slices.Reverse(order)
	for i, c := range order {
		for _, v := range c {
			comp[v] = int32(i)
		}
	}
	return comp, order
}

// group decomposes g's costs into samples, one event at a time.
func (b *builder) group(g *group, labels map[string][]string) error {
	if len(g.selfOf) == 0 {
		return nil
	}
	gr, err := b.graphOf(g)
	if err != nil {
		return err
	}
	comp, order := sccs(gr)
	if err := b.ps.charge(membudget.Other, int64(len(order)), 24*int64(len(order))); err != nil {
		return err
	}
	inbox := make([][]piece, len(order))
	b.steps = b.steps[:0]
	b.stepOf = make(map[step]int32)
	b.sampleOf = make(map[int32]*profile.Sample)
	for e := 0; e < gr.nev; e++ {
		b.live = 0
		b.pool = b.pool[:0]
		for ci, members := range order {
			if err := b.component(gr, e, comp, int32(ci), members, inbox, labels); err != nil {
				return err
			}
			b.live -= len(inbox[ci])
			if cap(inbox[ci]) > 0 {
				b.free = append(b.free, inbox[ci][:0])
			}
			inbox[ci] = nil
			if b.work > maxWork {
				return errWork
			}
		}
		if err := b.late(e, labels); err != nil {
			return err
		}
	}
	return b.stacks()
}

// reserve charges, before it is allocated, the room for the steps and
// pieces a component may add: up to pieces more pieces, each with up to
// hops steps. The charges are high-water marks of buffers reused for
// every event.
func (b *builder) reserve(pieces, hops int) error {
	ps := b.ps
	if need := len(b.steps) + pieces*hops; need > b.stepsCharged {
		// A step is 8 bytes; growing the buffer copies it, and the old
		// one is garbage until the next collection.
		grow := max(need, 2*b.stepsCharged) - b.stepsCharged
		if err := ps.expand(membudget.Frame, int64(grow), costStep*int64(grow)); err != nil {
			return err
		}
		b.stepsCharged += grow
		b.steps = slices.Grow(b.steps, b.stepsCharged-len(b.steps))
	}
	if need := b.live + pieces; need > b.piecesCharged {
		grow := max(need, 2*b.piecesCharged) - b.piecesCharged
		// A piece (24 bytes) in an inbox slice that may have doubled.
		if err := ps.expand(membudget.Frame, int64(grow), 48*int64(grow)); err != nil {
			return err
		}
		b.piecesCharged += grow
	}
	return nil
}

// demand is cost a function of a component spends: its self cost (arc
// -1) or a call out of the component.
type demand struct {
	member int32
	arc    int32
	amt    int64
}

func (b *builder) component(gr *graph, e int, comp []int32, ci int32, members []int32, inbox [][]piece, labels map[string][]string) error {
	nev := gr.nev
	var demands []demand
	var need int64
	for _, m := range members {
		if s := gr.self[int(m)*nev+e]; s > 0 {
			demands = append(demands, demand{m, -1, s})
			need = satAdd(need, s)
		}
		for _, a := range gr.out[m] {
			if comp[gr.to[a]] == ci {
				continue
			}
			if c := gr.cost[int(a)*nev+e]; c > 0 {
				demands = append(demands, demand{m, a, c})
				need = satAdd(need, c)
			}
		}
	}
	in := inbox[ci]
	var have int64
	for _, p := range in {
		have = satAdd(have, p.amt)
	}
	if have < need {
		// What no call brought is met last, self cost after calls, so
		// that the self cost can wait for the pool (filled by the
		// components after this one) and the calls carry the callers'.
		slices.SortStableFunc(demands, func(x, y demand) int {
			return selfLast(x) - selfLast(y)
		})
	}
	if have != need && have > 0 && len(members) == 1 {
		b.mismatch[gr.glob[members[0]]] = true
	}
	// Each turn of the loop below ends a piece or a demand, and pushes
	// at most a path within the component and the member.
	hops := 2
	if len(members) > 1 && len(members) <= maxPathSCC {
		hops = len(members) + 1
	}
	if err := b.reserve(len(in)+len(demands), hops); err != nil {
		return err
	}
	// Cut the incoming pieces along the demands.
	pi := 0
	var left int64
	if len(in) > 0 {
		left = in[0].amt
	}
	pathOf := int32(-1) // the path of in[pi] extended to lastM
	lastM := int32(-1)
	var bfs map[int32][]int32 // by entry: parent of each member on a path from it
	for _, d := range demands {
		rest := d.amt
		for rest > 0 {
			var path int32
			var amt int64
			if pi < len(in) {
				amt = min(rest, left)
				if lastM != d.member || pathOf < 0 {
					path = b.extend(gr, in[pi].path, in[pi].entry, d.member, members, &bfs)
					pathOf, lastM = path, d.member
				} else {
					path = pathOf
				}
				left -= amt
				if left == 0 {
					pi++
					pathOf, lastM = -1, -1
					if pi < len(in) {
						left = in[pi].amt
					}
				}
			} else if d.arc < 0 {
				if err := b.reserve(1, 0); err != nil {
					return err
				}
				b.deferred = append(b.deferred, lateSelf{d.member, rest})
				b.live++
				break
			} else if len(b.pool) > 0 {
				// Cost callers brought to others, which did not spend it.
				if err := b.reserve(1, hops); err != nil {
					return err
				}
				last := &b.pool[len(b.pool)-1]
				amt = min(rest, last.amt)
				path = b.push(last.path, d.member)
				if last.amt -= amt; last.amt == 0 {
					b.pool = b.pool[:len(b.pool)-1]
				}
			} else {
				// Cost no call brought: the function is a root for it.
				amt = rest
				path = b.root(d.member, amt)
			}
			rest -= amt
			if d.arc < 0 {
				if err := b.sample(path, e, amt, labels); err != nil {
					return err
				}
			} else {
				to := gr.to[d.arc]
				box := &inbox[comp[to]]
				if *box == nil && len(b.free) > 0 {
					*box, b.free = b.free[len(b.free)-1], b.free[:len(b.free)-1]
				}
				*box = append(*box, piece{path, to, amt})
				b.live++
			}
		}
	}
	// What the callers brought and the component does not spend: live
	// pieces still, until the end of the event.
	if pi < len(in) {
		in[pi].amt = left
		b.pool = append(b.pool, in[pi:]...)
		b.live += len(in) - pi
	}
	return nil
}

// selfLast is 1 for self cost, 0 for a call.
func selfLast(d demand) int {
	if d.arc < 0 {
		return 1
	}
	return 0
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// push returns the step of local node fn under parent, made on first use.
func (b *builder) push(parent, fn int32) int32 {
	b.work++
	k := step{b.glob[fn], parent}
	if s, ok := b.stepOf[k]; ok {
		return s
	}
	b.stepOf[k] = int32(len(b.steps))
	b.steps = append(b.steps, k)
	return int32(len(b.steps) - 1)
}

// extend returns path with the frames from entry to m within their
// component (members): entry, the functions on a shortest path of calls
// between them, and m.
func (b *builder) extend(gr *graph, path, entry, m int32, members []int32, bfs *map[int32][]int32) int32 {
	path = b.push(path, entry)
	if entry == m {
		return path
	}
	if len(members) > maxPathSCC {
		return b.push(path, m)
	}
	if *bfs == nil {
		*bfs = make(map[int32][]int32)
	}
	idx := func(v int32) int {
		i, _ := slices.BinarySearch(members, v)
		return i
	}
	// parent[i] is the caller of members[i] on a shortest path of calls
	// from entry: -1 for entry, -2 where there is none.
	parent, ok := (*bfs)[entry]
	if !ok {
		parent = make([]int32, len(members))
		for i := range parent {
			parent[i] = -2
		}
		parent[idx(entry)] = -1
		queue := []int32{entry}
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			b.work += int64(len(gr.out[v]))
			for _, a := range gr.out[v] {
				w := gr.to[a]
				if j := idx(w); j < len(members) && members[j] == w && parent[j] == -2 {
					parent[j] = v
					queue = append(queue, w)
				}
			}
		}
		(*bfs)[entry] = parent
	}
	var hops []int32
	for v := m; v != entry; {
		u := parent[idx(v)]
		if u < 0 {
			hops = hops[:0]
			break
		}
		hops = append(hops, v)
		v = u
	}
	if len(hops) == 0 {
		return b.push(path, m)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		path = b.push(path, hops[i])
	}
	return path
}

// sample adds amt of event e to the sample of path (leaf last pushed).
func (b *builder) sample(path int32, e int, amt int64, labels map[string][]string) error {
	ps := b.ps
	if s, ok := b.sampleOf[path]; ok {
		if s.Value[e] > math.MaxInt64-amt {
			return fmt.Errorf("the cost of one stack adds up to more than int64 holds")
		}
		s.Value[e] += amt
		return nil
	}
	// Its stack is made when the group is done (stacks), as a root step
	// may yet go under a stack that brought cost nothing spent.
	if err := ps.expand(membudget.Sample, 1, membudget.CostSample+64+4+int64(ps.nev)*membudget.CostValue); err != nil {
		return err
	}
	s := &profile.Sample{Value: make([]int64, ps.nev), Label: labels}
	s.Value[e] = amt
	b.sampleOf[path] = s
	b.stackless = append(b.stackless, path)
	b.p.Sample = append(b.p.Sample, s)
	return nil
}

// location returns the location of node id, made on first use.
func (b *builder) location(id int32) *profile.Location {
	if l := b.locs[id]; l != nil {
		return l
	}
	nd := b.ps.nodes[id]
	name := nd.display()
	k := [2]string{nd.file, name}
	f, ok := b.funcs[k]
	if !ok {
		file := nd.file
		if file == "???" {
			file = ""
		}
		f = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: file}
		b.funcs[k] = f
		b.p.Function = append(b.p.Function, f)
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: f}}}
	if nd.obj != "" && nd.obj != "???" {
		m, ok := b.maps[nd.obj]
		if !ok {
			m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: nd.obj, HasFunctions: true}
			b.maps[nd.obj] = m
			b.p.Mapping = append(b.p.Mapping, m)
		}
		l.Mapping = m
	}
	b.locs[id] = l
	b.p.Location = append(b.p.Location, l)
	return l
}
