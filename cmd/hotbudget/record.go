package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"golang.org/x/perf/benchfmt"
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

Since both sides do the same work, functions are compared by their CPU
time per run (--mode absolute; --mode share compares shares of the
profile). Each benchmark is its own comparison, with its own profile,
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
names the lines that allocate more. B/op and allocs/op of the benchmarks
are judged the same way; time stays statistical. --no-allocs skips the
allocation runs.

Time: each benchmark runs about --benchtime per run and side, plus the
start of its test binary and its setup (about 1.3 s a run on a module of
46 benchmarks), and is calibrated once (about two --benchtime). record
measures both after calibrating, prints its estimate, then the time left
after every run; --budget fits the runs into a limit by running fewer
iterations of every benchmark.

Written under --out:

	base/bench.txt           the benchmark output of every run
	base/cpu-N.pb.gz         run N's CPU profile, all benchmarks merged (not judged)
	base/PKG/NAME.N.pb.gz    run N's CPU profile of one benchmark
	base/PKG/NAME.allocs.pb.gz  the allocation profile of one benchmark (2N+1 ops, exact)
	head/...                 the same for HEAD

Every profile records the work it did in hotbudget's metadata (a benchmark's
iterations, "op"; a merged run of several benchmarks is one "run"), which
budget rules such as max_self_per_op read.

Exit status: 0 nothing regressed, 1 a function or a benchmark regressed, 2
usage, input or build error.

Examples:

	hotbudget record origin/main HEAD
	hotbudget record --runs 10 --bench 'Parse|Render' main . ./internal/parser
	hotbudget record --out perf --format markdown "$BASE_SHA" HEAD ./...
	hotbudget diff --mode absolute perf/base/cpu-*.pb.gz -- perf/head/cpu-*.pb.gz
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
}

func (c *cli) record(args []string) int {
	fs := c.flagSet("record", recordUsage)
	var o recordOpts
	fs.IntVar(&o.runs, "runs", 5, "interleaved `runs` a side")
	fs.IntVar(&o.count, "count", 1, "`n` benchmark results a run (go test -count)")
	fs.StringVar(&o.bench, "bench", ".", "run the benchmarks matching this `regexp` (go test -bench)")
	fs.StringVar(&o.benchtime, "benchtime", "1s", "calibrate each benchmark to run for this `duration` on the base revision, or Nx for N iterations")
	fs.DurationVar(&o.budget, "budget", 15*time.Minute, "fit the runs into this `duration`: when the estimate after calibration is longer, every benchmark runs fewer iterations (0: no limit)")
	fs.StringVar(&o.out, "out", "", "write base/ and head/ under this `directory` (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the worktrees and test binaries (their directory is printed)")
	fs.BoolVar(&o.noAllocs, "no-allocs", false, "skip the allocation runs (two a side per benchmark at -test.memprofilerate=1) and their exact verdicts")
	fs.StringVar(&o.allocsHTML, "allocs-html", "", "also write the allocations' HTML report (table, differential flame graph of bytes per op) of the first benchmark whose allocations regressed, else the first, to `file`")
	fs.StringVar(&o.html, "html", "", "also write the functions' HTML report (flame graph, explanations) to `file`")
	format := newChoice("text", "text", "markdown", "json")
	fs.Var(format, "format", "output `text|markdown|json`")
	d := addDiffFlags(fs.FlagSet)
	d.mode.value = string(diff.Absolute) // the same work on both sides
	fs.Lookup("mode").DefValue = d.mode.value
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) < 2 {
		return c.usageErr("record", "want BASE and HEAD revisions, got %d arguments", len(pos))
	}
	o.pkgs = pos[2:]
	if len(o.pkgs) == 0 {
		o.pkgs = []string{"./..."}
	}
	for _, p := range o.pkgs {
		// go list would take it for one of its flags (-toolexec runs a
		// program), whatever "--" said to hotbudget.
		if strings.HasPrefix(p, "-") {
			return c.usageErr("record", "package pattern %q starts with '-': flags go before BASE and HEAD; a package pattern never starts with '-' (write ./%s for a directory of that name)", p, p)
		}
	}
	if o.runs < 1 {
		return c.usageErr("record", "--runs must be at least 1, got %d", o.runs)
	}
	if o.count < 1 {
		return c.usageErr("record", "--count must be at least 1, got %d", o.count)
	}
	if err := checkSampler(c.getenv(samplerEnv)); err != nil {
		return c.usageErr("record", "%v", err)
	}
	if _, err := regexp.Compile(o.bench); err != nil {
		return c.usageErr("record", "--bench: %v", err)
	}
	if n, ok := strings.CutSuffix(o.benchtime, "x"); ok {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			return c.usageErr("record", "--benchtime %q: want a duration such as 1s or an iteration count such as 1000x", o.benchtime)
		}
		o.fixedIters = v
	} else {
		v, err := time.ParseDuration(o.benchtime)
		if err != nil || v <= 0 {
			return c.usageErr("record", "--benchtime %q: want a duration such as 1s or an iteration count such as 1000x", o.benchtime)
		}
		o.target = v
	}
	opts, err := d.options(fs.FlagSet, nil)
	if err != nil {
		return c.usageErr("record", "%v", err)
	}
	// Both sides do the same work: CPU time per run compares directly, as
	// time per op would. --mode and --anchor, applied after, override it.
	opts = append([]diff.Option{diff.WithMode(diff.Absolute)}, opts...)
	o.procs = runtime.GOMAXPROCS(0)
	switch {
	case d.gate != "":
		o.gate, _ = regexp.Compile(d.gate) // checked by d.options
	case d.module != "":
		o.gate = modulePattern([]string{d.module})
	}

	ctx, stop := signalContext(context.Background())
	r := &recorder{c: c, o: o}
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
	if d.gate == "" && d.module == "" && len(res.modules) > 0 {
		opts = append(opts, diff.WithGate(modulePattern(res.modules)))
	}
	funcs, err := diff.CompareEach(res.pairs, opts...)
	if err != nil {
		return c.inputErr("record", err)
	}
	benches, err := diff.CompareBench(bytes.NewReader(res.baseBench), bytes.NewReader(res.headBench), opts...)
	if err != nil {
		return c.inputErr("record", err)
	}
	// The library's messages name Go options; record's user has flags.
	for _, r := range funcs {
		flagWords(r)
	}
	flagWords(benches)
	if o.html != "" {
		// One benchmark's report: the first that needs attention.
		top := ordered(funcs)[0]
		if err := writeFileAtomic(o.html, func(f *os.File) error { return top.WriteHTML(f) }); err != nil {
			return c.inputErr("record", err)
		}
		r.progress("wrote the HTML report of %s to %s", top.Name, o.html)
	}
	allocs := compareAllocs(res.allocs)
	if o.allocsHTML != "" && len(allocs) > 0 {
		top := orderedAllocs(allocs)[0]
		if err := writeFileAtomic(o.allocsHTML, func(f *os.File) error { return top.WriteHTML(f) }); err != nil {
			return c.inputErr("record", err)
		}
		r.progress("wrote the allocations' HTML report of %s to %s", top.Name, o.allocsHTML)
	}
	return c.recordReport(res, funcs, benches, allocs, format.value)
}

