package history

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/perf/benchfmt"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// A note is untrusted input: anyone who can push the notes ref (or a
// workflow that appends what a pull request measured) writes it. Every
// record is checked (Validate) before anything reads its values, within
// these bounds (docs/history.md states them).
const (
	// MaxNoteBytes bounds one note: refused before it is read. The
	// largest records measured are about 1 MB (30 benchmarks with their
	// runs); 16 MiB leaves room for 500.
	MaxNoteBytes = 16 << 20
	// MaxHistoryBytes bounds the notes one read of a history holds
	// (history show and html; prune reads one note at a time).
	MaxHistoryBytes = 128 << 20
	// MaxHistoryEntries bounds the benchmarks and functions of the
	// records one read of a history keeps (Load).
	MaxHistoryEntries = 1 << 20
	// MaxEntries bounds the entries of one record: benchmarks,
	// functions, counts, modules, the runs' functions, sample values
	// and result lines.
	MaxEntries = 1 << 21
	// MaxRuns bounds a benchmark's runs (record --runs) and MaxResults
	// the results of one run (record --count).
	MaxRuns    = 1000
	MaxResults = 1000
	// MaxIterations is go test's own bound on a benchmark's b.N: no run
	// record makes goes beyond it.
	MaxIterations = 1_000_000_000
	// MaxClockSkew is how far in the future of the clock reading a record
	// its recorded time may be; a commit's date (its committer's clock)
	// may be up to MaxCommitAhead after the record's.
	MaxClockSkew   = 5 * time.Minute
	MaxCommitAhead = 24 * time.Hour
	// CountSlack: a benchmark's counts (positive) may add up to its whole
	// (count_total) and 1/CountSlack of it, the negative counts of the
	// difference of two processes (the runtimes' work differing) that the
	// whole holds and the counts leave out.
	CountSlack = 100
	// maxProcs bounds GOMAXPROCS and the processors a record names.
	maxProcs = 1 << 16
	// maxSampleTypes bounds a profile's sample types kept in TimeRuns.
	maxSampleTypes = 16
)

// Validate checks a record read from a note against what history append
// writes, so that nothing reads values it could not have stored: the
// schema and instrument known; benchmarks (and each benchmark's functions
// and counts) sorted and each once; values finite and non-negative;
// counts positive, each and their sum within the whole (count_total),
// and instructions per op and each function's share and per-op count
// those of the counts and ops; iterations (ops) at least 2 and at most
// go test's bound counting instructions, and each run's results
// single lines that parse to one result of the benchmark whose
// iterations add up to the run's ops, its time per op their spread; at
// most MaxRuns runs of MaxResults results, MaxEntries entries in all;
// dates RFC 3339, the record's not after now (within MaxClockSkew) and
// the commit's not more than MaxCommitAhead after it. The error says
// which benchmark and what is wrong; callers name the commit.
func (r *Record) Validate(now time.Time) error {
	if r.Schema != Schema {
		return fmt.Errorf("schema %q, want %q", clip(r.Schema), Schema)
	}
	if !isHash(r.Commit) {
		return fmt.Errorf("commit %q is not a full commit hash", clip(r.Commit))
	}
	if r.Instrument != InstrumentTime && r.Instrument != InstrumentInstructions {
		return fmt.Errorf("instrument %q, want %q or %q", clip(r.Instrument), InstrumentTime, InstrumentInstructions)
	}
	for _, f := range []struct{ what, v string }{{"go", r.Go}, {"machine", r.Machine}, {"date", r.Date}, {"recorded", r.Recorded}} {
		if err := plainLine(f.v); err != nil {
			return fmt.Errorf("%s: %w", f.what, err)
		}
	}
	if err := r.checkDates(now); err != nil {
		return err
	}
	if r.GOMAXPROCS < 0 || r.GOMAXPROCS > maxProcs || r.CPUs < 0 || r.CPUs > maxProcs {
		return fmt.Errorf("gomaxprocs %d, cpus %d: want 0 to %d", r.GOMAXPROCS, r.CPUs, maxProcs)
	}
	entries := len(r.Benchmarks) + len(r.CountsOf)
	for _, m := range r.CountsOf {
		if m == "" || plainLine(m) != nil || strings.ContainsAny(m, " \t") {
			return fmt.Errorf("counts_of: %q is not a module path", clip(m))
		}
	}
	for i := range r.Benchmarks {
		b := &r.Benchmarks[i]
		if i > 0 && b.Name <= r.Benchmarks[i-1].Name {
			if b.Name == r.Benchmarks[i-1].Name {
				return fmt.Errorf("benchmark %q twice", clip(b.Name))
			}
			return fmt.Errorf("benchmarks not sorted by name: %q after %q", clip(b.Name), clip(r.Benchmarks[i-1].Name))
		}
		n, err := r.checkBenchmark(b)
		if err != nil {
			return fmt.Errorf("benchmark %q: %w", clip(b.Name), err)
		}
		if entries += n; entries > MaxEntries {
			return fmt.Errorf("more than %d entries (benchmarks, functions, counts, samples, results)", MaxEntries)
		}
	}
	return nil
}

