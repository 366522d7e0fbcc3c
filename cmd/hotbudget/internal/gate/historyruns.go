package gate

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/pprof/profile"
	"golang.org/x/perf/benchfmt"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// record --base-from-history for time (issue 34): the record of a base
// commit keeps each benchmark's runs as the time verdict reads them
// (history.TimeRuns: every function's self samples and its caller's, per
// run, and the run's benchmark results), so that record runs the head
// alone, at the iterations and runs of the stored base, and judges it
// with the same statistics as a base measured beside it. A base measured
// at another time is not beside the head: the record must be recent
// (--history-max-age) and of the same kind of machine (Go, platform, CPU,
// GOMAXPROCS and processors).

// asyncPreempt is charged to its caller, as diff's default selection
// charges it.
const asyncPreempt = "runtime.asyncPreempt"

// timeRunsOf reduces a benchmark's run profiles (by run number) and its
// result lines (results, in run order, -test.count a run) to what the
// time verdict reads: nil when there are no profiles.
func timeRunsOf(profiles map[int]*profile.Profile, results []string) (*history.TimeRuns, error) {
	if len(profiles) == 0 {
		return nil, nil
	}
	nums := make([]int, 0, len(profiles))
	for n := range profiles {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	if len(results)%len(nums) != 0 {
		return nil, fmt.Errorf("%d benchmark results for %d run profiles: not the output of those runs", len(results), len(nums))
	}
	perRun := len(results) / len(nums)
	first := profiles[nums[0]]
	tr := &history.TimeRuns{Period: first.Period, DefaultSampleType: first.DefaultSampleType}
	for _, st := range first.SampleType {
		tr.SampleTypes = append(tr.SampleTypes, st.Type+"/"+st.Unit)
	}
	if first.PeriodType != nil {
		tr.PeriodType = first.PeriodType.Type + "/" + first.PeriodType.Unit
	}
	type group struct{ leaf, caller string }
	runs := make([]map[group][]int64, len(nums))
	names := map[string]bool{}
	for i, n := range nums {
		p := profiles[n]
		if len(p.SampleType) != len(tr.SampleTypes) || p.Period != tr.Period {
			return nil, fmt.Errorf("run %d was sampled otherwise than run %d", n, nums[0])
		}
		m, ok := meta.Known(p)
		if !ok || len(m.Runs) != 1 || !(m.Runs[0].Work > 0) {
			return nil, fmt.Errorf("run %d's profile records no iterations", n)
		}
		tr.Runs = append(tr.Runs, history.TimeRun{Ops: int64(m.Runs[0].Work), Results: results[i*perRun : (i+1)*perRun]})
		by := map[group][]int64{}
		for _, s := range p.Sample {
			frames := sampleFrames(s)
			for len(frames) > 1 && frames[0] == asyncPreempt {
				frames = frames[1:]
			}
			if len(frames) == 0 {
				continue
			}
			g := group{leaf: frames[0]}
			for _, f := range frames[1:] {
				if f != g.leaf {
					g.caller = f
					break
				}
			}
			v := by[g]
			if v == nil {
				v = make([]int64, len(s.Value))
				by[g] = v
			}
			for k, x := range s.Value {
				v[k] += x
			}
			names[g.leaf] = true
			if g.caller != "" {
				names[g.caller] = true
			}
		}
		runs[i] = by
	}
	tr.Functions = sortedKeys(names)
	// CPU time is the samples times the period: kept once.
	tr.Scaled = len(tr.SampleTypes) == 2 && tr.Period > 0
	for _, by := range runs {
		for _, v := range by {
			tr.Scaled = tr.Scaled && v[1] == v[0]*tr.Period
		}
	}
	index := map[string]int64{}
	for i, n := range tr.Functions {
		index[n] = int64(i)
	}
	for i, by := range runs {
		gs := make([]group, 0, len(by))
		for g := range by {
			gs = append(gs, g)
		}
		slices.SortFunc(gs, func(a, b group) int {
			if a.leaf != b.leaf {
				return strings.Compare(a.leaf, b.leaf)
			}
			return strings.Compare(a.caller, b.caller)
		})
		var flat []int64
		for _, g := range gs {
			caller := int64(-1)
			if g.caller != "" {
				caller = index[g.caller]
			}
			flat = append(flat, index[g.leaf], caller)
			if tr.Scaled {
				flat = append(flat, by[g][0])
			} else {
				flat = append(flat, by[g]...)
			}
		}
		tr.Runs[i].Samples = flat
	}
	return tr, nil
}

// sampleFrames are a sample's function names, leaf first, inlined frames
// included.
func sampleFrames(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		if len(loc.Line) == 0 {
			out = append(out, fmt.Sprintf("0x%x", loc.Address))
			continue
		}
		for _, ln := range loc.Line {
			if ln.Function == nil {
				out = append(out, fmt.Sprintf("0x%x", loc.Address))
				continue
			}
			out = append(out, ln.Function.Name)
		}
	}
	return out
}

