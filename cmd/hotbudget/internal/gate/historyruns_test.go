package gate

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// runProfileOf is a CPU profile as record's perf events write it: samples
// and CPU time (the samples times the period), stacks leaf first, ops
// iterations recorded. stacks maps "leaf;caller;..." to samples.
func runProfileOf(t *testing.T, stacks map[string]int64, ops int64) *profile.Profile {
	t.Helper()
	const period = 100000
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: period, DefaultSampleType: "cpu",
	}
	fns := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l := fns[name]; l != nil {
			return l
		}
		id := uint64(len(fns) + 1)
		fn := &profile.Function{ID: id, Name: name, SystemName: name}
		l := &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, l)
		fns[name] = l
		return l
	}
	for _, st := range sortedKeys(stacks) {
		s := &profile.Sample{Value: []int64{stacks[st], stacks[st] * period}}
		for _, f := range strings.Split(st, ";") {
			s.Location = append(s.Location, loc(f))
		}
		p.Sample = append(p.Sample, s)
	}
	meta.Set(p, meta.Record{Name: "m BenchmarkX at head h (0123456789ab), run 1", WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: float64(ops)}}})
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

// runStacks are the stacks of one run of a benchmark: deep stacks, a
// recursive function, an asynchronous preemption, a function only ever
// above others. k varies the run.
func runStacks(k int64, slow int64) map[string]int64 {
	return map[string]int64{
		"m.parse;m.Parse;m.BenchmarkX;testing.(*B).runN;runtime.goexit":                               400 + 7*k + slow,
		"m.scan;m.parse;m.Parse;m.BenchmarkX;testing.(*B).runN":                                       300 - 5*k,
		"m.scan;m.scan;m.parse;m.Parse;m.BenchmarkX":                                                  120 + 3*k,
		"runtime.asyncPreempt;m.scan;m.parse;m.Parse":                                                 9 + k,
		"runtime.mallocgc;runtime.newobject;m.Parse;m.BenchmarkX":                                     200 + 4*k,
		"runtime.memmove;runtime.growslice;m.Parse;m.BenchmarkX":                                      150 - 3*k,
		"m.Parse;m.BenchmarkX;testing.(*B).runN":                                                      250 + 2*k,
		"runtime.gcBgMarkWorker;runtime.goexit":                                                       90 + 6*k,
		"runtime.scanobject;runtime.gcDrain;runtime.gcBgMarkWorker":                                   80 - 2*k,
		"runtime.futex;runtime.futexsleep;runtime.notesleep;runtime.mPark;runtime.schedule":           30 + k,
		"syscall.Syscall;os.(*File).Write;fmt.Fprintf;testing.(*B).report;testing.(*B).runN":          3,
		"runtime.nanotime;runtime.sysmon;runtime.mstart1;runtime.mstart0;runtime.mstart":              40 - k,
		"runtime.procyield;runtime.lock2;runtime.lockWithRank;runtime.lock;runtime.findRunnable":      25 + k,
		"runtime.heapBitsSetType;runtime.mallocgc;runtime.newobject;m.Parse;m.BenchmarkX":             60 + k,
		"runtime.memclrNoHeapPointers;runtime.mallocgc;runtime.makeslice;m.scan;m.parse;m.Parse":      45 - k,
		"runtime.typePointersOfUnchecked;runtime.scanobject;runtime.gcDrain;runtime.gcBgMarkWorker":   35 + k,
		"runtime.(*mspan).init;runtime.(*mheap).allocSpan;runtime.(*mheap).alloc;runtime.mallocgc":    20 + k,
		"runtime.madvise;runtime.sysUnusedOS;runtime.sysUnused;runtime.(*pageAlloc).scavengeOne":      12 - k,
		"runtime.(*gcWork).tryGet;runtime.gcDrain;runtime.gcBgMarkWorker":                             18 + k,
		"internal/bytealg.IndexByteString;strings.IndexByte;m.scan;m.parse;m.Parse;m.BenchmarkX":      70 + 2*k,
		"unicode/utf8.DecodeRuneInString;m.scan;m.parse;m.Parse;m.BenchmarkX":                         55 - k,
		"strconv.ParseUint;m.parse;m.Parse;m.BenchmarkX":                                              65 + k,
		"runtime.nextFreeFast;runtime.mallocgc;runtime.newobject;m.Parse":                             33 + k,
		"runtime.gcWriteBarrier2;m.Parse;m.BenchmarkX":                                                14 + k,
		"runtime.wbBufFlush1;runtime.wbBufFlush;runtime.gcWriteBarrier2;m.Parse":                      8,
		"runtime.findObject;runtime.scanobject;runtime.gcDrain;runtime.gcBgMarkWorker;runtime.goexit": 22 - k,
	}
}

