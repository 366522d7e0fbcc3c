// Command gen writes the real Go CPU profiles under testdata/regress: five
// runs of a program before and after a change that makes one function,
// main.renderReport, do 20% more work. Run it from the repository root:
//
//	go run ./testdata/regress/gen testdata/regress
//
// Each run does the same fixed work, so the runs differ only by the noise
// of a real machine; base and head runs are interleaved, in an order that
// changes from round to round, so that drifts in machine speed hit both
// sides alike. The three functions run the same loop, so a busy machine
// slows them alike; they differ in how much of it they run. Profiles are
// taken at 250 Hz, the most this machine's kernel timer delivers.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

//go:noinline
func parseRecords(n int) int {
	s := 1
	for i := 0; i < n; i++ {
		s = s*1664525 + 1013904223 ^ i
	}
	return s
}

// renderReport runs rounds times the work: 5 in base, 6 in head.
//
//go:noinline
func renderReport(n, rounds int) int {
	s := 1
	for i := 0; i < n*rounds; i++ {
		s = s*1664525 + 1013904223 ^ i
	}
	return s
}

//go:noinline
func writeLog(n int) int {
	s := 1
	for i := 0; i < n; i++ {
		s = s*1664525 + 1013904223 ^ i
	}
	return s
}

func run(path string, rounds int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.SetCPUProfileRate(250)
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	s := 0
	for k := 0; k < 400; k++ {
		s += parseRecords(2_000_000)
		s += renderReport(800_000, rounds)
		s += writeLog(1_000_000)
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
	type side struct {
		name   string
		rounds int
	}
	base, head := side{"base", 5}, side{"head", 6}
	for i := 1; i <= 5; i++ {
		order := []side{base, head}
		if i%2 == 0 {
			order = []side{head, base}
		}
		for _, sd := range order {
			path := filepath.Join(os.Args[1], fmt.Sprintf("%s-%d.pb.gz", sd.name, i))
			if err := run(path, sd.rounds); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
}
