package diff_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
)

// benchRuns draws runs of one benchmark: functions f0..f4 of the module
// example.com/m and the runtime's mallocgc, with the given shares, the
// module's f0 slower by slow in head. Each run's length varies by cv
// (the machine), and samples fall as drawn.
func benchRuns(t testing.TB, r *rand.Rand, bench string, n, runs int, shares []float64, slow, cv float64) (base, head []*profile.Profile) {
	stacks := make([]string, len(shares))
	for i := range shares {
		stacks[i] = fmt.Sprintf("main;example.com/m.%s_f%d", bench, i)
	}
	stacks[len(stacks)-1] = "main;runtime.mallocgc"
	draw := func(f float64) *profile.Profile {
		w := append([]float64(nil), shares...)
		w[0] *= f
		var sum float64
		for _, x := range w {
			sum += x
		}
		m := float64(n) * sum * math.Exp(cv*r.NormFloat64())
		return drawStacks(t, r, int(m), stacks, w)
	}
	for range runs {
		base = append(base, draw(1))
		head = append(head, draw(1+slow))
	}
	return base, head
}

var gateModule = regexp.MustCompile(`^example\.com/m\.`)

// A function holding 10% of one benchmark among twenty, 40% slower, is
// flagged by CompareEach (judged at its 10%, one false-discovery control
// over every benchmark's tests), and nothing else is, in every seed; with
// no change nothing is flagged in any seed (twenty benchmarks of six
// functions judged at once: were each judged on its own at 5%, about one
// seed in two would fail somewhere).
func TestCompareEachFlagsOneBenchmarksFunction(t *testing.T) {
	shares := []float64{0.10, 0.35, 0.25, 0.15, 0.05, 0.10}
	flagged, falseAlarms, nullFails := 0, 0, 0
	const seeds = 10
	for seed := range uint64(seeds) {
		for _, slow := range []float64{0.4, 0} {
			r := rand.New(rand.NewPCG(seed, 15))
			var pairs []diff.Pair
			for b := range 20 {
				s := 0.0
				if b == 7 {
					s = slow
				}
				name := fmt.Sprintf("B%d", b)
				base, head := benchRuns(t, r, name, 1500, 5, shares, s, 0.03)
				pairs = append(pairs, diff.Pair{Name: name, Base: base, Head: head})
			}
			reps, err := diff.CompareEach(pairs, diff.WithMode(diff.Absolute), diff.WithGate(gateModule), diff.WithHeadline(false))
			if err != nil {
				t.Fatal(err)
			}
			if len(reps) != len(pairs) {
				t.Fatalf("%d reports for %d pairs", len(reps), len(pairs))
			}
			for i, rep := range reps {
				if rep.Name != pairs[i].Name {
					t.Errorf("report %d named %q, want %q", i, rep.Name, pairs[i].Name)
				}
				for _, row := range rep.Regressions() {
					if slow > 0 && row.Name == "example.com/m.B7_f0" {
						flagged++
						if math.Abs(row.Relative-0.4) > 0.15 {
							t.Errorf("seed %d: %s %+.1f%%, want about +40%%", seed, row.Name, 100*row.Relative)
						}
						continue
					}
					if slow > 0 {
						falseAlarms++
					} else {
						nullFails++
					}
					t.Logf("seed %d slow %v: %s regressed %+.1f%% q=%.3g", seed, slow, row.Name, 100*row.Relative, row.Q)
				}
			}
		}
	}
	t.Logf("flagged %d of %d; false alarms %d changed, %d unchanged", flagged, seeds, falseAlarms, nullFails)
	if flagged < seeds-1 {
		t.Errorf("the 10%% function 40%% slower flagged in %d of %d seeds, want at least %d", flagged, seeds, seeds-1)
	}
	if falseAlarms > 1 || nullFails > 1 {
		t.Errorf("other functions regressed in %d changed and %d unchanged comparisons of %d, want at most 1 each", falseAlarms, nullFails, seeds)
	}
}