// TestTimeRunsRoundTrip reduces run profiles to the history's runs,
// through the record's JSON, and rebuilds them: every function's self
// time, samples and local time and the runs' totals are the profiles',
// and diff judges a head against the rebuilt runs as against the
// measured ones, row for row.
func TestTimeRunsRoundTrip(t *testing.T) {
	var base, head []*profile.Profile
	profs := map[int]*profile.Profile{}
	var results []string
	for k := range int64(5) {
		base = append(base, runProfileOf(t, runStacks(k, 0), 1000))
		head = append(head, runProfileOf(t, runStacks(4-k, 250), 1000))
		profs[int(k)+1] = base[k]
		results = append(results, "BenchmarkX-2 1000 1234 ns/op 16 B/op 1 allocs/op")
	}
	tr, err := timeRunsOf(profs, results)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Scaled || len(tr.Runs) != 5 || tr.Runs[2].Ops != 1000 || tr.Runs[2].Results[0] != results[2] {
		t.Fatalf("runs: scaled %v, %d runs, run 3: %d ops, results %q", tr.Scaled, len(tr.Runs), tr.Runs[2].Ops, tr.Runs[2].Results)
	}
	rec := &history.Record{Schema: history.Schema, Commit: strings.Repeat("a", 40), Recorded: "2026-11-28T09:00:00Z", Instrument: history.InstrumentTime,
		Go: "go1.26.8", Machine: "linux/amd64; Some CPU", Benchmarks: []history.Benchmark{{Name: "m BenchmarkX", TimeRuns: tr}}}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("5 runs of %d functions: %d bytes of JSON", len(tr.Functions), len(data))
	if rec, err = history.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	var rebuilt []*profile.Profile
	for k := range 5 {
		p, err := historyTimeProfile(rec, &rec.Benchmarks[0], k)
		if err != nil {
			t.Fatal(err)
		}
		rebuilt = append(rebuilt, p)
		sel := diff.DefaultSettings().Selection
		table := func(p *profile.Profile) (*analysis.Table, map[string]analysis.Function) {
			x, err := analysis.NewIndex(p)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := x.Table(sel)
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]analysis.Function{}
			for _, f := range tb.Functions {
				m[f.Name] = f
			}
			return tb, m
		}
		wt, want := table(base[k])
		gt, got := table(p)
		if gt.Total != wt.Total || gt.TotalSamples != wt.TotalSamples {
			t.Errorf("run %d: total %d (%d samples), want %d (%d)", k+1, gt.Total, gt.TotalSamples, wt.Total, wt.TotalSamples)
		}
		for name, w := range want {
			g := got[name]
			if w.Self == 0 && w.Local == 0 {
				continue // above the callers kept: not kept
			}
			if g.Self != w.Self || g.SelfSamples != w.SelfSamples || g.Local != w.Local || g.LocalSamples != w.LocalSamples {
				t.Errorf("run %d: %s: self %d (%d samples) local %d (%d), want %d (%d) and %d (%d)", k+1, name,
					g.Self, g.SelfSamples, g.Local, g.LocalSamples, w.Self, w.SelfSamples, w.Local, w.LocalSamples)
			}
		}
		if m, ok := meta.Known(p); !ok || len(m.Runs) != 1 || m.Runs[0].Work != 1000 {
			t.Errorf("run %d: the rebuilt profile records %+v, want 1000 ops", k+1, m)
		}
	}
	judge := func(base []*profile.Profile) map[string]diff.Row {
		reps, err := diff.CompareEach([]diff.Pair{{Name: "m BenchmarkX", Base: base, Head: head}}, diff.WithGate(ModulePattern([]string{"m"})))
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]diff.Row{}
		for _, r := range reps[0].Rows {
			rows[r.Name] = r
		}
		return rows
	}
	measured, stored := judge(base), judge(rebuilt)
	if measured["m.parse"].Verdict != diff.Regressed {
		t.Errorf("m.parse, 250 samples slower a run: %s, want regressed", measured["m.parse"].Verdict)
	}
	for name, m := range measured {
		s, ok := stored[name]
		if m.Base.Self == 0 && m.Head.Self == 0 {
			continue // a function never a leaf: its total is not kept
		}
		if !ok || s.Verdict != m.Verdict || s.Q != m.Q || s.Relative != m.Relative || s.NearMiss != m.NearMiss {
			t.Errorf("%s: from the history %s q=%g %+.4f, measured %s q=%g %+.4f", name, s.Verdict, s.Q, s.Relative, m.Verdict, m.Q, m.Relative)
		}
	}
	text, err := historyBenchText(rec, &rec.Benchmarks[0], 1)
	if want := "goos: linux\ngoarch: amd64\npkg: m\ncpu: Some CPU\n" + results[1] + "\n"; err != nil || text != want {
		t.Errorf("the base's benchmark output (%v):\n%s\nwant:\n%s", err, text, want)
	}
}

