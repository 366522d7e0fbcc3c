package samplercheck

import "sync/atomic"

// The workload. Each function has a different instruction mix; none is
// inlined into the loop that times it.

var sink atomic.Uint64

// square is inlined into alu.
func square(x uint64) uint64 { return x*x ^ x>>3 }

//go:noinline
func alu(n int) uint64 {
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

//go:noinline
func callsLeaf(n int) uint64 {
	var s uint64
	for i := range n {
		s += leaf(uint64(i) ^ s)
	}
	return s
}

//go:noinline
func divide(n int) uint64 {
	s := uint64(1<<63 - 25)
	for i := range n {
		s = s/uint64(i|3) + s%uint64(i|7) + uint64(1<<62)
	}
	return s
}

// acc is the handoff goroutine's work.
type acc struct{ v uint64 }

//go:noinline
func (a *acc) add(n int) {
	for i := range n {
		a.v += uint64(i*i) ^ a.v>>5
	}
}
