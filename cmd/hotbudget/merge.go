package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

const mergeUsage = `Usage: hotbudget merge [flags] DIR...

Judges the shards of one record as one: each DIR is the --out of a
'hotbudget record --shard K/N' (shard.json says which), and every shard
1..N must be there, each once. merge rebuilds what an unsharded record
would hold (every benchmark's profiles, the benchmark output in record's
order, the allocations per op, the counted instructions) and judges it
exactly as record does, with the flags the shards were recorded with: one
false-discovery control over the benchmarks of every shard, so the
verdicts are those of one record of them all. It prints record's report
and exits with record's status.

The shards must agree on everything that decides what was measured and
how it is judged: the revisions (their commits), the packages, the list of
benchmarks found, and every flag but --shard, --out, --keep and --budget
(each shard fits its own runs into --budget). merge needs neither the
repository nor Go.

Exit status: 0 nothing regressed, 1 a function or a benchmark regressed, 2
usage or input error (a shard missing, shards that disagree).

Examples:

	hotbudget merge perf-1 perf-2 perf-3 perf-4
	hotbudget merge --format markdown --html report.html shards/*
`

func (c *cli) merge(args []string) int {
	fs := c.flagSet("merge", mergeUsage)
	format := newChoice("text", "text", "markdown", "json")
	fs.Var(format, "format", "output `text|markdown|json`")
	full := fs.Bool("full", false, "print every function's and every benchmark result's table in the text report and the Markdown comment")
	html := fs.String("html", "", "also write the functions' HTML report (flame graph, explanations) to `file`")
	allocsHTML := fs.String("allocs-html", "", "also write the allocations' HTML report of the first benchmark whose allocations regressed, else the first, to `file`")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return c.usageErr("merge", "want the --out directories of the shards (hotbudget record --shard K/N --out DIR)")
	}
	t0 := time.Now()
	res, rc, err := gate.LoadShards(pos, func(s *gate.ShardSettings, base, head string, k, n int) (gate.Config, *recordCmd, error) {
		rc, err := c.shardRecordCmd(s, base, head, k, n)
		if err != nil {
			return gate.Config{}, nil, err
		}
		return rc.o, rc, nil
	})
	if err != nil {
		return c.inputErr("merge", err)
	}
	rc.format, rc.o.Full, rc.o.HTML, rc.o.AllocsHTML = format, *full, *html, *allocsHTML
	base, head := res.Revisions()
	fmt.Fprintf(c.stderr, "hotbudget merge: %s of %s -> %s: %s compared at both revisions, read in %s\n", textfmt.Plural(len(pos), "shard", "shards"),
		textfmt.Line(base), textfmt.Line(head), textfmt.Plural(res.Runs(), "benchmark", "benchmarks"), time.Since(t0).Round(100*time.Millisecond))
	return c.judgeRecord("merge", res, rc)
}

// parseArgs parses args, flags and positional arguments in any order, as
// cli.parse does, without printing.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