func (r *Record) checkDates(now time.Time) error {
	var recorded time.Time
	if r.Recorded != "" {
		t, err := time.Parse(time.RFC3339, r.Recorded)
		if err != nil {
			return fmt.Errorf("recorded %q: not an RFC 3339 time", clip(r.Recorded))
		}
		if t.After(now.Add(MaxClockSkew)) {
			return fmt.Errorf("recorded %s, after now (%s) by more than the clock skew allowed (%s)", r.Recorded, now.UTC().Format(time.RFC3339), MaxClockSkew)
		}
		recorded = t
	}
	if r.Date != "" {
		t, err := time.Parse(time.RFC3339, r.Date)
		if err != nil {
			return fmt.Errorf("date %q: not an RFC 3339 time", clip(r.Date))
		}
		if recorded.IsZero() {
			recorded = now
		}
		if t.After(recorded.Add(MaxCommitAhead)) {
			return fmt.Errorf("commit date %s is more than %s after the record's time (%s)", r.Date, MaxCommitAhead, recorded.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// checkBenchmark checks one benchmark and returns its entries.
func (r *Record) checkBenchmark(b *Benchmark) (int, error) {
	pkg, name, ok := strings.Cut(b.Name, " ")
	if !ok || strings.Contains(pkg, " ") || !strings.HasPrefix(name, "Benchmark") || plainLine(b.Name) != nil {
		return 0, errors.New("not a package and a benchmark name")
	}
	if b.Runs < 0 || b.Runs > MaxRuns*MaxResults {
		return 0, fmt.Errorf("runs %d: want 0 to %d", b.Runs, MaxRuns*MaxResults)
	}
	if s := b.NsPerOp; s != nil {
		if !finiteNonNeg(s.Median, s.Min, s.Max) || s.Min > s.Median || s.Median > s.Max {
			return 0, fmt.Errorf("ns_op %v %v %v: want finite, non-negative, min <= med <= max", s.Min, s.Median, s.Max)
		}
	}
	for _, p := range []*float64{b.InstrPerOp, b.BytesPerOp, b.AllocsPerOp} {
		if p != nil && !finiteNonNeg(*p) {
			return 0, fmt.Errorf("a value per op of %v: want finite and non-negative", *p)
		}
	}
	entries := len(b.Functions) + len(b.Counts)
	if entries > MaxEntries {
		return 0, fmt.Errorf("%d functions and counts, more than %d", entries, MaxEntries)
	}
	seen := make(map[string]bool, len(b.Functions))
	for _, f := range b.Functions {
		if seen[f.Name] {
			return 0, fmt.Errorf("function %q twice", clip(f.Name))
		}
		seen[f.Name] = true
		if !finiteNonNeg(f.Share, f.PerOp) || f.Share > 1 {
			return 0, fmt.Errorf("function %q: share %v, per op %v: want a share of 0 to 1 and a finite, non-negative value", clip(f.Name), f.Share, f.PerOp)
		}
	}
	if r.Instrument == InstrumentInstructions {
		if b.TimeRuns != nil {
			return 0, errors.New("time_runs in a record of instructions")
		}
		return entries, b.checkCounts()
	}
	if b.Ops != 0 || b.CountTotal != 0 || b.Counts != nil {
		return 0, errors.New("ops or counts in a record of time")
	}
	n, err := b.checkTimeRuns()
	return entries + n, err
}

// checkCounts checks the counts of a benchmark of instructions against
// its whole, its ops, its instructions per op and its functions.
func (b *Benchmark) checkCounts() error {
	if b.Ops < 0 || b.Ops == 1 || b.Ops > MaxIterations {
		return fmt.Errorf("ops %d: want 2 to %d (record counts N >= 2 ops)", b.Ops, MaxIterations)
	}
	if b.CountTotal < 0 || b.CountTotal > math.MaxInt64/(CountSlack+1)*CountSlack {
		return fmt.Errorf("count_total %d: want 0 to %d", b.CountTotal, int64(math.MaxInt64/(CountSlack+1)*CountSlack))
	}
	if (b.CountTotal > 0 || len(b.Counts) > 0) && b.Ops == 0 {
		return errors.New("counts without ops")
	}
	// The counts may exceed the whole by the negative counts of the
	// difference left out of them (CountSlack), never more.
	limit := b.CountTotal + b.CountTotal/CountSlack
	var sum int64
	for i, c := range b.Counts {
		if i > 0 && c.Name <= b.Counts[i-1].Name {
			if c.Name == b.Counts[i-1].Name {
				return fmt.Errorf("count of %q twice", clip(c.Name))
			}
			return fmt.Errorf("counts not sorted by name: %q after %q", clip(c.Name), clip(b.Counts[i-1].Name))
		}
		if c.N <= 0 || c.N > limit-sum {
			return fmt.Errorf("count of %q: %d, want 1 to count_total %d (and 1%%) less the counts before it (%d)", clip(c.Name), c.N, b.CountTotal, sum)
		}
		sum += c.N
	}
	if b.CountTotal == 0 {
		return nil
	}
	perOp := float64(b.CountTotal) / float64(b.Ops)
	if b.InstrPerOp == nil || !near(*b.InstrPerOp, perOp, 1e-6) {
		return fmt.Errorf("instr_op %v is not count_total %d / ops %d (%v)", deref(b.InstrPerOp), b.CountTotal, b.Ops, perOp)
	}
	for _, f := range b.Functions {
		i, ok := slices.BinarySearchFunc(b.Counts, f.Name, func(c Count, name string) int { return strings.Compare(c.Name, name) })
		if !ok {
			continue // a function of another module
		}
		n := float64(b.Counts[i].N)
		if !near(f.PerOp, n/float64(b.Ops), 1e-6) || math.Abs(f.Share-n/float64(b.CountTotal)) > 1e-4 {
			return fmt.Errorf("function %q: per op %v and share %v are not its count %d over ops %d and count_total %d", clip(f.Name), f.PerOp, f.Share, b.Counts[i].N, b.Ops, b.CountTotal)
		}
	}
	return nil
}

// checkTimeRuns checks the runs of a benchmark of time and returns their
// entries.
func (b *Benchmark) checkTimeRuns() (int, error) {
	tr := b.TimeRuns
	if tr == nil {
		return 0, nil
	}
	if len(tr.Runs) == 0 || len(tr.Runs) > MaxRuns {
		return 0, fmt.Errorf("%d runs: want 1 to %d", len(tr.Runs), MaxRuns)
	}
	if len(tr.SampleTypes) == 0 || len(tr.SampleTypes) > maxSampleTypes {
		return 0, fmt.Errorf("%d sample types: want 1 to %d", len(tr.SampleTypes), maxSampleTypes)
	}
	for _, st := range append(slices.Clone(tr.SampleTypes), tr.PeriodType, tr.DefaultSampleType) {
		if err := plainLine(st); err != nil {
			return 0, fmt.Errorf("sample type: %w", err)
		}
	}
	if tr.Period < 0 || tr.Scaled && (len(tr.SampleTypes) != 2 || tr.Period == 0) {
		return 0, fmt.Errorf("period %d, scaled %v with %d sample types", tr.Period, tr.Scaled, len(tr.SampleTypes))
	}
	width := 2 + len(tr.SampleTypes)
	if tr.Scaled {
		width = 3
	}
	nf := int64(len(tr.Functions))
	entries := len(tr.Functions)
	if entries > MaxEntries {
		return 0, fmt.Errorf("%d functions, more than %d", entries, MaxEntries)
	}
	for i := 1; i < len(tr.Functions); i++ {
		if tr.Functions[i] <= tr.Functions[i-1] {
			return 0, fmt.Errorf("time_runs functions not sorted, or %q twice", clip(tr.Functions[i]))
		}
	}
	var ns, bytes, allocs []float64
	results := 0
	_, name, _ := strings.Cut(b.Name, " ")
	perRun := len(tr.Runs[0].Results)
	for k, run := range tr.Runs {
		if entries += len(run.Samples) + len(run.Results); entries > MaxEntries {
			return 0, fmt.Errorf("more than %d entries", MaxEntries)
		}
		if run.Ops < 1 || run.Ops > MaxIterations*int64(MaxResults) {
			return 0, fmt.Errorf("run %d: ops %d: want 1 to %d", k+1, run.Ops, MaxIterations*int64(MaxResults))
		}
		if len(run.Samples)%width != 0 {
			return 0, fmt.Errorf("run %d: %d sample values, not groups of %d", k+1, len(run.Samples), width)
		}
		for i := 0; i < len(run.Samples); i += width {
			leaf, caller := run.Samples[i], run.Samples[i+1]
			if leaf < 0 || leaf >= nf || caller < -1 || caller >= nf {
				return 0, fmt.Errorf("run %d: a group names functions %d and %d of %d", k+1, leaf, caller, nf)
			}
			for _, v := range run.Samples[i+2 : i+width] {
				if v < 0 || tr.Scaled && v > math.MaxInt64/tr.Period {
					return 0, fmt.Errorf("run %d: a sample value of %d", k+1, v)
				}
			}
		}
		if len(run.Results) == 0 || len(run.Results) > MaxResults || len(run.Results) != perRun {
			return 0, fmt.Errorf("run %d: %d results, want 1 to %d, as many as run 1's (%d)", k+1, len(run.Results), MaxResults, perRun)
		}
		for _, line := range run.Results {
			res, err := ParseResult(name, line)
			if err != nil {
				return 0, fmt.Errorf("run %d: %w", k+1, err)
			}
			if int64(res.Iters)*int64(len(run.Results)) != run.Ops {
				return 0, fmt.Errorf("run %d: ops %d, but its %d results ran %d iterations each", k+1, run.Ops, len(run.Results), res.Iters)
			}
			if v, ok := res.Value("sec/op"); ok {
				ns = append(ns, v*1e9)
			}
			if v, ok := res.Value("B/op"); ok {
				bytes = append(bytes, v)
			}
			if v, ok := res.Value("allocs/op"); ok {
				allocs = append(allocs, v)
			}
			results++
		}
	}
	// The values append stored beside the runs are those of their results.
	if b.Runs != results {
		return 0, fmt.Errorf("runs %d, but time_runs holds %d results", b.Runs, results)
	}
	if s := b.NsPerOp; len(ns) > 0 && (s == nil || !near(s.Median, stats.Median(ns), 1e-3) || !near(s.Min, slices.Min(ns), 1e-3) || !near(s.Max, slices.Max(ns), 1e-3)) {
		return 0, fmt.Errorf("ns_op %+v is not the spread of its results' time per op", s)
	}
	for _, c := range []struct {
		what string
		p    *float64
		vals []float64
	}{{"b_op", b.BytesPerOp, bytes}, {"allocs_op", b.AllocsPerOp, allocs}} {
		if len(c.vals) > 0 && (c.p == nil || !near(*c.p, stats.Median(c.vals), 1e-6)) {
			return 0, fmt.Errorf("%s %v is not the median of its results' (%v)", c.what, deref(c.p), stats.Median(c.vals))
		}
	}
	return entries, nil
}

// ParseResult parses line, a result of the benchmark name (with its
// Benchmark prefix, without the GOMAXPROCS suffix) as a record keeps it:
// one line that go test's format reads as exactly one result of that
// benchmark, at 1 to MaxIterations iterations. The result is the
// caller's (not reused).
func ParseResult(name, line string) (*benchfmt.Result, error) {
	if err := plainLine(line); err != nil {
		return nil, fmt.Errorf("result %w", err)
	}
	rd := benchfmt.NewReader(strings.NewReader(line+"\n"), "result")
	var res *benchfmt.Result
	for rd.Scan() {
		switch x := rd.Result().(type) {
		case *benchfmt.Result:
			if res != nil {
				return nil, fmt.Errorf("result %q holds more than one result", clip(line))
			}
			res = x.Clone()
		case *benchfmt.SyntaxError:
			return nil, fmt.Errorf("result %q: %v", clip(line), x)
		default:
			return nil, fmt.Errorf("result %q is not a benchmark result", clip(line))
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("result %q: %w", clip(line), err)
	}
	if res == nil {
		return nil, fmt.Errorf("result %q is not a benchmark result", clip(line))
	}
	if got := BenchName(res.Name); got != name {
		return nil, fmt.Errorf("result %q is of %q, not %q", clip(line), clip(got), clip(name))
	}
	if res.Iters < 1 || res.Iters > MaxIterations {
		return nil, fmt.Errorf("result %q: %d iterations, want 1 to %d", clip(line), res.Iters, MaxIterations)
	}
	for _, v := range res.Values {
		if !finiteNonNeg(v.Value) {
			return nil, fmt.Errorf("result %q: %v %s", clip(line), v.Value, clip(v.Unit))
		}
	}
	return res, nil
}

// BenchName is a benchmark's name as go test prints it without the
// GOMAXPROCS suffix, with its Benchmark prefix: the name a record keys it
// by (after its package and a space).
func BenchName(n benchfmt.Name) string {
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

// plainLine refuses text with a line break or another control character.
func plainLine(s string) error {
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("%q holds a line break or control character", clip(s))
	}
	return nil
}

// clip bounds untrusted text quoted in an error (escaped where printed).
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func isHash(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}

func finiteNonNeg(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// near reports whether a is b within the relative tolerance rel.
func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func deref(p *float64) any {
	if p == nil {
		return "absent"
	}
	return *p
}