// resultLine is a benchmark result as go test prints it, spaces
// collapsed.
func resultLine(res *benchfmt.Result) string {
	var b strings.Builder
	b.WriteString("Benchmark")
	b.Write(res.Name)
	fmt.Fprintf(&b, " %d", res.Iters)
	for _, v := range res.Values {
		val, unit := v.Value, v.Unit
		if v.OrigUnit != "" {
			val, unit = v.OrigValue, v.OrigUnit
		}
		fmt.Fprintf(&b, " %s %s", strconv.FormatFloat(val, 'g', -1, 64), unit)
	}
	return b.String()
}

// benchProcs is the GOMAXPROCS a benchmark's name ends with (-N), 0 when
// none.
func benchProcs(n benchfmt.Name) int {
	_, parts := n.Parts()
	for _, p := range parts {
		if len(p) > 1 && p[0] == '-' && strings.Trim(string(p[1:]), "0123456789") == "" {
			v, _ := strconv.Atoi(string(p[1:]))
			return v
		}
	}
	return 0
}

// historyTimeProfile is run (0-based) of the stored benchmark b of rec as
// a CPU profile: each group of samples one sample whose stack is its leaf
// and caller, the run's iterations recorded.
func historyTimeProfile(rec *history.Record, b *history.Benchmark, run int) (*profile.Profile, error) {
	tr := b.TimeRuns
	if tr == nil || run >= len(tr.Runs) {
		return nil, fmt.Errorf("the record of base %.12s lacks run %d of %s", rec.Commit, run+1, b.Name)
	}
	vt := func(s string) *profile.ValueType {
		t, u, _ := strings.Cut(s, "/")
		return &profile.ValueType{Type: t, Unit: u}
	}
	p := &profile.Profile{Period: tr.Period, DefaultSampleType: tr.DefaultSampleType}
	for _, st := range tr.SampleTypes {
		p.SampleType = append(p.SampleType, vt(st))
	}
	if tr.PeriodType != "" {
		p.PeriodType = vt(tr.PeriodType)
	}
	locs := make([]*profile.Location, len(tr.Functions))
	for i, name := range tr.Functions {
		id := uint64(i + 1)
		fn := &profile.Function{ID: id, Name: name, SystemName: name}
		locs[i] = &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, locs[i])
	}
	r := tr.Runs[run]
	width := 2 + len(tr.SampleTypes)
	if tr.Scaled {
		width = 3
	}
	if len(r.Samples)%width != 0 {
		return nil, fmt.Errorf("the record of base %.12s: run %d of %s: %d sample values, not groups of %d", rec.Commit, run+1, b.Name, len(r.Samples), width)
	}
	at := func(i int64) (*profile.Location, bool) {
		if i < 0 || i >= int64(len(locs)) {
			return nil, false
		}
		return locs[i], true
	}
	for k := 0; k < len(r.Samples); k += width {
		leaf, ok := at(r.Samples[k])
		if !ok {
			return nil, fmt.Errorf("the record of base %.12s: run %d of %s names function %d of %d", rec.Commit, run+1, b.Name, r.Samples[k], len(locs))
		}
		s := &profile.Sample{Location: []*profile.Location{leaf}, Value: slices.Clone(r.Samples[k+2 : k+width])}
		if tr.Scaled {
			if len(tr.SampleTypes) != 2 {
				return nil, fmt.Errorf("the record of base %.12s: %s keeps one value of %d sample types", rec.Commit, b.Name, len(tr.SampleTypes))
			}
			s.Value = append(s.Value, s.Value[0]*tr.Period)
		}
		if c := r.Samples[k+1]; c >= 0 {
			caller, ok := at(c)
			if !ok {
				return nil, fmt.Errorf("the record of base %.12s: run %d of %s names function %d of %d", rec.Commit, run+1, b.Name, c, len(locs))
			}
			s.Location = append(s.Location, caller)
		}
		p.Sample = append(p.Sample, s)
	}
	_, name, _ := strings.Cut(b.Name, " ")
	platform, _, _ := strings.Cut(rec.Machine, "; ")
	meta.Set(p, meta.Record{Name: fmt.Sprintf("%s at base %.12s (from the history, recorded %s), run %d", name, rec.Commit, rec.Recorded, run+1),
		Build: strings.TrimSpace(rec.Go + " " + platform), RateHz: rateHz(p), WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: float64(r.Ops)}}})
	return p, p.CheckValid()
}

