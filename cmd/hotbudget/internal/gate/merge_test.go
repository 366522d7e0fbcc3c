package gate

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/loaders"
)

// recorded is the raw results of a record of several benchmarks, made up:
// per benchmark its runs' profiles a side, each run's benchmark output,
// its allocations per op. In BenchmarkA example.com/m.slow takes 60% more
// time at head and allocates one more object per op; BenchmarkNew exists
// only at head; the rest change by noise alone.
type recorded struct {
	keys  []string // sorted, as calibrate lists them
	runs  int
	prof  map[string][2][]*profile.Profile // by key: base, head
	out   map[string][2][][]byte           // by key: each run's output, base and head (nil: absent)
	alloc map[string][2]*diff.AllocTable
}

func fakeRecord(t testing.TB, runs int) *recorded {
	t.Helper()
	keys := []string{
		"example.com/m BenchmarkA", "example.com/m BenchmarkB/size=1", "example.com/m BenchmarkB/size=2",
		"example.com/m BenchmarkC", "example.com/m/sub BenchmarkD", "example.com/m/sub BenchmarkE",
		"example.com/m/sub BenchmarkF", "example.com/m/sub BenchmarkNew",
	}
	sort.Strings(keys)
	rec := &recorded{keys: keys, runs: runs, prof: map[string][2][]*profile.Profile{}, out: map[string][2][][]byte{}, alloc: map[string][2]*diff.AllocTable{}}
	for bi, key := range keys {
		pkg, name := splitKey(key)
		isNew, isA := strings.HasSuffix(name, "New"), name == "BenchmarkA"
		var profs [2][]*profile.Profile
		var outs [2][][]byte
		for side := range 2 {
			if isNew && side == 0 {
				continue
			}
			for run := range runs {
				// Noise by benchmark, side and run, not random: the test is
				// about the plumbing, the same data judged two ways.
				noise := (bi*7 + run*13 + side*5) % 11
				slow := 300 + 3*noise
				if isA && side == 1 {
					slow = slow * 16 / 10
				}
				text := fmt.Sprintf("main;%s.slow %d\nmain;%s.fast %d\nmain;runtime.mallocgc %d\n", pkg, slow, pkg, 700-2*noise, 100+noise)
				p, err := loaders.Read(strings.NewReader(text), loaders.WithFormat(loaders.FormatFolded))
				if err != nil {
					t.Fatal(err)
				}
				meta.Set(p, meta.Record{Name: fmt.Sprintf("%s run %d", key, run+1), WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: 1000}}})
				profs[side] = append(profs[side], p)
				ns := 1000 + 10*noise
				if isA && side == 1 {
					ns = ns * 15 / 10
				}
				outs[side] = append(outs[side], fmt.Appendf(nil, "goos: linux\ngoarch: amd64\npkg: %s\n%s-2   \t    1000\t      %d ns/op\t      48 B/op\t       %d allocs/op\nPASS\n",
					pkg, name, ns, 2+boolInt(isA && side == 1)))
			}
		}
		rec.prof[key], rec.out[key] = profs, outs
		if !isNew {
			objects := 200.0
			table := func(objects float64) *diff.AllocTable {
				return &diff.AllocTable{Work: 100, Funcs: map[string]*diff.AllocFunc{
					pkg + ".parse": {Self: diff.AllocCount{Objects: objects, Bytes: 24 * objects}, Total: diff.AllocCount{Objects: objects, Bytes: 24 * objects},
						Lines: map[string]diff.AllocCount{"m.go:12": {Objects: objects, Bytes: 24 * objects}}},
				}, Judged: diff.AllocCount{Objects: objects, Bytes: 24 * objects}, All: diff.AllocCount{Objects: objects + 3, Bytes: 24*objects + 40},
					Stacks: map[string]diff.AllocCount{"main\x00" + pkg + ".parse": {Objects: objects, Bytes: 24 * objects}}}
			}
			head := table(objects)
			if isA {
				head = table(objects + 100)
			}
			rec.alloc[key] = [2]*diff.AllocTable{table(objects), head}
		}
	}
	return rec
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// whole is what an unsharded record of rec holds; out names where its
// profiles are.
func (rec *recorded) whole(out string) *Measurement {
	res := &Measurement{out: out, baseRev: revision{Name: "main", Commit: "0123456789abcdef0123"}, headRev: revision{Name: "HEAD", Commit: "fedcba9876543210fedc"},
		modules: []string{"example.com/m"}}
	var base, head bytes.Buffer
	for run := range rec.runs {
		for _, key := range rec.keys {
			outs := rec.out[key]
			if outs[0] != nil {
				base.Write(outs[0][run])
			}
			head.Write(outs[1][run])
		}
	}
	res.baseBench, res.headBench = base.Bytes(), head.Bytes()
	for _, key := range rec.keys {
		if p := rec.prof[key]; p[0] != nil {
			res.pairs = append(res.pairs, diff.Pair{Name: key, Base: p[0], Head: p[1]})
		}
		if a, ok := rec.alloc[key]; ok {
			res.allocs = append(res.allocs, allocResult{name: key, base: a[0], head: a[1]})
		}
	}
	return res
}