// The runtime's functions are tested and shown but not gated: a runtime
// function 60% slower fails the gate without WithGate, and with it is
// unchanged, ungated, and a near miss.
func TestGateShowsWithoutJudging(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	shares := []float64{0.3, 0.3, 0.2, 0.1, 0.1}
	var base, head []*profile.Profile
	for range 5 {
		base = append(base, drawStacks(t, r, 2000, []string{"main;example.com/m.a", "main;example.com/m.b", "main;example.com/m.c", "main;runtime.mallocgc", "main;runtime.memmove"}, shares))
		slow := append([]float64(nil), shares...)
		slow[3] *= 1.6
		head = append(head, drawStacks(t, r, 2060, []string{"main;example.com/m.a", "main;example.com/m.b", "main;example.com/m.c", "main;runtime.mallocgc", "main;runtime.memmove"}, slow))
	}
	all := compare(t, base, head, diff.WithMode(diff.Absolute), diff.WithHeadline(false))
	if row := rowOf(t, all, "runtime.mallocgc"); row.Verdict != diff.Regressed || row.Ungated {
		t.Fatalf("ungated comparison: mallocgc %s (ungated %v), want regressed", row.Verdict, row.Ungated)
	}
	gated := compare(t, base, head, diff.WithMode(diff.Absolute), diff.WithHeadline(false), diff.WithGate(gateModule))
	row := rowOf(t, gated, "runtime.mallocgc")
	if row.Verdict != diff.Unchanged || !row.Ungated || !strings.Contains(row.NearMiss, "not gated") {
		t.Errorf("gated to the module: mallocgc %s, ungated %v, near miss %q; want unchanged, ungated, a near miss", row.Verdict, row.Ungated, row.NearMiss)
	}
	if gated.Failed() {
		t.Errorf("gated to the module, the gate fails: %v", gated.Regressions())
	}
	if row := rowOf(t, gated, "example.com/m.a"); row.Ungated {
		t.Error("a module function is ungated")
	}
}

// A regression whose q is above the false-discovery rate but within five
// times it is a near miss: unchanged, never failing, listed first in the
// text and Markdown reports and counted in the JSON. Its q does not
// depend on alpha, so the same data judged at alpha below q show it.
func TestNearMiss(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	stacks := []string{"main;example.com/m.a", "main;example.com/m.b", "main;example.com/m.c", "main;example.com/m.d", "main;example.com/m.e", "main;example.com/m.f"}
	shares := []float64{0.1, 0.3, 0.2, 0.2, 0.1, 0.1}
	var base, head []*profile.Profile
	for range 5 {
		base = append(base, drawStacks(t, r, 1000, stacks, shares))
		slow := append([]float64(nil), shares...)
		slow[0] *= 1.3
		head = append(head, drawStacks(t, r, 1030, stacks, slow))
	}
	rep := compare(t, base, head, diff.WithMode(diff.Absolute), diff.WithHeadline(false))
	q := rowOf(t, rep, "example.com/m.a").Q
	if !(q < 0.05) {
		t.Fatalf("m.a q=%v at alpha 0.05: the fixture should flag it", q)
	}
	rep = compare(t, base, head, diff.WithMode(diff.Absolute), diff.WithHeadline(false), diff.WithAlpha(q/2))
	row := rowOf(t, rep, "example.com/m.a")
	if row.Verdict != diff.Unchanged || row.NearMiss == "" || rep.Failed() {
		t.Fatalf("alpha %.3g, q %.3g: %s, near miss %q, failed %v; want a near miss, unchanged", q/2, row.Q, row.Verdict, row.NearMiss, rep.Failed())
	}
	var txt, md, js bytes.Buffer
	if err := rep.Write(&txt, "text"); err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		nm, tbl := strings.Index(out, "ear miss"), strings.Index(out, "function")
		if nm < 0 || tbl < 0 || nm > strings.Index(out[tbl:], "example.com/m.a")+tbl {
			t.Errorf("%s report: the near miss is not shown before the table:\n%s", name, out)
		}
	}
	if !strings.Contains(js.String(), `"near_misses": 1`) || !strings.Contains(js.String(), `"near_miss": "`) {
		t.Errorf("JSON report does not count and mark the near miss:\n%s", js.String())
	}
}

