// Package threadprof profiles one OS thread with the Linux cpu-clock perf
// event (internal/perfevent) and symbolises its samples as runtime/pprof
// does: runtime.CallersFrames, inlined frames expanded, one location per
// program counter, and the caller of a frameless leaf put back where the
// frame-pointer walk missed it. perfassert's Capture and the verdict
// benchmark's Go workloads (testdata/verdict/gen/gorun) both use it.
package threadprof

import (
	"cmp"
	"encoding/binary"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/perfevent"
)

// Symbolizer turns the program counters of perf samples into profile
// locations, as runtime/pprof does: runtime.CallersFrames, inlined frames
// expanded, one location per program counter.
type Symbolizer struct {
	locs  map[uint64]*profile.Location // by pc<<1 | leaf
	funcs map[string]*profile.Function
	nLoc  uint64
}

// NewSymbolizer returns an empty Symbolizer.
func NewSymbolizer() *Symbolizer {
	return &Symbolizer{locs: map[uint64]*profile.Location{}, funcs: map[string]*profile.Function{}}
}

// Stack returns the locations of a callchain, innermost first.
// Callchain[0] is the interrupted instruction, the others return addresses
// (CallersFrames takes return addresses: the leaf is passed as pc+1). A
// caller the frame-pointer walk missed (perfevent.Sample.LeafRet) is put
// back when the instruction before it calls the leaf's function.
func (y *Symbolizer) Stack(s *perfevent.Sample, dst []*profile.Location) []*profile.Location {
	dst = dst[:0]
	for i, pc := range s.Callchain {
		dst = append(dst, y.loc(pc, i == 0))
		if i == 0 && s.LeafRet != 0 && (len(s.Callchain) < 2 || s.Callchain[1] != s.LeafRet) && callsFunc(s.LeafRet, pc) {
			dst = append(dst, y.loc(s.LeafRet, false))
		}
	}
	return dst
}

func (y *Symbolizer) loc(pc uint64, leaf bool) *profile.Location {
	key := pc << 1
	if leaf {
		key |= 1
	}
	if l := y.locs[key]; l != nil {
		return l
	}
	y.nLoc++
	l := &profile.Location{ID: y.nLoc, Address: pc}
	look := uintptr(pc)
	if leaf {
		look++
	}
	// CallersFrames expands the functions inlined at a program counter
	// only while more program counters follow it: a sentinel (a PC of a
	// function of its own) follows, whose frame ends the list.
	frames := runtime.CallersFrames([]uintptr{look, sentinelPC})
	for {
		fr, more := frames.Next()
		if fr.Entry == sentinelEntry {
			break
		}
		if fr.Function != "" {
			l.Line = append(l.Line, profile.Line{Function: y.fn(fr), Line: int64(fr.Line)})
		}
		if !more {
			break
		}
	}
	y.locs[key] = l
	return l
}

// symbolSentinel is never called: its code ends the program counters given
// to runtime.CallersFrames.
//
//go:noinline
func symbolSentinel() { sentinelSink.Add(1) }

var (
	sentinelSink  atomic.Uint64
	sentinelEntry = reflect.ValueOf(symbolSentinel).Pointer()
	sentinelPC    = sentinelEntry + 1
)

func (y *Symbolizer) fn(fr runtime.Frame) *profile.Function {
	if f := y.funcs[fr.Function]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(y.funcs) + 1), Name: fr.Function, SystemName: fr.Function, Filename: fr.File}
	y.funcs[fr.Function] = f
	return f
}

// callsFunc reports whether ret is the return address of a call to the
// function holding pc: on amd64 a direct CALL (E8 rel32) to its entry or
// an indirect call through a register, on arm64 a BL to its entry or a
// BLR. It reads the program's own text, which ret points into.
func callsFunc(ret, pc uint64) bool {
	caller := runtime.FuncForPC(uintptr(ret) - 1)
	callee := runtime.FuncForPC(uintptr(pc))
	if caller == nil || callee == nil {
		return false
	}
	entry := uint64(caller.Entry())
	code := func(back uint64) []byte {
		if ret-back < entry {
			return nil
		}
		return codeAt(uintptr(ret-back), int(back))
	}
	switch runtime.GOARCH {
	case "amd64":
		if b := code(5); b != nil && b[0] == 0xE8 {
			rel := int32(binary.LittleEndian.Uint32(b[1:]))
			return uint64(int64(ret)+int64(rel)) == uint64(callee.Entry())
		}
		if b := code(2); b != nil && b[0] == 0xFF && b[1]&0xF8 == 0xD0 { // CALL reg
			return true
		}
		if b := code(3); b != nil && b[0] == 0x41 && b[1] == 0xFF && b[2]&0xF8 == 0xD0 { // CALL r8-r15
			return true
		}
	case "arm64":
		if b := code(4); b != nil {
			ins := binary.LittleEndian.Uint32(b)
			if ins&0xFC000000 == 0x94000000 { // BL imm26
				off := int64(int32(ins<<6)>>6) * 4
				return uint64(int64(ret)-4+off) == uint64(callee.Entry())
			}
			return ins&0xFFFFFC1F == 0xD63F0000 // BLR reg
		}
	}
	return false
}

// codeAt returns n bytes of the program's text at addr, which must lie
// inside a function's code (read only).
func codeAt(addr uintptr, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// Locations returns the locations made so far, by ID.
func (y *Symbolizer) Locations() []*profile.Location {
	out := make([]*profile.Location, 0, len(y.locs))
	for _, l := range y.locs {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *profile.Location) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Functions returns the functions named so far, by ID.
func (y *Symbolizer) Functions() []*profile.Function {
	out := make([]*profile.Function, 0, len(y.funcs))
	for _, f := range y.funcs {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *profile.Function) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
