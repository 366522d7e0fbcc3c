package callgrind

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// demand is cost a function of a component spends: its self cost (arc
// -1) or a call.
type demand struct {
	arc int32
	amt int64
}

// cycleState is the builder's state for the components of one group:
// by local node, its position in its component's order, its demands (a
// range of dem, the first not yet met, and what is left of it) and the
// pieces waiting for it.
type cycleState struct {
	pos      []int32
	first    []int32
	end      []int32
	cur      []int32
	left     []int64
	pend     [][]piece
	dem      []demand
	spent    []int64 // by local node: its self cost and calls, of the event
	unmetIn  []int64 // by local node: what members that spend more than came to them call it with
	capIn    []int64 // by local node: what pieces from inside the component may bring it; -1: any
	ord      []int32 // the current component's members, most spent first
	nextPend [][]piece
	queue    posHeap // members with pieces to take this round, by pos
	next     []int32 // members with pieces for the next round
	queued   []bool
}

// posHeap is a heap of members by their position in the component's order.
type posHeap struct {
	v   []int32
	pos []int32
}

func (h *posHeap) Len() int           { return len(h.v) }
func (h *posHeap) Less(i, j int) bool { return h.pos[h.v[i]] < h.pos[h.v[j]] }
func (h *posHeap) Swap(i, j int)      { h.v[i], h.v[j] = h.v[j], h.v[i] }
func (h *posHeap) Push(x any)         { h.v = append(h.v, x.(int32)) }
func (h *posHeap) Pop() any {
	x := h.v[len(h.v)-1]
	h.v = h.v[:len(h.v)-1]
	return x
}

