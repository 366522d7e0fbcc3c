package diff

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// countProfile is one process's exact capture of work iterations: self
// counts by function name.
func countProfile(t *testing.T, work float64, self map[string]int64) *profile.Profile {
	t.Helper()
	return testutil.CountProfile(work, self)
}

func countBase(t *testing.T, ps ...*profile.Profile) *profile.Profile {
	t.Helper()
	m, err := meta.MergeProcesses(ps)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompareCounts checks the verdicts against bounds worked out by
// hand. Per iteration (work 10): the program counts 1,000,000; A 100,000
// exactly in every process; B, a hash-seed function, 20,000-20,400; tiny
// 10. Allowed: A max(0, 0.5% of 100,000 = 500, 0.01% of 1,000,000 = 100)
// = 500; B max(400, 101, 100) = 400; tiny 100.
func TestCompareCounts(t *testing.T) {
	base := func(b1, b2, b3 int64) *profile.Profile {
		mk := func(b int64) *profile.Profile {
			return countProfile(t, 10, map[string]int64{"m.A": 1_000_000, "m.B": b, "m.tiny": 100, "runtime.x": 10_000_000 - 1_000_000 - b - 100})
		}
		return countBase(t, mk(b1), mk(b2), mk(b3))
	}(200_000, 202_000, 204_000)
	cases := []struct {
		name  string
		head  map[string]int64
		want  map[string]Verdict // functions with a verdict; the rest unchanged
		total float64
	}{
		{"unchanged", map[string]int64{"m.A": 1_000_000, "m.B": 203_000, "m.tiny": 100}, nil, 0},
		{"A at the edge", map[string]int64{"m.A": 1_005_000, "m.B": 200_000, "m.tiny": 100}, nil, 0},
		{"A just past", map[string]int64{"m.A": 1_005_010, "m.B": 200_000, "m.tiny": 100}, map[string]Verdict{"m.A": Regressed}, 0},
		{"A 2% faster", map[string]int64{"m.A": 980_000, "m.B": 200_000, "m.tiny": 100}, map[string]Verdict{"m.A": Improved}, 0},
		// B's range is 20,000-20,400 per iteration: allowed 400 beyond it.
		{"B within its spread", map[string]int64{"m.A": 1_000_000, "m.B": 208_000, "m.tiny": 100}, nil, 0},
		{"B beyond", map[string]int64{"m.A": 1_000_000, "m.B": 208_100, "m.tiny": 100}, map[string]Verdict{"m.B": Regressed}, 0},
		// tiny doubles: 10 more instructions, under the floor of 100.
		{"tiny doubles", map[string]int64{"m.A": 1_000_000, "m.B": 200_000, "m.tiny": 200}, nil, 0},
		{"new and gone", map[string]int64{"m.A": 1_000_000, "m.B": 200_000, "m.new": 5_000}, map[string]Verdict{"m.new": New, "m.tiny": Unchanged}, 0},
	}
	judge := func(name string) bool { return strings.HasPrefix(name, "m.") }
	for _, c := range cases {
		head := c.head
		head["runtime.x"] = 9_000_000
		rep, err := CompareCounts(base, countProfile(t, 10, head), judge)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := map[string]Verdict{}
		for _, r := range rep.Rows {
			got[r.Name] = r.Verdict
		}
		for name, v := range c.want {
			if v == Unchanged {
				continue // m.tiny: 10 an iteration gone, under the floor
			}
			if got[name] != v {
				t.Errorf("%s: %s is %q, want %q (rows %+v)", c.name, name, got[name], v, rep.Rows)
			}
		}
		for name, v := range got {
			if _, ok := c.want[name]; !ok || c.want[name] == Unchanged {
				t.Errorf("%s: %s is %q, want no verdict", c.name, name, v)
			}
		}
		wantFail := false
		for _, v := range c.want {
			wantFail = wantFail || v == Regressed || v == New
		}
		if rep.Failed() != wantFail {
			t.Errorf("%s: Failed() = %v", c.name, rep.Failed())
		}
		if rep.Judged < 3 || rep.BaseProcesses != 3 || rep.HeadProcesses != 1 {
			t.Errorf("%s: judged %d, processes %d/%d", c.name, rep.Judged, rep.BaseProcesses, rep.HeadProcesses)
		}
	}
}

// TestCompareCountsHeadSpread: a head of several processes widens the
// allowance by its own spread too. Per iteration (work 10): A 10,000 in
// each base process and 10,050-10,650 in the head's (median 10,400);
// allowed max(0, 600, 50, 11) = 600 beyond 10,000: unchanged. The same
// head in one process (10,400 > 10,000 + 50): regressed.
func TestCompareCountsHeadSpread(t *testing.T) {
	side := func(as ...int64) *profile.Profile {
		var ps []*profile.Profile
		for _, a := range as {
			ps = append(ps, countProfile(t, 10, map[string]int64{"m.A": a, "runtime.x": 1_000_000}))
		}
		return countBase(t, ps...)
	}
	judge := func(name string) bool { return strings.HasPrefix(name, "m.") }
	base := side(100_000, 100_000, 100_000)
	for _, c := range []struct {
		name    string
		head    *profile.Profile
		allowed float64
		fail    bool
	}{
		{"spread head", side(100_500, 104_000, 106_500), 600, false},
		{"one process", side(104_000), 50, true},
	} {
		checkCountVerdict(t, c.name, base, c.head, judge, c.fail, c.allowed)
	}
}

// TestCompareCountsText checks the report's lines.
func TestCompareCountsText(t *testing.T) {
	base := countBase(t, countProfile(t, 2, map[string]int64{"m.A": 2000, "runtime.x": 18000}))
	head := countProfile(t, 2, map[string]int64{"m.A": 2100, "runtime.x": 18000})
	rep, err := CompareCounts(base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.writeText(&b); err != nil {
		t.Fatal(err)
	}
	want := "instructions per iteration: 10000 -> 10050 (+0.50%) in all, the runtime's varying work included, not judged; 1 of 2 functions changed, each counted exactly\n" +
		"  regressed m.A: 1000 -> 1050 instructions (+5.00%; allowed ±5)\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	// Several processes whose counts differ by less than one an
	// iteration show one number, not a range of two equal ones
	// (1000.0 and 1000.4); a range that shows is of numbers that differ.
	for _, c := range []struct {
		second int64
		want   string
	}{{10000, "m.A: 1000 -> 1050"}, {10004, "m.A: 1000 -> 1050"}, {10020, "m.A: 1000-1002 -> 1050"}} {
		base := countBase(t, countProfile(t, 10, map[string]int64{"m.A": 10000, "runtime.x": 90000}),
			countProfile(t, 10, map[string]int64{"m.A": c.second, "runtime.x": 90000}))
		rep, err := CompareCounts(base, head, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := rep.writeText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "  regressed "+c.want+" instructions") {
			t.Errorf("base 2000 and %d: want %q in\n%s", c.second, c.want, b.String())
		}
	}
}

// TestCompareCountsRefuses checks the errors: a sampled profile, other
// events.
func TestCompareCountsRefuses(t *testing.T) {
	exact := countProfile(t, 1, map[string]int64{"m.A": 1})
	sampled := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	if _, err := CompareCounts(sampled, exact, nil); err == nil || !strings.Contains(err.Error(), "not a profile of exact counts") {
		t.Errorf("sampled baseline: %v", err)
	}
	other := countProfile(t, 1, map[string]int64{"m.A": 1})
	other.SampleType[0].Type = "cycles"
	if _, err := CompareCounts(exact, other, nil); err == nil || !strings.Contains(err.Error(), "counts cycles") {
		t.Errorf("other event: %v", err)
	}
}

// TestCompareCountsNegative: a function below zero on a side is a
// difference of two processes (record --instructions counts 2N ops less
// N), never a count: record's report once called
// runtime.(*pageAlloc).find "-87635 -> 38338 instructions (-143.75%)"
// regressed. It is listed as not judged, on either side, and a function
// that did regress beside it still fails.
func TestCompareCountsNegative(t *testing.T) {
	for _, c := range []struct {
		name       string
		base, head int64
	}{{"negative base", -87635, 38338}, {"negative head", 38338, -87635}, {"both", -100, -90_000}} {
		base := countProfile(t, 1, map[string]int64{"m.A": 10_000, "runtime.find": c.base, "runtime.x": 1_000_000})
		head := countProfile(t, 1, map[string]int64{"m.A": 10_000, "runtime.find": c.head, "runtime.x": 1_000_000})
		rep, err := CompareCounts(base, head, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed() || len(rep.Rows) != 0 {
			t.Errorf("%s: failed %v, rows %+v; want nothing judged of runtime.find", c.name, rep.Failed(), rep.Rows)
		}
		if len(rep.Negative) != 1 || rep.Negative[0] != "runtime.find" || rep.Judged != 2 {
			t.Errorf("%s: negative %q, judged %d; want [runtime.find], 2", c.name, rep.Negative, rep.Judged)
		}
		var b strings.Builder
		if err := rep.writeText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "not judged: 1 function below zero on a side") || strings.Contains(b.String(), "regressed") {
			t.Errorf("%s: text:\n%s", c.name, b.String())
		}
	}
	// A regression beside a negative count still fails.
	base := countProfile(t, 1, map[string]int64{"m.A": 10_000, "runtime.find": -5, "runtime.x": 1_000_000})
	head := countProfile(t, 1, map[string]int64{"m.A": 10_200, "runtime.find": 9, "runtime.x": 1_000_000})
	rep, err := CompareCounts(base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Failed() || len(rep.Rows) != 1 || rep.Rows[0].Name != "m.A" || rep.Rows[0].Verdict != Regressed {
		t.Errorf("m.A +2%% beside a negative count: %+v", rep.Rows)
	}
}

// checkCountVerdict compares head with base and checks that it fails (or
// not) as fail says, and when it fails, that one function failed with the
// allowance allowed.
func checkCountVerdict(t *testing.T, name string, base, head *profile.Profile, judge func(string) bool, fail bool, allowed float64) *CountReport {
	t.Helper()
	rep, err := CompareCounts(base, head, judge)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() != fail {
		t.Errorf("%s: failed %v, want %v: %+v", name, rep.Failed(), fail, rep.Rows)
	}
	if fail && (len(rep.Rows) != 1 || rep.Rows[0].Allowed != allowed) {
		t.Errorf("%s: rows %+v, want A allowed %v", name, rep.Rows, allowed)
	}
	return rep
}

// withMisses records misses, by function, in p's one run.
func withMisses(t *testing.T, p *profile.Profile, misses map[string]int64) *profile.Profile {
	t.Helper()
	rec, ok, err := meta.Get(p)
	if err != nil || !ok || len(rec.Runs) != 1 {
		t.Fatalf("record %+v, %v, %v", rec, ok, err)
	}
	rec.Runs[0].Misses = misses
	meta.Set(p, rec)
	return p
}

// TestCompareCountsMisses checks the allowance for a function's
// type-cache misses against numbers worked out by hand. Per iteration
// (work 10): the program 1,000,000, m.A 1,000; A misses 5 an iteration
// in the baseline, 3 in the head: allowed max(0.5% of 1,000 = 5, 0.01% of
// 1,000,000 = 100, MissCost*(5+3) = 256) = 256.
func TestCompareCountsMisses(t *testing.T) {
	judge := func(name string) bool { return strings.HasPrefix(name, "m.") }
	side := func(a int64, misses map[string]int64) *profile.Profile {
		return withMisses(t, countProfile(t, 10, map[string]int64{"m.A": a, "runtime.x": 10_000_000 - a}), misses)
	}
	for _, c := range []struct {
		name        string
		head        int64
		base, headM map[string]int64
		fail        bool
		allowed     float64
	}{
		{"within the misses", 12_500, map[string]int64{"m.A": 50}, map[string]int64{"m.A": 30}, false, 256},
		{"past the misses", 13_000, map[string]int64{"m.A": 50}, map[string]int64{"m.A": 30}, true, 256},
		{"no misses", 12_500, nil, nil, true, 100},
		{"another function's misses", 12_500, map[string]int64{"m.B": 50}, map[string]int64{"m.B": 30}, true, 100},
	} {
		rep := checkCountVerdict(t, c.name, side(10_000, c.base), side(c.head, c.headM), judge, c.fail, c.allowed)
		if c.allowed == 256 && (len(rep.Missing) != 1 || rep.Missing[0] != (MissAllowance{Name: "m.A", Allowed: 256, Base: 1000})) {
			t.Errorf("%s: functions judged within their misses %+v, want m.A allowed 256 of 1000", c.name, rep.Missing)
		}
		if c.allowed == 100 && len(rep.Missing) != 0 {
			t.Errorf("%s: functions judged within their misses %+v, want none", c.name, rep.Missing)
		}
		if c.allowed == 256 {
			var b strings.Builder
			if err := rep.Write(&b, "text"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "judged within their type-cache misses (the runtime fills those caches at random, 32 instructions a miss allowed): 1 function: m.A (±256, 26% of its count)") {
				t.Errorf("%s: report does not name the function judged within its misses:\n%s", c.name, b.String())
			}
		}
		if c.fail && c.allowed == 256 {
			var b strings.Builder
			if err := rep.Write(&b, "text"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "allowed ±256, its 8 type-cache misses an iteration)") {
				t.Errorf("%s: report does not say the misses allowed for:\n%s", c.name, b.String())
			}
		}
	}
	// Misses below zero are no count (a tampered file).
	if _, err := CompareCounts(side(10_000, map[string]int64{"m.A": -5}), side(10_000, nil), judge); err == nil || !strings.Contains(err.Error(), "type-cache misses") {
		t.Errorf("negative misses: err = %v", err)
	}
}

// A function that grew by less than the whole iteration fell, in an
// iteration that allocates fewer objects, is traded, not regressed: by
// hand, m.A 1,000 -> 1,300 instructions an iteration (allowed 100: 0.01% of
// the program's 1,001,000) while runtime.x executes 2,000 fewer (an
// allocation gone, 1 object an iteration fewer), so the whole 1,700 fewer.
// The same counts with the allocations unchanged fail (the whole count's
// own spread could hide a slowdown), as do the same growth with the whole
// growing and m.A +3,000 while the whole fell 1,000. Four processes a side,
// every head one below every baseline one, trade without allocations.
func TestCompareCountsTraded(t *testing.T) {
	judge := func(name string) bool { return strings.HasPrefix(name, "m.") }
	side := func(a, x int64) *profile.Profile {
		return countProfile(t, 10, map[string]int64{"m.A": a, "runtime.x": x})
	}
	allocs := func(objects float64) *AllocTable {
		return &AllocTable{Work: 1000, All: AllocCount{Objects: objects * 1000}, Funcs: map[string]*AllocFunc{}}
	}
	fewer := CompareAllocs(allocs(2), allocs(1), "iteration", CountedAllocTolerance)
	same := CompareAllocs(allocs(2), allocs(2), "iteration", CountedAllocTolerance)
	base := countBase(t, side(10_000, 10_000_000), side(10_000, 10_000_000))
	for _, c := range []struct {
		name   string
		head   *profile.Profile
		allocs *AllocReport
		traded bool
	}{
		{"paid for", side(13_000, 10_000_000-20_000), fewer, true},
		{"allocations unchanged", side(13_000, 10_000_000-20_000), same, false},
		{"no allocations counted", side(13_000, 10_000_000-20_000), nil, false},
		{"not paid for", side(13_000, 10_000_000), fewer, false},
		{"more than the saving", side(40_000, 10_000_000-40_000), fewer, false},
	} {
		c.head = countBase(t, c.head) // one process

		rep, err := CompareCounts(base, c.head, judge)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Failed() {
			t.Fatalf("%s: m.A +300 and more passed before Trade", c.name)
		}
		rep.Trade(c.allocs)
		if rep.Failed() == c.traded || (len(rep.Traded) == 1) != c.traded {
			t.Errorf("%s: failed %v, traded %+v; want traded %v", c.name, rep.Failed(), rep.Traded, c.traded)
		}
		if !c.traded {
			continue
		}
		if tr := rep.Traded[0]; tr != (Trade{Name: "m.A", Change: 300, Saved: 1700}) {
			t.Errorf("%s: traded %+v, want m.A +300 of 1,700 saved", c.name, tr)
		}
		var b strings.Builder
		if err := rep.Write(&b, "text"); err != nil {
			t.Fatal(err)
		}
		if want := "traded    m.A: +300 instructions an iteration, while the whole iteration executes 1700 fewer: paid for in the same iteration; shown, not failed"; !strings.Contains(b.String(), want) {
			t.Errorf("%s: report does not say %q:\n%s", c.name, want, b.String())
		}
	}
	four := func(a, x int64) *profile.Profile {
		return countBase(t, side(a, x), side(a, x-10), side(a, x-20), side(a, x-30))
	}
	for _, c := range []struct {
		name   string
		base   *profile.Profile
		traded bool
	}{
		{"four processes a side, apart", four(10_000, 10_000_000), true},
		{"four processes a side, overlapping", four(10_000, 10_000_000-19_990), false},
	} {
		rep, err := CompareCounts(c.base, four(13_000, 10_000_000-20_000), judge)
		if err != nil {
			t.Fatal(err)
		}
		rep.Trade(nil)
		if (len(rep.Traded) == 1) != c.traded || rep.Failed() == c.traded {
			t.Errorf("%s: failed %v, traded %+v; want traded %v", c.name, rep.Failed(), rep.Traded, c.traded)
		}
	}
}

// TestNoteInlined: a changed function is noted inlined into the changed
// functions its copies are in, not into unchanged ones nor itself; no
// verdict moves. By hand: m.A +2% and m.small +50% regressed, m.B
// unchanged; small is inlined into A, B and itself (its own body).
func TestNoteInlined(t *testing.T) {
	base := countProfile(t, 10, map[string]int64{"m.A": 1_000_000, "m.B": 500_000, "m.small": 100_000, "runtime.x": 8_400_000})
	head := countProfile(t, 10, map[string]int64{"m.A": 1_020_000, "m.B": 500_000, "m.small": 150_000, "runtime.x": 8_400_000})
	rep, err := CompareCounts(base, head, func(n string) bool { return strings.HasPrefix(n, "m.") })
	if err != nil {
		t.Fatal(err)
	}
	before := len(rep.Rows)
	rep.NoteInlined(map[string][]string{"m.small": {"m.B", "m.A", "m.small", "m.A"}, "m.A": {"m.B"}, "m.gone": {"m.A"}})
	got := map[string][]string{}
	for _, row := range rep.Rows {
		if row.Verdict != Regressed {
			t.Errorf("%s: %s, want regressed", row.Name, row.Verdict)
		}
		got[row.Name] = row.InlinedInto
	}
	if len(rep.Rows) != before || len(got) != 2 || len(got["m.A"]) != 0 || len(got["m.small"]) != 1 || got["m.small"][0] != "m.A" {
		t.Errorf("inlined into: %v, want m.small into m.A alone", got)
	}
	var b strings.Builder
	if err := rep.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  regressed m.small: 10000 -> 15000 instructions (+50.00%; allowed ±100); inlined into m.A, which changed too\n") ||
		strings.Contains(b.String(), "m.A: 100000 -> 102000 instructions (+2.00%; allowed ±500); inlined") {
		t.Errorf("the report:\n%s", b.String())
	}
}