// recordResult is what record measured.
type recordResult struct {
	out                  string
	baseRev, headRev     revision
	pairs                []diff.Pair // per benchmark both sides have: its runs' profiles
	modules              []string    // the module(s) record ran in (go list -m)
	baseBench, headBench []byte
	allocs               []allocResult // per benchmark both sides have: allocations per op, exact
}

type revision struct {
	Name   string `json:"revision"`
	Commit string `json:"commit"` // "" for the working tree
}

func (r revision) String() string {
	if r.Commit == "" {
		return ". (working tree)"
	}
	short := r.Commit[:min(len(r.Commit), 12)]
	if r.Name == r.Commit || r.Name == short {
		return short
	}
	return fmt.Sprintf("%s (%s)", r.Name, short)
}

// ordered returns the benchmarks' reports in the order they are shown:
// those that fail first, then those with near misses, then the rest, each
// group in benchmark order.
func ordered(funcs []*diff.Report) []*diff.Report {
	out := slices.Clone(funcs)
	rank := func(r *diff.Report) int {
		switch {
		case r.Failed():
			return 0
		case len(r.NearMisses()) > 0:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b *diff.Report) int { return rank(a) - rank(b) })
	return out
}

// recordSummary is one line over every benchmark's functions.
func recordSummary(funcs []*diff.Report) string {
	var failed, near []string
	rows := 0
	for _, r := range funcs {
		rows += len(r.Rows)
		if r.Failed() {
			failed = append(failed, textfmt.Name(r.Name))
		}
		if len(r.NearMisses()) > 0 {
			near = append(near, textfmt.Name(r.Name))
		}
	}
	line := fmt.Sprintf("%d benchmarks, %d function rows: ", len(funcs), rows)
	if len(failed) == 0 {
		line += "no regression"
	} else {
		line += fmt.Sprintf("%d regressed (%s)", len(failed), strings.Join(failed, ", "))
	}
	if len(near) > 0 {
		line += fmt.Sprintf("; near misses in %s", strings.Join(near, ", "))
	}
	return line
}