// component decomposes the cost of event e that the functions of one
// strongly connected component spend (their self cost and their calls)
// into stacks: the pieces of cost their callers' calls brought (inbox),
// cut in the order of the callers along each function's demands in the
// order of the file, and passed on along the calls. In a component of
// several functions (a cycle of calls), the pieces go forward in the
// component's order within a round and back along the cycle in the next;
// cost that no call brought is a stack of its own, rooted at the function
// that spent it. Every function thus spends its self cost and its calls'
// inclusive cost on stacks it is on (its total is its self cost plus the
// inclusive cost of its calls, callgrind_annotate's) unless a piece comes
// back to it through a cycle (recursion) or its calls carry more than
// their callees spend.
func (b *builder) component(gr *graph, e int, comp []int32, ci int32, members []int32, inbox [][]piece, labels map[string][]string) error {
	nev := gr.nev
	cs := &b.cs
	cs.dem = cs.dem[:0]
	var need int64
	for _, m := range members {
		cs.first[m] = int32(len(cs.dem))
		if s := gr.self[int(m)*nev+e]; s > 0 {
			cs.dem = append(cs.dem, demand{-1, s})
			need = satAdd(need, s)
		}
		for _, a := range gr.out[m] {
			if gr.to[a] == m {
				continue // a call to itself: cost it spends already
			}
			if c := gr.cost[int(a)*nev+e]; c > 0 {
				cs.dem = append(cs.dem, demand{a, c})
				need = satAdd(need, c)
			}
		}
		cs.end[m] = int32(len(cs.dem))
		cs.spent[m] = 0
		for _, d := range cs.dem[cs.first[m]:] {
			cs.spent[m] = satAdd(cs.spent[m], d.amt)
		}
		cs.cur[m] = cs.first[m]
		if cs.cur[m] < cs.end[m] {
			cs.left[m] = cs.dem[cs.cur[m]].amt
		}
	}
	in := inbox[ci]
	if len(members) == 1 {
		m := members[0]
		var have int64
		for _, p := range in {
			have = satAdd(have, p.amt)
		}
		if have != need && have > 0 {
			b.mismatch[gr.glob[m]] = true
		}
		cs.capIn[m] = -1
		if err := b.take(gr, comp, ci, m, in, inbox, e, labels); err != nil {
			return err
		}
		return b.root(gr, comp, ci, m, inbox, e, labels)
	}
	// The members in the order of what they spend, most first: a
	// caller spends at least what its calls to a function carry, which
	// is what that function spends, so calls go forward in this order
	// but along cycles.
	cs.ord = append(cs.ord[:0], members...)
	slices.SortStableFunc(cs.ord, func(x, y int32) int { return cmp.Compare(cs.spent[y], cs.spent[x]) })
	for i, m := range cs.ord {
		cs.pos[m] = int32(i)
	}
	cs.queue.pos = cs.pos
	// What comes to each member: its callers' pieces from outside, and
	// the calls of the others; where that is less than it spends, the
	// difference starts at it, before the rest moves, so that the pieces
	// of its callers find it spending, not done.
	for _, m := range members {
		cs.unmetIn[m] = 0
	}
	for _, p := range in {
		cs.unmetIn[p.entry] = satAdd(cs.unmetIn[p.entry], p.amt)
	}
	for _, m := range members {
		cs.capIn[m] = cs.unmetIn[m] // from outside, for now
	}
	for _, m := range members {
		for _, a := range gr.out[m] {
			if to := gr.to[a]; to != m && comp[to] == ci {
				cs.unmetIn[to] = satAdd(cs.unmetIn[to], gr.cost[int(a)*nev+e])
			}
		}
	}
	for _, m := range cs.ord {
		d := cs.spent[m] - cs.unmetIn[m]
		if d > 0 {
			b.pending(piece{path: -1, entry: m, amt: d}, false)
		}
		// Where more comes than the member spends, the pieces of its
		// callers from outside the cycle are taken whole and those
		// coming round it are cut to what is left, so that only cost
		// counted twice by the cycle is dropped.
		outside := cs.capIn[m]
		cs.capIn[m] = -1
		if d < 0 {
			cs.capIn[m] = max(cs.spent[m]-outside, 0)
		}
	}
	for i := range in {
		in[i].outside = true
	}
	for _, p := range in {
		b.pending(p, false)
	}
	// Rounds until no piece moves; then the cost no call brought to the
	// first function that spends more than it took, as a stack rooted at
	// it, and rounds again.
	for {
		for cs.queue.Len() > 0 {
			for cs.queue.Len() > 0 {
				m := heap.Pop(&cs.queue).(int32)
				cs.queued[m] = false
				pend := cs.pend[m]
				cs.pend[m] = nil
				if err := b.take(gr, comp, ci, m, pend, inbox, e, labels); err != nil {
					return err
				}
			}
			for _, m := range cs.next {
				cs.pend[m] = append(cs.pend[m], cs.nextPend[m]...)
				cs.nextPend[m] = nil
				if !cs.queued[m] {
					cs.queued[m] = true
					heap.Push(&cs.queue, m)
				}
			}
			cs.next = cs.next[:0]
		}
		m := b.rootOf(gr, comp, ci, e)
		if m < 0 {
			break
		}
		if err := b.root(gr, comp, ci, m, inbox, e, labels); err != nil {
			return err
		}
	}
	return nil
}

// rootOf returns, of the members of the component that spend more than
// came to them, the one whose calls from the others of them carry the
// least of what it has left to spend (-1: none), the first in the order
// among equals: where the cost no call brought starts.
func (b *builder) rootOf(gr *graph, comp []int32, ci int32, e int) int32 {
	cs := &b.cs
	unmet := func(m int32) bool { return cs.cur[m] < cs.end[m] }
	for _, m := range cs.ord {
		cs.unmetIn[m] = 0
	}
	for _, m := range cs.ord {
		if !unmet(m) {
			continue
		}
		b.work += int64(len(gr.out[m]))
		for _, a := range gr.out[m] {
			if to := gr.to[a]; to != m && comp[to] == ci && unmet(to) {
				cs.unmetIn[to] = satAdd(cs.unmetIn[to], gr.cost[int(a)*gr.nev+e])
			}
		}
	}
	best, bestBy := int32(-1), int64(0)
	for _, m := range cs.ord {
		if !unmet(m) {
			continue
		}
		rest := cs.left[m]
		for _, d := range cs.dem[cs.cur[m]+1 : cs.end[m]] {
			rest = satAdd(rest, d.amt)
		}
		if by := rest - cs.unmetIn[m]; best < 0 || by > bestBy {
			best, bestBy = m, by
		}
	}
	return best
}

