package gate

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// tamperNow is the clock the tampered records are checked at.
var tamperNow = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// countsFixture writes what record --instructions writes for its head's
// counted difference of ops iterations: each function's count of them
// (a negative one as real differences have), as a shard of commit.
func countsFixture(t *testing.T, dir string, ops int64, counts map[string]int64) {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}, Period: 1,
	}
	for i, name := range sortedKeys(counts) {
		fn := &profile.Function{ID: uint64(i + 1), Name: name}
		loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{counts[name]}})
	}
	p.Comments = meta.MarkExact(nil)
	meta.Set(p, meta.Record{Name: "BenchmarkParse at head", Build: "go1.26.8 linux/amd64", WorkUnit: meta.WorkOp, Instrument: "callgrind", Runs: []meta.Run{{Work: float64(ops)}}})
	if err := writeProfile(filepath.Join(dir, "head", "example.com", "m", "BenchmarkParse.instructions-diff.pb.gz"), p); err != nil {
		t.Fatal(err)
	}
}

// realRecord reads dir as history append does and returns the record's
// note, as history append stores it (of a machine of 2 processors). The
// records the tests below make are internal/history's testdata, FuzzRecord's
// seeds: seed names the file, checked to hold the same record.
func realRecord(t *testing.T, dir string, countsOf []string, seed string) []byte {
	t.Helper()
	var of func() ([]string, error)
	if countsOf != nil {
		of = func() ([]string, error) { return countsOf, nil }
	}
	rec, _, _, err := readRecordOut(dir, of)
	if err != nil {
		t.Fatal(err)
	}
	rec.Commit, rec.Date, rec.Recorded = strings.Repeat("c0ffee", 6)+"c0ff", "2026-11-28T09:00:00Z", "2026-11-28T09:05:00Z"
	if rec.CPUs > 0 {
		rec.CPUs = 2
	}
	rec.Compact(history.DefaultCompaction)
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if want, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "internal", "history", "testdata", seed)); err != nil || !bytes.Equal(data, want) {
		t.Errorf("the record made is not internal/history/testdata/%s (%v): FuzzRecord's seed is out of date:\n%s", seed, err, data)
	}
	return data
}

// edit is a change of one field of a stored record.
type edit struct {
	what string
	// refused: Validate must refuse the edited record; otherwise it may
	// take it, and the record is judged as what it holds.
	refused bool
	change  func(r *history.Record)
}

// tampered applies e to a copy of the note and returns the record read
// back as a note is, or nil when it is refused.
func tampered(t *testing.T, note []byte, e edit) *history.Record {
	t.Helper()
	r, err := history.Unmarshal(note)
	if err != nil {
		t.Fatal(err)
	}
	e.change(r)
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if r, err = history.Unmarshal(data); err == nil {
		err = r.Validate(tamperNow)
	}
	if e.refused && err == nil {
		t.Errorf("%s: taken, want refused", e.what)
	}
	if err != nil {
		t.Logf("%s: refused: %v", e.what, err)
		return nil
	}
	return r
}

