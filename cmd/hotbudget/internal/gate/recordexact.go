package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/modname"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// record --instructions (issue 31): each benchmark runs under valgrind's
// callgrind at a fixed iteration count, on both revisions, and every
// function's instructions per op are judged exactly (diff.CompareCounts):
// no runs to repeat, no statistics. Each side runs in two processes, at N
// and 2N iterations, and the difference is what N ops execute: the
// process's start, the benchmark's setup and its one-iteration round
// cancel, and the runtime's per-process filling of its type-assertion
// caches is allowed for by each function's misses; a function past its
// allowance is counted again before it fails (confirmExact).

// ExactBenchtime is the native time a benchmark's counted iterations
// take by default when counting (N, scaled from a longer calibration by
// exactIters; the runs count N and 2N): the counts per op are exact
// whatever N, callgrind runs them 15 to 150 times slower (exactSlowdown),
// and a process's fixed cost is often more (valgrind translating the code
// the program runs: 3 s a process on BurntSushi/toml's BenchmarkEncode
// at N 2 or 256 alike).
const ExactBenchtime = 4 * time.Millisecond

// exactResult is one benchmark's exact comparison.
type exactResult struct {
	name       string // package and benchmark
	ops        int64  // the iterations of each side's difference: N
	base, head *profile.Profile
	report     *diff.CountReport
	allocs     *diff.AllocReport // counted allocations (recordexactallocs.go); nil: not counted
}

