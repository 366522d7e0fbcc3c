package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

const recordUsage = `Usage: hotbudget record [flags] BASE HEAD [PACKAGE...]

Records and gates a change in one command. It builds the test binaries of
the packages (default ./...) at two git revisions, each in a temporary git
worktree, runs their benchmarks interleaved (base, head, head, base, ...)
--runs times a side with CPU profiling, writes the profiles and the
benchmark output under --out, and judges both: every function's CPU time
with the statistics of 'hotbudget diff', every benchmark with those of
'hotbudget bench'.

Both sides do the same work. Each benchmark's iteration count is
calibrated once, on the base revision, to take about --benchtime, and both
revisions then run exactly that many iterations (-test.benchtime=Nx): with
go test's own scaling a slower function would get fewer iterations, and
its share of the profile would barely move.

BASE and HEAD are anything 'git rev-parse' takes (main, origin/main,
HEAD~1, a commit); HEAD may be "." for the working tree as it is,
uncommitted changes included. Run it inside the repository, from the
directory the package patterns are relative to. In a shallow clone fetch
the base first (actions/checkout: fetch-depth: 0).

Each run is profiled with Linux perf events (the cpu-clock event, 10,000
samples a second of CPU time, opened on the test binary before it starts
and symbolised from it) where the kernel allows them
(kernel.perf_event_paranoid 2 or lower), else with go test -cpuprofile
(runtime/pprof, 100 a second); record says which on its first run.
HOTBUDGET_SAMPLER=pprof forces go test -cpuprofile, =perf perf events.

Functions are compared by their shares of each run's profile, measured
against the functions that did not change (--mode share, as diff's
default): a run on a machine that was faster or slower as a whole moves
every function's CPU time, not its share. Both sides do the same work,
so --mode absolute compares CPU time per run instead, with that noise.
Each benchmark is its own comparison, with its own profile,
headline and functions, and one false-discovery control holds across all
of them: a function holding 10% of one benchmark is judged at 10%. The
gate judges the functions of the module(s) record runs in (go list -m);
the runtime's and the standard library's count in every total and are
shown, tested, and named as near misses when they change, but never fail
the gate (--gate . gates every function: code that allocates more shows
up in runtime.mallocgc). Near misses (a slowdown whose q is above the
false-discovery rate but within five times it) are listed first and never
fail. The diff flags below apply to the functions; --alpha, --assume and
--min-change to the benchmarks too.

Allocations are judged exactly: after the CPU runs, every benchmark runs
twice more a side with -test.memprofilerate=1 (every allocation recorded
with its stack), with N and 2N iterations; their difference is what N ops
allocate, function by function, with what the benchmark allocates outside
its loop cancelled. A function of the gate whose allocations per op grew
by more than half an object or more than 8 bytes and 1% (a count, not an
estimate: no statistics, no runs to repeat) regressed, and the report
names the lines that allocate more. Objects under 16 bytes without
pointers are counted by the 16-byte blocks the runtime packs them into,
under the allocation that opened each block: such blocks move between
functions when a neighbour changes, so they are shown, not judged per
function. B/op and allocs/op of the benchmarks, which count every object,
are judged the same way; time stays statistical. --no-allocs skips the
allocation runs.

--instructions counts instead of sampling: every benchmark runs under
valgrind's callgrind (Linux; apt-get install valgrind) at N and 2N
iterations a side (N calibrated on the base revision to take --benchtime,
5ms by default with this flag), GOMAXPROCS=1 and the collector off, and
the difference, what N ops execute, is judged exactly, function by
function: a function of the gate regressed when its instructions per op
grew by more than 0.5% of itself and 0.01% of the benchmark's
(diff.CompareCounts). No runs to repeat, no statistics, no allocation
runs; about 6 s a benchmark. The report names what regressed in its first
and last lines, and base/ and head/ hold each benchmark's instructions
(PKG/NAME.instructions.pb.gz, N ops).

--base-from-history takes the base from its record in the history (the git
note 'hotbudget history append' stored when the base was pushed to main)
instead of measuring the base again; only the head is built and run. With
--instructions, the base's counts: exact, so the verdicts are those of
counting it again, the head counted at the base's N. For time, the base's
runs (each function's self samples per run, and the benchmark results):
the head runs as many times and iterations as the base did, and its
functions' shares are judged against the stored runs with the statistics
of a measured base; measured at another time, the benchmarks' time per op
(and the program's, the headline) is shown, not gated, the functions'
allocations are not judged (B/op and allocs/op are). It refuses, exit 2, a
base without a record, one measured by another Go, platform or CPU (time:
also GOMAXPROCS or number of processors), a time record older than
--history-max-age or without runs, and benchmarks or functions of the gate
the record lacks; the report says where the base came from
(docs/history.md).

Time: each benchmark runs about --benchtime per run and side, plus the
start of its test binary and its setup (about 1.3 s a run on a module of
46 benchmarks), and is calibrated once (about two --benchtime). record
measures both after calibrating, prints its estimate, then the time left
after every run; --budget fits the runs into a limit by running fewer
iterations of every benchmark.

A suite too long for one CI job runs in shards: --shard K/N records the
K-th of N parts of the benchmarks (all of them found at either revision,
sorted by package and name, dealt round-robin: each shard about 1/N of
the runs) under --out, with shard.json, and judges nothing; 'hotbudget
merge DIR...' judges the N shards' outputs together, as one record of
every benchmark would (one false-discovery control over all of them), and
exits as record does (docs/sharding.md).

Written under --out:

	base/bench.txt           the benchmark output of every run
	base/cpu-N.pb.gz         run N's CPU profile, all benchmarks merged (not judged)
	base/PKG/NAME.N.pb.gz    run N's CPU profile of one benchmark
	base/PKG/NAME.allocs.pb.gz  the allocation profile of one benchmark (2N+1 ops, exact)
	head/...                 the same for HEAD
	shard.json               with --shard: what merge reads

Every profile records the work it did in hotbudget's metadata (a benchmark's
iterations, "op"; a merged run of several benchmarks is one "run"), which
budget rules such as max_self_per_op read.

Exit status: 0 nothing regressed, 1 a function or a benchmark regressed, 2
usage, input or build error.

Examples:

	hotbudget record origin/main HEAD
	hotbudget record --runs 10 --bench 'Parse|Render' main . ./internal/parser
	hotbudget record --instructions origin/main HEAD ./...
	hotbudget record --base-from-history "$BASE_SHA" HEAD ./...
	hotbudget record --shard 2/4 --out perf-2 origin/main HEAD ./...
	hotbudget record --out perf --format markdown "$BASE_SHA" HEAD ./...
	hotbudget diff perf/base/cpu-*.pb.gz -- perf/head/cpu-*.pb.gz
	hotbudget bench perf/base/bench.txt perf/head/bench.txt
	hotbudget check --budget perf.yaml perf/head/cpu-*.pb.gz
`

