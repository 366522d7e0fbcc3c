package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/shardset"
	"github.com/hotbudget/hotbudget/loaders"
)

// merge's reading: the N shards of one record checked and made into the
// measurement one record of them all would have made.

// shardIn is one shard read: its directory, shard.json and the
// configuration it was recorded with.
type shardIn[T any] struct {
	dir string
	f   shardFile
	cfg Config
	fl  T
}

// SettingsFunc checks a shard's settings and returns the configuration
// they record with, and what else the caller makes of them (the command's
// flags: fl), for shard k of n recorded at the revisions base and head.
type SettingsFunc[T any] func(s *ShardSettings, base, head string, k, n int) (cfg Config, fl T, err error)

// readShard reads dir/shard.json (at most shardset.MaxFile bytes), checks
// its shard numbers and its settings.
func readShard[T any](dir string, settings SettingsFunc[T]) (*shardIn[T], error) {
	path := filepath.Join(dir, shardManifest)
	b, err := shardset.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no %s: merge reads the --out of hotbudget record --shard K/N", dir, shardManifest)
		}
		return nil, err
	}
	in := &shardIn[T]{dir: dir}
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
	if in.cfg, in.fl, err = settings(st, in.f.Base.Name, in.f.Head.Name, in.f.Shard, in.f.Of); err != nil {
		return nil, fmt.Errorf("%s: settings: %w", path, err)
	}
	return in, nil
}

// set is what shardset.Check needs of the shard.
func (in *shardIn[T]) set() *shardset.Shard {
	f := in.f
	s := &shardset.Shard{Dir: in.dir, K: f.Shard, N: f.Of, Base: f.Base.Commit, Head: f.Head.Commit, Settings: f.Settings.Text(),
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

// LoadShards reads the shards in dirs, checks that they are the N shards
// of one record, each holding every result of each benchmark it lists
// (shardset.Check), and returns what record would have measured running
// them all, and what settings made of the first shard's settings.
func LoadShards[T any](dirs []string, settings SettingsFunc[T]) (*Measurement, T, error) {
	var none T
	if len(dirs) > shardset.MaxShards {
		return nil, none, fmt.Errorf("%d directories: a record has at most %d shards", len(dirs), shardset.MaxShards)
	}
	var shards []*shardIn[T]
	var sets []*shardset.Shard
	byDir := map[string]*shardIn[T]{}
	for _, dir := range dirs {
		in, err := readShard(dir, settings)
		if err != nil {
			return nil, none, err
		}
		shards = append(shards, in)
		sets = append(sets, in.set())
		byDir[dir] = in
	}
	o := shards[0].cfg
	want := shardset.Want{Runs: o.Runs, Allocations: !o.NoAllocs && !o.Instructions, Instructions: o.Instructions}
	if err := shardset.Check(sets, want); err != nil {
		return nil, none, err
	}
	for i, s := range sets { // sorted by Check
		shards[i] = byDir[s.Dir]
	}
	first := shards[0]
	o = first.cfg
	by := map[string]*shardIn[T]{}
	for _, in := range shards {
		for _, k := range in.f.Recorded {
			by[k] = in
		}
	}
	res := &Measurement{baseRev: first.f.Base, headRev: first.f.Head, modules: first.f.Modules, cfg: o}
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
		for run := 1; run <= o.Runs; run++ {
			for _, side := range []string{"base", "head"} {
				p, err := readRunProfile(leafProfile(filepath.Join(in.dir, side), pkg, name, run))
				if err != nil {
					return nil, none, fmt.Errorf("%s (shard %d): %s's run %d at %s: %w", in.dir, in.f.Shard, key, run, side, err)
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
			return nil, none, fmt.Errorf("%s (shard %d): %w", by[key].dir, by[key].f.Shard, err)
		}
		res.allocs = append(res.allocs, allocResult{name: key, base: a.Base, head: a.Head})
	}
	if len(counted) > 0 {
		judge := func(string) bool { return true }
		if o.Gate != nil {
			judge = o.Gate.MatchString
		} else if len(res.modules) > 0 {
			judge = ModulePattern(res.modules).MatchString
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
					return nil, none, fmt.Errorf("%s (shard %d): %s's counted instructions at %s: %w", in.dir, in.f.Shard, key, side, err)
				}
				ps[i] = p
			}
			rep, err := diff.CompareCounts(ps[0], ps[1], notHarness(judge, harnessFuncs(ps[0], ps[1])))
			if err != nil {
				return nil, none, fmt.Errorf("%s: %w", name, err)
			}
			// A shard's output holds no counted allocation tables: the
			// whole count's fall alone trades, where it confirmed.
			rep.Trade(nil)
			rep.NoteInlined(countBy[key].Inlined)
			res.exact = append(res.exact, exactResult{name: key, ops: countBy[key].Ops, base: ps[0], head: ps[1], report: rep})
		}
	}
	for i, side := range []string{"base", "head"} {
		b, err := mergeBench(shards, side, first.f.Benchmarks, o.Runs, o.Count)
		if err != nil {
			return nil, none, err
		}
		if i == 0 {
			res.baseBench = b
		} else {
			res.headBench = b
		}
	}
	return res, first.fl, nil
}

// mergeBench is a side's bench.txt as record would have written it running
// every shard's benchmarks: run by run, in each run the benchmarks in
// order (all, sorted). Each run's bytes must hold count results of its
// benchmark and of no other (shardset.CheckBlock).
func mergeBench[T any](shards []*shardIn[T], side string, all []string, runs, count int) ([]byte, error) {
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