// writeShards writes rec as n shards would have under dir/shard-K, as
// record writes them (profiles by runLeaf's names, bench.txt run by run,
// shard.json by writeShard), each recorded with args and --shard K/N --out;
// it returns their directories.
func (rec *recorded) writeShards(t testing.TB, dir string, n int, args []string) []string {
	t.Helper()
	var dirs []string
	for k := 1; k <= n; k++ {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", k))
		dirs = append(dirs, out)
		spec := ShardSpec{k, n}
		part := shardPart(rec.keys, spec)
		sides := []*recSide{{name: "base", out: filepath.Join(out, "base")}, {name: "head", out: filepath.Join(out, "head")}}
		sl := &shardLog{plan: rec.keys, part: part, at: map[string][]string{}}
		for _, key := range part {
			for i, side := range []string{"base", "head"} {
				if rec.out[key][i] != nil {
					sl.at[side] = append(sl.at[side], key)
				}
			}
		}
		res := &Measurement{out: out, baseRev: revision{Name: "main", Commit: "0123456789abcdef0123"}, headRev: revision{Name: "HEAD", Commit: "fedcba9876543210fedc"},
			modules: []string{"example.com/m"}}
		for run := range rec.runs {
			for _, key := range part {
				pkg, name := splitKey(key)
				for i, s := range sides {
					if rec.out[key][i] == nil {
						continue
					}
					start := s.bench.Len()
					s.bench.Write(rec.out[key][i][run])
					sl.noteBench(s, leaf{pkg: pkg, name: name}, run+1, start)
					if err := writeProfile(leafProfile(s.out, pkg, name, run+1), rec.prof[key][i][run]); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for _, s := range sides {
			if err := os.MkdirAll(s.out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(s.out, "bench.txt"), s.bench.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range part {
			if p := rec.prof[key]; p[0] != nil {
				res.pairs = append(res.pairs, diff.Pair{Name: key, Base: p[0], Head: p[1]})
			}
			if a, ok := rec.alloc[key]; ok {
				res.allocs = append(res.allocs, allocResult{name: key, base: a[0], head: a[1]})
			}
		}
		cfg, settings := configOf(t, append([]string{"--shard", spec.String(), "--out", out}, args...))
		res.cfg, res.shard = cfg, sl
		var stdout bytes.Buffer
		if err := res.WriteShard(settings, &stdout); err != nil {
			t.Fatalf("WriteShard %s: %v", spec.String(), err)
		}
		if !strings.Contains(stdout.String(), fmt.Sprintf("shard %d/%d recorded %d of %d benchmarks", k, n, len(part), len(rec.keys))) {
			t.Errorf("shard %d/%d says:\n%s", k, n, stdout.String())
		}
	}
	return dirs
}

// judgeWhole judges res as record does after its runs, with args.
func judgeWhole(t *testing.T, res *Measurement, args []string, format string) (string, int) {
	t.Helper()
	res.cfg, _ = configOf(t, args)
	out, errText, code := judged(t, res, format, false)
	if errText != "" {
		t.Logf("record: %s", errText)
	}
	return out, code
}

func mergeOut(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"merge"}, args...), strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	return stdout.String(), stderr.String(), code
}

// The same raw results judged whole, as record judges them, and split into
// shards (1, 3 and 8 of 8 benchmarks) and merged give the same report in
// every format, byte for byte, and the same exit code: merge applies the
// false-discovery control over every shard's benchmarks, as record does.
func TestMergeSameAsWhole(t *testing.T) {
	rec := fakeRecord(t, 5)
	args := []string{"--instrument", "time", "--runs", "5", "main", "HEAD", "./..."}
	for _, n := range []int{1, 3, 8} {
		dirs := rec.writeShards(t, t.TempDir(), n, args)
		// Written first, as runLeaf writes a profile before record judges it.
		whole := rec.whole(strings.Join(dirs, " "))
		for _, format := range []string{"text", "markdown", "json"} {
			want, wantCode := judgeWhole(t, whole, args, format)
			got, stderr, code := mergeOut(t, append([]string{"--format", format}, dirs...)...)
			if code != wantCode || got != want {
				t.Errorf("%d shards, %s: merge exit %d, record exit %d; outputs equal: %v\n--- merge:\n%s\n%s\n--- record:\n%s", n, format, code, wantCode, got == want, got, stderr, want)
			}
			if wantCode != exitFail {
				t.Errorf("%s: record exit %d, want 1: BenchmarkA's slow regressed\n%s", format, wantCode, want)
			}
		}
		text, _, _ := mergeOut(t, dirs...)
		if !strings.HasPrefix(text, "timing: chosen by --instrument time\nhotbudget record: regressed (exit 1): functions' CPU time: m.slow +") || !strings.Contains(text, "allocations per op: m.parse in example.com/m BenchmarkA") {
			t.Errorf("%d shards: want m.slow's CPU time and m.parse's allocations regressed in BenchmarkA:\n%s", n, text)
		}
		if n == 3 {
			t.Logf("merged report of 3 shards:\n%s", text)
		}
	}
}

// Judging a shard alone is not judging the record: with 8 benchmarks in 4
// shards, a shard's part of the false-discovery control is smaller, and
// its q-values with it. merge's are the whole record's (TestMergeSameAsWhole),
// which this checks differ from a lone shard's, so that the test above
// would catch a merge that judged per shard.
func TestMergeOneFamily(t *testing.T) {
	rec := fakeRecord(t, 5)
	args := []string{"--instrument", "time", "--runs", "5", "main", "HEAD", "./..."}
	dirs := rec.writeShards(t, t.TempDir(), 4, args)
	all, _, _ := mergeOut(t, append([]string{"--format", "json"}, dirs...)...)
	// Shard 1 alone: not a record (shards 2-4 missing), so judged here
	// from its own files as merge would judge them.
	in, err := readShard(dirs[0], testSettings)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []diff.Pair
	for _, key := range in.f.Compared {
		p := rec.prof[key]
		pairs = append(pairs, diff.Pair{Name: key, Base: p[0], Head: p[1]})
	}
	alone, err := diff.CompareEach(pairs, diff.WithGate(ModulePattern([]string{"example.com/m"})))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range alone {
		if err := r.Write(&b, "json"); err != nil {
			t.Fatal(err)
		}
	}
	// A q-value of the lone shard's that the record does not have.
	lone := qValues(b.String())
	whole := qValues(all)
	differ := false
	for q := range lone {
		if !whole[q] {
			differ = true
		}
	}
	if !differ {
		t.Errorf("shard 1's q-values %v are all in the merged record's: the test cannot tell one family from four", lone)
	}
	_, stderr, code := mergeOut(t, dirs[0])
	if code != exitUsage || !strings.Contains(stderr, "shard 2, 3, 4 of 4 missing") {
		t.Errorf("merging shard 1 of 4 alone: exit %d, want 2 naming the missing shards\n%s", code, stderr)
	}
}

// qValues are the "q" fields of JSON reports.
func qValues(s string) map[string]bool {
	m := map[string]bool{}
	for _, part := range strings.Split(s, `"q": `)[1:] {
		if i := strings.IndexAny(part, ",}\n"); i > 0 {
			m[strings.TrimSpace(part[:i])] = true
		}
	}
	return m
}

// countsDiff is a benchmark's counted difference of its 2N and N runs, as
// countLeaf makes it: exact instructions by function for ops ops.
func countsDiff(ops int64, self map[string]int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}}, Period: 1,
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}}
	names := make([]string, 0, len(self))
	for name := range self {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{self[name]}})
	}
	p.Comments = meta.MarkExact(nil)
	meta.Set(p, meta.Record{Name: "counted", Instrument: "callgrind", WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: float64(ops)}}})
	return p
}

