// history append's reading: a record's --out directory (or a shard's) made into a
// history record.

package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
	"golang.org/x/perf/benchfmt"
)

// emptyShard reports whether out is the --out of a shard that recorded no
// benchmark (record --shard K/N with more shards than benchmarks).
func emptyShard(out string) bool {
	data, err := os.ReadFile(filepath.Join(out, shardManifest))
	if err != nil {
		return false
	}
	var f shardFile
	return json.Unmarshal(data, &f) == nil && len(f.Recorded) == 0
}

// joinRecords adds the benchmarks of part, read from the shard out, to
// rec: shards of one record measured with one Go and instrument, on one
// kind of machine, and hold each benchmark once.
func joinRecords(rec, part *history.Record, out string) (*history.Record, error) {
	if rec == nil {
		return part, nil
	}
	for _, f := range []struct{ what, a, b string }{{"instrument", rec.Instrument, part.Instrument}, {"Go", rec.Go, part.Go}, {"machine", rec.Machine, part.Machine}} {
		if f.a != f.b && f.b != "" {
			return nil, fmt.Errorf("%s: %s %s, another --out's %s: give the shards of one record", out, f.what, textfmt.Line(f.b), textfmt.Line(f.a))
		}
	}
	have := map[string]bool{}
	for _, b := range rec.Benchmarks {
		have[b.Name] = true
	}
	for _, b := range part.Benchmarks {
		if have[b.Name] {
			return nil, fmt.Errorf("%s: %s again: give each shard's --out once", out, textfmt.Line(b.Name))
		}
		rec.Benchmarks = append(rec.Benchmarks, b)
	}
	return rec, nil
}

// runProfile matches a benchmark's CPU profile of one run: NAME.N.pb.gz.
var runProfile = regexp.MustCompile(`^(.+)\.[0-9]+\.pb\.gz$`)

// runNumber is a run profile's number: NAME.N.pb.gz.
var runNumber = regexp.MustCompile(`\.([0-9]+)\.pb\.gz$`)

// recordedHead matches the head revision in a run profile's name:
// "PKG NAME at head HEAD (0123456789ab), run 1".
var recordedHead = regexp.MustCompile(` at head (?:[^,]* \()?([0-9a-f]{7,40})\)?, run [0-9]+$`)

// readRecordOut reads the head side of a record's --out directory into a
// history record (without its commit), the head commit the profiles or
// shard.json name ("" when they do not), and the benchmarks whose
// instructions were read from the whole process of 2N ops (no counted
// difference beside it). countsOf names the modules whose functions'
// exact counts the record keeps (nil: every function's).
func readRecordOut(dir string, countsOf func() ([]string, error)) (*history.Record, string, []string, error) {
	rec, recorded, whole, err := readRecordHead(dir, countsOf)
	if err != nil || recorded != "" {
		return rec, recorded, whole, err
	}
	// The profiles of record --instructions name no commit; a shard's
	// shard.json does.
	if data, err := os.ReadFile(filepath.Join(dir, shardManifest)); err == nil {
		var sf shardFile
		if json.Unmarshal(data, &sf) == nil {
			recorded = sf.Head.Commit
		}
	}
	return rec, recorded, whole, nil
}

func readRecordHead(dir string, countsOf func() ([]string, error)) (*history.Record, string, []string, error) {
	rec, recorded, whole, single, err := readRecordHeadN(dir, countsOf)
	if err == nil && len(single) > 0 {
		err = fmt.Errorf("%s: %s counted at N = 1 (%s): go test runs one op before the N of -test.benchtime=Nx except at 1x, so the difference of the 1x and 2x processes holds two ops, not one; record again with a longer --benchtime", dir, plural(len(single), "benchmark was", "benchmarks were"), textfmt.Line(single[0]))
	}
	return rec, recorded, whole, err
}

