package samplercheck

import (
	"strings"
	"sync/atomic"
)

// The workload: functions of different instruction mixes, none inlined
// into the loop that times them. The sampler study of internal/perfexec
// runs them too.

var sink atomic.Uint64

// square is inlined into ALU.
func square(x uint64) uint64 { return x*x ^ x>>3 }

// ALU is a multiply-add loop of n rounds with an inlined callee.
//
//go:noinline
func ALU(n int) uint64 {
	var s uint64
	for i := range n {
		s += square(uint64(i) + s&7)
	}
	return s
}

// leaf has no frame: a frame-pointer walk from it skips its caller.
//
//go:noinline
func leaf(x uint64) uint64 { return x*x + 1 }

// CallsLeaf calls a frameless leaf n times.
//
//go:noinline
func CallsLeaf(n int) uint64 {
	var s uint64
	for i := range n {
		s += leaf(uint64(i) ^ s)
	}
	return s
}

// Divide is a chain of n 64-bit divisions.
//
//go:noinline
func Divide(n int) uint64 {
	s := uint64(1<<63 - 25)
	for i := range n {
		s = s/uint64(i|3) + s%uint64(i|7) + uint64(1<<62)
	}
	return s
}

// Acc is the handoff goroutine's work: Add.
type Acc struct{ V uint64 }

// Add runs n rounds of a dependent multiply-xor chain.
//
//go:noinline
func (a *Acc) Add(n int) {
	for i := range n {
		a.V += uint64(i*i) ^ a.V>>5
	}
}

// GroupOf is the timed function a frame of the workload belongs to (by its
// function's name as runtime/pprof and FuncForPC give it: an inlined or
// frameless callee is its caller's): "alu", "callsleaf", "divide", "add",
// or "" for any other function.
func GroupOf(name string) string {
	if !strings.Contains(name, "internal/samplercheck.") {
		return ""
	}
	switch name[strings.LastIndexByte(name, '.')+1:] {
	case "ALU", "square":
		return "alu"
	case "CallsLeaf", "leaf":
		return "callsleaf"
	case "Divide":
		return "divide"
	case "Add":
		return "add"
	}
	return ""
}