// countedShards writes two shards of --instructions of three benchmarks,
// BenchmarkB's example.com/m.work 30% more at head, under dir; it returns
// their directories, the whole record and its arguments.
func countedShards(t testing.TB, dir string) ([]string, *Measurement, []string) {
	t.Helper()
	keys := []string{"example.com/m BenchmarkA", "example.com/m BenchmarkB", "example.com/m BenchmarkC"}
	var all []exactResult
	judge := ModulePattern([]string{"example.com/m"}).MatchString
	for i, key := range keys {
		base := countsDiff(100, map[string]int64{"example.com/m.work": 100_000 * int64(i+1), "runtime.mallocgc": 5_000})
		head := countsDiff(100, map[string]int64{"example.com/m.work": 100_000 * int64(i+1), "runtime.mallocgc": 5_100})
		if i == 1 {
			head = countsDiff(100, map[string]int64{"example.com/m.work": 130_000 * int64(i+1), "runtime.mallocgc": 5_000})
		}
		rep, err := diff.CompareCounts(base, head, judge)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, exactResult{name: key, ops: 100, base: base, head: head, report: rep})
	}
	args := []string{"--instrument", "instructions", "main", "HEAD"}
	var dirs []string
	for k := 1; k <= 2; k++ {
		out := filepath.Join(dir, fmt.Sprint(k))
		dirs = append(dirs, out)
		part := shardPart(keys, ShardSpec{k, 2})
		res := &Measurement{out: out, baseRev: revision{Name: "main", Commit: "0123456789abcdef0123"}, headRev: revision{Name: "HEAD", Commit: "fedcba9876543210fedc"},
			modules: []string{"example.com/m"}}
		for _, e := range all {
			for _, key := range part {
				if e.name == key {
					res.exact = append(res.exact, e)
				}
			}
		}
		cfg, settings := configOf(t, append([]string{"--shard", fmt.Sprintf("%d/2", k), "--out", out}, args...))
		res.cfg, res.shard = cfg, &shardLog{plan: keys, part: part, at: map[string][]string{"base": part, "head": part}}
		if err := res.WriteShard(settings, io.Discard); err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
	}
	whole := &Measurement{out: strings.Join(dirs, " "), baseRev: revision{Name: "main", Commit: "0123456789abcdef0123"}, headRev: revision{Name: "HEAD", Commit: "fedcba9876543210fedc"},
		modules: []string{"example.com/m"}, exact: all}
	return dirs, whole, args
}

