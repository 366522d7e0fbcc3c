package gate

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// countedSide is a counted benchmark's difference profile carrying, as
// countLeaf leaves it, the allocations of 2N ops less N ops.
func countedSide(t *testing.T, work int64, twice, once map[string][2]int64) *profile.Profile {
	t.Helper()
	d := testutil.CountProfile(float64(work), map[string]int64{"m.f": 100})
	more, less := &profile.Profile{}, &profile.Profile{}
	for _, x := range []struct {
		p      *profile.Profile
		stacks map[string][2]int64
	}{{more, twice}, {less, once}} {
		if err := withAllocs(x.p, testutil.AllocProfile(x.stacks)); err != nil {
			t.Fatal(err)
		}
	}
	if err := diffExactAllocs(d, more, less, work); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCompareExactAllocs: counted allocations per op are the difference of
// the two processes, judged without tolerance: one more object an op in
// m.g fails naming m.g alone, the setup's allocations (in both processes)
// cancel, fewer objects pass, and a side without allocations (a base from
// a history recorded before they were counted) gives no verdict.
func TestCompareExactAllocs(t *testing.T) {
	only := regexp.MustCompile(`^m\.`)
	// 100 ops: m.f 3 objects an op, m.g 5; the setup, m.setup, 7 once.
	base := countedSide(t, 100,
		map[string][2]int64{"m.f@1;m.run@1": {600, 0}, "m.g@2;m.run@2": {1000, 0}, "m.setup@3": {7, 0}},
		map[string][2]int64{"m.f@1;m.run@1": {300, 0}, "m.g@2;m.run@2": {500, 0}, "m.setup@3": {7, 0}})
	head := countedSide(t, 100,
		map[string][2]int64{"m.f@1;m.run@1": {600, 0}, "m.g@2;m.run@2": {1200, 0}, "m.setup@3": {7, 0}},
		map[string][2]int64{"m.f@1;m.run@1": {300, 0}, "m.g@2;m.run@2": {600, 0}, "m.setup@3": {7, 0}})
	rep, err := compareExactAllocs(base, head, only)
	if err != nil || rep == nil {
		t.Fatalf("compareExactAllocs: %v, %v", rep, err)
	}
	var regressed []string
	for _, r := range rep.Regressions() {
		regressed = append(regressed, r.Name)
		if r.Base.Self.Objects != 5 || r.Head.Self.Objects != 6 {
			t.Errorf("%s: %v -> %v objects an op, want 5 -> 6", r.Name, r.Base.Self.Objects, r.Head.Self.Objects)
		}
	}
	if len(regressed) != 1 || regressed[0] != "m.g" {
		t.Errorf("regressed %v, want m.g alone", regressed)
	}
	e := exactResult{report: &diff.CountReport{}, allocs: rep}
	if !e.allocsFailed() || e.allocsLine() == "" || len(exactFailed([]exactResult{e})) != 1 {
		t.Errorf("the benchmark did not fail on its allocations: %q", e.allocsLine())
	}
	e.name = "example.com/m BenchmarkX"
	if got := exactSummary([]exactResult{e}); !strings.HasPrefix(got, "1 of 1 benchmarks allocate more: BenchmarkX: [m.g allocates more (5 -> 6 objects an op)]") {
		t.Errorf("the verdict's line: %q", got)
	}
	if back, _ := compareExactAllocs(head, base, only); back == nil || back.Failed() {
		t.Errorf("fewer allocations failed: %+v", back)
	}
	plain := testutil.CountProfile(100, map[string]int64{"m.f": 100})
	if rep, err := compareExactAllocs(plain, head, only); rep != nil || err != nil {
		t.Errorf("a side without allocations: %v, %v", rep, err)
	}
	if ap, err := allocsOf(head); err != nil || ap == nil {
		t.Fatalf("allocsOf: %v", err)
	} else if rec, _ := meta.Known(ap); len(rec.Runs) != 1 || rec.Runs[0].Work != 100 {
		t.Errorf("the difference's record: %+v", rec)
	}
}

// TestConfirmAllocs: an allocation regression fails only where every
// fresh count repeats it; the others are noted, the count stops at the
// first judgement that repeats none.
func TestConfirmAllocs(t *testing.T) {
	report := func(regressed ...string) *diff.AllocReport {
		r := &diff.AllocReport{Unit: "op", Exact: true}
		for _, n := range []string{"m.a", "m.b", "m.c"} {
			v := diff.Unchanged
			if slices.Contains(regressed, n) {
				v = diff.Regressed
			}
			r.Rows = append(r.Rows, diff.AllocRow{Name: n, Verdict: v})
		}
		return r
	}
	for _, c := range []struct {
		name   string
		fresh  [][]string // each fresh count's regressions
		counts int        // fresh counts made
		kept   []string
		line   string
	}{
		{"not repeated", [][]string{{}, {"m.a"}}, 1, nil, "m.a, m.b allocates more; counted again in fresh processes to confirm, two counts a side: not repeated: passed"},
		{"repeated once", [][]string{{"m.a", "m.c"}, {}}, 2, nil, "three counts a side: not repeated: passed"},
		{"repeated always", [][]string{{"m.a", "m.c"}, {"m.a"}}, 2, []string{"m.a"}, "three counts a side: repeated by m.a"},
		{"another fails", [][]string{{"m.c"}, {"m.c"}}, 1, nil, "two counts a side: not repeated: passed"},
	} {
		first := report("m.a", "m.b")
		n := 0
		line, err := confirmAllocsWith(first, func() (*diff.AllocReport, error) {
			n++
			return report(c.fresh[n-1]...), nil
		})
		var kept []string
		for _, row := range first.Regressions() {
			kept = append(kept, row.Name)
		}
		if err != nil || n != c.counts || !slices.Equal(kept, c.kept) || !strings.HasSuffix(line, c.line) {
			t.Errorf("%s: %v, %d fresh counts, kept %q, line %q; want %d, %q, %q", c.name, err, n, kept, line, c.counts, c.kept, c.line)
		}
		if note := strings.Join(first.Notes, "\n"); (len(c.kept) < 2) != strings.Contains(note, "not repeated by every fresh count") || !strings.Contains(note, "m.b") {
			t.Errorf("%s: notes %q", c.name, first.Notes)
		}
	}
}