func readRecordHeadN(dir string, countsOf func() ([]string, error)) (*history.Record, string, []string, []string, error) {
	head := filepath.Join(dir, "head")
	if _, err := os.Stat(head); err != nil {
		return nil, "", nil, nil, fmt.Errorf("%s: no head/ directory: give the --out directory of hotbudget record: %w", dir, err)
	}
	rec := &history.Record{Schema: history.Schema, Instrument: history.InstrumentTime}
	byName := map[string]*history.Benchmark{}
	bench := func(name string) *history.Benchmark {
		if b := byName[name]; b != nil {
			return b
		}
		byName[name] = &history.Benchmark{Name: name}
		return byName[name]
	}
	platform, cpu, recorded := "", "", ""
	// Profiles: each run's CPU profile, or the counted instructions.
	type runs struct {
		shares map[string][]float64
		perOp  map[string][]float64
		n      int
		// profiles are the runs' profiles by run number, which TimeRuns
		// keeps (timeRunsOf).
		profiles map[int]*profile.Profile
	}
	cpuRuns := map[string]*runs{}
	var counted, whole, single []string
	err := filepath.WalkDir(head, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".pb.gz") || filepath.Dir(path) == head {
			return err
		}
		base := filepath.Base(path)
		instr := strings.HasSuffix(base, ".instructions.pb.gz") || strings.HasSuffix(base, ".instructions-diff.pb.gz")
		if !instr && (strings.HasSuffix(base, ".allocs.pb.gz") || !runProfile.MatchString(base)) {
			return nil
		}
		// A counted difference holds negative counts where the two
		// processes' runtimes differed, which loaders refuse.
		load := func(path string) (*profile.Profile, error) { return loaders.Load(path) }
		if strings.HasSuffix(base, ".instructions-diff.pb.gz") {
			load = readProfile
		}
		p, err := load(path)
		if err != nil {
			return err
		}
		m, _ := meta.Known(p)
		rel, _ := filepath.Rel(head, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		name, _, _ := strings.Cut(m.Name, " at ")
		name = strings.TrimPrefix(name, pkg+" ")
		// A counted difference holds several processes where record
		// confirmed a failure (recordconfirm.go): its ops are all of
		// theirs, and its counts their sums.
		diffed := strings.HasSuffix(base, ".instructions-diff.pb.gz")
		ops := 0.0
		for _, run := range m.Runs {
			ops += run.Work
		}
		if name == "" || len(m.Runs) == 0 || (len(m.Runs) != 1 && !diffed) || !(ops > 0) {
			return fmt.Errorf("%s: not a profile of one benchmark's run written by hotbudget record", path)
		}
		if f := strings.Fields(m.Build); len(f) == 2 {
			rec.Go, platform = f[0], f[1]
		}
		if sm := recordedHead.FindStringSubmatch(m.Name); sm != nil {
			recorded = sm[1]
		}
		key := pkg + " " + name
		if diffed && ops < 2 {
			// go test runs one op (run1) before -test.benchtime=Nx's N,
			// except at 1x: the difference of the 1x and 2x processes is
			// three ops less one, two, not one.
			rec.Instrument = history.InstrumentInstructions
			single = append(single, key)
			return nil
		}
		if diffed {
			// Every function's exact count of the N ops judged,
			// attributed as diff.CompareCounts attributes it: what
			// record --base-from-history compares a head against.
			rec.Instrument = history.InstrumentInstructions
			b := bench(key)
			all := exactCounts(p)
			var total int64
			for _, c := range all {
				total += c.N
			}
			for _, c := range all {
				if c.N > 0 && total > 0 {
					b.Functions = append(b.Functions, history.Function{Name: c.Name, Share: float64(c.N) / float64(total), PerOp: float64(c.N) / ops})
				}
			}
			b.Runs, b.Ops, b.CountTotal = 1, int64(ops), total
			perOp := float64(total) / ops
			b.InstrPerOp = &perOp
			// A negative count in the difference of two processes is
			// their runtimes' work differing (the monitor thread follows
			// the wall clock): in the whole, not kept as a count
			// (history.Record.Validate refuses negative counts).
			judged := func(string) bool { return true }
			if countsOf != nil {
				mods, err := countsOf()
				if err != nil {
					return err
				}
				rec.CountsOf = mods
				judged = ModulePattern(mods).MatchString
			}
			b.Counts = slices.DeleteFunc(slices.Clone(all), func(c history.Count) bool { return c.N <= 0 || !judged(c.Name) })
			counted = append(counted, key)
			return nil
		}
		t, err := analysis.Functions(p)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if instr {
			// The counted difference of N and 2N ops, which record
			// --instructions writes beside it, beats the whole process of
			// 2N ops.
			if strings.HasSuffix(base, ".instructions.pb.gz") && fileExists(strings.TrimSuffix(path, ".instructions.pb.gz")+".instructions-diff.pb.gz") {
				return nil
			}
			rec.Instrument = history.InstrumentInstructions
			if strings.HasSuffix(base, ".instructions.pb.gz") {
				whole = append(whole, key)
			}
			b := bench(key)
			b.Runs = 1
			total := float64(t.Total) / ops
			b.InstrPerOp = &total
			for _, f := range t.Functions {
				if f.Self > 0 && t.Total > 0 {
					b.Functions = append(b.Functions, history.Function{Name: f.Name, Share: float64(f.Self) / float64(t.Total), PerOp: float64(f.Self) / ops})
				}
			}
			counted = append(counted, key)
			return nil
		}
		r := cpuRuns[key]
		if r == nil {
			r = &runs{shares: map[string][]float64{}, perOp: map[string][]float64{}, profiles: map[int]*profile.Profile{}}
			cpuRuns[key] = r
		}
		r.n++
		if sm := runNumber.FindStringSubmatch(base); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			r.profiles[n] = p
		}
		for _, f := range t.Functions {
			if f.Self > 0 && t.Total > 0 {
				r.shares[f.Name] = append(r.shares[f.Name], float64(f.Self)/float64(t.Total))
				r.perOp[f.Name] = append(r.perOp[f.Name], float64(f.Self)/ops)
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", nil, nil, err
	}
	for key, r := range cpuRuns {
		b := bench(key)
		for name, shares := range r.shares {
			// A function absent from a run had no time in it.
			for len(shares) < r.n {
				shares = append(shares, 0)
			}
			per := r.perOp[name]
			for len(per) < r.n {
				per = append(per, 0)
			}
			b.Functions = append(b.Functions, history.Function{Name: name, Share: stats.Median(shares), PerOp: stats.Median(per)})
		}
	}
	// The benchmark output: time, bytes and allocations per op.
	results := map[string][]string{} // each benchmark's result lines, in order
	if data, err := os.ReadFile(filepath.Join(head, "bench.txt")); err == nil {
		type vals struct{ ns, bytes, allocs []float64 }
		got := map[string]*vals{}
		rd := benchfmt.NewReader(strings.NewReader(string(data)), "bench.txt")
		for rd.Scan() {
			res, ok := rd.Result().(*benchfmt.Result)
			if !ok {
				continue
			}
			if v := res.GetConfig("cpu"); v != "" {
				cpu = v
			}
			key := res.GetConfig("pkg") + " " + history.BenchName(res.Name)
			results[key] = append(results[key], resultLine(res))
			if p := benchProcs(res.Name); p > 0 {
				rec.GOMAXPROCS = p
			}
			v := got[key]
			if v == nil {
				v = &vals{}
				got[key] = v
			}
			if ns, ok := res.Value("sec/op"); ok {
				v.ns = append(v.ns, ns*1e9)
			}
			if b, ok := res.Value("B/op"); ok {
				v.bytes = append(v.bytes, b)
			}
			if a, ok := res.Value("allocs/op"); ok {
				v.allocs = append(v.allocs, a)
			}
		}
		for key, v := range got {
			b := bench(key)
			if rec.Instrument == history.InstrumentTime && len(v.ns) > 0 {
				b.NsPerOp = history.SpreadOf(v.ns)
				b.Runs = len(v.ns)
			}
			if len(v.bytes) > 0 {
				m := stats.Median(v.bytes)
				b.BytesPerOp = &m
			}
			if len(v.allocs) > 0 {
				m := stats.Median(v.allocs)
				b.AllocsPerOp = &m
			}
		}
	} else if !os.IsNotExist(err) {
		return nil, "", nil, nil, err
	}
	// The runs themselves, what record --base-from-history judges a
	// head against as it would a measured base.
	for key, r := range cpuRuns {
		tr, err := timeRunsOf(r.profiles, results[key])
		if err != nil {
			return nil, "", nil, nil, fmt.Errorf("%s: %s: %w", dir, key, err)
		}
		if tr != nil {
			bench(key).TimeRuns = tr
			rec.CPUs = runtime.NumCPU()
		}
	}
	if len(byName) == 0 && len(single) == 0 {
		return nil, "", nil, nil, fmt.Errorf("%s: no benchmark results or profiles under head/", dir)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rec.Benchmarks = append(rec.Benchmarks, *byName[n])
	}
	rec.Machine = strings.Trim(platform+"; "+cpu, "; ")
	sort.Strings(whole)
	sort.Strings(single)
	return rec, recorded, whole, single, nil
}

// exactCounts is each function's self count in p, the leaf frame's
// function of every sample (diff.CompareCounts's attribution), nonzero
// ones only, sorted by name.
func exactCounts(p *profile.Profile) []history.Count {
	by := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Value) == 0 || len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
			continue
		}
		by[s.Location[0].Line[0].Function.Name] += s.Value[0]
	}
	var out []history.Count
	for _, name := range sortedKeys(by) {
		if by[name] != 0 {
			out = append(out, history.Count{Name: name, N: by[name]})
		}
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ReadRecordOuts reads the record of commit (given as rev) from the --out
// directories outs of a record, or of its shards (those that recorded no
// benchmark skipped): with countsModule, the exact counts of the
// functions of the module here (go list -m), else of every function. whole
// names the benchmarks counted only as whole processes of 2N ops.
func ReadRecordOuts(ctx context.Context, outs []string, commit, rev string, countsModule bool) (rec *history.Record, whole []string, err error) {
	// The module's functions, asked of go list -m when a record counted
	// instructions.
	var countsOf func() ([]string, error)
	if countsModule {
		var mods []string
		var err error
		countsOf = func() ([]string, error) {
			if mods == nil && err == nil {
				var out string
				if out, err = goOut(ctx, ".", "list", "-m"); err == nil && (out == "" || out == "command-line-arguments") {
					err = errors.New("not in a module")
				}
				if err != nil {
					err = fmt.Errorf("--counts module: go list -m: %w: run history append in the module record ran in, or keep every function's counts with --counts all", err)
				}
				mods = strings.Fields(out)
			}
			return mods, err
		}
	}
	for _, out := range outs {
		if len(outs) > 1 && emptyShard(out) {
			continue // a shard whose part held no benchmark
		}
		part, recorded, wholeOf, err := readRecordOut(out, countsOf)
		if err != nil {
			return nil, nil, err
		}
		whole = append(whole, wholeOf...)
		if recorded != "" && !strings.HasPrefix(commit, recorded) {
			return nil, nil, fmt.Errorf("%s records HEAD %s, not --commit %s (%.12s)", out, recorded, textfmt.Line(rev), commit)
		}
		if rec, err = joinRecords(rec, part, out); err != nil {
			return nil, nil, err
		}
	}
	if rec == nil {
		return nil, nil, fmt.Errorf("the shards under %s recorded no benchmark", strings.Join(outs, " "))
	}
	return rec, whole, nil
}