// --instructions shards: the counted differences written by each shard and
// judged by merge give record's report.
func TestMergeInstructions(t *testing.T) {
	dirs, whole, args := countedShards(t, t.TempDir())
	for _, format := range []string{"text", "markdown", "json"} {
		want, wantCode := judgeWhole(t, whole, args, format)
		got, stderr, code := mergeOut(t, append([]string{"--format", format}, dirs...)...)
		if code != wantCode || got != want || wantCode != exitFail {
			t.Errorf("%s: merge exit %d, record exit %d (want 1); outputs equal: %v\n--- merge:\n%s\n%s\n--- record:\n%s", format, code, wantCode, got == want, got, stderr, want)
		}
	}
}

// merge refuses what is not the N shards of one record, naming why.
func TestMergeErrors(t *testing.T) {
	rec := fakeRecord(t, 2)
	args := []string{"--instrument", "time", "--runs", "2", "main", "HEAD", "./..."}
	dirs := rec.writeShards(t, t.TempDir(), 3, args)
	other := rec.writeShards(t, t.TempDir(), 3, append([]string{"--alpha", "0.01"}, args...))
	two := rec.writeShards(t, t.TempDir(), 2, args)
	budget := rec.writeShards(t, t.TempDir(), 3, append([]string{"--budget", "5m"}, args...))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want the --out directories of the shards"},
		{[]string{t.TempDir()}, "has no shard.json: merge reads the --out of hotbudget record --shard K/N"},
		{dirs[:2], "shard 3 of 3 missing"},
		{[]string{dirs[0], dirs[1], dirs[1]}, "are both shard 2 of 3"},
		{[]string{dirs[0], dirs[1], two[1]}, "is shard 2 of 2"},
		{[]string{dirs[0], dirs[1], other[2]}, "differ in their flags and packages"},
	} {
		_, stderr, code := mergeOut(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("merge %q: exit %d, want 2 and %q:\n%s", tc.args, code, tc.want, stderr)
		}
	}
	// --budget is each shard's own.
	if _, stderr, code := mergeOut(t, dirs[0], dirs[1], budget[2]); code != exitFail {
		t.Errorf("shards differing in --budget alone: exit %d, want 1\n%s", code, stderr)
	}
	// A shard whose list of benchmarks differs (other code, another --bench).
	path := filepath.Join(dirs[2], shardManifest)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"example.com/m BenchmarkC",`), nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := mergeOut(t, dirs...); code != exitUsage || !strings.Contains(stderr, "differ in their benchmarks found: 7 against 8") {
		t.Errorf("a shard listing other benchmarks: exit %d\n%s", code, stderr)
	}
}
