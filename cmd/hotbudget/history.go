package main

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
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
	"golang.org/x/perf/benchfmt"
)

const historyUsage = `Usage:

	hotbudget history append --out DIR [--commit REV] [flags]
	hotbudget history show [--rev REV] [--since REV] [--functions] [--format text|markdown|json]
	hotbudget history html [--rev REV] [--since REV] [--out FILE]
	hotbudget history prune [--rev REV] [--keep-functions K] [--keep-runs K] [--squash]

Keeps the results of 'hotbudget record' across the commits of a branch, in
the repository itself: the record of commit C is the git note of C under
refs/notes/hotbudget, one line of JSON ('git notes --ref=hotbudget show C'
prints it; docs/history.md has the schema). No server, no other branch.

append reads what 'hotbudget record --out DIR' wrote for its HEAD (DIR/head:
bench.txt and each benchmark's profiles) and stores, per benchmark, the
time per op (median and range over the runs), B/op and allocs/op, or the
instructions per op under --instructions, and the functions holding at
least --min-share of the benchmark (at most --max-functions), with the
Go version, the machine and the date. A record of time also keeps its
runs as the time verdict reads them (each function's self samples and its
caller's, per run, and the benchmark results), from which record
--base-from-history judges a pull request against it; counting
instructions, every function's exact counts. Records beyond the newest
--keep-functions of the first-parent history lose their functions and
counts, those beyond the newest --keep-runs their runs; the benchmarks'
values stay. --commit (default HEAD) is the commit the record
belongs to: the record's HEAD. Counting instructions, append stores what
N ops execute, the difference record --instructions writes beside the
process of 2N ops; given only that whole process (start-up included, a
record of before the difference was written), it warns.

show prints each benchmark's series along the first-parent history of
--rev (default HEAD; the main branch's commits) and the change points since
--since: time by E-divisive means with a seeded permutation test, exact
counts (instructions, B/op, allocs/op) by steps beyond a tolerance.
--functions adds each function's self share (or self instructions). html
writes the same as one self-contained page of charts.

Share the history: git push origin refs/notes/hotbudget, and fetch it with
git fetch origin refs/notes/hotbudget:refs/notes/hotbudget.

Examples:

	hotbudget record --out perf HEAD~1 HEAD ./... ; hotbudget history append --out perf
	hotbudget history show --since v1.2.0 --format markdown
	hotbudget history html --out history.html
`

func (c *cli) history(args []string) int {
	if len(args) == 0 {
		return c.usageErr("history", "want a subcommand: append, show, html or prune")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stdout, historyUsage)
		return exitOK
	case "append":
		return c.historyAppend(args[1:])
	case "show", "html":
		return c.historyShow(args[0], args[1:])
	case "prune":
		return c.historyPrune(args[1:])
	}
	return c.usageErr("history", "unknown subcommand %q: want append, show, html or prune", textfmt.Name(args[0]))
}

// historyStore is the flags every history subcommand shares.
func historyStore(fs *cmdFlags) *string {
	return fs.String("ref", history.DefaultRef, "the notes `ref` the history lives in")
}