// recordReport prints the function and benchmark reports and returns the
// exit code: 1 when either found a regression.
func (c *cli) recordReport(res *recordResult, funcs []*diff.Report, benches *diff.Report, allocs []*diff.AllocReport, format string) int {
	var err error
	shown := ordered(funcs)
	md := func(out *bytes.Buffer) error {
		// The whole comment within GitHub's limit (textfmt.LimitMarkdown).
		w := new(bytes.Buffer)
		defer func() { out.WriteString(textfmt.LimitMarkdown(w.String(), textfmt.MaxMarkdown)) }()
		icon := "✅"
		if slices.ContainsFunc(funcs, (*diff.Report).Failed) || allocsFailed(allocs) {
			icon = "❌"
		}
		fmt.Fprintf(w, "## %s hotbudget record: %s\n\n", icon, textfmt.MarkdownEscape(recordSummary(funcs)))
		if err := writeAllocsMarkdown(w, allocs); err != nil {
			return err
		}
		var quiet []*diff.Report
		for _, r := range shown {
			if !r.Failed() && len(r.NearMisses()) == 0 && len(funcs) > 1 {
				quiet = append(quiet, r)
				continue
			}
			fmt.Fprintf(w, "#### %s\n\n", textfmt.MarkdownCode(r.Name))
			if err := r.WriteMarkdown(w); err != nil {
				return err
			}
			w.WriteString("\n")
		}
		if len(quiet) > 0 {
			fmt.Fprintf(w, "<details><summary>%d benchmarks with no regression and no near miss</summary>\n\n", len(quiet))
			for _, r := range quiet {
				fmt.Fprintf(w, "- %s: %s\n", textfmt.MarkdownCode(r.Name), textfmt.MarkdownEscape(r.Summary()))
			}
			w.WriteString("\n</details>\n\n")
		}
		return benches.WriteMarkdown(w)
	}
	switch format {
	case "json":
		err = writeRecordJSON(c.stdout, res, funcs, benches, allocs)
	case "markdown":
		var b bytes.Buffer
		if err = md(&b); err == nil {
			_, err = c.stdout.Write(b.Bytes())
		}
	default:
		fmt.Fprintf(c.stdout, "functions (%s -> %s, each benchmark's CPU profiles on their own, one false-discovery control over all):\n", textfmt.Line(res.baseRev.String()), textfmt.Line(res.headRev.String()))
		for _, r := range shown {
			fmt.Fprintf(c.stdout, "\n== %s ==\n", textfmt.Name(r.Name))
			if err = r.WriteText(c.stdout); err != nil {
				break
			}
		}
		if err == nil {
			err = writeAllocsText(c.stdout, allocs)
		}
		if err == nil {
			fmt.Fprintf(c.stdout, "\n%s\n", recordSummary(funcs))
			if len(allocs) > 0 {
				fmt.Fprintf(c.stdout, "%s\n", textfmt.Line(allocsSummary(allocs)))
			}
			fmt.Fprintf(c.stdout, "\nbenchmarks:\n")
			err = benches.WriteText(c.stdout)
		}
	}
	if err != nil {
		return c.inputErr("record", err)
	}
	var anns []annotation
	for _, r := range funcs {
		anns = append(anns, reportAnnotations("record", r, false)...)
	}
	anns = append(anns, reportAnnotations("record", benches, true)...)
	if err := c.reportGitHub(md, anns); err != nil {
		return c.inputErr("record", err)
	}
	if slices.ContainsFunc(funcs, (*diff.Report).Failed) || len(benches.Regressions()) > 0 || allocsFailed(allocs) {
		return exitFail
	}
	return exitOK
}

// writeRecordJSON writes every report in one object:
//
//	{
//	  "schema": "hotbudget.record/v3",
//	  "base": {"revision": "origin/main", "commit": "0123..."},
//	  "head": {"revision": ".", "commit": ""},   // "" for the working tree
//	  "out": "perf",                              // where the profiles are
//	  "functions": [{hotbudget.diff/v2 report, "name": "PKG BenchmarkX"}, ...],
//	  "benchmarks": {hotbudget.bench/v2 report},
//	  "allocations": [{diff.AllocReport, "name": "PKG BenchmarkX", "exact": true}, ...]
//	}
//
// v2 differs from v1: functions is one report per benchmark, named, in the
// order the text report shows them (failing first), instead of one report
// of the merged profiles. v3 adds allocations: each benchmark's functions'
// allocations per op, exact, failing first (absent with --no-allocs).
func writeRecordJSON(w io.Writer, res *recordResult, funcs []*diff.Report, benches *diff.Report, allocs []*diff.AllocReport) error {
	fs := make([]json.RawMessage, 0, len(funcs))
	for _, r := range ordered(funcs) {
		var f bytes.Buffer
		if err := r.WriteJSON(&f); err != nil {
			return err
		}
		fs = append(fs, f.Bytes())
	}
	var b bytes.Buffer
	if err := benches.WriteJSON(&b); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema      string              `json:"schema"`
		Base        revision            `json:"base"`
		Head        revision            `json:"head"`
		Out         string              `json:"out"`
		Functions   []json.RawMessage   `json:"functions"`
		Benchmarks  json.RawMessage     `json:"benchmarks"`
		Allocations []*diff.AllocReport `json:"allocations,omitempty"`
	}{"hotbudget.record/v3", res.baseRev, res.headRev, res.out, fs, b.Bytes(), orderedAllocs(allocs)})
}

