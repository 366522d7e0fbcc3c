package htmlreport

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// Value is one side's time of a frame, in the unit of Tree.Unit.
type Value struct {
	Self, Total float64
}

// Node is one frame of a call tree: one path of function names from the
// root. Nodes are in pre-order, so a node's subtree follows it.
type Node struct {
	Name  string
	Depth int // the root is 0
	// Base and Head are the frame's values on each side. A single profile
	// (Tree.Diff false) has only Head.
	Base, Head Value
	// Change is the relative change of the compared metric (Tree.Metric)
	// of a tested frame (P not NaN); +Inf when the frame is new. Other
	// frames show head/(Tree.Scale*base) - 1 of their values.
	Change float64
	// P and Q are the frame's p-value and adjusted p-value when its path
	// was tested, NaN otherwise; Significant says the change counts (it is
	// beyond the noise and at least the minimum change).
	P, Q        float64
	Significant bool
	// Note, when not empty, says why a tested frame is coloured as it is
	// where its function's verdict in the table could suggest otherwise
	// (a path of a regressed function that is within the noise alone).
	Note string
	// Others > 0 makes the node the sum of that many frames, each too
	// small to keep (see TreeBuilder.Tree).
	Others int
}

// Tree is a call tree for the flame graph: frames merged by the path of
// function names from the root.
type Tree struct {
	// Diff says the tree compares two sides; else it is one profile,
	// in Head.
	Diff bool
	// Unit is how values are shown: "share" (a fraction of the profile),
	// "ns" (nanoseconds), "x" (multiples of an anchor's time) or "bytes"
	// (an allocation profile's bytes per unit of work).
	Unit string
	// Metric is "self" or "total": what Change compares.
	Metric string
	// Scale is how much the rest of the profile moved between the sides
	// (the report's yardstick): a frame's change is head/(Scale*base) - 1.
	Scale float64
	// Marks holds the verdict on each function judged in the report
	// ("regressed", "improved", "new", "gone"), by name: its frames are
	// marked in the graph.
	Marks map[string]string
	// MinChange is the smallest relative change that counts (for the
	// legend).
	MinChange float64
	// Runs is the number of runs of the larger side: values are means
	// over runs.
	Runs int
	// Nodes in pre-order; Nodes[0] is the root, the whole profile.
	Nodes []Node
	// Pruned is the number of frames left out of Nodes: summed into
	// Others nodes, or dropped with their parent.
	Pruned int
}

// TreeBuilder merges stacks into a call tree. Add every stack, then
// Build; the tree is built by sorting the stacks, so that stacks sharing
// outer frames share nodes without a lookup per frame.
type TreeBuilder struct {
	names  []string
	nameID map[string]int32
	// Added stacks: path[off[i]:off[i+1]] is stack i, outermost first.
	path []int32
	off  []int
	side []uint8
	val  []float64
	// Built.
	nodes []bnode
	leaf  []int32 // by stack
	built bool
}

type bnode struct {
	name, parent int32
	self, total  [2]float64
}

// NewTreeBuilder returns a builder whose root is named root.
func NewTreeBuilder(root string) *TreeBuilder {
	b := &TreeBuilder{nameID: map[string]int32{}, off: []int{0}}
	b.Name(root)
	return b
}

// Name interns a function name for Add.
func (b *TreeBuilder) Name(s string) int32 {
	if id, ok := b.nameID[s]; ok {
		return id
	}
	id := int32(len(b.names))
	b.names = append(b.names, s)
	b.nameID[s] = id
	return id
}

// Add adds a stack: v on side sd (0 base, 1 head; a single profile uses
// 1) to every frame of path (interned names, outermost first) as total
// time, and to its last frame as self time. It returns the stack's index
// for Leaf.
func (b *TreeBuilder) Add(sd int, path []int32, v float64) int {
	b.path = append(b.path, path...)
	b.off = append(b.off, len(b.path))
	b.side = append(b.side, uint8(sd))
	b.val = append(b.val, v)
	return len(b.val) - 1
}

