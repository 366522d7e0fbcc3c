package callgrind

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Frame is one function of the code at an instruction address: its name as
// a profile prints it and its source file.
type Frame struct {
	Func, File string
}

// Symbolizer returns the functions of the code at an instruction address:
// the function the code was compiled into first, then the functions inlined
// into it down to the innermost; ok is false for an address it does not
// know. It is called once per address.
type Symbolizer func(addr uint64) (frames []Frame, ok bool)

// ParseByAddress reads a callgrind file written with --dump-instr=yes (the
// first subposition is the instruction address) as Parse does, but keys the
// cost of every cost line by the address it names, through sym, instead of
// by the fn= line above it: the self cost of an address goes to the
// innermost function sym returns for it, a call to the function at the
// call's target address from the function at the call's address. That is
// how the exact instrument reads its own dumps: callgrind names the
// functions of a binary without a symbol table (go test's) by address, and
// never names a function inlined into another, while the program's own
// line table knows both.
//
// The code of a function inlined into another (a chain of frames longer
// than one) is a function of its own, called by the function it was
// inlined into: its self cost is exact, and its total holds the calls it
// makes, as a sampling profiler's stacks with inlined frames would show
// them. A call between addresses of one compiled function (a recursion, or
// a jump that callgrind took as a call) is left out: its cost is already
// that function's self cost and its other calls. Addresses sym does not
// know keep the function their fn= line names.
func ParseByAddress(r io.Reader, o pbuild.Options, sym Symbolizer) (*profile.Profile, error) {
	if sym == nil {
		return nil, errors.New("callgrind: ParseByAddress without a symbolizer")
	}
	return parse(r, o, &addrMode{sym: sym, nodeAt: map[uint64]int32{}, instr: -1, target: -1, block: -1})
}

// addrMode is the state of ParseByAddress.
type addrMode struct {
	sym    Symbolizer
	nodeAt map[uint64]int32 // by address; -1: unknown to sym
	instr  int              // index of the instr subposition; -1: none
	target int32            // node of the pending calls= line's target; -1: none
	// block is the node of the compiled function the current fn= block
	// is callgrind's function for (-1: not known yet): code of another
	// function in the block was jumped to, not called, and is that
	// function's callee.
	block int32
}

// chainKey is the fn of the node of a chain of frames: their names joined
// by a byte no name holds, so that a function inlined into two others is
// two nodes.
func chainKey(frames []Frame) string {
	var b strings.Builder
	for i, f := range frames {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(f.Func)
	}
	return b.String()
}

// addrNode returns the node of the code at addr (-1 when sym does not know
// it), making the nodes of its chain of frames on first use.
func (ps *parser) addrNode(addr uint64) (int32, error) {
	am := ps.addr
	if id, ok := am.nodeAt[addr]; ok {
		return id, nil
	}
	if err := ps.charge(membudget.Other, 1, 48); err != nil {
		return -1, err
	}
	frames, ok := am.sym(addr)
	id := int32(-1)
	if ok && len(frames) > 0 {
		parent := int32(-1)
		for i := range frames {
			f := frames[i]
			key, err := ps.str([]byte(chainKey(frames[:i+1])))
			if err != nil {
				return -1, err
			}
			name, err := ps.str([]byte(f.Func))
			if err != nil {
				return -1, err
			}
			phys, err := ps.str([]byte(frames[0].Func))
			if err != nil {
				return -1, err
			}
			if id, err = ps.nodeID(f.File, key, ps.obj); err != nil {
				return -1, err
			}
			nd := &ps.nodes[id]
			nd.name, nd.phys, nd.parent = name, phys, parent
			parent = id
		}
	}
	am.nodeAt[addr] = id
	return id, nil
}

// addrCost charges one cost line in address mode: to the node of the
// address (or cur), as self cost or, after a calls= line, as the call's
// inclusive cost; and to the inline arcs of the chain above that node.
func (ps *parser) addrCost(g *group, call bool) error {
	am := ps.addr
	n := ps.cur
	if am.instr >= 0 && am.instr < len(ps.pos) {
		id, err := ps.addrNode(uint64(ps.pos[am.instr]))
		if err != nil {
			return err
		}
		if id >= 0 {
			n = id
		}
	}
	if n >= 0 && ps.nodes[n].phys != "" {
		root := n
		for ps.nodes[root].parent >= 0 {
			root = ps.nodes[root].parent
		}
		if am.block < 0 {
			am.block = root
		} else if am.block != root {
			if err := ps.addInline(g, arcKey{am.block, root}); err != nil {
				return err
			}
		}
	}
	if call {
		to := am.target
		if to < 0 {
			to = ps.callee
		}
		am.target = -1
		if ps.nodes[n].phys != "" && ps.physRoot(n) == ps.physRoot(to) {
			return nil // within one compiled function
		}
		if err := ps.addArc(g, arcKey{n, to}); err != nil {
			return err
		}
	} else if err := ps.addSelf(g, n); err != nil {
		return err
	}
	for c := n; ps.nodes[c].parent >= 0; c = ps.nodes[c].parent {
		if err := ps.addInline(g, arcKey{ps.nodes[c].parent, c}); err != nil {
			return err
		}
	}
	return nil
}

// blockStart notes the function of an fn= line: callgrind names a function
// of a binary without symbols by an address in it ("0x00000000004dd960");
// other names leave it to the block's first cost line.
func (ps *parser) blockStart(name string) error {
	am := ps.addr
	am.block = -1
	if v, err := strconv.ParseUint(strings.TrimPrefix(name, "0x"), 16, 64); err == nil && strings.HasPrefix(name, "0x") {
		id, err := ps.addrNode(v)
		if err != nil {
			return err
		}
		if id >= 0 {
			for ps.nodes[id].parent >= 0 {
				id = ps.nodes[id].parent
			}
			am.block = id
		}
	}
	return nil
}

// callTarget notes the node of a calls= line's target address, f its
// subpositions, relative to the last cost line's.
func (ps *parser) callTarget(f [][]byte) error {
	am := ps.addr
	am.target = -1
	if am.instr < 0 || am.instr >= len(f) {
		return nil
	}
	v, err := ps.subposition(am.instr, f[am.instr])
	if err != nil {
		return fmt.Errorf("calls=: target %w", err)
	}
	am.target, err = ps.addrNode(uint64(v))
	return err
}

// physRoot returns the node of the compiled function the code of node n
// is in: the outermost frame of its chain, keyed by file and name, so that
// an ABI wrapper (runtime.schedinit in <autogenerated>, which jumps to or
// calls runtime.schedinit in proc.go) is a function of its own.
func (ps *parser) physRoot(n int32) int32 {
	for n >= 0 && ps.nodes[n].parent >= 0 {
		n = ps.nodes[n].parent
	}
	return n
}