// recorder builds, calibrates and runs the benchmarks of two revisions.
type recorder struct {
	c     *cli
	o     recordOpts
	tmp   string
	start time.Time
	mu    sync.Mutex // progress is written from the two sides' builds at once
	prof  recProfiler
}

// recSide is one revision being recorded.
type recSide struct {
	name   string // "base" or "head"
	rev    revision
	root   string // checkout: a worktree, or the repository for "."
	dir    string // root joined with the directory record runs from
	out    string // --out/name
	tmp    string // binaries and raw profiles
	build  string // "go1.26.8 linux/amd64"
	race   bool
	bins   map[string]*testBinary // by import path
	bench  bytes.Buffer           // the benchmark output of every run
	leaves map[string]bool        // benchmark keys (pkg + name) found here
}

type testBinary struct {
	pkg, dir, path string
}

// leaf is one benchmark that runs on its own: a top-level benchmark, or
// one sub-benchmark, named as go test prints it without the GOMAXPROCS
// suffix.
type leaf struct {
	pkg, name string
	iters     int64   // calibrated iterations
	nsOp      float64 // wall-clock time per operation when calibrated
	// bytesOp and allocsOp are what an operation allocated when
	// calibrated (-test.benchmem).
	bytesOp, allocsOp float64
	// overhead is the wall-clock time of one run beyond its timed
	// iterations: starting the test binary, the benchmark's setup, its
	// first one-iteration round, writing the profile.
	overhead time.Duration
}

func (l leaf) key() string { return l.pkg + " " + l.name }