// recordOpts are record's flags.
type recordOpts struct {
	runs, count int
	bench       string
	benchtime   string
	fixedIters  int64         // --benchtime Nx
	target      time.Duration // --benchtime DURATION
	out         string
	html        string // also write the functions' HTML report here
	allocsHTML  string // and the allocations' here
	keep        bool
	pkgs        []string
	procs       int // -test.cpu: the GOMAXPROCS suffix of benchmark names
	budget      time.Duration
	gate        *regexp.Regexp // --gate or --module: the functions whose allocations are judged (nil: the module's)
	noAllocs    bool           // --no-allocs
	// instructions counts instructions under callgrind (--instructions).
	instructions bool
	full         bool      // --full: every table in the text report
	shard        shardSpec // --shard K/N: record the K-th of N parts, unjudged (zero: all, judged)

	// baseFromHistory takes the base's counts from its record in the
	// history instead of measuring it (--base-from-history), read from
	// the notes ref historyRef.
	baseFromHistory bool
	historyRef      string
	// historyMaxAge is the oldest a time record --base-from-history
	// takes (0: any).
	historyMaxAge time.Duration
	// runsSet and countSet say --runs and --count were given: with a
	// time base from the history they must be the stored record's.
	runsSet, countSet bool
}

// recordCmd is record's command line: its flags, parsed by record, and by
// merge from what each shard wrote (shard.json's args).
type recordCmd struct {
	fs     *cmdFlags
	o      recordOpts
	d      *diffFlags
	format *choiceFlag
}

