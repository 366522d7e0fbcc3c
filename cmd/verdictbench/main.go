// Command verdictbench runs hotbudget's verdict-accuracy benchmark on the
// real recordings under testdata/verdict and prints its tables: how often
// the gate fails on identical runs (one profile a side, 5 vs 5), whether
// it names a real one-function change and nothing else, whether it sees a
// whole program made ~15% slower, and its power and false-alarm rate on
// regressions injected into real runs. Run it from the repository root:
//
//	go run ./cmd/verdictbench [-quick] [-alpha 0.05] [-sets REGEXP] [-format markdown|text]
//
// Every draw is seeded (-seed): the same data and engine give the same
// tables. The full run takes a few minutes of CPU on two cores; -quick is
// the version the tests run.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"

	"github.com/hotbudget/hotbudget/cmd/verdictbench/internal/bench"
)

func main() {
	var cfg bench.Config
	flag.StringVar(&cfg.Data, "data", "testdata/verdict", "directory of the recordings")
	flag.StringVar(&cfg.Regress, "regress", "testdata/regress", "directory of testdata/regress (\"\" to leave it out)")
	flag.Float64Var(&cfg.Alpha, "alpha", 0.05, "false-discovery rate of the comparisons")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of every draw")
	flag.BoolVar(&cfg.Quick, "quick", false, "run the small version the tests run")
	flag.IntVar(&cfg.Draws, "draws", 0, "draws per injection cell with 1 and 3 runs a side, half as many with 5 and 10 (default 100, quick 80)")
	flag.IntVar(&cfg.Workers, "j", 0, "comparisons run in parallel (default GOMAXPROCS)")
	sets := flag.String("sets", "", "run only the sets whose key (a table's first column) matches this regular expression")
	format := flag.String("format", "text", "output format: text or markdown")
	verbose := flag.Bool("v", false, "print progress to standard error")
	flag.Parse()
	if *format != "text" && *format != "markdown" {
		fmt.Fprintf(os.Stderr, "verdictbench: unknown format %q (want text or markdown)\n", *format)
		os.Exit(2)
	}
	if *sets != "" {
		re, err := regexp.Compile(*sets)
		if err != nil {
			fmt.Fprintf(os.Stderr, "verdictbench: -sets: %v\n", err)
			os.Exit(2)
		}
		cfg.Sets = re
	}
	if *verbose {
		cfg.Progress = os.Stderr
	}
	res, err := bench.Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "verdictbench:", err)
		os.Exit(1)
	}
	if err := res.Print(*format); err != nil {
		fmt.Fprintln(os.Stderr, "verdictbench:", err)
		os.Exit(1)
	}
}