// pattern is the -test.bench pattern that selects l alone.
func (l leaf) pattern() string {
	parts := strings.Split(l.name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func (r *recorder) progress(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.c.stderr, "hotbudget record: "+format+"\n", args...)
}

// git runs git in dir and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	stopGroupOnCancel(cmd)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

func (r *recorder) run(ctx context.Context, baseRev, headRev string) (res *recordResult, err error) {
	r.start = time.Now()
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("git is not installed: hotbudget record checks out the two revisions with git worktree")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	top, err := git(ctx, cwd, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not inside a git repository: run hotbudget record in the repository whose revisions it compares (git: %v)", cwd, err)
	}
	realCwd, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return nil, err
	}
	realTop, err := filepath.EvalSymlinks(top)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(realTop, realCwd)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("cannot place %s inside the repository %s", cwd, top)
	}
	sides := []*recSide{{name: "base"}, {name: "head"}}
	for i, rev := range []string{baseRev, headRev} {
		s := sides[i]
		s.rev = revision{Name: rev}
		if rev == "." {
			continue
		}
		commit, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
		if err != nil || commit == "" {
			return nil, fmt.Errorf("%s revision %q is unknown to the repository %s: give a branch, tag or commit it has (a shallow clone must fetch it first: actions/checkout with fetch-depth: 0)", s.name, rev, top)
		}
		s.rev.Commit = commit
	}

	out := r.o.out
	if out == "" {
		if out, err = os.MkdirTemp("", "hotbudget-record-"); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil { // nobody is told where it is
				os.RemoveAll(out)
			}
		}()
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}
	for _, s := range sides {
		s.out = filepath.Join(out, s.name)
		if entries, err := os.ReadDir(s.out); err == nil && len(entries) > 0 {
			return nil, fmt.Errorf("%s already holds files: remove it or choose another --out, so that old runs do not mix with new ones", s.out)
		}
		if err := os.MkdirAll(s.out, 0o755); err != nil {
			return nil, err
		}
	}

	if r.tmp, err = os.MkdirTemp("", "hotbudget-record-work-"); err != nil {
		return nil, err
	}
	defer func() {
		if r.o.keep {
			r.progress("kept the worktrees and test binaries in %s (remove them with: git worktree prune after deleting it)", r.tmp)
			return
		}
		r.removeWorktrees(top, sides)
	}()

	r.progress("base %s, head %s; packages %s; %d runs a side", sides[0].rev, sides[1].rev, strings.Join(r.o.pkgs, " "), r.o.runs)
	for _, s := range sides {
		s.tmp = filepath.Join(r.tmp, s.name)
		if err := os.MkdirAll(s.tmp, 0o755); err != nil {
			return nil, err
		}
		s.root = top
		if s.rev.Commit != "" {
			s.root = filepath.Join(r.tmp, s.name+"-src")
			if _, err := git(ctx, top, "worktree", "add", "--detach", "--quiet", s.root, s.rev.Commit); err != nil {
				return nil, fmt.Errorf("checking out %s %s: %v", s.name, s.rev, err)
			}
		}
		s.dir = filepath.Join(s.root, rel)
	}
	// The two sides build at once: most of a build is waiting on the
	// compiler of one package, and the machine has other cores.
	errs := make(chan error, len(sides))
	for _, s := range sides {
		go func() { errs <- r.build(ctx, s) }()
	}
	var buildErr error
	for range sides {
		if err := <-errs; err != nil && buildErr == nil {
			buildErr = err
		}
	}
	if buildErr != nil {
		return nil, buildErr
	}
	leaves, err := r.calibrate(ctx, sides[0], sides[1])
	if err != nil {
		return nil, err
	}
	res = &recordResult{out: out, baseRev: sides[0].rev, headRev: sides[1].rev}
	// The gate judges the module's own functions (go list -m: the main
	// module, or a workspace's modules).
	if mods, err := goOut(ctx, sides[1].dir, "list", "-m"); err == nil {
		res.modules = strings.Fields(mods)
		r.progress("gating the functions of %s; the runtime's and the standard library's are shown, not gated (--gate . gates every function)", strings.Join(res.modules, " "))
	} else {
		r.progress("warning: go list -m: %v; every function is gated", err)
	}
	if err := r.runAll(ctx, sides, leaves, res); err != nil {
		return nil, err
	}
	if !r.o.noAllocs {
		gate := r.o.gate
		if gate == nil && len(res.modules) > 0 {
			gate = modulePattern(res.modules)
		}
		if res.allocs, err = r.recordAllocs(ctx, sides, leaves, gate); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// removeWorktrees removes the worktrees of sides, registered or half made
// (a signal may stop git worktree add), and the temporary directory, then
// prunes what git still records of them. --force twice removes a worktree
// git still holds locked while it is being added.
func (r *recorder) removeWorktrees(top string, sides []*recSide) {
	ctx := context.Background() // the run's context may be cancelled
	var roots []string
	for _, s := range sides {
		if s.rev.Commit != "" && s.root != "" {
			roots = append(roots, s.root)
			git(ctx, top, "worktree", "remove", "--force", "--force", s.root)
		}
	}
	os.RemoveAll(r.tmp)
	git(ctx, top, "worktree", "prune")
	list, err := git(ctx, top, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		r.progress("warning: git worktree list: %v", err)
		return
	}
	for _, line := range strings.Split(list, "\x00") {
		if path, ok := strings.CutPrefix(line, "worktree "); ok && slices.Contains(roots, path) {
			r.progress("warning: git still registers the worktree %s; remove it with: git worktree remove --force --force %s", path, path)
		}
	}
}

// goOut runs the go command in dir and returns its trimmed stdout.
func goOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// build lists the packages of one side and builds the test binary of each
// package that has tests.
func (r *recorder) build(ctx context.Context, s *recSide) error {
	t0 := time.Now()
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}, r.o.pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	stopGroupOnCancel(cmd)
	cmd.Dir = s.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go list %s at %s %s failed: %v\n%s", strings.Join(r.o.pkgs, " "), s.name, s.rev, err, strings.TrimSpace(stderr.String()))
	}
	s.bins = map[string]*testBinary{}
	var pkgs []*testBinary
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[2] == "0" && f[3] == "0" {
			continue // no test files: no benchmarks
		}
		pkgs = append(pkgs, &testBinary{pkg: f[0], dir: f[1]})
	}
	for i, b := range pkgs {
		b.path = filepath.Join(s.tmp, fmt.Sprintf("pkg%d.test", i))
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", b.path, b.pkg)
		stopGroupOnCancel(cmd)
		cmd.Dir = s.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building the tests of %s at %s %s failed: %v\n%s", b.pkg, s.name, s.rev, err, strings.TrimSpace(string(out)))
		}
		if _, err := os.Stat(b.path); err != nil {
			continue // go test -c writes nothing for a package without tests
		}
		s.bins[b.pkg] = b
		if s.build == "" {
			if bi, err := buildinfo.ReadFile(b.path); err == nil {
				goos, goarch := runtime.GOOS, runtime.GOARCH
				for _, kv := range bi.Settings {
					switch kv.Key {
					case "GOOS":
						goos = kv.Value
					case "GOARCH":
						goarch = kv.Value
					case "-race":
						s.race = kv.Value == "true"
					}
				}
				s.build = bi.GoVersion + " " + goos + "/" + goarch
			}
		}
	}
	r.progress("built %s at %s %s (%s)", plural(len(s.bins), "test binary", "test binaries"), s.name, s.rev, since(t0))
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// runBinary runs a test binary's benchmarks in its package's directory,
// as go test does, and returns their output.
func (r *recorder) runBinary(ctx context.Context, s *recSide, b *testBinary, args ...string) ([]byte, error) {
	cmd, stdout, stderr := r.benchCmd(ctx, b, args...)
	if err := cmd.Run(); err != nil {
		return nil, benchFailed(ctx, s, b, err, stdout, stderr)
	}
	return stdout.Bytes(), nil
}

