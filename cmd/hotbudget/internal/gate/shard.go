package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/shardset"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// record --shard K/N (issue 34): a suite too large for one CI job runs in N
// jobs of a matrix, each recording a part of the benchmarks, and merge
// judges the parts as one record.
//
// Which part: every benchmark record finds (the union of both revisions',
// matching --bench, each sub-benchmark on its own) sorted by package and
// name, dealt round-robin: shard K takes the K-th, the (K+N)-th, ... Each
// benchmark is calibrated to --benchtime and runs that long, so a count is
// a fair measure of a shard's time, and dealing gives every shard the same
// count within one (a hash of the names leaves one shard of four with 14
// or more of 40 benchmarks, 40% more time than 10, in two cases of five). The sorted list depends only on the
// code and --bench, not the machine; each shard writes the whole list and
// merge refuses shards that disagree, so no benchmark is judged twice or
// left out unnoticed.
//
// A shard does not judge: the false-discovery control holds over every
// benchmark of the record, which one shard does not see. It writes its raw
// results under --out as record does (the profiles of every run, the
// benchmark output, the allocation profiles), and shard.json: the settings
// (typed), the revisions, the modules gated, the whole list and its part,
// which revisions have each of its benchmarks, where each run's output is
// in bench.txt, the allocations per op (the tables the exact verdicts
// compare) and, with --instructions, the counted differences. merge checks
// that the shards are exactly shards 1..N of one record, each complete
// (internal/shardset), rebuilds what record would have held had it run
// every benchmark (bench.txt in record's order) and judges it with
// record's own judgement (Judge).

// shardSchema is shard.json's schema.
// v2 added At, which revisions have each benchmark recorded (without it a
// benchmark whose results were removed looks like one neither revision
// has), and holds the settings typed instead of record's command line:
// merge refuses v1 (docs/sharding.md).
const shardSchema = "hotbudget.shard/v2"

// ShardSpec is --shard K/N: record the K-th of N parts; the zero value
// records everything.
type ShardSpec struct{ K, N int }