func (c *cli) historyAppend(args []string) int {
	fs := c.flagSet("history append", historyUsage)
	ref := historyStore(fs)
	var outs listFlag
	fs.Var(&outs, "out", "the `directory` hotbudget record --out wrote (its head/ is read); repeated, the shards of one record (record --shard K/N --out DIR)")
	rev := fs.String("commit", "HEAD", "the commit the record belongs to: the record's HEAD `revision`")
	keep := fs.Int("keep-functions", history.DefaultRetention.KeepFunctions, "keep functions in the newest `K` records of the first-parent history (negative: in all)")
	keepRuns := fs.Int("keep-runs", history.DefaultRetention.KeepRuns, "keep the runs of time (record --base-from-history's) in the newest `K` records, at most --keep-functions (0: as --keep-functions)")
	minShare := fs.String("min-share", "1%", "keep the functions holding at least this `share` of a benchmark")
	maxFuncs := fs.Int("max-functions", history.DefaultCompaction.MaxFunctions, "keep at most `n` functions a benchmark")
	counts := newChoice("module", "module", "all")
	fs.Var(counts, "counts", "with --instructions, keep the exact counts of the functions of the `module|all` (go list -m here; what record --base-from-history judges against: record's gate judges the module's functions)")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 || len(outs) == 0 {
		return c.usageErr("history append", "want --out DIR, the directory of a hotbudget record (or --out once per shard), and no arguments")
	}
	share, err := parsePercent(*minShare)
	if err != nil {
		return c.usageErr("history append", "--min-share: %v", err)
	}
	ctx := context.Background()
	store := history.Notes{Ref: *ref}
	commit, date, err := store.Commit(ctx, *rev)
	if err != nil {
		return c.inputErr("history append", err)
	}
	// The module's functions, asked of go list -m when a record counted
	// instructions.
	var countsOf func() ([]string, error)
	if counts.value == "module" {
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
	var rec *history.Record
	var whole []string
	for _, out := range outs {
		if len(outs) > 1 && emptyShard(out) {
			continue // a shard whose part held no benchmark
		}
		part, recorded, wholeOf, err := readRecordOut(out, countsOf)
		if err != nil {
			return c.inputErr("history append", err)
		}
		whole = append(whole, wholeOf...)
		if recorded != "" && !strings.HasPrefix(commit, recorded) {
			return c.inputErr("history append", fmt.Errorf("%s records HEAD %s, not --commit %s (%.12s)", out, recorded, textfmt.Line(*rev), commit))
		}
		if rec, err = joinRecords(rec, part, out); err != nil {
			return c.inputErr("history append", err)
		}
	}
	if rec == nil {
		return c.inputErr("history append", fmt.Errorf("the shards under %s recorded no benchmark", strings.Join(outs, " ")))
	}
	if len(whole) > 0 {
		// Only the run of 2N ops, no counted difference beside it (a record
		// --instructions of a hotbudget before the difference was written):
		// its start-up, divided by 2N, moves with the N record calibrated,
		// so the same code gives another value at the next commit.
		fmt.Fprintf(c.stderr, "hotbudget history: warning: %s of %s counted as whole processes of 2N ops (start-up included; %s), without the counted difference of N ops (PKG/NAME.instructions-diff.pb.gz): their instructions per op move with the N record calibrated, and every such move is a step in the history; record again with this hotbudget's record --instructions, which writes the difference\n",
			plural(len(whole), "benchmark", "benchmarks"), strings.Join(outs, " "), textfmt.Line(whole[0]))
	}
	rec.Commit, rec.Date, rec.Recorded = commit, date, time.Now().UTC().Format(time.RFC3339)
	rec.Compact(history.Compaction{MinShare: share, MaxFunctions: *maxFuncs})
	data, err := rec.Marshal()
	if err != nil {
		return c.inputErr("history append", err)
	}
	if err := store.Put(ctx, rec); err != nil {
		return c.inputErr("history append", err)
	}
	pruned, err := store.Prune(ctx, commit, history.Retention{KeepFunctions: *keep, KeepRuns: *keepRuns})
	if err != nil {
		return c.inputErr("history append", err)
	}
	nf := 0
	for _, b := range rec.Benchmarks {
		nf += len(b.Functions)
	}
	fmt.Fprintf(c.stdout, "hotbudget history: %.12s: %s (%s, %s functions, %d bytes) under %s", commit,
		plural(len(rec.Benchmarks), "benchmark", "benchmarks"), rec.Instrument, textfmt.Count(float64(nf)), len(data), textfmt.Line(*ref))
	if len(pruned) > 0 {
		fmt.Fprintf(c.stdout, "; functions or runs pruned from %s", plural(len(pruned), "older record", "older records"))
	}
	fmt.Fprintf(c.stdout, "\nshare it with: git push origin %s\n", textfmt.Line(*ref))
	return exitOK
}

func (c *cli) historyShow(sub string, args []string) int {
	name := "history " + sub
	fs := c.flagSet(name, historyUsage)
	ref := historyStore(fs)
	rev := fs.String("rev", "HEAD", "read the first-parent history of this `revision`")
	since := fs.String("since", "", "list the changes after this `revision` (default: all)")
	functions := fs.Bool("functions", sub == "html", "the functions' series too")
	seed := fs.Uint64("seed", history.DefaultEDivisive.Seed, "seed of the permutation tests")
	format := newChoice("text", "text", "markdown", "json")
	out := fs.String("out", "", "write the page to this `file` (html; default stdout)")
	if sub == "show" {
		fs.Var(format, "format", "output `text|markdown|json`")
	}
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return c.usageErr(name, "unexpected arguments %q", pos)
	}
	ctx := context.Background()
	store := history.Notes{Ref: *ref}
	recs, commits, err := store.Load(ctx, *rev)
	if err != nil {
		return c.inputErr(name, err)
	}
	if len(recs) == 0 {
		return c.inputErr(name, fmt.Errorf("no records under %s on the first-parent history of %s (hotbudget history append adds them; git fetch origin %s:%s fetches them)",
			textfmt.Line(*ref), textfmt.Line(*rev), textfmt.Line(*ref), textfmt.Line(*ref)))
	}
	method := history.DefaultEDivisive
	method.Seed = *seed
	series := history.Build(recs, *functions)
	history.Analyze(recs, series, method)
	rep := &history.Report{Records: recs, Series: series, Method: method}
	if *since != "" {
		at, err := sinceIndex(ctx, store, recs, commits, *since)
		if err != nil {
			return c.inputErr(name, err)
		}
		rep.Since, rep.SinceRev = at, *since
	}
	if sub == "html" {
		if *out == "" {
			err = rep.WriteHTML(c.rawStdout)
		} else {
			err = writeFileAtomic(*out, func(f *os.File) error { return rep.WriteHTML(f) })
		}
	} else {
		switch format.value {
		case "markdown":
			err = rep.WriteMarkdown(c.stdout)
		case "json":
			err = writeHistoryJSON(c, rep)
		default:
			err = rep.WriteText(c.stdout)
		}
	}
	if err != nil {
		return c.inputErr(name, err)
	}
	return exitOK
}