// benchResult is one line of benchmark output.
type benchResult struct {
	name  string // without the GOMAXPROCS suffix
	iters int64
	nsOp  float64 // wall-clock time per operation
	// Allocations per op (-test.benchmem): bytes and objects.
	bytesOp, allocsOp float64
}

// parseBench reads the benchmark results in out.
func (r *recorder) parseBench(out []byte) []benchResult {
	var res []benchResult
	rd := benchfmt.NewReader(bytes.NewReader(out), "")
	suffix := ""
	if r.o.procs != 1 {
		suffix = "-" + strconv.Itoa(r.o.procs)
	}
	for rd.Scan() {
		if rec, ok := rd.Result().(*benchfmt.Result); ok {
			name := "Benchmark" + strings.TrimSuffix(string(rec.Name), suffix)
			ns, ok := rec.Value("sec/op")
			if ok {
				ns *= 1e9
			} else {
				ns, _ = rec.Value("ns/op")
			}
			b, _ := rec.Value("B/op")
			a, _ := rec.Value("allocs/op")
			res = append(res, benchResult{name, int64(rec.Iters), ns, b, a})
		}
	}
	return res
}

// calibrate finds every benchmark matching --bench and its iteration
// count: on the base revision for benchmarks it has, on the head revision
// for benchmarks new there.
func (r *recorder) calibrate(ctx context.Context, base, head *recSide) ([]leaf, error) {
	t0 := time.Now()
	byKey := map[string]*leaf{}
	var order []string
	overhead := map[string]time.Duration{} // per run of one benchmark of a package
	find := func(s *recSide, benchtime string) error {
		s.leaves = map[string]bool{}
		for _, pkg := range sortedKeys(s.bins) {
			t1 := time.Now()
			out, err := r.runBinary(ctx, s, s.bins[pkg], "-test.bench", r.o.bench, "-test.benchtime", benchtime)
			if err != nil {
				return err
			}
			results := r.parseBench(out)
			if benchtime == "1x" && len(results) > 0 {
				// One process, each benchmark set up and run once: what a
				// run costs beyond its timed iterations, shared out.
				var timed float64
				for _, res := range results {
					timed += res.nsOp
				}
				overhead[pkg] = (time.Since(t1) - time.Duration(timed)) / time.Duration(len(results))
			}
			for _, res := range results {
				l := leaf{pkg: pkg, name: res.name, iters: res.iters, nsOp: res.nsOp, bytesOp: res.bytesOp, allocsOp: res.allocsOp}
				s.leaves[l.key()] = true
				if k := byKey[l.key()]; k == nil {
					byKey[l.key()] = &l
					order = append(order, l.key())
				} else {
					// What an op allocates bounds the allocation runs:
					// the larger side's.
					k.bytesOp, k.allocsOp = max(k.bytesOp, l.bytesOp), max(k.allocsOp, l.allocsOp)
				}
			}
		}
		return nil
	}
	benchtime := r.o.benchtime
	if r.o.fixedIters > 0 {
		benchtime = "1x" // only to find the benchmarks
	}
	if err := find(base, benchtime); err != nil {
		return nil, err
	}
	baseKeys := len(order)
	// The head side only lists its benchmarks (one iteration each);
	// those new at head are calibrated there.
	if err := find(head, "1x"); err != nil {
		return nil, err
	}
	for _, k := range order[baseKeys:] {
		l := byKey[k]
		if r.o.fixedIters > 0 {
			continue
		}
		out, err := r.runBinary(ctx, head, head.bins[l.pkg], "-test.bench", l.pattern(), "-test.benchtime", r.o.benchtime)
		if err != nil {
			return nil, err
		}
		for _, res := range r.parseBench(out) {
			if res.name == l.name {
				l.iters, l.nsOp, l.bytesOp, l.allocsOp = res.iters, res.nsOp, res.bytesOp, res.allocsOp
			}
		}
	}
	if len(order) == 0 {
		hint := "name a package that has benchmarks (func BenchmarkX(b *testing.B) in a _test.go file)"
		if r.o.bench != "." {
			// A pattern of the user's matched nothing: say that, not
			// that the packages lack benchmarks.
			hint = "the pattern matched no benchmark; go test -list . shows the benchmarks there are"
		}
		return nil, fmt.Errorf("no benchmark matches --bench %q in %s at %s %s or %s %s: %s",
			r.o.bench, strings.Join(r.o.pkgs, " "), base.name, base.rev, head.name, head.rev, hint)
	}
	var leaves []leaf
	sort.Strings(order)
	for _, k := range order {
		l := *byKey[k]
		if r.o.fixedIters > 0 {
			l.iters = r.o.fixedIters
		}
		l.overhead = max(overhead[l.pkg], 0)
		leaves = append(leaves, l)
	}
	work, over := r.estimate(leaves, base, head)
	if b := r.o.budget; b > 0 && work+over > b && work > 0 && b > over {
		// Fewer iterations, the same for every benchmark in proportion.
		f := float64(b-over) / float64(work)
		for i := range leaves {
			leaves[i].iters = max(1, int64(float64(leaves[i].iters)*f))
		}
		r.progress("the runs would take about %s, beyond --budget %s: every benchmark runs %.0f%% of its calibrated iterations (--budget 0 for no limit)",
			(work + over).Round(time.Second), b, 100*f)
		work, over = r.estimate(leaves, base, head)
	}
	for _, l := range leaves {
		where := ""
		switch {
		case !base.leaves[l.key()]:
			where = " (new at head)"
		case !head.leaves[l.key()]:
			where = " (gone at head)"
		}
		r.progress("%s %s: %d iterations a run%s", textfmt.Name(l.pkg), textfmt.Name(l.name), l.iters, where)
	}
	r.progress("calibrated %s in %s; the runs take about %s (%s of benchmark iterations, %s starting test binaries and setting up)",
		plural(len(leaves), "benchmark", "benchmarks"), since(t0), (work + over).Round(time.Second), work.Round(time.Second), over.Round(time.Second))
	return leaves, nil
}