// runExact counts every benchmark on both sides.
func (r *recorder) runExact(ctx context.Context, sides []*recSide, leaves []leaf, res *Measurement) error {
	vg, err := valgrind.Find()
	if err != nil {
		return fmt.Errorf("--instructions counts instructions under valgrind: %w", err)
	}
	judge := func(string) bool { return true }
	if r.o.Gate != nil {
		judge = r.o.Gate.MatchString
	} else if len(res.modules) > 0 {
		judge = ModulePattern(res.modules).MatchString
	}
	t0 := time.Now()
	// The benchmarks are counted a few at once, one a core: a count is
	// exact whatever else the machine runs, and each callgrind process
	// is one thread.
	found := make([]*exactResult, len(leaves))
	var done atomic.Int64
	order := longestFirst(leaves)
	err = parallel(ctx, exactWorkers(len(leaves)), len(leaves), func(at int) error {
		i := order[at]
		l := leaves[i]
		if !sides[0].leaves[l.key()] || !sides[1].leaves[l.key()] {
			r.progress("%s: only at %s, not compared", l.name, map[bool]string{true: "base", false: "head"}[sides[0].leaves[l.key()]])
			return nil
		}
		e, err := r.countPair(ctx, vg, sides, l, judge)
		if err != nil {
			return err
		}
		judgeAllocs := func(base, head *profile.Profile) (*diff.AllocReport, error) {
			return compareExactAllocs(base, head, allocsJudged(base, head, r.exactAllocsOnly(res), harnessFuncs(base, head)))
		}
		if e.allocs, err = judgeAllocs(e.base, e.head); err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		if e.allocsFailed() && r.hist == nil {
			// Confirmed before it fails, as a count is.
			if e.allocs, err = r.confirmAllocs(ctx, vg, sides, l, e.allocs, judgeAllocs); err != nil {
				return err
			}
		}
		// Work added to a function that allocating less paid for.
		e.report.Trade(e.allocs)
		// A function regressed in its copy inlined into one that changed
		// says so.
		e.report.NoteInlined(r.inlinedInto(sides, l.pkg))
		found[i] = e
		r.progress("counted %s (%d of %d, %s ops a side: the difference of two processes, of N and 2N): %s; %s so far", l.name, done.Add(1), len(leaves), textfmt.Count(float64(e.ops)), exactLine(e.report), since(t0))
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range found {
		if e != nil {
			res.exact = append(res.exact, *e)
		}
	}
	res.notCounted = r.notCounted
	// What go test printed in the runs of 2N ops: the machine's
	// description (cpu:) for history append.
	for _, s := range sides {
		if s.bench.Len() == 0 {
			continue
		}
		if err := atomicfile.Write(filepath.Join(s.out, "bench.txt"), func(f *os.File) error { _, err := f.Write(s.bench.Bytes()); return err }); err != nil {
			return err
		}
	}
	if r.hist != nil {
		// As valgrindCPU read it before counting; the counted runs say.
		return checkHistoryMachine(r.hist, sides[1])
	}
	return nil
}

// benchFile is a benchmark's name as a file name.
func benchFile(name string) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(name)
}

// exactReps is how many times a counting process runs the benchmark (go
// test -count): once. Repetitions repeat the benchmark's setup and its
// one-iteration round, which the difference cancels and callgrind
// charges anyway; N of ExactBenchtime counts as many ops as four
// repetitions of 1 ms did, 7% cheaper on BurntSushi/toml.
const exactReps = 1

// counted is one side's count of a benchmark.
type counted struct {
	// diffed is what reps*ops iterations execute, per function: the
	// difference of the processes of reps*2N and reps*N iterations.
	diffed *profile.Profile
	// whole is the whole process of reps*2N iterations.
	whole *profile.Profile
	// negative are functions below zero in the difference: not counts
	// of the iterations, not judged.
	negative []string
	// work is the iterations diffed counts: reps*ops.
	work int64
}

// countLeaf counts benchmark l of side s in two processes, each repeating
// it reps times (go test -count), of ops and 2*ops iterations: their
// difference is what reps*ops iterations execute, the process's start and
// the benchmark's setup cancelled. What the runtime does at random in a
// process does not cancel: its type-assertion and type-switch caches fill
// on about one miss in 1,024, chosen per process, so how many instructions
// a function that probes them executes depends on the process. Each
// function's calls into the miss paths are counted (meta.Run.Misses, the
// larger of the two processes'), and diff.CompareCounts allows what they
// can move; what else a process does at random is confirmed
// (confirmExact).
//
// (Callgrind's dumps at the entry of a function of package testing,
// which would split a process into its repetitions, come at other places
// too: callgrind takes a goroutine's return to a function, after the
// runtime switched stacks, for a call, and in a sub-benchmark the
// function is already on its shadow stack. Measured: the last dump held
// none of the iterations in 2 of 4 benchmark shapes.)
func (r *recorder) countLeaf(ctx context.Context, vg string, s *recSide, l leaf, ops int64, reps int) (counted, error) {
	b := s.bins[l.pkg]
	if b == nil {
		return counted{}, fmt.Errorf("%s: no test binary at %s", l.key(), s.name)
	}
	var all [2]*profile.Profile
	var misses [2]map[string]int64
	var c counted
	for i, n := range []int64{ops, 2 * ops} {
		p, m, stdout, err := r.countRun(ctx, vg, s, b, l, n, reps)
		if err != nil {
			return counted{}, err
		}
		all[i], misses[i] = p, m
		if i == 1 {
			r.exactMu.Lock()
			s.bench.Write(stdout)
			if m := cpuLine.FindSubmatch(stdout); m != nil {
				s.cpu = strings.TrimSpace(string(m[1]))
			}
			r.exactMu.Unlock()
		}
	}
	c.work = int64(reps) * ops
	c.whole = all[1].Copy()
	meta.Set(c.whole, meta.Record{Name: l.name + " at " + s.name + " (the whole process)", Build: s.build, Race: s.race, WorkUnit: meta.WorkOp,
		Instrument: "callgrind", Runs: []meta.Run{{Work: float64(int64(reps) * 2 * ops), Misses: misses[1]}}})
	d, neg, err := valgrind.Difference(all[1], all[0])
	if err != nil {
		return counted{}, fmt.Errorf("%s at %s: %w", l.name, s.name, err)
	}
	d.Comments = meta.MarkExact(nil)
	meta.Set(d, meta.Record{Name: l.name + " at " + s.name, Build: s.build, Race: s.race, WorkUnit: meta.WorkOp,
		Instrument: "callgrind", Runs: []meta.Run{{Work: float64(c.work), Misses: mostMisses(misses[0], misses[1])}}})
	if err := diffExactAllocs(d, all[1], all[0], c.work); err != nil {
		return counted{}, fmt.Errorf("%s at %s: %w", l.name, s.name, err)
	}
	c.diffed, c.negative = d, neg
	return c, nil
}

// mostMisses is, by function, the larger of two processes' calls into the
// runtime's type-cache miss paths: how far apart the two processes' misses
// are, which their difference holds, is at most that (nil: none).
func mostMisses(a, b map[string]int64) map[string]int64 {
	var out map[string]int64
	for _, m := range []map[string]int64{a, b} {
		for fn, n := range m {
			if out == nil {
				out = map[string]int64{}
			}
			out[fn] = max(out[fn], n)
		}
	}
	return out
}

// countRun runs benchmark l for n iterations reps times (go test -count)
// in one process under callgrind and returns the profile of the whole
// process. (Collecting only inside testing.(*B).runN with --toggle-collect
// lost 0.1% of a function's count: the runtime's preemption requests
// switch stacks, which callgrind takes for returns, toggling collection
// off until the next call. The difference of two processes is exact.)
func (r *recorder) countRun(ctx context.Context, vg string, s *recSide, b *testBinary, l leaf, n int64, reps int) (*profile.Profile, map[string]int64, []byte, error) {
	dir, err := os.MkdirTemp(s.tmp, "callgrind-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "callgrind.out")
	run := valgrind.Run{Out: out, InstrAtStart: true, Cache: r.o.cache(), Extra: r.exactAllocArgs(b.path)}
	stdout, stderr, err := underValgrind(ctx, vg, b, run, "-test.run", "^$", "-test.cpu", "1", "-test.bench", l.pattern(),
		"-test.benchtime", strconv.FormatInt(n, 10)+"x", "-test.count", strconv.Itoa(reps))
	if err != nil {
		return nil, nil, nil, benchFailed(ctx, s, b, err, stdout, stderr)
	}
	// One symbolizer for both readings of the dump: it reads every
	// address of the dump first.
	sym, err := r.dumpSymbolizer(b.path, out)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s at %s: %w", l.name, s.name, err)
	}
	p, err := readDump(out, sym)
	if err == nil {
		p, err = r.o.estimate(p, out)
	}
	var misses map[string]int64
	if err == nil {
		misses, err = attachExactAllocs(p, b.path, out, sym)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s at %s: %w", l.name, s.name, err)
	}
	return p, misses, stdout.Bytes(), nil
}

// exactUnmatched is the error of counts of which the gate judged no
// function (gateWhat names it): nothing judged is not a pass. It is nil
// when some function was judged, or no benchmark counted.
func exactUnmatched(results []exactResult, what string, mods []string, gate string) error {
	w := map[string]int64{}
	for _, e := range results {
		if e.report.Judged > 0 {
			return nil
		}
		for _, p := range []*profile.Profile{e.base, e.head} {
			for _, s := range p.Sample {
				if len(s.Value) > 0 && len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
					w[s.Location[0].Line[0].Function.Name] += s.Value[0]
				}
			}
		}
	}
	if len(results) == 0 {
		return nil
	}
	var names []suggest.Candidate
	for _, n := range slices.Sorted(maps.Keys(w)) {
		names = append(names, suggest.Candidate{Name: n, Weight: w[n]})
	}
	return errors.New(modname.Unmatched(what, mods, gate, names))
}