// historyBenchText is run (0-based) of the stored benchmark b as go test
// printed it, which bench.Compare reads as the base's: the file-level
// configuration and its result lines. bench.Compare reads text only, so
// each stored line is parsed strictly first (history.ParseResult: one
// line, exactly one result of b) and what is written is that parsed
// result printed again, never the stored string; the configuration's
// values are single lines (Record.Validate).
func historyBenchText(rec *history.Record, b *history.Benchmark, run int) (string, error) {
	platform, cpu, _ := strings.Cut(rec.Machine, "; ")
	goos, goarch, _ := strings.Cut(platform, "/")
	pkg, name, _ := strings.Cut(b.Name, " ")
	for _, v := range []string{goos, goarch, pkg, cpu} {
		if strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return "", fmt.Errorf("the record of base %.12s: %s: a line break in its machine or name", rec.Commit, textfmt.Name(b.Name))
		}
	}
	if b.TimeRuns == nil || run < 0 || run >= len(b.TimeRuns.Runs) {
		return "", fmt.Errorf("the record of base %.12s lacks run %d of %s", rec.Commit, run+1, textfmt.Name(b.Name))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "goos: %s\ngoarch: %s\npkg: %s\n", goos, goarch, pkg)
	if cpu != "" {
		fmt.Fprintf(&s, "cpu: %s\n", cpu)
	}
	for _, l := range b.TimeRuns.Runs[run].Results {
		res, err := history.ParseResult(name, l)
		if err != nil {
			return "", fmt.Errorf("the record of base %.12s: %s: %v", rec.Commit, textfmt.Name(b.Name), textfmt.Line(err.Error()))
		}
		s.WriteString(resultLine(res) + "\n")
	}
	return s.String(), nil
}

