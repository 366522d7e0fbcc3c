package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/shardset"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
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

// readShard reads dir/shard.json (at most shardset.MaxFile bytes), checks
// its shard numbers and sets record's flags from its settings.
func (c *cli) readShard(dir string) (*shardIn, error) {
	path := filepath.Join(dir, shardManifest)
	b, err := shardset.ReadFile(path)
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
		if in.f.Schema == "hotbudget.shard/v1" {
			return nil, fmt.Errorf("%s: schema %q, an older hotbudget's, which holds record's command line rather than its settings and does not say which revisions have each benchmark: record the shards again with this hotbudget", path, in.f.Schema)
		}
		return nil, fmt.Errorf("%s: schema %q, want %q (a shard of another hotbudget version?)", path, in.f.Schema, shardSchema)
	}
	if err := shardset.CheckNumbers(in.f.Shard, in.f.Of); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if in.f.Settings == nil {
		return nil, fmt.Errorf("%s: no settings", path)
	}
	st := in.f.Settings
	if st.Runs > shardset.MaxRuns || st.Count > shardset.MaxCount {
		return nil, fmt.Errorf("%s: settings: runs %d, count %d: at most %d and %d", path, st.Runs, st.Count, shardset.MaxRuns, shardset.MaxCount)
	}
	if in.rc, err = st.recordCmd(c, in.f.Base.Name, in.f.Head.Name, in.f.Shard, in.f.Of); err != nil {
		return nil, fmt.Errorf("%s: settings: %w", path, err)
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

// set is what shardset.Check needs of the shard.
func (in *shardIn) set() *shardset.Shard {
	f := in.f
	s := &shardset.Shard{Dir: in.dir, K: f.Shard, N: f.Of, Base: f.Base.Commit, Head: f.Head.Commit, Settings: f.Settings.text(),
		Modules: f.Modules, Benchmarks: f.Benchmarks, Recorded: f.Recorded, At: f.At, Compared: f.Compared, Spans: map[string][]shardset.Span{}}
	for _, a := range f.Allocations {
		s.Allocations = append(s.Allocations, a.Benchmark)
	}
	for _, e := range f.Instructions {
		s.Counted = append(s.Counted, e.Benchmark)
	}
	for side, spans := range f.Bench {
		for _, sp := range spans {
			s.Spans[side] = append(s.Spans[side], shardset.Span{Benchmark: sp.Benchmark, Run: sp.Run, Start: sp.Start, End: sp.End})
		}
	}
	return s
}

// loadShards reads the shards in dirs, checks that they are the N shards
// of one record, each holding every result of each benchmark it lists
// (shardset.Check), and returns what record would have measured running
// them all, and the command line to judge it with.
func (c *cli) loadShards(dirs []string) (*recordResult, *recordCmd, error) {
	if len(dirs) > shardset.MaxShards {
		return nil, nil, fmt.Errorf("%d directories: a record has at most %d shards", len(dirs), shardset.MaxShards)
	}
	var shards []*shardIn
	var sets []*shardset.Shard
	byDir := map[string]*shardIn{}
	for _, dir := range dirs {
		in, err := c.readShard(dir)
		if err != nil {
			return nil, nil, err
		}
		shards = append(shards, in)
		sets = append(sets, in.set())
		byDir[dir] = in
	}
	rc := shards[0].rc
	want := shardset.Want{Runs: rc.o.runs, Allocations: !rc.o.noAllocs && !rc.o.instructions, Instructions: rc.o.instructions}
	if err := shardset.Check(sets, want); err != nil {
		return nil, nil, err
	}
	for i, s := range sets { // sorted by Check
		shards[i] = byDir[s.Dir]
	}
	first := shards[0]
	rc = first.rc
	by := map[string]*shardIn{}
	for _, in := range shards {
		for _, k := range in.f.Recorded {
			by[k] = in
		}
	}
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
		compared = append(compared, in.f.Compared...)
		for _, a := range in.f.Allocations {
			allocs = append(allocs, a.Benchmark)
			allocBy[a.Benchmark] = a
		}
		for _, e := range in.f.Instructions {
			counted = append(counted, e.Benchmark)
			countBy[e.Benchmark] = e
		}
	}
	for _, l := range [][]string{compared, allocs, counted} {
		sort.Strings(l)
	}
	for _, key := range compared {
		in := by[key]
		pkg, name := splitKey(key)
		pr := diff.Pair{Name: key}
		for run := 1; run <= rc.o.runs; run++ {
			for _, side := range []string{"base", "head"} {
				p, err := readRunProfile(leafProfile(filepath.Join(in.dir, side), pkg, name, run))
				if err != nil {
					return nil, nil, fmt.Errorf("%s (shard %d): %s's run %d at %s: %w", in.dir, in.f.Shard, key, run, side, err)
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
		if err := checkAllocs(a); err != nil {
			return nil, nil, fmt.Errorf("%s (shard %d): %w", by[key].dir, by[key].f.Shard, err)
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
				if err == nil {
					err = checkOps(p, countBy[key].Ops)
				}
				if err != nil {
					return nil, nil, fmt.Errorf("%s (shard %d): %s's counted instructions at %s: %w", in.dir, in.f.Shard, key, side, err)
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
		b, err := mergeBench(shards, side, first.f.Benchmarks, rc.o.runs, rc.o.count)
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
// order (all, sorted). Each run's bytes must hold count results of its
// benchmark and of no other (shardset.CheckBlock).
func mergeBench(shards []*shardIn, side string, all []string, runs, count int) ([]byte, error) {
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
		b, err := shardset.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := shardset.CheckSpans(in.set().Spans[side], len(b)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, s := range spans {
			if s.Start < 0 || s.End < s.Start || s.End > len(b) || s.Run < 1 || s.Run > runs {
				return nil, fmt.Errorf("%s: %s's run %d is at bytes %d-%d of %d, beyond the file or the runs: was the file changed?", path, s.Benchmark, s.Run, s.Start, s.End, len(b))
			}
			if err := shardset.CheckBlock(b[s.Start:s.End], s.Benchmark, count); err != nil {
				return nil, fmt.Errorf("%s, run %d at bytes %d-%d: %w", path, s.Run, s.Start, s.End, err)
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

// readRunProfile reads a run's profile under a shard through the loaders
// (HOTBUDGET_MAX_BYTES, the memory budget, gzip bombs, the values'
// checks), refusing from its first bytes a file that is not the pprof
// profile record writes.
func readRunProfile(path string) (*profile.Profile, error) {
	if err := checkPprof(path); err != nil {
		return nil, err
	}
	return loaders.Load(path, loaders.WithFormat(loaders.FormatPprof))
}
