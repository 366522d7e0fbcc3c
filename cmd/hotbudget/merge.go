package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
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
	res, rc, err := c.loadShards(pos)
	if err != nil {
		return c.inputErr("merge", err)
	}
	rc.format, rc.o.full, rc.o.html, rc.o.allocsHTML = format, *full, *html, *allocsHTML
	progress := func(format string, args ...any) {
		fmt.Fprintf(c.stderr, "hotbudget merge: "+format+"\n", args...)
	}
	n := len(res.pairs)
	if rc.o.instructions {
		n = len(res.exact)
	}
	progress("%s of %s -> %s: %s compared at both revisions, read in %s", plural(len(pos), "shard", "shards"),
		textfmt.Line(res.baseRev.String()), textfmt.Line(res.headRev.String()), plural(n, "benchmark", "benchmarks"), since(t0))
	return c.judgeRecord("merge", res, rc, progress)
}

// shardIn is one shard read: its directory, shard.json and the command line
// it was recorded with.
type shardIn struct {
	dir string
	f   shardFile
	rc  *recordCmd
}

// mergeIgnored are the record flags shards may differ in: where and how
// long they ran, not what they measured or how it is judged (and the
// report's, which merge takes itself).
var mergeIgnored = []string{"shard", "out", "keep", "budget", "format", "full", "html", "allocs-html"}

// readShard reads dir/shard.json and parses the command line it holds.
func (c *cli) readShard(dir string) (*shardIn, error) {
	path := filepath.Join(dir, shardManifest)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no %s: merge reads the --out of hotbudget record --shard K/N", dir, shardManifest)
		}
		return nil, err
	}
	in := &shardIn{dir: dir}
	if err := json.Unmarshal(b, &in.f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if in.f.Schema != shardSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q (a shard of another hotbudget version?)", path, in.f.Schema, shardSchema)
	}
	in.rc = c.recordFlags()
	pos, err := parseArgs(in.rc.fs.FlagSet, in.f.Args)
	if err == nil {
		err = in.rc.finish(pos)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: record's arguments %q: %w", path, in.f.Args, err)
	}
	if sp := in.rc.o.shard; sp.n == 0 || sp.k != in.f.Shard || sp.n != in.f.Of {
		return nil, fmt.Errorf("%s: shard %d of %d, but its arguments say --shard %s", path, in.f.Shard, in.f.Of, &sp)
	}
	return in, nil
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

// settings is what a shard's command line sets that must be the same in
// every shard: its flags but mergeIgnored's, and its packages.
func (in *shardIn) settings() string {
	var b strings.Builder
	in.rc.fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(mergeIgnored, f.Name) {
			fmt.Fprintf(&b, "--%s=%s ", f.Name, f.Value)
		}
	})
	fmt.Fprintf(&b, "packages %s", strings.Join(in.rc.o.pkgs, " "))
	return b.String()
}