// checkTimeHistory refuses a stored time base that cannot stand for a
// base measured now: without runs, older than maxAge (0: any age) at now.
func checkTimeHistory(rec *history.Record, maxAge time.Duration, now time.Time) error {
	if rec.Instrument != history.InstrumentTime {
		return fmt.Errorf("--base-from-history: the record of base %.12s counted %s: time needs a record of time (record without --instructions, then history append), or compare instructions with --instructions",
			rec.Commit, textfmt.Line(rec.Instrument))
	}
	if !rec.HasTimeRuns() {
		return fmt.Errorf("--base-from-history: the record of base %.12s keeps no runs (appended by a hotbudget before they were kept, or pruned: history append --keep-functions): drop --base-from-history to measure the base", rec.Commit)
	}
	t, err := time.Parse(time.RFC3339, rec.Recorded)
	if err != nil {
		return fmt.Errorf("--base-from-history: the record of base %.12s says no time it was recorded (%q): drop --base-from-history to measure the base", rec.Commit, textfmt.Line(rec.Recorded))
	}
	if age := now.Sub(t); maxAge > 0 && age > maxAge {
		return fmt.Errorf("--base-from-history: the record of base %.12s is %s old (recorded %s), beyond --history-max-age %s: a machine's speed drifts, and a base measured long ago is no longer one measured beside the head; drop --base-from-history to measure the base, or append a newer record of it",
			rec.Commit, age.Round(time.Minute), t.UTC().Format("2006-01-02T15:04Z"), maxAge)
	}
	return nil
}

// checkHistoryIters refuses the stored iterations of l when one run of
// them at headNs an op (the head's single listed iteration, which
// overstates a fast op's time) slowed slow times (callgrind's) would take
// longer than budget (record --budget; 0: no limit): a record is
// calibrated to about --benchtime a run, so iterations beyond the whole
// budget are not what record measured, and the head would run them.
func checkHistoryIters(rec *history.Record, l leaf, headNs, slow float64, budget time.Duration) error {
	run := float64(l.iters) * headNs * slow
	if budget <= 0 || !(run > float64(budget)) {
		return nil
	}
	return fmt.Errorf("--base-from-history: the record of base %.12s ran %s at %d iterations a run, which at the head's %.0f ns an op (one listed iteration's time, times %g as it is measured) would take %.0fs, beyond --budget %s: measure the base (drop --base-from-history)",
		rec.Commit, textfmt.Name(l.key()), l.iters, headNs, slow, run/1e9, budget)
}

// checkTimeMachine refuses a stored time base measured on another kind of
// machine than the head: another CPU (as go test names it), GOMAXPROCS or
// number of processors. Go and the platform are checkHistoryBuild's.
func checkTimeMachine(rec *history.Record, cpu string, procs, cpus int) error {
	_, recCPU, _ := strings.Cut(rec.Machine, "; ")
	what := ""
	switch {
	case recCPU != cpu:
		what = fmt.Sprintf("on %s, the head on %s", textfmt.Line(recCPU), textfmt.Line(cpu))
	case rec.GOMAXPROCS != procs:
		what = fmt.Sprintf("at GOMAXPROCS %d, the head at %d", rec.GOMAXPROCS, procs)
	case rec.CPUs != cpus:
		what = fmt.Sprintf("on a machine of %d processors, the head on one of %d", rec.CPUs, cpus)
	default:
		return nil
	}
	return fmt.Errorf("--base-from-history: the record of base %.12s was measured %s: time differs between kinds of machines; measure the base (drop --base-from-history)", rec.Commit, what)
}