// recordFlags defines record's flags.
func (c *cli) recordFlags() *recordCmd {
	rc := &recordCmd{fs: c.flagSet("record", recordUsage)}
	fs, o := rc.fs, &rc.o
	fs.IntVar(&o.runs, "runs", 5, "interleaved `runs` a side")
	fs.IntVar(&o.count, "count", 1, "`n` benchmark results a run (go test -count)")
	fs.StringVar(&o.bench, "bench", ".", "run the benchmarks matching this `regexp` (go test -bench)")
	fs.StringVar(&o.benchtime, "benchtime", "1s", "calibrate each benchmark to run for this `duration` on the base revision, or Nx for N iterations")
	fs.DurationVar(&o.budget, "budget", 15*time.Minute, "fit the runs into this `duration`: when the estimate after calibration is longer, every benchmark runs fewer iterations (0: no limit)")
	fs.StringVar(&o.out, "out", "", "write base/ and head/ under this `directory` (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the worktrees and test binaries (their directory is printed)")
	fs.BoolVar(&o.full, "full", false, "print every function's and every benchmark result's table in the text report and the Markdown comment (default: what was judged and flagged, near misses, one line for the other benchmarks)")
	fs.BoolVar(&o.instructions, "instructions", false, "count every function's instructions under valgrind's callgrind instead of sampling CPU time: each benchmark at N and 2N iterations a side (N calibrated to --benchtime, 5ms unless given with this flag), judged exactly")
	fs.BoolVar(&o.baseFromHistory, "base-from-history", false, "take the base's counts (--instructions) or runs (time) from its record in the history (hotbudget history append, git notes) instead of measuring it again, when it was measured by the same Go on the same kind of machine (time: within --history-max-age); the head is measured alone")
	fs.StringVar(&o.historyRef, "history-ref", "refs/notes/hotbudget", "the notes `ref` --base-from-history reads")
	fs.DurationVar(&o.historyMaxAge, "history-max-age", defaultHistoryMaxAge, "time: --base-from-history takes a record at most this `duration` old (0: any age)")
	fs.BoolVar(&o.noAllocs, "no-allocs", false, "skip the allocation runs (two a side per benchmark at -test.memprofilerate=1) and their exact verdicts")
	fs.StringVar(&o.allocsHTML, "allocs-html", "", "also write the allocations' HTML report (table, differential flame graph of bytes per op) of the first benchmark whose allocations regressed, else the first, to `file`")
	fs.StringVar(&o.html, "html", "", "also write the functions' HTML report (flame graph, explanations) to `file`")
	fs.Var(&o.shard, "shard", "record only part `K/N` of the benchmarks (the K-th of N shards, for a CI job matrix) under --out, unjudged: hotbudget merge judges the N shards' outputs as one record")
	rc.format = newChoice("text", "text", "markdown", "json")
	fs.Var(rc.format, "format", "output `text|markdown|json`")
	rc.d = addDiffFlags(fs.FlagSet)
	return rc
}

// finish checks the parsed command line and completes rc.o from it; pos are
// the positional arguments. Its errors are usage errors.
func (rc *recordCmd) finish(pos []string) error {
	o, fs, d := &rc.o, rc.fs.FlagSet, rc.d
	if len(pos) < 2 {
		return fmt.Errorf("want BASE and HEAD revisions, got %d arguments", len(pos))
	}
	o.pkgs = pos[2:]
	if len(o.pkgs) == 0 {
		o.pkgs = []string{"./..."}
	}
	for _, p := range o.pkgs {
		// go list would take it for one of its flags (-toolexec runs a
		// program), whatever "--" said to hotbudget.
		if strings.HasPrefix(p, "-") {
			return fmt.Errorf("package pattern %q starts with '-': flags go before BASE and HEAD; a package pattern never starts with '-' (write ./%s for a directory of that name)", p, p)
		}
	}
	if o.runs < 1 {
		return fmt.Errorf("--runs must be at least 1, got %d", o.runs)
	}
	if o.count < 1 {
		return fmt.Errorf("--count must be at least 1, got %d", o.count)
	}
	if _, err := regexp.Compile(o.bench); err != nil {
		return fmt.Errorf("--bench: %v", err)
	}
	if o.shard.n > 0 {
		if o.out == "" {
			return errors.New("--shard needs --out: the directory the shard's results go to, which hotbudget merge reads")
		}
		for _, name := range []string{"format", "full", "html", "allocs-html"} {
			if flagSet(fs, name) {
				return fmt.Errorf("--%s is hotbudget merge's with --shard: a shard records, the merge of every shard judges and reports", name)
			}
		}
	}
	o.runsSet, o.countSet = flagSet(fs, "runs"), flagSet(fs, "count")
	if o.baseFromHistory {
		if o.shard.n > 0 {
			return errors.New("--base-from-history does not take --shard: a shard's base must be measured for hotbudget merge")
		}
		if err := timeHistoryFlags(o, fs); err != nil {
			return err
		}
	}
	if o.historyMaxAge < 0 {
		return fmt.Errorf("--history-max-age must not be negative, got %s", o.historyMaxAge)
	}
	if o.instructions && !flagSet(fs, "benchtime") {
		o.benchtime = exactBenchtime.String()
	}
	if n, ok := strings.CutSuffix(o.benchtime, "x"); ok {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			return fmt.Errorf("--benchtime %q: want a duration such as 1s or an iteration count such as 1000x", o.benchtime)
		}
		o.fixedIters = v
	} else {
		v, err := time.ParseDuration(o.benchtime)
		if err != nil || v <= 0 {
			return fmt.Errorf("--benchtime %q: want a duration such as 1s or an iteration count such as 1000x", o.benchtime)
		}
		o.target = v
	}
	if _, err := d.options(fs, nil); err != nil {
		return err
	}
	// Shares (diff's default mode), not CPU time per run, though both
	// sides do the same work: a run on a machine faster or slower as a
	// whole moves every function's time. On valyala/fastjson (four
	// benchmarks, parseRawKey 8-19% of them made 20-45% slower, perf
	// events at 10 kHz, five runs a side) the functions' times varied
	// 13-32% from run to run and absolute times found the change in 9 of
	// 20 benchmark comparisons, shares in 20 of 20 (no false alarm in
	// either in five records of unchanged code).
	o.procs = runtime.GOMAXPROCS(0)
	switch {
	case d.gate != "":
		o.gate, _ = regexp.Compile(d.gate) // checked by d.options
	case d.module != "":
		o.gate = modulePattern([]string{d.module})
	}
	return nil
}