// TestTimeHistoryRefusals checks what a time base from the history
// refuses: another instrument, a record without runs, one older than
// --history-max-age or without a time, another kind of machine, a head
// sampled otherwise, and the flags it cannot honour.
func TestTimeHistoryRefusals(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	withRuns := func() *history.Record {
		return &history.Record{Commit: strings.Repeat("b", 40), Recorded: "2026-11-28T10:00:00Z", Instrument: history.InstrumentTime,
			Machine: "linux/amd64; Some CPU", GOMAXPROCS: 2, CPUs: 2,
			Benchmarks: []history.Benchmark{{Name: "m BenchmarkX", TimeRuns: &history.TimeRuns{Runs: []history.TimeRun{{Ops: 10}}}}}}
	}
	if err := checkTimeHistory(withRuns(), 7*24*time.Hour, now); err != nil {
		t.Errorf("a record of two hours ago: %v", err)
	}
	for _, c := range []struct {
		why    string
		change func(r *history.Record)
		maxAge time.Duration
		want   string
	}{
		{"instructions", func(r *history.Record) { r.Instrument = history.InstrumentInstructions }, 0, "counted instructions: time needs a record of time"},
		{"no runs", func(r *history.Record) { r.Prune() }, 0, "keeps no runs"},
		{"old", func(r *history.Record) {}, time.Hour, "is 2h0m0s old (recorded 2026-11-28T10:00Z), beyond --history-max-age 1h0m0s"},
		{"no time", func(r *history.Record) { r.Recorded = "" }, 0, "says no time it was recorded"},
	} {
		r := withRuns()
		c.change(r)
		if err := checkTimeHistory(r, c.maxAge, now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.why, err, c.want)
		}
	}
	if err := checkTimeHistory(withRuns(), 0, now.Add(1000*time.Hour)); err != nil {
		t.Errorf("--history-max-age 0 takes any age: %v", err)
	}
	for _, c := range []struct {
		cpu         string
		procs, cpus int
		want        string
	}{
		{"Some CPU", 2, 2, ""},
		{"Other CPU\x1b[31m", 2, 2, `measured on Some CPU, the head on Other CPU\x1b[31m`},
		{"Some CPU", 1, 2, "at GOMAXPROCS 2, the head at 1"},
		{"Some CPU", 2, 4, "on a machine of 2 processors, the head on one of 4"},
	} {
		err := checkTimeMachine(withRuns(), c.cpu, c.procs, c.cpus)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q GOMAXPROCS %d, %d CPUs: %v, want %q", c.cpu, c.procs, c.cpus, err, c.want)
		}
	}
	// A head sampled by runtime/pprof against a base of perf events.
	perf := runProfileOf(t, runStacks(0, 0), 10)
	pprof := runProfileOf(t, runStacks(0, 0), 10)
	pprof.Period = 10000000
	if err := checkSameSampler(withRuns(), perf, perf); err != nil {
		t.Errorf("the same sampler: %v", err)
	}
	if err := checkSameSampler(withRuns(), perf, pprof); err == nil || !strings.Contains(err.Error(), "sampled at 10000 Hz, the head at 100 Hz") {
		t.Errorf("perf events against runtime/pprof: %v", err)
	}
}