// estimate is how long the runs of leaves take: their timed iterations
// at the calibrated time per operation, and the rest of every run
// (measured when the head side listed its benchmarks).
func (r *recorder) estimate(leaves []leaf, base, head *recSide) (work, over time.Duration) {
	for _, l := range leaves {
		sides := 0
		for _, s := range []*recSide{base, head} {
			if s.leaves[l.key()] {
				sides++
			}
		}
		n := time.Duration(sides * r.o.runs)
		work += n * time.Duration(float64(l.iters*int64(r.o.count))*l.nsOp)
		over += n * l.overhead
	}
	return work, over
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runAll runs every benchmark --runs times a side, interleaved, and
// writes the profiles and benchmark output.
func (r *recorder) runAll(ctx context.Context, sides []*recSide, leaves []leaf, res *recordResult) error {
	base, head := sides[0], sides[1]
	both := 0
	for _, l := range leaves {
		if base.leaves[l.key()] && head.leaves[l.key()] {
			both++
		}
	}
	if both == 0 {
		return errors.New("no benchmark exists at both revisions: there is nothing to compare")
	}
	pairs := map[string]*diff.Pair{}
	runsStart := time.Now()
	for run := 1; run <= r.o.runs; run++ {
		t0 := time.Now()
		order := []*recSide{base, head}
		if run%2 == 0 {
			order = []*recSide{head, base}
		}
		spent := map[*recSide]time.Duration{}
		parts := map[*recSide][]*profile.Profile{}
		ops := map[*recSide]int64{}
		for _, l := range leaves {
			for _, s := range order {
				if !s.leaves[l.key()] {
					continue
				}
				t1 := time.Now()
				p, iters, err := r.runLeaf(ctx, s, l, run)
				if err != nil {
					return err
				}
				spent[s] += time.Since(t1)
				if base.leaves[l.key()] && head.leaves[l.key()] {
					parts[s] = append(parts[s], p)
					ops[s] += iters
					pr := pairs[l.key()]
					if pr == nil {
						pr = &diff.Pair{Name: l.key()}
						pairs[l.key()] = pr
					}
					if s == base {
						pr.Base = append(pr.Base, p)
					} else {
						pr.Head = append(pr.Head, p)
					}
				}
			}
		}
		for _, s := range sides {
			if _, err := r.mergeRun(s, parts[s], ops[s], run); err != nil {
				return err
			}
		}
		left := time.Since(runsStart) / time.Duration(run) * time.Duration(r.o.runs-run)
		r.progress("run %d of %d: base %s, head %s (%s); about %s left", run, r.o.runs, spent[base].Round(10*time.Millisecond),
			spent[head].Round(10*time.Millisecond), since(t0), left.Round(time.Second))
	}
	for _, s := range sides {
		path := filepath.Join(s.out, "bench.txt")
		if err := writeFileAtomic(path, func(f *os.File) error { _, err := f.Write(s.bench.Bytes()); return err }); err != nil {
			return err
		}
	}
	for _, l := range leaves {
		if pr := pairs[l.key()]; pr != nil {
			res.pairs = append(res.pairs, *pr)
		}
	}
	res.baseBench, res.headBench = base.bench.Bytes(), head.bench.Bytes()
	r.progress("wrote %s and %s in %s (the runs %s)", base.out, head.out, since(r.start), since(runsStart))
	return nil
}

// unsafeName matches what a benchmark's name may hold but a file name
// should not: runLeaf replaces it with "_".
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._=+-]+`)

// runLeaf runs one benchmark once with CPU profiling and returns its
// profile, with the iterations it did recorded in it.
func (r *recorder) runLeaf(ctx context.Context, s *recSide, l leaf, run int) (*profile.Profile, int64, error) {
	b := s.bins[l.pkg]
	what := fmt.Sprintf("%s %s at %s %s", l.pkg, l.name, s.name, s.rev)
	out, p, err := r.profileRun(ctx, s, b, what, "-test.bench", l.pattern(), "-test.benchtime", fmt.Sprintf("%dx", l.iters),
		"-test.count", strconv.Itoa(r.o.count))
	if err != nil {
		return nil, 0, err
	}
	s.bench.Write(out)
	var iters int64
	for _, res := range r.parseBench(out) {
		if res.name == l.name {
			iters += res.iters
		}
	}
	if iters == 0 {
		return nil, 0, fmt.Errorf("%s printed no result (was it skipped?):\n%s", what, strings.TrimSpace(string(out)))
	}
	meta.Set(p, meta.Record{
		Name:  fmt.Sprintf("%s %s at %s %s, run %d", l.pkg, l.name, s.name, s.rev, run),
		Build: s.build, Race: s.race, RateHz: rateHz(p),
		WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: float64(iters)}},
	})
	path := filepath.Join(s.out, filepath.FromSlash(l.pkg), fmt.Sprintf("%s.%d.pb.gz", unsafeName.ReplaceAllString(l.name, "_"), run))
	if err := writeProfile(path, p); err != nil {
		return nil, 0, err
	}
	return p, iters, nil
}

func rateHz(p *profile.Profile) int {
	if p.Period <= 0 || p.PeriodType == nil || p.PeriodType.Unit != "nanoseconds" {
		return 0
	}
	return int((1e9 + p.Period/2) / p.Period)
}

// mergeRun merges one run's profiles of the benchmarks both sides have
// and writes it as cpu-RUN.pb.gz. A lone profile is taken as it is and
// its record replaced: runLeaf has written it already.
func (r *recorder) mergeRun(s *recSide, parts []*profile.Profile, ops int64, run int) (*profile.Profile, error) {
	p, err := mergeRuns(parts)
	if err != nil {
		return nil, fmt.Errorf("merging run %d of %s: %w", run, s.name, err)
	}
	rec := meta.Record{
		Name:  fmt.Sprintf("%s %s, run %d: %d benchmarks", s.name, s.rev, run, len(parts)),
		Build: s.build, Race: s.race, RateHz: rateHz(p),
	}
	if len(parts) == 1 {
		rec.WorkUnit, rec.Runs = meta.WorkOp, []meta.Run{{Work: float64(ops)}}
	} else {
		// Several benchmarks, each with its own fixed iteration count:
		// the work is one run of all of them, the same on both sides.
		rec.WorkUnit, rec.Runs = meta.WorkRun, []meta.Run{{Work: 1}}
	}
	meta.Set(p, rec)
	if err := writeProfile(filepath.Join(s.out, fmt.Sprintf("cpu-%d.pb.gz", run)), p); err != nil {
		return nil, err
	}
	return p, nil
}

func writeProfile(path string, p *profile.Profile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(path, func(f *os.File) error { return p.Write(f) })
}