// exactLine is one benchmark's verdict in a line.
func exactLine(rep *diff.CountReport) string {
	var changed []string
	for _, row := range rep.Rows {
		if row.Verdict == diff.Regressed || row.Verdict == diff.New {
			inlined := ""
			if len(row.InlinedInto) > 0 {
				short := make([]string, len(row.InlinedInto))
				for i, g := range row.InlinedInto {
					short[i] = shortName(g)
				}
				inlined = " (inlined into " + strings.Join(short, ", ") + ")"
			}
			changed = append(changed, fmt.Sprintf("%s %s %s%s", row.Verdict, shortName(row.Name), relChange(row), inlined))
		}
	}
	if len(changed) == 0 {
		return fmt.Sprintf("no function slower (%s %s per op)", textfmt.Count(float64(int64(rep.HeadTotal))), rep.Event)
	}
	return strings.Join(changed, ", ")
}

// relChange is a row's change in percent.
func relChange(row diff.CountRow) string {
	b := slices.Max(row.Base)
	if b == 0 {
		return "(new)"
	}
	return fmt.Sprintf("%+.2f%%", 100*row.Change/b)
}

// shortName is a function name without its package path's directories.
// A major version's path element ("v4") keeps the element before it:
// github.com/blang/semver/v4.Parse is semver/v4.Parse.
func shortName(name string) string {
	// The package path ends before a type's parenthesis or a generic's
	// type arguments, which may name other paths.
	path := name
	if k := strings.IndexAny(name, "[("); k >= 0 {
		path = name[:k]
	}
	i := strings.LastIndex(path, "/")
	if i < 0 {
		return name
	}
	if rest := name[i+1:]; len(rest) > 1 && rest[0] == 'v' && rest[1] >= '0' && rest[1] <= '9' {
		if dot := strings.IndexByte(rest, '.'); dot > 1 && strings.Trim(rest[1:dot], "0123456789") == "" {
			if j := strings.LastIndex(path[:i], "/"); j >= 0 {
				return name[j+1:]
			}
		}
	}
	return name[i+1:]
}

