// Command gen writes testdata/pprof/busy.pb.gz: a real Go CPU profile of a
// program with a known shape. Run it from the repository root:
//
//	go run ./testdata/pprof/gen testdata/pprof/busy.pb.gz
//
// parseRecords spends about twice as long as renderReport, and hashBlock is
// called from both, so self and total differ in a way tests can check.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var sink [32]byte

//go:noinline
func hashBlock(b []byte) {
	for i := 0; i < 200; i++ {
		sink = sha256.Sum256(b)
	}
}

//go:noinline
func parseRecords(n int) int {
	s := 0
	buf := make([]byte, 256)
	for i := 0; i < n; i++ {
		for j := range buf {
			buf[j] = byte(i + j)
			s += int(buf[j]) * j
		}
		if i%64 == 0 {
			hashBlock(buf)
		}
	}
	return s
}

//go:noinline
func renderReport(n int) int {
	s := 0
	buf := make([]byte, 256)
	for i := 0; i < n; i++ {
		for j := range buf {
			s ^= int(buf[j]) + i*j
		}
		if i%64 == 0 {
			hashBlock(buf)
		}
	}
	return s
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	s := 0
	for time.Now().Before(deadline) {
		s += parseRecords(20000)
		s += renderReport(10000)
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(s != 0)
}
