package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

const recordUsage = `Usage: hotbudget record [flags] BASE HEAD [PACKAGE...]

Builds the test binaries of the packages (default ./...) at two git
revisions (HEAD may be "." for the working tree), runs their benchmarks at
both, at the same iterations, writes what it measured under --out, and
judges every function of your module (go list -m) and every benchmark; the
runtime's functions are shown, never gated (--gate . gates them).

--instrument (the report's first line says which and why):
  instructions  the default where valgrind runs: every function's
                instructions counted under callgrind at N and 2N ops,
                judged exactly, the same on every machine
  time          the default elsewhere: CPU profiles, --runs a side,
                judged by shares with one false-discovery control. The
                better choice for code whose cost is I/O, system calls,
                the garbage collector or cache effects (until cycles are
                estimated), to which counts are blind

Exit status: 0 nothing regressed, 1 something regressed, 2 usage, input or
build error. See docs/gate.md, docs/instructions.md, docs/history.md
(--base-from-history), docs/sharding.md (--shard K/N, 'hotbudget merge').

Examples:

	hotbudget record origin/main HEAD
	hotbudget record --bench 'Parse' origin/main . ./parser
	hotbudget record --instrument time --runs 8 origin/main HEAD
	hotbudget record --format markdown --out perf "$BASE_SHA" HEAD ./...
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
	// instrument is what record measures: "instructions" (counted under
	// callgrind) or "time" (chooseInstrument); instructions says it is
	// "instructions", why is the report's first line: which and why.
	instrument   string
	instructions bool
	why          string
	cycles       bool      // --instrument cycles (recordcycles.go): instructions with cache simulation
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
	instr  *instrumentFlag
}

// recordFlags defines record's flags.
func (c *cli) recordFlags() *recordCmd {
	rc := &recordCmd{fs: c.flagSet("record", recordUsage)}
	fs, o := rc.fs, &rc.o
	fs.IntVar(&o.runs, "runs", 5, "interleaved `runs` a side")
	fs.IntVar(&o.count, "count", 1, "`n` benchmark results a run (go test -count)")
	fs.StringVar(&o.bench, "bench", ".", "run the benchmarks matching this `regexp` (go test -bench)")
	fs.StringVar(&o.benchtime, "benchtime", "1s", "calibrate each benchmark to run for this `duration` on the base revision (counting: 1ms unless given), or Nx for N iterations")
	fs.DurationVar(&o.budget, "budget", 15*time.Minute, "fit the runs into this `duration`: when the estimate after calibration is longer, every benchmark runs fewer iterations (counting: the longest are left out, named) (0: no limit)")
	fs.StringVar(&o.out, "out", "", "write base/ and head/ under this `directory` (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the worktrees and test binaries (their directory is printed)")
	fs.BoolVar(&o.full, "full", false, "print every function's and every benchmark result's table in the text report and the Markdown comment (default: what was judged and flagged, near misses, one line for the other benchmarks)")
	rc.instr = &instrumentFlag{}
	fs.Var(rc.instr, "instrument", "measure `instructions|cycles|time` (default: instructions where valgrind runs, else time); cycles: "+cyclesUsage)
	fs.Var(instrumentShorthand{rc.instr, "instructions"}, "instructions", "shorthand for --instrument instructions")
	fs.Var(instrumentShorthand{rc.instr, "cycles"}, "cycles", "shorthand for --instrument cycles")
	fs.Var(instrumentShorthand{rc.instr, "time"}, "time", "shorthand for --instrument time")
	fs.BoolVar(&o.baseFromHistory, "base-from-history", false, "take the base's counts (--instructions) or runs (time) from its record in the history (hotbudget history append, git notes) instead of measuring it again, when it was measured by the same Go on the same kind of machine (time: within --history-max-age); the head is measured alone")
	fs.StringVar(&o.historyRef, "history-ref", "refs/notes/hotbudget", "the notes `ref` --base-from-history reads")
	fs.DurationVar(&o.historyMaxAge, "history-max-age", defaultHistoryMaxAge, "time: --base-from-history takes a record at most this `duration` old (0: any age)")
	fs.BoolVar(&o.noAllocs, "no-allocs", false, "skip the allocation runs (two a side per benchmark at -test.memprofilerate=1) and their exact verdicts")
	fs.StringVar(&o.allocsHTML, "allocs-html", "", "also write the allocations' HTML report (table, differential flame graph of bytes per op) of the first benchmark whose allocations regressed, else the first, to `file`")
	fs.StringVar(&o.html, "html", "", "also write the functions' HTML report (flame graph, explanations) to `file`")
	fs.Var(&o.shard, "shard", "record only part `K/N` of the benchmarks (the K-th of N shards, for a CI job matrix) under --out, unjudged: hotbudget merge judges the N shards' outputs as one record")
	rc.format = newChoice("text", "text", "markdown", "json")
	fs.Var(rc.format, "format", "output `text|markdown|json`")
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	rc.d = addDiffFlags(fs.FlagSet)
	// The comparison flags are diff's: record's help names them and
	// describes its own, which fit a screen.
	fs.brief = map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] && f.Name != "gate" && f.Name != "module" {
			fs.brief[f.Name] = true
		}
	})
	fs.briefNote = "The functions' comparison, as 'hotbudget diff --help' describes it"
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
	if err := rc.chooseInstrument(); err != nil {
		return err
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
	if _, err := samplercheck.Sampler(c.getenv); err != nil {
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
	res.why = o.why
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

// instruments are the names --instrument takes, the default's first: what
// record measures.
var instruments = []string{"instructions", "cycles", "time"}

// timeOnlyFlags are record's flags that only time uses: given without an
// instrument they choose time, given with another they are refused.
var timeOnlyFlags = []string{"runs", "count", "history-max-age", "html", "allocs-html"}

// instrumentFlag is --instrument and its shorthands (--instructions,
// --time): the instrument chosen ("" when none was) and how each choice
// was written, to refuse two different ones.
type instrumentFlag struct {
	name  string
	given []string
	names []string // the instrument each of given chose
}

func (f *instrumentFlag) String() string {
	if f == nil {
		return ""
	}
	return f.name
}

func (f *instrumentFlag) Set(v string) error {
	if !slices.Contains(instruments, v) {
		return fmt.Errorf("must be one of %s", strings.Join(instruments, ", "))
	}
	f.choose(v, "--instrument "+v)
	return nil
}

func (f *instrumentFlag) choose(name, as string) {
	f.name = name
	f.given = append(f.given, as)
	f.names = append(f.names, name)
}

// instrumentShorthand is a boolean flag (--instructions, --time) that
// chooses one instrument: --time is --instrument time. Set to false it
// chooses nothing.
type instrumentShorthand struct {
	f    *instrumentFlag
	name string
}

func (s instrumentShorthand) String() string {
	if s.f != nil && s.f.name == s.name {
		return "true"
	}
	return "false"
}

func (s instrumentShorthand) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("want true or false")
	}
	if on {
		s.f.choose(s.name, "--"+s.name)
	}
	return nil
}

func (instrumentShorthand) IsBoolFlag() bool { return true }

// chooseInstrument sets rc.o's instrument from the command line: the one
// chosen, else time when a flag only time uses was given, else
// instructions where valgrind runs (valgrind.Find), else time; and the
// report's first line, which says which and why.
func (rc *recordCmd) chooseInstrument() error {
	o, f := &rc.o, rc.instr
	for i, n := range f.names {
		if n != f.names[0] {
			return fmt.Errorf("%s and %s choose two instruments: give one", f.given[0], f.given[i])
		}
	}
	var timeOnly []string
	for _, n := range timeOnlyFlags {
		if flagSet(rc.fs.FlagSet, n) {
			timeOnly = append(timeOnly, "--"+n)
		}
	}
	switch {
	case f.name == "time":
		o.instrument, o.why = "time", "timing: chosen by "+f.given[0]
	case f.name != "":
		if len(timeOnly) > 0 {
			return fmt.Errorf("%s is time's: %s counts each benchmark at N and 2N iterations, exactly, without runs to repeat (drop %s, or give --instrument time)", strings.Join(timeOnly, ", "), f.given[0], strings.Join(timeOnly, ", "))
		}
		o.instrument, o.why = f.name, "counting instructions (callgrind): chosen by "+f.given[0]
		if f.name == "cycles" {
			o.why = "estimating cycles (callgrind's cache simulation, a fixed CI runner's caches): chosen by " + f.given[0]
		}
	case len(timeOnly) > 0:
		o.instrument, o.why = "time", fmt.Sprintf("timing: %s is time's (counting instructions, exact, is the default where valgrind runs)", strings.Join(timeOnly, ", "))
	default:
		if _, err := valgrind.Find(); err != nil {
			why := err.Error()
			if errors.Is(err, valgrind.ErrMissing) {
				why = "valgrind is not installed (sudo apt-get install valgrind)"
			}
			o.instrument, o.why = "time", "timing: "+why+"; counts would be exact"
			break
		}
		v := valgrind.Version()
		if v == "" {
			v = "valgrind"
		}
		o.instrument, o.why = "instructions", fmt.Sprintf("counting instructions (callgrind, %s): exact, the default where valgrind runs (--instrument cycles for cache effects, time for I/O, system calls, the collector)", v)
	}
	o.instructions = o.instrument == "instructions" || o.instrument == "cycles"
	o.cycles = o.instrument == "cycles"
	return nil
}