// calibrateTimeFromHistory lists the head's benchmarks (one iteration
// each) and gives each the iterations of the stored base's runs, and
// record the stored base's number of runs: the head runs what the base
// ran. It refuses a benchmark the record lacks, runs or iterations that
// differ from the flags given, and another kind of machine.
func (r *recorder) calibrateTimeFromHistory(ctx context.Context, base, head *recSide, rec *history.Record) ([]leaf, error) {
	t0 := time.Now()
	stored := map[string]*history.Benchmark{}
	for i := range rec.Benchmarks {
		if b := &rec.Benchmarks[i]; b.TimeRuns != nil && len(b.TimeRuns.Runs) > 0 {
			stored[b.Name] = b
		}
	}
	head.leaves, base.leaves = map[string]bool{}, map[string]bool{}
	var leaves []leaf
	var missing []string
	runs, cpu := 0, ""
	for _, pkg := range sortedKeys(head.bins) {
		t1 := time.Now()
		out, err := r.runBinary(ctx, head, head.bins[pkg], "-test.bench", r.o.Bench, "-test.benchtime", "1x")
		if err != nil {
			return nil, err
		}
		if m := cpuLine.FindSubmatch(out); m != nil {
			cpu = strings.TrimSpace(string(m[1]))
		}
		results := r.parseBench(out)
		var overhead time.Duration
		if len(results) > 0 {
			var timed float64
			for _, res := range results {
				timed += res.nsOp
			}
			overhead = max((time.Since(t1)-time.Duration(timed))/time.Duration(len(results)), 0)
		}
		for _, res := range results {
			l := leaf{pkg: pkg, name: res.name, overhead: overhead}
			head.leaves[l.key()] = true
			b := stored[l.key()]
			if b == nil {
				missing = append(missing, l.key())
				continue
			}
			tr := b.TimeRuns
			// A run's ops are its results' iterations (-test.count of
			// them), each of -test.benchtime=Nx's N (Record.Validate).
			for _, run := range tr.Runs {
				if run.Ops != tr.Runs[0].Ops || len(run.Results) != len(tr.Runs[0].Results) {
					return nil, fmt.Errorf("--base-from-history: the record of base %.12s ran %s at different iterations or counts from run to run: measure the base (drop --base-from-history)", rec.Commit, textfmt.Name(l.key()))
				}
			}
			l.iters = tr.Runs[0].Ops / int64(len(tr.Runs[0].Results))
			if err := checkHistoryIters(rec, l, res.nsOp, 1, r.o.Budget); err != nil {
				return nil, err
			}
			if r.o.FixedIters > 0 && r.o.FixedIters != l.iters {
				return nil, fmt.Errorf("--base-from-history: --benchtime %dx, but the record of base %.12s ran %s at %dx: the head runs the base's iterations (drop --benchtime)",
					r.o.FixedIters, rec.Commit, textfmt.Name(l.key()), l.iters)
			}
			if n := len(tr.Runs[0].Results); r.o.CountSet && n != r.o.Count {
				return nil, fmt.Errorf("--base-from-history: --count %d, but the record of base %.12s ran %s at -count %d: drop --count", r.o.Count, rec.Commit, textfmt.Name(l.key()), n)
			}
			switch {
			case runs == 0:
				runs = len(tr.Runs)
			case runs != len(tr.Runs):
				return nil, fmt.Errorf("--base-from-history: the record of base %.12s ran its benchmarks %d and %d times: measure the base (drop --base-from-history)", rec.Commit, runs, len(tr.Runs))
			}
			if b.NsPerOp != nil {
				l.nsOp = b.NsPerOp.Median
			}
			base.leaves[l.key()] = true
			leaves = append(leaves, l)
		}
	}
	if err := r.historyLeavesErr(rec, "runs", missing, len(leaves), head); err != nil {
		return nil, err
	}
	if err := checkTimeMachine(rec, cpu, r.o.Procs, runtime.NumCPU()); err != nil {
		return nil, err
	}
	if r.o.RunsSet && r.o.Runs != runs {
		return nil, fmt.Errorf("--base-from-history: --runs %d, but the record of base %.12s ran %d: the head runs as many as the base (drop --runs)", r.o.Runs, rec.Commit, runs)
	}
	r.o.Runs = runs
	if !r.o.CountSet {
		r.o.Count = len(stored[leaves[0].key()].TimeRuns.Runs[0].Results)
	}
	slices.SortFunc(leaves, func(a, b leaf) int { return strings.Compare(a.key(), b.key()) })
	var est time.Duration
	for _, l := range leaves {
		est += time.Duration(runs) * (l.overhead + time.Duration(float64(l.iters*int64(r.o.Count))*l.nsOp))
		r.progress("%s %s: %d iterations a run, the base's runs from the history", textfmt.Name(l.pkg), textfmt.Name(l.name), l.iters)
	}
	r.estimated = est
	r.progress("listed %s at head in %s; each runs %s at head, as the base did, about %s in all unprofiled (the profiler adds to it); the base's runs are the history's",
		plural(len(leaves), "benchmark", "benchmarks"), since(t0), plural(runs, "time", "times"), est.Round(time.Second))
	return leaves, nil
}

