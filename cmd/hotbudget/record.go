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

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/ghactions"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/textfmt"
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

// recordCmd is record's command line: its flags, parsed by record, and by
// merge from what each shard wrote (shard.json's args).
type recordCmd struct {
	fs     *cmdFlags
	o      gate.Config
	d      *diffFlags
	format *choiceFlag
	instr  *instrumentFlag
}

// recordFlags defines record's flags.
func (c *cli) recordFlags() *recordCmd {
	rc := &recordCmd{fs: c.flagSet("record", recordUsage)}
	fs, o := rc.fs, &rc.o
	fs.IntVar(&o.Runs, "runs", 5, "interleaved `runs` a side")
	fs.IntVar(&o.Count, "count", 1, "`n` benchmark results a run (go test -count)")
	fs.StringVar(&o.Bench, "bench", ".", "run the benchmarks matching this `regexp` (go test -bench)")
	fs.StringVar(&o.Benchtime, "benchtime", "1s", "calibrate each benchmark to run for this `duration` on the base revision (counting: 4ms unless given), or Nx for N iterations")
	fs.DurationVar(&o.Budget, "budget", 15*time.Minute, "fit the runs into this `duration`: when the estimate after calibration is longer, every benchmark runs fewer iterations (counting: the longest are left out, named) (0: no limit)")
	fs.StringVar(&o.Out, "out", "", "write base/ and head/ under this `directory` (default: a new temporary directory)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the worktrees and test binaries (their directory is printed)")
	fs.BoolVar(&o.Full, "full", false, "print every function's and every benchmark result's table in the text report and the Markdown comment (default: what was judged and flagged, near misses, one line for the other benchmarks)")
	rc.instr = &instrumentFlag{}
	fs.Var(rc.instr, "instrument", "measure `instructions|cycles|time` (default: instructions where valgrind runs, else time); cycles: "+gate.CyclesUsage)
	fs.Var(instrumentShorthand{rc.instr, "instructions"}, "instructions", "shorthand for --instrument instructions")
	fs.Var(instrumentShorthand{rc.instr, "cycles"}, "cycles", "shorthand for --instrument cycles")
	fs.Var(instrumentShorthand{rc.instr, "time"}, "time", "shorthand for --instrument time")
	fs.BoolVar(&o.BaseFromHistory, "base-from-history", false, "take the base's counts (--instructions) or runs (time) from its record in the history (hotbudget history append, git notes) instead of measuring it again, when it was measured by the same Go on the same kind of machine (time: within --history-max-age); the head is measured alone")
	fs.StringVar(&o.HistoryRef, "history-ref", "refs/notes/hotbudget", "the notes `ref` --base-from-history reads")
	fs.DurationVar(&o.HistoryMaxAge, "history-max-age", gate.DefaultHistoryMaxAge, "time: --base-from-history takes a record at most this `duration` old (0: any age)")
	fs.BoolVar(&o.NoAllocs, "no-allocs", false, "skip the allocation runs (two a side per benchmark at -test.memprofilerate=1) and their exact verdicts")
	fs.StringVar(&o.AllocsHTML, "allocs-html", "", "also write the allocations' HTML report (table, differential flame graph of bytes per op) of the first benchmark whose allocations regressed, else the first, to `file`")
	fs.StringVar(&o.HTML, "html", "", "also write the functions' HTML report (flame graph, explanations) to `file`")
	fs.Var(&o.Shard, "shard", "record only part `K/N` of the benchmarks (the K-th of N shards, for a CI job matrix) under --out, unjudged: hotbudget merge judges the N shards' outputs as one record")
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
	o.Packages = pos[2:]
	if len(o.Packages) == 0 {
		o.Packages = []string{"./..."}
	}
	for _, p := range o.Packages {
		// go list would take it for one of its flags (-toolexec runs a
		// program), whatever "--" said to hotbudget.
		if strings.HasPrefix(p, "-") {
			return fmt.Errorf("package pattern %q starts with '-': flags go before BASE and HEAD; a package pattern never starts with '-' (write ./%s for a directory of that name)", p, p)
		}
	}
	if o.Runs < 1 {
		return fmt.Errorf("--runs must be at least 1, got %d", o.Runs)
	}
	if o.Count < 1 {
		return fmt.Errorf("--count must be at least 1, got %d", o.Count)
	}
	if _, err := regexp.Compile(o.Bench); err != nil {
		return fmt.Errorf("--bench: %v", err)
	}
	if o.Shard.N > 0 {
		if o.Out == "" {
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
	o.RunsSet, o.CountSet = flagSet(fs, "runs"), flagSet(fs, "count")
	if o.BaseFromHistory {
		if o.Shard.N > 0 {
			return errors.New("--base-from-history does not take --shard: a shard's base must be measured for hotbudget merge")
		}
		if err := timeHistoryFlags(o, fs); err != nil {
			return err
		}
	}
	if o.HistoryMaxAge < 0 {
		return fmt.Errorf("--history-max-age must not be negative, got %s", o.HistoryMaxAge)
	}
	if o.Instructions && !flagSet(fs, "benchtime") {
		o.Benchtime = gate.ExactBenchtime.String()
	}
	if n, ok := strings.CutSuffix(o.Benchtime, "x"); ok {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			return fmt.Errorf("--benchtime %q: want a duration such as 1s or an iteration count such as 1000x", o.Benchtime)
		}
		o.FixedIters = v
	} else {
		v, err := time.ParseDuration(o.Benchtime)
		if err != nil || v <= 0 {
			return fmt.Errorf("--benchtime %q: want a duration such as 1s or an iteration count such as 1000x", o.Benchtime)
		}
		o.Target = v
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
	o.Procs = runtime.GOMAXPROCS(0)
	switch {
	case d.gate != "":
		o.Gate, _ = regexp.Compile(d.gate) // checked by d.options
	case d.module != "":
		o.Gate = gate.ModulePattern([]string{d.module})
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
	res, err := gate.Record(ctx, o, gate.Env{Stderr: c.stderr, Getenv: c.getenv}, pos[0], pos[1])
	if sig := stop(); sig != nil {
		what := "the worktrees and temporary files are removed"
		if o.Keep {
			what = "the worktrees and test binaries are kept (--keep)"
		}
		fmt.Fprintf(c.stderr, "hotbudget record: stopped by %v; %s\n", sig, what)
		return signalExit(sig)
	}
	if err != nil {
		return c.inputErr("record", err)
	}
	if o.Shard.N > 0 {
		settings, err := c.settingsOf(o, args)
		if err == nil {
			err = res.WriteShard(settings, c.stdout)
		}
		if err != nil {
			return c.inputErr("record", err)
		}
		return exitOK
	}
	return c.judgeRecord("record", res, rc)
}

// judgeRecord judges what record measured (gate.Judge) with the judgement
// rc's flags give, writes the report and returns the exit code; record
// calls it on its runs, merge on the union of its shards'. cmd names the
// command in errors and progress lines.
func (c *cli) judgeRecord(cmd string, res *gate.Measurement, rc *recordCmd) int {
	o, d, fs := rc.o, rc.d, rc.fs.FlagSet
	what, mods, gateRe := d.gateWhat(res.Modules())
	j := gate.Judgement{What: what, Modules: mods, Gate: gateRe, GateModules: d.gate == "" && d.module == ""}
	if !o.Instructions {
		var err error
		if j.Diff, err = d.options(fs, nil); err != nil {
			return c.usageErr(cmd, "%v", err)
		}
		if j.Bench, err = d.benchOptions(fs); err != nil {
			return c.inputErr(cmd, err)
		}
	}
	v, err := gate.Judge(res, j)
	if err != nil {
		return c.inputErr(cmd, err)
	}
	// One benchmark's HTML report: the first that needs attention.
	if top := v.Top(); o.HTML != "" && top != nil {
		if err := atomicfile.Write(o.HTML, func(f *os.File) error { return top.Write(f, "html") }); err != nil {
			return c.inputErr(cmd, err)
		}
		fmt.Fprintf(c.stderr, "hotbudget %s: wrote the HTML report of %s to %s\n", cmd, textfmt.Line(top.Name), textfmt.Line(o.HTML))
	}
	if top := v.TopAllocs(); o.AllocsHTML != "" && top != nil {
		if err := atomicfile.Write(o.AllocsHTML, func(f *os.File) error { return top.Write(f, "html") }); err != nil {
			return c.inputErr(cmd, err)
		}
		fmt.Fprintf(c.stderr, "hotbudget %s: wrote the allocations' HTML report of %s to %s\n", cmd, textfmt.Line(top.Name), textfmt.Line(o.AllocsHTML))
	}
	if err := v.Write(c.stdout, rc.format.value, o.Full); err != nil {
		return c.inputErr("record", err)
	}
	if !v.Counted() {
		var anns []ghactions.Annotation
		for _, r := range v.Funcs {
			anns = append(anns, ghactions.OfDiff("record", r)...)
		}
		anns = append(anns, ghactions.OfBench("record", v.Benches)...)
		md := func(b *bytes.Buffer) error { return v.Markdown(b, o.Full) }
		if err := c.github().Report(md, anns); err != nil {
			return c.inputErr("record", err)
		}
	}
	return v.Exit
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
	given := ""
	if len(f.given) > 0 {
		given = f.given[0]
	}
	var err error
	if o.Instrument, o.Why, err = gate.ChooseInstrument(f.name, given, timeOnly); err != nil {
		return err
	}
	o.Instructions = o.Instrument == "instructions" || o.Instrument == "cycles"
	o.Cycles = o.Instrument == "cycles"
	return nil
}

// timeHistoryFlags refuses the flags a time base from the history cannot
// honour: the base's iterations are the record's, and its runs keep each
// function's self time by name, not its total or its file.
func timeHistoryFlags(o *gate.Config, fs *flag.FlagSet) error {
	if o.Instructions {
		return nil
	}
	if flagSet(fs, "benchtime") && !strings.HasSuffix(o.Benchtime, "x") {
		return errors.New("--base-from-history runs the head at the iterations the stored base ran: drop --benchtime (or give the base's as Nx)")
	}
	for _, f := range []struct{ name, want string }{{"metric", string(diff.Self)}, {"key", string(diff.KeyName)}, {"anchor", ""}} {
		if v := fs.Lookup(f.name); v != nil && v.Value.String() != f.want {
			return fmt.Errorf("--base-from-history: the history keeps each function's self time by name; --%s %s needs the base measured (drop --base-from-history)", f.name, textfmt.Line(v.Value.String()))
		}
	}
	return nil
}

// flagSet reports whether the command line set the flag called name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
