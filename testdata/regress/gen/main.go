// Command gen writes the real Go CPU profiles under testdata/regress: five
// runs of a program before and after a change that makes one function,
// renderReport, about 20% slower. Run it from the repository root:
//
//	go run ./testdata/regress/gen testdata/regress
//
// Each run does the same fixed work (no time limit), so the runs differ only
// by the noise of a real machine; base and head runs are interleaved so
// that drifts in machine speed hit both sides alike.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
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

// renderReport's inner loop runs rounds times per row: 5 in base, 6 in head
// (20% more work in its own code).
//
//go:noinline
func renderReport(n, rounds int) int {
	s := 0
	buf := make([]byte, 256)
	for i := 0; i < n; i++ {
		for r := 0; r < rounds; r++ {
			for j := range buf {
				s ^= int(buf[j]) + i*j + r
			}
		}
	}
	return s
}

func run(path string, rounds int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	s := 0
	for k := 0; k < 15; k++ {
		s += parseRecords(20000)
		s += renderReport(25000, rounds)
	}
	pprof.StopCPUProfile()
	if s == 42 {
		fmt.Println(s)
	}
	return f.Close()
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	for i := 1; i <= 5; i++ {
		for _, side := range []struct {
			name   string
			rounds int
		}{{"base", 5}, {"head", 6}} {
			path := filepath.Join(os.Args[1], fmt.Sprintf("%s-%d.pb.gz", side.name, i))
			if err := run(path, side.rounds); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
}