// pending queues piece p for its member: this round, or the next one
// when it goes back along a cycle (later).
func (b *builder) pending(p piece, later bool) {
	cs := &b.cs
	m := p.entry
	if later {
		if cs.nextPend[m] == nil {
			cs.next = append(cs.next, m)
		}
		cs.nextPend[m] = append(cs.nextPend[m], p)
		return
	}
	cs.pend[m] = append(cs.pend[m], p)
	if !cs.queued[m] {
		cs.queued[m] = true
		heap.Push(&cs.queue, m)
	}
}

// take cuts the pieces that came to member m along its demands left.
func (b *builder) take(gr *graph, comp []int32, ci, m int32, pieces []piece, inbox [][]piece, e int, labels map[string][]string) error {
	cs := &b.cs
	for _, p := range pieces {
		if b.work > maxWork {
			return errWork
		}
		if !p.outside && cs.capIn[m] >= 0 {
			p.amt = min(p.amt, cs.capIn[m])
			cs.capIn[m] -= p.amt
			if p.amt == 0 {
				continue
			}
		}
		if cs.cur[m] >= cs.end[m] {
			// More came than the function spends: the rest of a
			// recursion's cost, which it spent once.
			return nil
		}
		if err := b.reserve(1+int(cs.end[m]-cs.cur[m]), 1); err != nil {
			return err
		}
		path := b.push(p.path, m)
		if err := b.spend(gr, comp, ci, m, path, p.amt, inbox, e, labels); err != nil {
			return err
		}
	}
	return nil
}

// root spends what is left of member m's demands on stacks rooted at it.
func (b *builder) root(gr *graph, comp []int32, ci, m int32, inbox [][]piece, e int, labels map[string][]string) error {
	cs := &b.cs
	if cs.cur[m] >= cs.end[m] {
		return nil
	}
	if err := b.reserve(1+int(cs.end[m]-cs.cur[m]), 1); err != nil {
		return err
	}
	path := b.push(-1, m)
	return b.spend(gr, comp, ci, m, path, math.MaxInt64, inbox, e, labels)
}

// spend meets m's demands, in order, with amt of cost on path: self cost
// becomes samples, calls pieces for the callees.
func (b *builder) spend(gr *graph, comp []int32, ci, m, path int32, amt int64, inbox [][]piece, e int, labels map[string][]string) error {
	cs := &b.cs
	for amt > 0 && cs.cur[m] < cs.end[m] {
		d := cs.dem[cs.cur[m]]
		n := min(amt, cs.left[m])
		amt -= n
		cs.left[m] -= n
		if cs.left[m] == 0 {
			cs.cur[m]++
			if cs.cur[m] < cs.end[m] {
				cs.left[m] = cs.dem[cs.cur[m]].amt
			}
		}
		if d.arc < 0 {
			if err := b.sample(path, e, n, labels); err != nil {
				return err
			}
			continue
		}
		to := gr.to[d.arc]
		pc := piece{path: path, entry: to, amt: n}
		b.live++
		switch {
		case comp[to] != ci:
			box := &inbox[comp[to]]
			if *box == nil && len(b.free) > 0 {
				*box, b.free = b.free[len(b.free)-1], b.free[:len(b.free)-1]
			}
			*box = append(*box, pc)
		default:
			b.pending(pc, cs.pos[to] <= cs.pos[m])
		}
	}
	return nil
}
