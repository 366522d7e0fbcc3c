// Command heapgen writes a real Go heap or allocation profile of a program
// whose allocations have a known shape; the tests build and run it (see
// testdata/heap/README.md), and it wrote testdata/heap/heap.pb.gz:
//
//	go run -trimpath ./testdata/heap/gen -profile heap testdata/heap/heap.pb.gz
//
// newRecord allocates a 48-byte record per call and keeps a quarter of them,
// encode a 256-byte buffer per call and keeps none, and tree recurses,
// allocating 32-byte nodes at every level, so that a function's total and
// its self differ and recursion counts once per stack. -extra makes
// encode allocate one more 128-byte buffer per call: the one-function
// allocation change the diff tests look for. -rate 0 keeps the runtime's
// default rate (one sample per 512 KiB on average); -rate 1 records every
// allocation.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

type record struct {
	id, a, b, c, d, e int64
}

var (
	kept  []*record
	sinkB []byte
	sinkN *node
	extra = flag.Bool("extra", false, "encode allocates one more buffer per call")
)

//go:noinline
func newRecord(i int) *record {
	r := &record{id: int64(i)}
	if i%4 == 0 {
		kept = append(kept, r)
	}
	return r
}

//go:noinline
func encode(r *record) []byte {
	b := make([]byte, 256)
	b[0] = byte(r.id)
	if *extra {
		x := make([]byte, 128)
		x[0] = b[0]
		sinkB = x
	}
	return b
}

type node struct {
	left, right *node
	v           int64
	pad         int64
}

//go:noinline
func tree(depth int) *node {
	if depth == 0 {
		return nil
	}
	return &node{left: tree(depth - 1), v: int64(depth)}
}

//go:noinline
func work(n int) {
	for i := 0; i < n; i++ {
		r := newRecord(i)
		sinkB = encode(r)
		if i%8 == 0 {
			sinkN = tree(6)
		}
	}
}

func main() {
	kind := flag.String("profile", "heap", "heap or allocs")
	rate := flag.Int("rate", 0, "runtime.MemProfileRate; 0 keeps the default")
	n := flag.Int("n", 200000, "records")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: heapgen [-profile heap|allocs] [-rate N] [-n N] [-extra] OUT")
		os.Exit(2)
	}
	if *rate != 0 {
		runtime.MemProfileRate = *rate
	}
	work(*n)
	runtime.GC() // the heap profile is as of the last GC
	f, err := os.Create(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.Lookup(*kind).WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