// TestRecordTimeBaseFromHistory records HEAD~1 of gitRepo as a push to main
// would and appends it to the history with its runs, then gates the slower
// checksum (HEAD) twice: measuring the base beside the head, and taking
// its runs from the history (--base-from-history, the head alone at the
// stored runs and iterations). Both name checksum regressed and nothing
// else of the module, with the same verdict line for the functions; the
// report says where the base came from. A record older than
// --history-max-age, of another kind of machine, or without runs is
// refused before running anything, exit 2.
func TestRecordTimeBaseFromHistory(t *testing.T) {
	testutil.Slow(t, "builds and benchmarks revisions four times")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := testutil.RecordRepo(t)
	// As TestRecord: 600ms a run gives checksum enough samples a run.
	args := []string{"--instrument", "time", "--runs", "5", "--benchtime", "600ms", "--no-allocs"}
	pushed := filepath.Join(t.TempDir(), "pushed")
	// The push's own verdict is not what this test judges (a README
	// commit; time errs now and then: rec.render +10% once in CI): its
	// runs are what the history stores.
	if r := recordIn(t, repo, append(args, "--out", pushed, "HEAD~2", "HEAD~1")...); r.code != 0 && r.code != 1 {
		t.Fatalf("recording HEAD~1: exit %d\n%s", r.code, r.stdout)
	}
	t.Logf("%s", runOK(t, 0, "history", "append", "--out", pushed, "--commit", "HEAD~1"))
	note, err := exec.Command("git", "notes", "--ref=hotbudget", "show", "HEAD~1").Output()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := history.Unmarshal(note)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Benchmarks) != 1 || rec.Benchmarks[0].TimeRuns == nil || len(rec.Benchmarks[0].TimeRuns.Runs) != 5 || rec.GOMAXPROCS == 0 || rec.CPUs == 0 {
		t.Fatalf("the record of HEAD~1 lacks what --base-from-history needs (5 runs, GOMAXPROCS, processors):\n%s", note)
	}
	t.Logf("the record of HEAD~1: %d bytes, %d functions in its runs", len(note), len(rec.Benchmarks[0].TimeRuns.Functions))

	// A statistical gate errs now and then by design: a pair that comes
	// out wrong either way is recorded once more before the test fails.
	verdictLine := func(out string) string {
		// The report's first line names the instrument and how it was
		// chosen (--instrument time, --time); the verdict is the second.
		_, rest, _ := strings.Cut(out, "\n")
		first, _, _ := strings.Cut(rest, "\n")
		// The functions' part: the program's time and the benchmarks'
		// results are gated when measured and shown, not gated, from the
		// history.
		fns, _, _ := strings.Cut(first, "; benchmark results")
		fns, _, _ = strings.Cut(fns, "; the program's time")
		return regexp.MustCompile(`[-+]\d+%`).ReplaceAllString(fns, "±N%")
	}
	for try := 1; ; try++ {
		t0 := time.Now()
		measured := recordIn(t, repo, append(args, "HEAD~1", "HEAD")...)
		tMeasured := time.Since(t0)
		t0 = time.Now()
		stored := recordIn(t, repo, "--time", "--no-allocs", "--base-from-history", "HEAD~1", "HEAD")
		t.Logf("wall time: base measured %v, base from the history %v", tMeasured.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		if !strings.Contains(stored.stdout, "\nbase: from history (commit "+rec.Commit[:12]+", recorded ") || !strings.Contains(measured.stdout, "\nbase: measured\n") {
			t.Fatalf("the reports do not say where the base came from:\n%s\n%s", measured.stdout, stored.stdout)
		}
		vm, vs := verdicts(measured.stdout), verdicts(stored.stdout)
		ok := measured.code == 1 && stored.code == 1 && vm["example.com/rec.checksum"] == "regressed" && vs["example.com/rec.checksum"] == "regressed" &&
			verdictLine(measured.stdout) == verdictLine(stored.stdout)
		for name, v := range vs {
			ok = ok && (v != "regressed" || name == "example.com/rec.checksum")
		}
		if ok {
			break
		}
		if try == 3 {
			t.Fatalf("the two ways disagree (exit %d and %d):\nmeasured:\n%s\nfrom the history:\n%s", measured.code, stored.code, measured.stdout, stored.stdout)
		}
		t.Logf("try %d: the two ways disagree; recording again", try)
	}

	for _, c := range []struct {
		why  string
		args []string
		want string
	}{
		{"old", []string{"--history-max-age", "1ns", "--base-from-history", "HEAD~1", "HEAD"}, "beyond --history-max-age 1ns"},
		{"another runs", []string{"--runs", "3", "--base-from-history", "HEAD~1", "HEAD"}, "--runs 3, but the record of base " + rec.Commit[:12] + " ran 5"},
	} {
		if r := recordIn(t, repo, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 saying %q:\n%s", c.why, r.code, c.want, r.stderr)
		}
	}
	put := func(note string) {
		t.Helper()
		cmd := exec.Command("git", "notes", "--ref=hotbudget", "add", "-f", "-F", "-", "HEAD~1")
		cmd.Stdin = strings.NewReader(note)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	// Another kind of machine's record, then one without runs.
	put(strings.Replace(string(note), fmt.Sprintf(`"cpus":%d`, rec.CPUs), `"cpus":96`, 1))
	if r := recordIn(t, repo, "--time", "--base-from-history", "HEAD~1", "HEAD"); r.code != 2 || !strings.Contains(r.stderr, "on a machine of 96 processors") {
		t.Errorf("another machine: exit %d\n%s", r.code, r.stderr)
	}
	rec.Prune()
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	put(string(data))
	if r := recordIn(t, repo, "--time", "--base-from-history", "HEAD~1", "HEAD"); r.code != 2 || !strings.Contains(r.stderr, "keeps no runs") || strings.Contains(r.stderr, "built 1 test binary") {
		t.Errorf("no runs: exit %d, want 2 before building\n%s", r.code, r.stderr)
	}
}

// TestRecordReportBaseFromHistory checks the report of a time base from
// the history: it says so in every format, and a benchmark's time per op
// that changed is shown, not gated, while its functions still are.
func TestRecordReportBaseFromHistory(t *testing.T) {
	funcs, _ := recordReports(t)
	side := func(ns float64) string {
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/m\ncpu: Some CPU\n")
		for i := range 5 {
			fmt.Fprintf(&b, "BenchmarkB-2 1000 %g ns/op 16 B/op 1 allocs/op\n", ns+float64(i))
		}
		return b.String()
	}
	benches, err := bench.Compare(strings.NewReader(side(1000)), strings.NewReader(side(1400)))
	if err != nil {
		t.Fatal(err)
	}
	if len(benches.Regressions()) != 1 {
		t.Fatalf("sec/op +40%%: %d regressions, want 1", len(benches.Regressions()))
	}
	rec := &history.Record{Commit: strings.Repeat("c", 40), Recorded: "2026-11-28T09:36:12Z", Instrument: history.InstrumentTime}
	res := &Measurement{baseRev: revision{Name: "main", Commit: rec.Commit}, headRev: revision{Name: "."}, baseHistory: rec, timeShown: ungateMeasuredTime(benches)}
	if len(benches.Regressions()) != 0 || len(res.timeShown) != 1 || !strings.HasPrefix(res.timeShown[0], "B-2 sec/op +39.9%") {
		t.Fatalf("not ungated: %d regressions, shown %q", len(benches.Regressions()), res.timeShown)
	}
	for _, format := range []string{"text", "markdown", "json"} {
		out, code := reportOf(t, res, funcs, benches, nil, format, false)
		if code != exitFail || strings.Contains(out, "benchmark results: ") {
			t.Errorf("%s: exit %d, want %d for the functions alone:\n%s", format, code, exitFail, out)
		}
		if format == "json" {
			var js struct {
				BaseFrom     string   `json:"base_from"`
				BaseRecorded string   `json:"base_recorded"`
				TimeNotGated []string `json:"time_not_gated"`
			}
			if err := json.Unmarshal([]byte(out), &js); err != nil || js.BaseFrom != "history" || js.BaseRecorded != rec.Recorded || len(js.TimeNotGated) != 1 {
				t.Errorf("json: %+v (%v)", js, err)
			}
			continue
		}
		if !strings.Contains(out, "base: from history (commit cccccccccccc, recorded 2026-11-28T09:36Z, time)") ||
			!strings.Contains(out, "the benchmarks' time is shown, not gated (the functions' shares are): B-2 sec/op +39.9%") {
			t.Errorf("%s: the report does not say where the base came from and what was not gated:\n%s", format, out)
		}
	}
}