// With several runs a side and fewer than five functions of ten samples a
// run, the noise is not learned from the functions: the whole profile's
// run-to-run spread is taken (its time varies 20% here). A program of three
// functions cannot have five, whatever the runs' length: the report's noise
// line says what was assumed, and no warning asks for longer runs. With
// seven functions in every run, four of them too small, longer runs would
// learn it: a warning says so.
func TestNoiseFromWholeProfile(t *testing.T) {
	for _, c := range []struct {
		name    string
		funcs   []string
		weights []float64
		warn    bool
	}{
		{"three functions", []string{"main;m.a", "main;m.b", "main;m.c"}, []float64{0.5, 0.3, 0.2}, false},
		{"four small ones", []string{"main;m.a", "main;m.b", "main;m.c", "main;m.d", "main;m.e", "main;m.f", "main;m.g"}, []float64{0.5, 0.3, 0.188, 0.003, 0.003, 0.003, 0.003}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			var base, head []*profile.Profile
			for range 6 {
				for _, side := range []*[]*profile.Profile{&base, &head} {
					n := int(3000 * math.Exp(0.2*r.NormFloat64()))
					*side = append(*side, drawStacks(t, r, n, c.funcs, c.weights))
				}
			}
			rep := compare(t, base, head, diff.WithMode(diff.Absolute), diff.WithHeadline(false))
			if rep.Noise.Source != "whole" {
				t.Fatalf("noise source %q, want whole", rep.Noise.Source)
			}
			if cv := math.Sqrt(rep.Noise.Dispersion); cv < 0.1 || cv > 0.4 {
				t.Errorf("noise %.1f%% from run to run, want about 20%%", 100*cv)
			}
			found := false
			for _, w := range rep.Warnings {
				found = found || strings.Contains(w, "noise not learned")
			}
			if found != c.warn {
				t.Errorf("warning that the noise was not learned: %v, want %v: %q", found, c.warn, rep.Warnings)
			}
			var txt strings.Builder
			if err := rep.Write(&txt, "text"); err != nil {
				t.Fatal(err)
			}
			if line := "noise: functions taken to vary"; strings.Contains(txt.String(), line) == c.warn {
				t.Errorf("report's noise line %q shown: %v, want %v:\n%s", line, !c.warn, !c.warn, txt.String())
			}
			if rep.Failed() {
				t.Errorf("identical programs fail: %v", rep.Regressions())
			}
		})
	}
}

// Unchanged code whose runtime work comes in bursts (a garbage
// collection in some runs, none in others: 0 or about 3 samples of
// gcBgMarkWorker a run) and tiny runs (most functions 1-4 samples a run)
// manufacture no significance: across 40 seeds of 5 runs a side, one
// comparison at most flags anything as regressed, new or gone. Judged by
// its samples alone, a function seen 6 times in 3 base runs and never in
// head would be gone (p = 1/64); judged by its runs it is not (3 runs of
// 10 all on one side: p = 1/12).
func TestBurstyTinyRunsNoFalseAlarms(t *testing.T) {
	stacks := []string{"main;m.a", "main;m.b", "main;m.c", "main;m.d", "main;m.e", "main;runtime.mallocgc", "main;runtime.memmove"}
	w := []float64{0.30, 0.25, 0.15, 0.10, 0.08, 0.06, 0.06}
	bad := 0
	const seeds = 40
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 99))
		draw := func() *profile.Profile {
			p := drawStacks(t, r, 40, stacks, w)
			if r.Float64() < 0.4 {
				gc := folded(t, fmt.Sprintf("main;runtime.gcBgMarkWorker %d\n", 2+r.IntN(3)))
				merged, err := profile.Merge([]*profile.Profile{p, gc})
				if err != nil {
					t.Fatal(err)
				}
				p = merged
			}
			return p
		}
		var base, head []*profile.Profile
		for range 5 {
			base = append(base, draw())
			head = append(head, draw())
		}
		rep := compare(t, base, head, diff.WithMode(diff.Absolute), diff.WithHeadline(false))
		c := rep.Counts()
		if c[diff.Regressed]+c[diff.New]+c[diff.Gone] > 0 {
			bad++
			for _, row := range rep.Rows {
				if row.Verdict != diff.Unchanged {
					t.Logf("seed %d: %s %s %+.1f%% p=%.3g q=%.3g", seed, row.Name, row.Verdict, 100*row.Relative, row.P, row.Q)
				}
			}
		}
	}
	t.Logf("%d of %d comparisons flagged something", bad, seeds)
	if bad > 1 {
		t.Errorf("%d of %d comparisons of unchanged bursty tiny runs flagged something, want at most 1 (the engine before the runs were counted: 3)", bad, seeds)
	}
}