// exactFailed lists the benchmarks whose functions regressed.
func exactFailed(results []exactResult) []exactResult {
	var out []exactResult
	for _, e := range results {
		if e.report.Failed() || e.allocsFailed() {
			out = append(out, e)
		}
	}
	return out
}

// exactSummary is the verdict in one line: what regressed, or that
// nothing did.
func exactSummary(results []exactResult) string {
	failed := exactFailed(results)
	if len(failed) == 0 {
		traded := map[string]bool{}
		for _, e := range results {
			for _, tr := range e.report.Traded {
				traded[shortName(tr.Name)] = true
			}
		}
		if len(traded) > 0 {
			return fmt.Sprintf("no function executes more instructions than its benchmark saved in %s (exact counts, callgrind; %s); traded: %s",
				plural(len(results), "benchmark", "benchmarks"), exactJudged(results), textfmt.List(slices.Sorted(maps.Keys(traded)), 4))
		}
		return fmt.Sprintf("no function executes more instructions in %s (exact counts, callgrind; %s)", plural(len(results), "benchmark", "benchmarks"), exactJudged(results))
	}
	var names []string
	instr, allocs := false, false
	for _, e := range failed {
		instr, allocs = instr || e.report.Failed(), allocs || e.allocsFailed()
		_, bench, _ := strings.Cut(e.name, " ")
		line := exactLine(e.report)
		if a := e.allocsLine(); a != "" {
			if !e.report.Failed() {
				line = a
			} else {
				line += "; " + a
			}
		}
		names = append(names, bench+": "+line)
	}
	what := "execute more instructions"
	switch {
	case allocs && !instr:
		what = "allocate more"
	case allocs:
		what = "execute more instructions or allocate more"
	}
	return fmt.Sprintf("%d of %d benchmarks %s: %s", len(failed), len(results), what, strings.Join(names, "; "))
}

// exactJudged says how many functions the benchmarks' comparisons judged:
// "101 functions judged", or "95 to 180 functions judged a benchmark".
func exactJudged(results []exactResult) string {
	if len(results) == 0 {
		return "no function judged"
	}
	lo, hi := results[0].report.Judged, results[0].report.Judged
	for _, e := range results[1:] {
		lo, hi = min(lo, e.report.Judged), max(hi, e.report.Judged)
	}
	switch {
	case len(results) == 1:
		return plural(lo, "function", "functions") + " judged"
	case lo == hi:
		return plural(lo, "function", "functions") + " judged a benchmark"
	}
	return fmt.Sprintf("%d to %d functions judged a benchmark", lo, hi)
}

