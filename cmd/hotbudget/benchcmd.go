package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/ghactions"
	"github.com/hotbudget/hotbudget/diff"
)

const benchUsage = `Usage: hotbudget bench [flags] OLD NEW

Compares two 'go test -bench' outputs (several -count runs per benchmark)
with the verdict engine of 'hotbudget diff': a Mann-Whitney U test per
benchmark and unit, the false-discovery rate held across them, and a
minimum change. Lower is better for every unit but throughput (B/s).

Benchmarks are told apart as benchstat tells them apart: by full name and
by the configuration 'go test' prints before them (pkg, goos, goarch, cpu),
so 'go test ./... -bench .' output of packages with benchmarks of the same
name compares each package's own. --ignore drops keys from that, as
benchstat's -ignore does (e.g. --ignore cpu when the sides ran on different
machines).

Exit status: 0 nothing regressed, 1 something regressed, 2 usage or input
error.

Examples:

	go test ./... -run '^$' -bench . -count 10 > old.txt   # on the base branch
	go test ./... -run '^$' -bench . -count 10 > new.txt   # on the pull request
	hotbudget bench old.txt new.txt
	hotbudget bench --format markdown --min-change 5% old.txt new.txt
	hotbudget bench --ignore cpu laptop.txt ci.txt

'hotbudget record' builds and runs two git revisions' benchmarks itself,
interleaved, and judges their CPU profiles too.
`

// benchAssumeUsage documents bench's --assume, whose default cannot do
// what the word says for diff: benchmarks give no family to learn noise
// from (bench.Settings.Assume).
const benchAssumeUsage = "test for several runs a side: `model|nothing|normal` (model, the default, and nothing: Mann-Whitney U per benchmark as benchstat, since benchmarks give no family of functions to learn noise from, and the report says so; normal: Welch's t-test per benchmark)"

func (c *cli) bench(args []string) int {
	fs := c.flagSet("bench", benchUsage)
	format := newChoice("text", "text", "markdown", "json")
	fs.Var(format, "format", "output `text|markdown|json`")
	alpha := fs.Float64("alpha", bench.DefaultSettings().Alpha, "false-discovery `rate` across benchmarks")
	assume := newChoice(string(bench.DefaultSettings().Assume), string(diff.AssumeModel), string(diff.AssumeNothing), string(diff.AssumeNormal))
	fs.Var(assume, "assume", benchAssumeUsage)
	minChange := fs.String("min-change", fmt.Sprintf("%g%%", 100*bench.DefaultSettings().MinRelative), "smallest relative `change` that counts")
	ignore := fs.String("ignore", "", "comma-separated configuration `keys` not to tell benchmarks apart by (cpu, goos, /gomaxprocs; benchstat's -ignore)")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 2 {
		return c.usageErr("bench", "want OLD and NEW, got %d arguments", len(pos))
	}
	var opts []bench.Option
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["alpha"] {
		if !(*alpha > 0 && *alpha < 1) {
			return c.usageErr("bench", "--alpha must be between 0 and 1, got %v", *alpha)
		}
		opts = append(opts, bench.WithAlpha(*alpha))
	}
	if set["assume"] {
		opts = append(opts, bench.WithAssumption(diff.Assumption(assume.value)))
	}
	if set["min-change"] {
		rel, err := parsePercent(*minChange)
		if err != nil {
			return c.usageErr("bench", "--min-change: %v", err)
		}
		opts = append(opts, bench.WithMinChange(rel))
	}
	if *ignore != "" {
		var keys []string
		for _, k := range strings.Split(*ignore, ",") {
			if k = strings.TrimSpace(k); k != "" {
				keys = append(keys, k)
			}
		}
		opts = append(opts, bench.WithIgnore(keys...))
	}
	files := make([]io.Reader, 2)
	for i, p := range pos {
		data, err := os.ReadFile(p)
		if err != nil {
			return c.inputErr("bench", err)
		}
		files[i] = bytes.NewReader(data)
	}
	rep, err := bench.Compare(files[0], files[1], opts...)
	if err != nil {
		return c.inputErr("bench", fmt.Errorf("%s vs %s: %w", pos[0], pos[1], err))
	}
	gate.BenchWords(rep)
	switch format.value {
	case "json":
		err = rep.Write(c.stdout, "json")
	case "markdown":
		err = rep.Write(c.stdout, "markdown")
	default:
		err = rep.Write(c.stdout, "text")
	}
	if err != nil {
		return c.inputErr("bench", err)
	}
	if err := c.github().Report(func(w *bytes.Buffer) error { return rep.Write(w, "markdown") }, ghactions.OfBench("bench", rep)); err != nil {
		return c.inputErr("bench", err)
	}
	if rep.Failed() {
		return exitFail
	}
	return exitOK
}

// benchOptions are the bench options of the comparison flags that were
// set (record judges its benchmark output with them): --alpha, --assume
// and --min-change's relative change. The others say how functions are
// judged; d.options has checked every value.
func (d *diffFlags) benchOptions(fs *flag.FlagSet) ([]bench.Option, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var opts []bench.Option
	if set["alpha"] {
		opts = append(opts, bench.WithAlpha(d.alpha))
	}
	if set["assume"] {
		opts = append(opts, bench.WithAssumption(diff.Assumption(d.assume.value)))
	}
	if set["min-change"] {
		rel, err := parsePercent(d.minChange)
		if err != nil {
			return nil, fmt.Errorf("--min-change: %w", err)
		}
		opts = append(opts, bench.WithMinChange(rel))
	}
	return opts, nil
}