// Build merges the stacks added into the tree.
func (b *TreeBuilder) Build() {
	n := len(b.val)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	stack := func(i int32) []int32 { return b.path[b.off[i]:b.off[i+1]] }
	slices.SortFunc(order, func(x, y int32) int {
		if c := slices.Compare(stack(x), stack(y)); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	b.nodes = append(b.nodes[:0], bnode{name: 0, parent: -1})
	b.leaf = make([]int32, n)
	var cur []int32 // node of each frame of the previous stack
	var prev []int32
	for _, i := range order {
		p := stack(i)
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		cur = cur[:common]
		for _, name := range p[common:] {
			parent := int32(0)
			if len(cur) > 0 {
				parent = cur[len(cur)-1]
			}
			cur = append(cur, int32(len(b.nodes)))
			b.nodes = append(b.nodes, bnode{name: name, parent: parent})
		}
		prev = p
		sd, v := b.side[i], b.val[i]
		b.nodes[0].total[sd] += v
		for _, id := range cur {
			b.nodes[id].total[sd] += v
		}
		leaf := int32(0)
		if len(cur) > 0 {
			leaf = cur[len(cur)-1]
		}
		b.nodes[leaf].self[sd] += v
		b.leaf[i] = leaf
	}
	b.built = true
}

// Leaf returns the node of the last frame of stack i (the root for an
// empty stack).
func (b *TreeBuilder) Leaf(i int) int32 { return b.leaf[i] }

// Len returns the number of nodes, the root included.
func (b *TreeBuilder) Len() int { return len(b.nodes) }

// NameOf returns the function name of node id.
func (b *TreeBuilder) NameOf(id int32) string { return b.names[b.nodes[id].name] }

// Parent returns the parent of node id, -1 for the root.
func (b *TreeBuilder) Parent(id int32) int32 { return b.nodes[id].parent }

// Values returns the values of node id on each side.
func (b *TreeBuilder) Values(id int32) (base, head Value) {
	n := &b.nodes[id]
	return Value{n.self[0], n.total[0]}, Value{n.self[1], n.total[1]}
}

// Tree returns the call tree in pre-order, siblings largest first. At most
// about maxNodes frames are kept, the largest (by total time on either
// side); the smaller children of a frame are summed into one node whose
// Others counts them, when that sum is as large as a kept frame (smaller
// sums are left out, a gap beside the frame's children). A kept frame's
// parent is always kept, as it is at least as large. fill, when not nil, sets the
// statistics of each kept node from its builder node id.
func (b *TreeBuilder) Tree(maxNodes int, fill func(id int32, n *Node)) *Tree {
	if !b.built {
		b.Build()
	}
	weight := func(i int) float64 { return math.Max(b.nodes[i].total[0], b.nodes[i].total[1]) }
	threshold := math.Inf(-1)
	if maxNodes > 0 && len(b.nodes) > maxNodes {
		w := make([]float64, len(b.nodes))
		for i := range w {
			w[i] = weight(i)
		}
		sort.Float64s(w)
		threshold = w[len(w)-maxNodes]
		if threshold <= 0 {
			threshold = math.SmallestNonzeroFloat64
		}
	}
	kept := func(i int) bool { return i == 0 || weight(i) >= threshold }
	children := make([][]int32, len(b.nodes))
	other := make([]Node, len(b.nodes)) // summed pruned children, by parent
	t := &Tree{}
	for i := 1; i < len(b.nodes); i++ {
		p := b.nodes[i].parent
		if kept(i) && kept(int(p)) {
			children[p] = append(children[p], int32(i))
			continue
		}
		t.Pruned++
		if !kept(int(p)) {
			continue // dropped with its parent
		}
		o := &other[p]
		o.Others++
		o.Base.Total += b.nodes[i].total[0]
		o.Head.Total += b.nodes[i].total[1]
	}
	for i := range children {
		cs := children[i]
		sort.Slice(cs, func(x, y int) bool {
			wx, wy := weight(int(cs[x])), weight(int(cs[y]))
			if wx != wy {
				return wx > wy
			}
			return b.names[b.nodes[cs[x]].name] < b.names[b.nodes[cs[y]].name]
		})
	}
	type item struct {
		id    int32 // -1: the Others node of parent
		par   int32
		depth int
	}
	stack := []item{{0, -1, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.id < 0 {
			o := other[it.par]
			o.Name = "…"
			o.Depth = it.depth
			o.Change, o.P, o.Q = math.NaN(), math.NaN(), math.NaN()
			t.Nodes = append(t.Nodes, o)
			continue
		}
		n := Node{Name: b.names[b.nodes[it.id].name], Depth: it.depth, Change: math.NaN(), P: math.NaN(), Q: math.NaN()}
		n.Base, n.Head = b.Values(it.id)
		if fill != nil {
			fill(it.id, &n)
		}
		t.Nodes = append(t.Nodes, n)
		// Pushed in reverse: popped largest first, the Others node last.
		// Others too small to be kept themselves are left out: their
		// time shows as a gap, as self time does.
		if o := &other[it.id]; o.Others > 0 && math.Max(o.Base.Total, o.Head.Total) >= threshold {
			stack = append(stack, item{-1, it.id, it.depth + 1})
		}
		cs := children[it.id]
		for j := len(cs) - 1; j >= 0; j-- {
			stack = append(stack, item{cs[j], it.id, it.depth + 1})
		}
	}
	return t
}