// writeCounted writes the report of a counted verdict in format: the
// verdict first and last, a section per benchmark that changed, one line
// per benchmark that did not.
func (v *Verdict) writeCounted(stdout io.Writer, format string) error {
	var b bytes.Buffer
	res, exit, verdict := v.m, v.Exit, v.Line
	failed := exit != exitOK
	baseLine := historyBaseLine(res.baseHistory)
	// A benchmark not counted is said beside the verdict.
	notCounted := ""
	if res.notCounted != "" {
		notCounted = res.notCounted + "\n"
	}
	switch format {
	case "json":
		type row struct {
			Benchmark string            `json:"benchmark"`
			Ops       int64             `json:"ops"`
			Failed    bool              `json:"failed"`
			Report    *diff.CountReport `json:"report"`
			Allocs    *diff.AllocReport `json:"allocations,omitempty"`
		}
		out := struct {
			// Instrument is what was measured, Why the report's first
			// line: which instrument and why.
			Instrument string `json:"instrument"`
			Why        string `json:"why"`
			Verdict    string `json:"verdict"`
			// NotCounted says which benchmarks were left out to fit
			// --budget.
			NotCounted string   `json:"not_counted,omitempty"`
			Exit       int      `json:"exit"`
			Base       revision `json:"base"`
			// BaseFrom is "measured", or "history" when the base's
			// counts came from its record (BaseRecorded: when).
			BaseFrom     string   `json:"base_from"`
			BaseRecorded string   `json:"base_recorded,omitempty"`
			Head         revision `json:"head"`
			Rows         []row    `json:"benchmarks"`
		}{Instrument: "instructions", Why: res.why, Verdict: verdict, NotCounted: res.notCounted, Exit: exit, Base: res.baseRev, BaseFrom: "measured", Head: res.headRev}
		if h := res.baseHistory; h != nil {
			out.BaseFrom, out.BaseRecorded = "history", h.Recorded
		}
		for _, e := range res.exact {
			out.Rows = append(out.Rows, row{e.name, e.ops, e.report.Failed() || e.allocsFailed(), e.report, e.allocs})
		}
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	case "markdown":
		icon := "✅"
		if failed {
			icon = "❌"
		}
		fmt.Fprintf(&b, "## %s hotbudget record, counted: %s\n\n%s\n\n", icon, textfmt.MarkdownEscape(verdict), textfmt.MarkdownEscape(res.why))
		if notCounted != "" {
			fmt.Fprintf(&b, "%s\n", textfmt.MarkdownEscape(notCounted))
		}
		for _, e := range res.exact {
			if len(e.report.Rows) == 0 && len(e.report.Traded) == 0 {
				continue
			}
			fmt.Fprintf(&b, "#### %s\n\n```text\n", textfmt.MarkdownCode(e.name))
			var t bytes.Buffer
			e.report.Write(&t, "text")
			writeCyclesBeside(&t, e)
			writeExactAllocs(&t, e, res.baseHistory != nil)
			b.WriteString(strings.ReplaceAll(t.String(), "```", "'''"))
			b.WriteString("```\n\n")
		}
		fmt.Fprintf(&b, "base %s, head %s; profiles under %s\n\n%s\n", textfmt.MarkdownEscape(res.baseRev.String()), textfmt.MarkdownEscape(res.headRev.String()), textfmt.MarkdownCode(res.out), textfmt.MarkdownEscape(baseLine))
	default:
		fmt.Fprintf(&b, "%s\n%s\n%s%s\n\n", textfmt.Line(res.why), textfmt.Line(verdict), notCounted, textfmt.Line(baseLine))
		for _, e := range res.exact {
			fmt.Fprintf(&b, "%s (%s ops a side): ", textfmt.Line(e.name), textfmt.Count(float64(e.ops)))
			var t bytes.Buffer
			e.report.Write(&t, "text")
			writeCyclesBeside(&t, e)
			writeExactAllocs(&t, e, res.baseHistory != nil)
			b.Write(t.Bytes())
		}
		fmt.Fprintf(&b, "\nprofiles (each benchmark's run of 2N ops, base and head): %s\n%s; exit status %d\n", textfmt.Line(res.out), textfmt.Line(verdict), exit)
	}
	_, err := io.Copy(stdout, &b)
	return err
}

// underValgrind runs the test binary b with args under valgrind as run
// says, in b's directory, as record counts: one P, no garbage collection,
// no asynchronous preemption (valgrind.Env).
func underValgrind(ctx context.Context, vg string, b *testBinary, run valgrind.Run, args ...string) (stdout, stderr *bytes.Buffer, err error) {
	cmd := run.Command(ctx, vg, os.Environ(), b.path, args...)
	stopGroupOnCancel(cmd)
	cmd.Dir = b.dir
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return stdout, stderr, cmd.Run()
}