// historyRun is run (1-based) of benchmark l of the base from the
// history, as runLeaf returns a measured one: its profile (also written
// under base/) and its iterations; its benchmark results go to the base's
// output.
func (r *recorder) historyRun(s *recSide, l leaf, run int) (*profile.Profile, int64, error) {
	var b *history.Benchmark
	for i := range r.hist.Benchmarks {
		if r.hist.Benchmarks[i].Name == l.key() {
			b = &r.hist.Benchmarks[i]
		}
	}
	if b == nil || b.TimeRuns == nil {
		return nil, 0, fmt.Errorf("the record of base %.12s lacks the runs of %s", r.hist.Commit, l.key())
	}
	p, err := historyTimeProfile(r.hist, b, run-1)
	if err != nil {
		return nil, 0, err
	}
	text, err := historyBenchText(r.hist, b, run-1)
	if err != nil {
		return nil, 0, err
	}
	s.bench.WriteString(text)
	if err := writeProfile(leafProfile(s.out, l.pkg, l.name, run), p); err != nil {
		return nil, 0, err
	}
	return p, b.TimeRuns.Runs[run-1].Ops, nil
}

// checkSameSampler refuses a head run sampled otherwise than the stored
// base (perf events or runtime/pprof, their rates): the two would not be
// the same statistic.
func checkSameSampler(rec *history.Record, base, head *profile.Profile) error {
	same := len(base.SampleType) == len(head.SampleType) && math.Abs(float64(base.Period-head.Period)) <= 0.05*math.Max(float64(base.Period), float64(head.Period))
	for i := 0; same && i < len(base.SampleType); i++ {
		same = base.SampleType[i].Type == head.SampleType[i].Type && base.SampleType[i].Unit == head.SampleType[i].Unit
	}
	if same {
		return nil
	}
	return fmt.Errorf("--base-from-history: the record of base %.12s was sampled at %d Hz, the head at %d Hz (perf events sample at 10000, runtime/pprof at 100): measure the base (drop --base-from-history), or run the head with the base's sampler (%s=perf or =pprof)",
		rec.Commit, rateHz(base), rateHz(head), samplerEnv)
}

// ungateMeasuredTime makes the benchmark results of measured values
// (sec/op and the benchmarks' own metrics; not B/op and allocs/op, exact
// counts) that changed against a base from the history unchanged, and
// returns them as the report shows them: a base measured at another time
// differs from the head by the machine's drift as much as by the code.
// On blang/semver the medians of unchanged code measured 10 minutes apart
// differed by up to 28% (docs/history.md).
func ungateMeasuredTime(benches *bench.Report) []string {
	var shown []string
	for i := range benches.Rows {
		row := &benches.Rows[i]
		if row.Test == "exact" || (row.Verdict != diff.Regressed && row.Verdict != diff.Improved) {
			continue
		}
		shown = append(shown, fmt.Sprintf("%s %s %+.1f%% (p=%.2g)", row.Name, row.Unit, 100*row.Relative, row.P))
		row.Verdict = diff.Unchanged
	}
	return shown
}

// timeShownLine says which measured results changed against a base from
// the history, shown and not gated.
func timeShownLine(shown []string) string {
	return fmt.Sprintf("base from the history: measured at another time, the benchmarks' time is shown, not gated (the functions' shares are): %s", textfmt.List(shown, 4))
}