// sinceIndex is the index of the first record after revision since on the
// first-parent history (commits, newest first).
func sinceIndex(ctx context.Context, store history.Notes, recs []*history.Record, commits []string, since string) (int, error) {
	hash, _, err := store.Commit(ctx, since)
	if err != nil {
		return 0, err
	}
	newer := map[string]bool{}
	for _, c := range commits {
		if c == hash {
			break
		}
		newer[c] = true
	}
	if len(newer) == len(commits) {
		return 0, fmt.Errorf("--since %s (%.12s) is not on the first-parent history read", textfmt.Line(since), hash)
	}
	for i, r := range recs {
		if newer[r.Commit] {
			return i, nil
		}
	}
	return len(recs), nil
}

// writeHistoryJSON writes the changes as JSON (schema hotbudget.history-show/v1).
func writeHistoryJSON(c *cli, rep *history.Report) error {
	type change struct {
		Benchmark string  `json:"benchmark"`
		Function  string  `json:"function,omitempty"`
		Measure   string  `json:"measure"`
		Commit    string  `json:"commit"`
		Prev      string  `json:"prev"`
		Before    float64 `json:"before"`
		After     float64 `json:"after"`
		Change    float64 `json:"change"`
		P         float64 `json:"p,omitempty"`
		Context   string  `json:"context,omitempty"`
		By        string  `json:"by,omitempty"`
	}
	out := struct {
		Schema  string   `json:"schema"`
		Records int      `json:"records"`
		First   string   `json:"first"`
		Last    string   `json:"last"`
		Since   string   `json:"since,omitempty"`
		Method  string   `json:"method"`
		Changes []change `json:"changes"`
	}{Schema: "hotbudget.history-show/v1", Records: len(rep.Records), First: rep.Records[0].Commit, Last: rep.Records[len(rep.Records)-1].Commit,
		Since: rep.SinceRev, Method: rep.MethodLine(), Changes: []change{}}
	for _, sc := range rep.Changes() {
		ch := sc.Change
		out.Changes = append(out.Changes, change{Benchmark: sc.Series.Benchmark, Function: sc.Series.Function, Measure: sc.Series.Measure.Key,
			Commit: ch.Commit, Prev: ch.Prev, Before: ch.Before, After: ch.After, Change: ch.ChangePoint.Change(), P: ch.P, Context: ch.Context, By: ch.By})
	}
	enc := json.NewEncoder(c.rawStdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (c *cli) historyPrune(args []string) int {
	fs := c.flagSet("history prune", historyUsage)
	ref := historyStore(fs)
	rev := fs.String("rev", "HEAD", "prune along the first-parent history of this `revision`")
	keep := fs.Int("keep-functions", history.DefaultRetention.KeepFunctions, "keep functions in the newest `K` records (negative: in all)")
	keepRuns := fs.Int("keep-runs", history.DefaultRetention.KeepRuns, "keep the runs of time in the newest `K` records, at most --keep-functions (0: as --keep-functions)")
	squash := fs.Bool("squash", false, "then replace the notes ref's own history by one commit, so that git gc frees what was pruned (pushing it needs +"+history.DefaultRef+")")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return c.usageErr("history prune", "unexpected arguments %q", pos)
	}
	ctx := context.Background()
	store := history.Notes{Ref: *ref}
	pruned, err := store.Prune(ctx, *rev, history.Retention{KeepFunctions: *keep, KeepRuns: *keepRuns})
	if err != nil {
		return c.inputErr("history prune", err)
	}
	fmt.Fprintf(c.stdout, "hotbudget history: functions or runs pruned from %s\n", plural(len(pruned), "record", "records"))
	if *squash {
		if err := store.Squash(ctx); err != nil {
			return c.inputErr("history prune", err)
		}
		fmt.Fprintf(c.stdout, "hotbudget history: %s squashed to one commit\n", textfmt.Line(*ref))
	}
	return exitOK
}

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
		if name == "" || len(m.Runs) != 1 || !(m.Runs[0].Work > 0) {
			return fmt.Errorf("%s: not a profile of one benchmark's run written by hotbudget record", path)
		}
		if f := strings.Fields(m.Build); len(f) == 2 {
			rec.Go, platform = f[0], f[1]
		}
		if sm := recordedHead.FindStringSubmatch(m.Name); sm != nil {
			recorded = sm[1]
		}
		key := pkg + " " + name
		ops := m.Runs[0].Work
		diffed := strings.HasSuffix(base, ".instructions-diff.pb.gz")
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
			b.Counts = all
			if countsOf != nil {
				mods, err := countsOf()
				if err != nil {
					return err
				}
				rec.CountsOf = mods
				judged := modulePattern(mods)
				b.Counts = slices.DeleteFunc(slices.Clone(all), func(c history.Count) bool { return !judged.MatchString(c.Name) })
			}
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
			key := res.GetConfig("pkg") + " " + historyBenchName(res.Name)
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

// historyBenchName is a benchmark's name as go test prints it without the
// GOMAXPROCS suffix, with its Benchmark prefix: the name record keys it by.
func historyBenchName(n benchfmt.Name) string {
	base, parts := n.Parts()
	name := "Benchmark" + string(base)
	for _, p := range parts {
		if len(p) > 1 && p[0] == '-' && strings.Trim(string(p[1:]), "0123456789") == "" {
			continue // -GOMAXPROCS
		}
		name += string(p)
	}
	return name
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