// TestHistoryTamperedCounts edits each field of a real record of counted
// instructions (one history append reads from record's output) in turn
// and judges a regressed head against it, as record --instructions
// --base-from-history does: an edited record is refused, or judged as
// what it holds, never a pass where the record as stored fails. The
// edits are those that turned the regression into "improved" and exit 0
// (issue 41: a duplicated benchmark or function, a count of int64 max,
// ops = 1) and the rest of the record's fields.
func TestHistoryTamperedCounts(t *testing.T) {
	const ops = 5000
	counts := map[string]int64{"example.com/m.parse": 1000 * ops, "example.com/m.scan": 300 * ops, "example.com/m.BenchmarkParse": 2 * ops,
		"example.com/m.tiny": 3 * ops, "runtime.mallocgc": 200 * ops, "runtime.sysmon": -3 * ops}
	dir := t.TempDir()
	countsFixture(t, dir, ops, counts)
	note := realRecord(t, dir, []string{"example.com/m"}, "instructions.json")
	const key = "example.com/m BenchmarkParse"
	// The head: parse 10% slower, counted at the base's iterations.
	counts["example.com/m.parse"] = 1100 * ops
	headDir := t.TempDir()
	countsFixture(t, headDir, ops, counts)
	head, err := readProfile(filepath.Join(headDir, "head", "example.com", "m", "BenchmarkParse.instructions-diff.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	judged := ModulePattern([]string{"example.com/m"}).MatchString
	verdict := func(r *history.Record) (bool, error) {
		base, err := historyProfile(r, key)
		if err != nil {
			return false, err
		}
		rep, err := diff.CompareCounts(base, head, judged)
		if err != nil {
			return false, err
		}
		return rep.Failed(), nil
	}
	if failed, err := verdict(tampered(t, note, edit{"as stored", false, func(*history.Record) {}})); err != nil || !failed {
		t.Fatalf("the record as stored: failed %v (%v), want the regression of parse", failed, err)
	}
	b := func(r *history.Record) *history.Benchmark { return &r.Benchmarks[0] }
	count := func(r *history.Record, name string) *history.Count {
		for i := range b(r).Counts {
			if b(r).Counts[i].Name == name {
				return &b(r).Counts[i]
			}
		}
		t.Fatalf("no count of %s", name)
		return nil
	}
	for _, e := range []edit{
		{"parse's count raised 20%", true, func(r *history.Record) { count(r, "example.com/m.parse").N = 1200 * ops }},
		{"parse's count int64 max", true, func(r *history.Record) { count(r, "example.com/m.parse").N = math.MaxInt64 }},
		{"parse's count negative", true, func(r *history.Record) { count(r, "example.com/m.parse").N = -1000 * ops }},
		{"a small function's count beyond the whole", true, func(r *history.Record) { count(r, "example.com/m.tiny").N = b(r).CountTotal }},
		{"parse's count zero", true, func(r *history.Record) { count(r, "example.com/m.parse").N = 0 }},
		{"parse's count missing", false, func(r *history.Record) {
			b(r).Counts = slices.DeleteFunc(b(r).Counts, func(c history.Count) bool { return c.Name == "example.com/m.parse" })
		}},
		{"parse's count twice", true, func(r *history.Record) {
			b(r).Counts = slices.Insert(b(r).Counts, 1, *count(r, "example.com/m.parse"))
		}},
		{"counts out of order", true, func(r *history.Record) { slices.Reverse(b(r).Counts) }},
		{"count_total doubled", true, func(r *history.Record) { b(r).CountTotal *= 2 }},
		{"count_total int64 max", true, func(r *history.Record) { b(r).CountTotal = math.MaxInt64 }},
		{"count_total zero", true, func(r *history.Record) { b(r).CountTotal = 0 }},
		{"ops 1", true, func(r *history.Record) { b(r).Ops = 1 }},
		{"ops halved", true, func(r *history.Record) { b(r).Ops /= 2 }},
		{"ops 10^9", true, func(r *history.Record) { b(r).Ops = 1e9 }},
		{"ops beyond go test's", true, func(r *history.Record) { b(r).Ops = 2e9 }},
		{"ops negative", true, func(r *history.Record) { b(r).Ops = -ops }},
		{"instr_op halved", true, func(r *history.Record) { *b(r).InstrPerOp /= 2 }},
		{"parse's share and per op halved", true, func(r *history.Record) { b(r).Functions[0].Share /= 2; b(r).Functions[0].PerOp /= 2 }},
		{"the benchmark twice", true, func(r *history.Record) { r.Benchmarks = append(r.Benchmarks, r.Benchmarks[0]) }},
		{"the benchmark missing", false, func(r *history.Record) { r.Benchmarks = nil }},
		{"recorded in 2099", true, func(r *history.Record) { r.Recorded = "2099-01-01T00:00:00Z" }},
		{"committed in 2099", true, func(r *history.Record) { r.Date = "2099-01-01T00:00:00Z" }},
		{"recorded not a date", true, func(r *history.Record) { r.Recorded = "yesterday" }},
		{"another schema", true, func(r *history.Record) { r.Schema = "hotbudget.history/v9" }},
		{"another instrument", true, func(r *history.Record) { r.Instrument = "cycles" }},
		{"runs of time", true, func(r *history.Record) { b(r).TimeRuns = &history.TimeRuns{} }},
		{"a commit not a hash", true, func(r *history.Record) { r.Commit = "HEAD" }},
		{"a module with a line break", true, func(r *history.Record) { r.CountsOf = []string{"example.com/m\npkg: x"} }},
	} {
		r := tampered(t, note, e)
		if r == nil {
			continue
		}
		failed, err := verdict(r)
		if err == nil && !failed {
			t.Errorf("%s: taken and passed, where the record as stored fails", e.what)
		}
	}
}

// TestHistoryTamperedTimeRuns edits each field of a real record of time
// with its runs (history append of record's output): each edit of the
// runs' results, iterations, samples, counts, dates and entries is
// refused; iterations edited consistently (every result's too) are
// refused by the head's time per op beyond --budget; and the base's
// benchmark output is rebuilt from parsed results, never from a stored
// string.
func TestHistoryTamperedTimeRuns(t *testing.T) {
	dir := t.TempDir()
	fakeRecordOut(t, dir, strings.Repeat("c0ffee", 6)+"c0ff", "BenchmarkParse", 3, 800, 2)
	note := realRecord(t, dir, nil, "time.json")
	r := tampered(t, note, edit{"as stored", false, func(*history.Record) {}})
	if r == nil || !r.HasTimeRuns() || len(r.Benchmarks[0].TimeRuns.Runs) != 3 {
		t.Fatalf("the record as stored: %+v", r)
	}
	text, err := historyBenchText(r, &r.Benchmarks[0], 1)
	if err != nil || !strings.HasSuffix(text, "\npkg: example.com/m\ncpu: Test CPU @ 2GHz\n"+r.Benchmarks[0].TimeRuns.Runs[1].Results[0]+"\n") {
		t.Errorf("the base's output of run 2 (%v):\n%s", err, text)
	}
	b := func(r *history.Record) *history.Benchmark { return &r.Benchmarks[0] }
	run := func(r *history.Record, k int) *history.TimeRun { return &b(r).TimeRuns.Runs[k] }
	for _, e := range []edit{
		{"a result with a line break", true, func(r *history.Record) { run(r, 0).Results[0] += "\npkg: example.com/evil" }},
		{"a result of another benchmark", true, func(r *history.Record) {
			run(r, 0).Results[0] = strings.Replace(run(r, 0).Results[0], "BenchmarkParse", "BenchmarkOther", 1)
		}},
		{"a result that is not one", true, func(r *history.Record) { run(r, 0).Results[0] = "pkg: example.com/evil" }},
		{"a result's time per op changed", true, func(r *history.Record) {
			run(r, 0).Results[0] = strings.Replace(run(r, 0).Results[0], " 1000 ", " 1000 1", 1)
		}},
		{"a result's iterations 10^9", true, func(r *history.Record) {
			run(r, 0).Results[0] = strings.Replace(run(r, 0).Results[0], " 1000 ", " 1000000000 ", 1)
		}},
		{"ops 10^9", true, func(r *history.Record) { run(r, 0).Ops = 1e9 }},
		{"ops 1", true, func(r *history.Record) { run(r, 1).Ops = 1 }},
		{"a run's results twice", true, func(r *history.Record) { run(r, 2).Results = append(run(r, 2).Results, run(r, 2).Results...) }},
		{"runs 1000 times", true, func(r *history.Record) { b(r).Runs = 1000 }},
		{"ns_op median halved", true, func(r *history.Record) { b(r).NsPerOp.Median /= 2 }},
		{"allocs_op halved", true, func(r *history.Record) { *b(r).AllocsPerOp /= 2 }},
		{"a sample of a function beyond the list", true, func(r *history.Record) { run(r, 0).Samples[0] = int64(len(b(r).TimeRuns.Functions)) }},
		{"a negative sample", true, func(r *history.Record) { run(r, 0).Samples[2] = -5 }},
		{"samples not in groups", true, func(r *history.Record) { run(r, 0).Samples = run(r, 0).Samples[1:] }},
		{"functions twice", true, func(r *history.Record) {
			b(r).TimeRuns.Functions = append(b(r).TimeRuns.Functions, b(r).TimeRuns.Functions[0])
		}},
		{"no runs", true, func(r *history.Record) { b(r).TimeRuns.Runs = nil }},
		{"a count in a record of time", true, func(r *history.Record) { b(r).Counts = []history.Count{{Name: "x", N: 1}} }},
		{"the benchmark twice", true, func(r *history.Record) { r.Benchmarks = append(r.Benchmarks, r.Benchmarks[0]) }},
		{"a benchmark name with a line break", true, func(r *history.Record) { b(r).Name += "\ngoos: plan9" }},
		{"a machine with a line break", true, func(r *history.Record) { r.Machine += "\npkg: x" }},
		{"recorded in 2099", true, func(r *history.Record) { r.Recorded = "2099-01-01T00:00:00Z" }},
		{"recorded 10 minutes ahead", true, func(r *history.Record) { r.Recorded = tamperNow.Add(10 * time.Minute).Format(time.RFC3339) }},
		{"GOMAXPROCS negative", true, func(r *history.Record) { r.GOMAXPROCS = -1 }},
	} {
		tampered(t, note, e)
	}
	// Within the clock skew allowed: taken.
	if tampered(t, note, edit{"recorded 2 minutes ahead", false, func(r *history.Record) { r.Recorded = tamperNow.Add(2 * time.Minute).Format(time.RFC3339) }}) == nil {
		t.Error("a record 2 minutes ahead of the clock: refused, want taken")
	}
	// Iterations edited everywhere at once make a record that says what
	// it says; the head, 1000 ns an op, would run 10^9 of them a run.
	ten9 := tampered(t, note, edit{"iterations 10^9 everywhere", false, func(r *history.Record) {
		for k := range b(r).TimeRuns.Runs {
			run(r, k).Ops = 1e9
			for i, l := range run(r, k).Results {
				run(r, k).Results[i] = strings.Replace(l, " 1000 ", " 1000000000 ", 1)
			}
		}
	}})
	if ten9 == nil {
		t.Fatal("a record of 10^9 iterations everywhere: refused by Validate, want taken (consistent)")
	}
	l := leaf{pkg: "example.com/m", name: "BenchmarkParse", iters: ten9.Benchmarks[0].TimeRuns.Runs[0].Ops}
	if err := checkHistoryIters(ten9, l, 1000, 1, 15*time.Minute); err == nil || !strings.Contains(err.Error(), "would take 1000s, beyond --budget 15m0s") {
		t.Errorf("10^9 iterations at 1000 ns: %v", err)
	}
	if err := checkHistoryIters(r, leaf{pkg: "example.com/m", name: "BenchmarkParse", iters: 1000}, 1000, 1, 15*time.Minute); err != nil {
		t.Errorf("the record as stored: %v", err)
	}
	// historyBenchText parses what it writes even when given a record
	// Validate did not see.
	bad, _ := history.Unmarshal(note)
	bad.Benchmarks[0].TimeRuns.Runs[0].Results[0] += "\npkg: example.com/evil"
	if text, err := historyBenchText(bad, &bad.Benchmarks[0], 0); err == nil || strings.Contains(text, "evil") {
		t.Errorf("an injected line: %v\n%s", err, text)
	}
}