func (c *cli) record(args []string) int {
	rc := c.recordFlags()
	pos, code := c.parse(rc.fs, args)
	if code >= 0 {
		return code
	}
	if err := rc.finish(pos); err != nil {
		return c.usageErr("record", "%v", err)
	}
	if err := checkSampler(c.getenv(samplerEnv)); err != nil {
		return c.usageErr("record", "%v", err)
	}
	o := rc.o

	ctx, stop := signalContext(context.Background())
	r := &recorder{c: c, o: o}
	if o.shard.n > 0 {
		r.shard = &shardLog{}
	}
	res, err := r.run(ctx, pos[0], pos[1])
	if sig := stop(); sig != nil {
		what := "the worktrees and temporary files are removed"
		if o.keep {
			what = "the worktrees and test binaries are kept (--keep)"
		}
		fmt.Fprintf(c.stderr, "hotbudget record: stopped by %v; %s\n", sig, what)
		return signalExit(sig)
	}
	if err != nil {
		return c.inputErr("record", err)
	}
	if r.shard != nil {
		return c.writeShard(r, res, args)
	}
	return c.judgeRecord("record", res, rc, r.progress)
}

// judgeRecord judges what record measured, every benchmark at once (one
// false-discovery control over all of them), writes the report and returns
// the exit code; record calls it on its runs, merge on the union of its
// shards'. cmd names the command in errors; progress reports the files
// written.
func (c *cli) judgeRecord(cmd string, res *recordResult, rc *recordCmd, progress func(format string, args ...any)) int {
	o, d, fs := rc.o, rc.d, rc.fs.FlagSet
	what, mods, gate := d.gateWhat(res.modules)
	if o.instructions {
		if err := exactUnmatched(res.exact, what, mods, gate); err != nil {
			return c.inputErr(cmd, err)
		}
		return c.exactReport(res, rc.format.value)
	}
	opts, err := d.options(fs, nil)
	if err != nil {
		return c.usageErr(cmd, "%v", err)
	}
	if d.gate == "" && d.module == "" && len(res.modules) > 0 {
		opts = append(opts, diff.WithGate(modulePattern(res.modules)))
	}
	if res.baseHistory != nil {
		// The program's time per op of a base measured at another time
		// measures the machine's drift as much as the code (a function's
		// share does not): shown, not judged, as for a baseline of
		// another machine (docs/history.md).
		opts = append(opts, diff.WithHeadline(false))
	}
	funcs, err := diff.CompareEach(res.pairs, opts...)
	if err != nil {
		return c.inputErr(cmd, err)
	}
	if err := gateUnmatched(funcs, what, mods, gate); err != nil {
		return c.inputErr(cmd, err)
	}
	bopts, err := d.benchOptions(fs)
	if err != nil {
		return c.inputErr(cmd, err)
	}
	benches, err := bench.Compare(bytes.NewReader(res.baseBench), bytes.NewReader(res.headBench), bopts...)
	if err != nil {
		return c.inputErr(cmd, err)
	}
	if res.baseHistory != nil {
		res.timeShown = ungateMeasuredTime(benches)
	}
	// The library's messages name Go options; record's user has flags.
	for _, r := range funcs {
		flagWords(r)
	}
	benchWords(benches)
	if o.html != "" {
		// One benchmark's report: the first that needs attention.
		top := ordered(funcs)[0]
		if err := writeFileAtomic(o.html, func(f *os.File) error { return top.Write(f, "html") }); err != nil {
			return c.inputErr(cmd, err)
		}
		progress("wrote the HTML report of %s to %s", top.Name, o.html)
	}
	allocs := compareAllocs(res.allocs)
	if o.allocsHTML != "" && len(allocs) > 0 {
		top := orderedAllocs(allocs)[0]
		if err := writeFileAtomic(o.allocsHTML, func(f *os.File) error { return top.Write(f, "html") }); err != nil {
			return c.inputErr(cmd, err)
		}
		progress("wrote the allocations' HTML report of %s to %s", top.Name, o.allocsHTML)
	}
	return c.recordReport(res, funcs, benches, allocs, rc.format.value, o.full)
}