// String is K/N, or "" for the zero value.
func (s *ShardSpec) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Set parses K/N (flag.Value).
func (s *ShardSpec) Set(v string) error {
	a, b, ok := strings.Cut(v, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || shardset.CheckNumbers(k, n) != nil {
		return fmt.Errorf("want K/N, the K-th of N shards with 1 <= K <= N <= %d (1/4 ... 4/4), got %q", shardset.MaxShards, v)
	}
	s.K, s.N = k, n
	return nil
}

// shardPart is the benchmarks of all (sorted) that shard s records.
func shardPart(all []string, s ShardSpec) []string {
	var part []string
	for i := s.K - 1; i < len(all); i += s.N {
		part = append(part, all[i])
	}
	return part
}

// calibrateShard keeps the shard's part of the benchmarks found (all,
// sorted) and calibrates each of them to --benchtime, on the base revision
// where it exists, else on head; it returns the part's keys.
func (r *recorder) calibrateShard(ctx context.Context, base, head *recSide, byKey map[string]*leaf, all []string) ([]string, error) {
	part := shardPart(all, r.o.Shard)
	r.shard.plan, r.shard.part = all, part
	r.shard.at = map[string][]string{}
	for _, k := range part {
		for _, s := range []*recSide{base, head} {
			if s.leaves[k] {
				r.shard.at[s.name] = append(r.shard.at[s.name], k)
			}
		}
	}
	r.progress("shard %s: %d of the %s found (every %s in name order, from the %s)", &r.o.Shard, len(part),
		plural(len(all), "benchmark", "benchmarks"), ordinal(r.o.Shard.N), ordinal(r.o.Shard.K))
	if r.o.FixedIters > 0 {
		return part, nil
	}
	for _, k := range part {
		l := byKey[k]
		s := base
		if !base.leaves[k] {
			s = head
		}
		out, err := r.runBinary(ctx, s, s.bins[l.pkg], "-test.bench", l.pattern(), "-test.benchtime", r.calibrationBenchtime())
		if err != nil {
			return nil, err
		}
		for _, res := range r.parseBench(out) {
			if res.name == l.name {
				// What an op allocates bounds the allocation runs: the
				// most either side's runs saw.
				l.iters, l.nsOp = res.iters, res.nsOp
				l.bytesOp, l.allocsOp = max(l.bytesOp, res.bytesOp), max(l.allocsOp, res.allocsOp)
			}
		}
	}
	return part, nil
}

// ordinal is 1st, 2nd, 3rd, 4th...
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// shardLog is what a shard learns as it runs, for shard.json.
type shardLog struct {
	plan, part []string // every benchmark found, sorted; this shard's
	// at are the benchmarks of part each side has, by side ("base",
	// "head").
	at map[string][]string
	// spans are where each run of each benchmark wrote its output in a
	// side's bench.txt, by side ("base", "head").
	spans map[string][]benchSpan
}

// benchSpan is one run's output of one benchmark: bytes [Start, End) of
// its side's bench.txt.
type benchSpan struct {
	Benchmark string `json:"benchmark"`
	Run       int    `json:"run"`
	Start     int    `json:"start"`
	End       int    `json:"end"`
}

// noteBench records that run of leaf l on side s wrote s.bench from start
// to its end. It does nothing when record is not a shard.
func (sl *shardLog) noteBench(s *recSide, l leaf, run, start int) {
	if sl == nil {
		return
	}
	if sl.spans == nil {
		sl.spans = map[string][]benchSpan{}
	}
	sl.spans[s.name] = append(sl.spans[s.name], benchSpan{l.key(), run, start, s.bench.Len()})
}

// shardFile is shard.json.
type shardFile struct {
	Schema string `json:"schema"`
	Shard  int    `json:"shard"` // K
	Of     int    `json:"of"`    // N
	// Settings are what the shard was recorded with: merge judges with
	// them.
	Settings *ShardSettings `json:"settings"`
	Base     revision       `json:"base"`
	Head     revision       `json:"head"`
	Modules  []string       `json:"modules"` // go list -m: the functions gated
	// Benchmarks are every benchmark found, "PKG NAME", sorted: the same
	// list in every shard.
	Benchmarks []string `json:"benchmarks"`
	// Recorded are this shard's part of them; Compared those of them that
	// both revisions have, whose runs' profiles are
	// SIDE/PKG/NAME.RUN.pb.gz.
	Recorded []string `json:"recorded"`
	Compared []string `json:"compared"`
	// At are the recorded benchmarks each revision has, by side: both
	// (Compared), or one (new or gone at head).
	At map[string][]string `json:"at"`
	// Bench says where each run is in SIDE/bench.txt, by side.
	Bench map[string][]benchSpan `json:"bench"`
	// Allocations are the allocations per op of each benchmark compared
	// (absent with --no-allocs or --instructions).
	Allocations []shardAllocs `json:"allocations,omitempty"`
	// Instructions are the benchmarks counted (--instructions), whose
	// differences of the 2N and N runs, what N ops execute, are
	// SIDE/PKG/NAME.instructions-diff.pb.gz.
	Instructions []shardCounts `json:"instructions,omitempty"`
}

type shardAllocs struct {
	Benchmark string           `json:"benchmark"`
	Base      *diff.AllocTable `json:"base"`
	Head      *diff.AllocTable `json:"head"`
}

type shardCounts struct {
	Benchmark string `json:"benchmark"`
	Ops       int64  `json:"ops"` // N
	// Inlined are the changed functions the record found inlined into
	// others that changed (diff.CountRow.InlinedInto), by name: what the
	// test binaries' frames said, which merge does not have.
	Inlined map[string][]string `json:"inlined,omitempty"`
}

// leafProfile is where the profile of run of benchmark name of package
// pkg goes under a side's directory.
func leafProfile(side, pkg, name string, run int) string {
	return filepath.Join(side, filepath.FromSlash(pkg), fmt.Sprintf("%s.%d.pb.gz", unsafeName.ReplaceAllString(name, "_"), run))
}

// countsProfile is where a shard writes the counted difference of benchmark
// name of package pkg (--instructions) under a side's directory.
func countsProfile(side, pkg, name string) string {
	return filepath.Join(side, filepath.FromSlash(pkg), benchFile(name)+".instructions-diff.pb.gz")
}

// splitKey is a benchmark key's package and name (leaf.key).
func splitKey(key string) (pkg, name string) {
	pkg, name, _ = strings.Cut(key, " ")
	return pkg, name
}

// WriteShard writes shard.json (and, counting instructions, the counted
// differences) under the shard's --out, with the settings it was recorded
// with, and says on stdout what merges it.
func (res *Measurement) WriteShard(settings *ShardSettings, stdout io.Writer) error {
	sl, o := res.shard, res.cfg
	if sl == nil {
		return errors.New("not a shard's measurement (--shard K/N)")
	}
	f := shardFile{
		Schema: shardSchema, Shard: o.Shard.K, Of: o.Shard.N,
		Base: res.baseRev, Head: res.headRev, Modules: res.modules,
		Benchmarks: sl.plan, Recorded: sl.part, At: sl.at, Bench: sl.spans,
		Settings: settings,
	}
	if f.Benchmarks == nil { // listed by calibrate; never absent
		f.Benchmarks = []string{}
	}
	// Benchmarks whose names differ only in what a file name cannot hold
	// would share their profiles' files (record judges the runs it holds;
	// merge reads the files).
	files := map[string]string{}
	for _, p := range res.pairs {
		f.Compared = append(f.Compared, p.Name)
		pkg, name := splitKey(p.Name)
		path := leafProfile("", pkg, name, 1)
		if other, dup := files[path]; dup {
			return fmt.Errorf("%s and %s write their profiles to the same files (%s): merge cannot tell them apart; choose one with --bench", other, p.Name, path)
		}
		files[path] = p.Name
	}
	for _, a := range res.allocs {
		f.Allocations = append(f.Allocations, shardAllocs{a.name, a.base, a.head})
	}
	for _, e := range res.exact {
		pkg, name := splitKey(e.name)
		for side, p := range map[string]*profile.Profile{"base": e.base, "head": e.head} {
			if err := writeProfile(countsProfile(filepath.Join(res.out, side), pkg, name), p); err != nil {
				return err
			}
		}
		var inlined map[string][]string
		for _, row := range e.report.Rows {
			if len(row.InlinedInto) > 0 {
				if inlined == nil {
					inlined = map[string][]string{}
				}
				inlined[row.Name] = row.InlinedInto
			}
		}
		f.Instructions = append(f.Instructions, shardCounts{e.name, e.ops, inlined})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(res.out, shardManifest)
	if err := atomicfile.Write(path, func(w *os.File) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "hotbudget record: shard %s recorded %d of %s (%d compared at both revisions) under %s, not judged: hotbudget merge judges every shard's output as one record\n",
		&o.Shard, len(sl.part), plural(len(sl.plan), "benchmark", "benchmarks"), len(f.Compared), textfmt.Line(res.out))
	return err
}

// shardManifest is shard.json's name under a shard's --out.
const shardManifest = "shard.json"

// Layout of record's --out, for the programs and tests that make or read
// one: where a run's profile, a counted difference and a shard's manifest
// go, and how a profile is written there.
var (
	// LeafProfile is where run (from 1) of benchmark name of package pkg
	// goes under a side's directory.
	LeafProfile = leafProfile
	// CountsProfile is where the counted difference of a benchmark goes.
	CountsProfile = countsProfile
	// BenchFile is a benchmark's name as a file name.
	BenchFile = benchFile
	// WriteProfile writes p to path atomically, making its directory.
	WriteProfile = writeProfile
)

// ShardManifest is the file a shard's --out holds: what it recorded.
const ShardManifest = shardManifest