// loadShards reads the shards in dirs, checks that they are the N shards
// of one record, and returns what record would have measured running them
// all, and the command line to judge it with.
func (c *cli) loadShards(dirs []string) (*recordResult, *recordCmd, error) {
	var shards []*shardIn
	for _, dir := range dirs {
		in, err := c.readShard(dir)
		if err != nil {
			return nil, nil, err
		}
		shards = append(shards, in)
	}
	sort.SliceStable(shards, func(i, j int) bool { return shards[i].f.Shard < shards[j].f.Shard })
	first := shards[0]
	n := first.f.Of
	seen := map[int]string{}
	for _, in := range shards {
		if in.f.Of != n {
			return nil, nil, fmt.Errorf("%s is shard %d of %d, %s shard %d of %d: merge the shards of one record", in.dir, in.f.Shard, in.f.Of, first.dir, first.f.Shard, n)
		}
		if d, dup := seen[in.f.Shard]; dup {
			return nil, nil, fmt.Errorf("%s and %s are both shard %d of %d", d, in.dir, in.f.Shard, n)
		}
		seen[in.f.Shard] = in.dir
	}
	var missing []string
	for k := 1; k <= n; k++ {
		if seen[k] == "" {
			missing = append(missing, fmt.Sprint(k))
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("shard %s of %d missing: every shard's benchmarks are judged together, so all %d are needed (got %s)",
			strings.Join(missing, ", "), n, n, strings.Join(dirs, " "))
	}
	want := first.settings()
	for _, in := range shards[1:] {
		what := ""
		switch {
		case in.f.Base.Commit != first.f.Base.Commit || in.f.Head.Commit != first.f.Head.Commit:
			what = fmt.Sprintf("revisions: base %s, head %s against base %s, head %s", in.f.Base, in.f.Head, first.f.Base, first.f.Head)
		case in.settings() != want:
			what = fmt.Sprintf("flags and packages: %q against %q", in.settings(), want)
		case !slices.Equal(in.f.Modules, first.f.Modules):
			what = fmt.Sprintf("modules gated: %q against %q", in.f.Modules, first.f.Modules)
		case !slices.Equal(in.f.Benchmarks, first.f.Benchmarks):
			what = fmt.Sprintf("benchmarks found: %d against %d (%s): they must list the same code's benchmarks with the same --bench",
				len(in.f.Benchmarks), len(first.f.Benchmarks), firstDifference(in.f.Benchmarks, first.f.Benchmarks))
		}
		if what != "" {
			return nil, nil, fmt.Errorf("%s (shard %d) and %s (shard %d) differ in their %s", in.dir, in.f.Shard, first.dir, first.f.Shard, what)
		}
	}
	// Every benchmark recorded by exactly the shard the list deals it to.
	by := map[string]*shardIn{}
	for _, in := range shards {
		part := shardPart(in.f.Benchmarks, shardSpec{in.f.Shard, n})
		if !slices.Equal(in.f.Recorded, part) {
			return nil, nil, fmt.Errorf("%s (shard %d of %d) recorded %d benchmarks, not the %d its list deals it", in.dir, in.f.Shard, n, len(in.f.Recorded), len(part))
		}
		for _, k := range in.f.Recorded {
			by[k] = in
		}
	}

	rc := first.rc
	res := &recordResult{baseRev: first.f.Base, headRev: first.f.Head, modules: first.f.Modules}
	var outs []string
	for _, in := range shards {
		outs = append(outs, in.dir)
	}
	res.out = strings.Join(outs, " ")

	// Everything in record's order: the benchmarks sorted.
	var compared, allocs, counted []string
	allocBy := map[string]shardAllocs{}
	countBy := map[string]shardCounts{}
	for _, in := range shards {
		mine := func(key string) error {
			if by[key] != in {
				return fmt.Errorf("%s (shard %d of %d) holds results of %s, which is not in its part of the benchmarks", in.dir, in.f.Shard, n, key)
			}
			return nil
		}
		for _, key := range in.f.Compared {
			if err := mine(key); err != nil {
				return nil, nil, err
			}
			compared = append(compared, key)
		}
		for _, a := range in.f.Allocations {
			if err := mine(a.Benchmark); err != nil {
				return nil, nil, err
			}
			allocs = append(allocs, a.Benchmark)
			allocBy[a.Benchmark] = a
		}
		for _, e := range in.f.Instructions {
			if err := mine(e.Benchmark); err != nil {
				return nil, nil, err
			}
			counted = append(counted, e.Benchmark)
			countBy[e.Benchmark] = e
		}
		for _, spans := range in.f.Bench {
			for _, sp := range spans {
				if err := mine(sp.Benchmark); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	for _, l := range [][]string{compared, allocs, counted} {
		sort.Strings(l)
		for i := 1; i < len(l); i++ {
			if l[i] == l[i-1] {
				return nil, nil, fmt.Errorf("%s: %s's results are there twice", by[l[i]].dir, l[i])
			}
		}
	}
	for _, key := range compared {
		in := by[key]
		pkg, name := splitKey(key)
		pr := diff.Pair{Name: key}
		for run := 1; run <= rc.o.runs; run++ {
			for _, side := range []string{"base", "head"} {
				p, err := readProfile(leafProfile(filepath.Join(in.dir, side), pkg, name, run))
				if err != nil {
					return nil, nil, err
				}
				if side == "base" {
					pr.Base = append(pr.Base, p)
				} else {
					pr.Head = append(pr.Head, p)
				}
			}
		}
		res.pairs = append(res.pairs, pr)
	}
	for _, key := range allocs {
		a := allocBy[key]
		if a.Base == nil || a.Head == nil {
			return nil, nil, fmt.Errorf("%s: the allocations of %s lack a side", by[key].dir, key)
		}
		res.allocs = append(res.allocs, allocResult{name: key, base: a.Base, head: a.Head})
	}
	if len(counted) > 0 {
		judge := func(string) bool { return true }
		if rc.o.gate != nil {
			judge = rc.o.gate.MatchString
		} else if len(res.modules) > 0 {
			judge = modulePattern(res.modules).MatchString
		}
		for _, key := range counted {
			in := by[key]
			pkg, name := splitKey(key)
			var ps [2]*profile.Profile
			for i, side := range []string{"base", "head"} {
				p, err := readProfile(countsProfile(filepath.Join(in.dir, side), pkg, name))
				if err != nil {
					return nil, nil, err
				}
				ps[i] = p
			}
			rep, err := diff.CompareCounts(ps[0], ps[1], judge)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			res.exact = append(res.exact, exactResult{name: key, ops: countBy[key].Ops, base: ps[0], head: ps[1], report: rep})
		}
	}
	for i, side := range []string{"base", "head"} {
		b, err := mergeBench(shards, side, first.f.Benchmarks, rc.o.runs)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			res.baseBench = b
		} else {
			res.headBench = b
		}
	}
	return res, rc, nil
}

// mergeBench is a side's bench.txt as record would have written it running
// every shard's benchmarks: run by run, in each run the benchmarks in
// order (all, sorted).
func mergeBench(shards []*shardIn, side string, all []string, runs int) ([]byte, error) {
	type at struct {
		key string
		run int
	}
	blocks := map[at][]byte{}
	for _, in := range shards {
		spans := in.f.Bench[side]
		if len(spans) == 0 {
			continue
		}
		path := filepath.Join(in.dir, side, "bench.txt")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, s := range spans {
			if s.Start < 0 || s.End < s.Start || s.End > len(b) || s.Run < 1 || s.Run > runs {
				return nil, fmt.Errorf("%s: %s's run %d is at bytes %d-%d of %d, beyond the file or the runs: was the file changed?", path, s.Benchmark, s.Run, s.Start, s.End, len(b))
			}
			k := at{s.Benchmark, s.Run}
			if _, dup := blocks[k]; dup {
				return nil, fmt.Errorf("%s: %s's run %d is there twice", path, s.Benchmark, s.Run)
			}
			blocks[k] = b[s.Start:s.End]
		}
	}
	var out bytes.Buffer
	for run := 1; run <= runs; run++ {
		for _, key := range all {
			out.Write(blocks[at{key, run}])
		}
	}
	return out.Bytes(), nil
}

func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// firstDifference names the first benchmark a and b disagree on.
func firstDifference(a, b []string) string {
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			return "first difference: " + b[i] + " only in the other"
		case i >= len(b):
			return "first difference: " + a[i] + " only in this one"
		case a[i] != b[i]:
			return "first difference: " + a[i] + " against " + b[i]
		}
	}
	return "the same"
}
