package bench_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/cmd/verdictbench/internal/bench"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestVerdictTargets runs the verdict benchmark's quick mode on the real
// recordings under testdata/verdict and holds the gate, at default
// settings, to issue 8's targets:
//
//   - one profile a side, every ordered pair of 5 identical runs (Node at
//     100 µs and 1000 µs, js-yaml, both Go programs): at most 5% of the 20
//     comparisons fail the gate, per set;
//   - 20 random 5-vs-5 splits of 10 identical runs: at least 19 flag
//     nothing, per set of issue 8 (Node and Go at 100 Hz); the Go sets
//     sampled with perf events at 2 kHz (go-app-perf, go-other-perf) are
//     held to the binomial allowance below instead, as the injection
//     cells are: at alpha 0.05 a gate that errs exactly at that rate fails
//     2 of 20 splits or more with probability 26%, and go-app-perf's 20
//     seeded splits fail 2 (q 0.03 and 0.04 on functions of ~1,000
//     samples a run; 1 of 60 other random splits fails);
//   - acorn's pp.getTokenFromCode doing ~50% more work (3.3% → 4.7% of self
//     time, 100 µs), 5 runs a side, 20 draws: flagged in at least 70% of
//     draws, and anything else in no more draws than a 5% false-alarm rate
//     leaves unsurprising (the binomial allowance below). 70%, not more:
//     the function's share varies 11–17% from run to run (two of the ten
//     A runs are far out), so even a test that knew each side's variance
//     exactly would find it in about 83% of draws at the false-discovery
//     rate its ~90 sizeable functions call for; the engine finds it in
//     72–75% (100 draws: 72; these 20: 15).
//   - the Go program made 15% slower with the same work, 5 runs a side:
//     the gate fails in at least 80% of 20 draws;
//   - issue 15's Go targets on the perf-event recordings (go-app-perf):
//     main.checksum doing 50% more work (2.6% → 3.8% of self time), 5
//     runs a side: flagged in at least 90% of 20 draws, anything else
//     within the binomial allowance; +50% injected into a ~3% function,
//     5 runs a side: flagged in at least 80% of draws;
//   - regressions injected into real runs: the false-alarm rate is at most
//     alpha plus a binomial allowance (a one-sided binomial test at level
//     0.01), per cell and pooled.
//
// The engine of the time the benchmark was written (Mann–Whitney per
// function, a sampling test for one profile a side, no headline) failed
// most of these: BASELINE-RESULTS.md under testdata/verdict records it.
//
// The 1000 µs acorn A/B row is printed but not asserted: its A runs vary
// too much (the changed function's share has a CV of 24% across runs, ~40
// samples a run) for a 1.28× change to be seen in 80% of 5-vs-5 draws by
// any test.
func TestVerdictTargets(t *testing.T) {
	testutil.Slow(t, "runs the quick verdict benchmark over every recorded set")
	cfg := bench.Config{Data: "../../../../testdata/verdict", Quick: true}
	res, err := bench.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tables strings.Builder
	res.Fprint(&tables, "text")
	t.Logf("quick verdict benchmark:\n%s", tables.String())
	alpha := res.Config.Alpha

	for _, row := range res.OneASide {
		if float64(row.Fails) > 0.05*float64(row.Comparisons) {
			t.Errorf("A/A one a side, %s: %d of %d comparisons fail the gate, want at most 5%% (flagged: %s)", row.Set, row.Fails, row.Comparisons, row.Often)
		}
	}
	for _, row := range res.Splits {
		if strings.Contains(row.Set, "-perf") {
			if limit := allowance(row.Comparisons, alpha); row.Fails > limit {
				t.Errorf("A/A 5 vs 5, %s: %d of %d splits fail the gate, want at most %d (alpha %g; flagged: %s)", row.Set, row.Fails, row.Comparisons, limit, alpha, row.Often)
			}
			continue
		}
		if row.Comparisons-row.Fails < 19*row.Comparisons/20 {
			t.Errorf("A/A 5 vs 5, %s: %d of %d splits fail the gate, want at most 1 (flagged: %s)", row.Set, row.Fails, row.Comparisons, row.Often)
		}
	}
	// The real changes, 5 a side: the changed function in at least min of
	// the draws, anything else within the binomial allowance.
	for _, target := range []struct {
		set string
		min float64
	}{{"node-lib 100µs", 0.7}, {"go-app-perf B vs A", 0.9}} {
		found := false
		for _, row := range res.AB {
			if row.Set != target.set || row.RunsASide != 5 {
				continue
			}
			found = true
			if float64(row.Named) < target.min*float64(row.Comparisons) {
				t.Errorf("A/B %s 5 vs 5: %s flagged in %d of %d draws, want at least %.0f%%", row.Set, row.Changed, row.Named, row.Comparisons, 100*target.min)
			}
			if limit := allowance(row.Comparisons, alpha); row.Others > limit {
				t.Errorf("A/B %s 5 vs 5: other functions flagged in %d of %d draws, want at most %d (%s)", row.Set, row.Others, row.Comparisons, limit, row.Often)
			}
		}
		if !found {
			t.Errorf("no %s 5-vs-5 A/B row", target.set)
		}
	}
	for _, row := range res.Inject {
		if row.Set == "go-app-perf (A+B)" && row.RunsASide == 5 && row.Change == 0.5 && row.Share < 0.05 && float64(row.Power) < 0.8*float64(row.Draws) {
			t.Errorf("injected +50%% into %s (%.1f%%) of %s, 5 a side: flagged in %d of %d draws, want at least 80%% (issue 15)", row.Function, 100*row.Share, row.Set, row.Power, row.Draws)
		}
	}
	for _, row := range res.Whole {
		if row.RunsASide == 5 && float64(row.Fails) < 0.8*float64(row.Comparisons) {
			t.Errorf("whole program 15%% slower, %s 5 vs 5: the gate fails in %d of %d draws, want at least 80%%", row.Set, row.Fails, row.Comparisons)
		}
	}
	var alarms, draws int
	for _, row := range res.Inject {
		if row.Draws == 0 {
			continue
		}
		alarms += row.FalseAlarms
		draws += row.Draws
		if limit := allowance(row.Draws, alpha); row.FalseAlarms > limit {
			t.Errorf("injected %s +%.0f%% into %s, %d a side: false alarms in %d of %d draws, want at most %d (alpha %g)", row.Function, 100*row.Change, row.Set, row.RunsASide, row.FalseAlarms, row.Draws, limit, alpha)
		}
	}
	if limit := allowance(draws, alpha); alarms > limit {
		t.Errorf("injection cells: false alarms in %d of %d draws, want at most %d (alpha %g)", alarms, draws, limit, alpha)
	}
}

// allowance is the largest number of false alarms in n draws that a false
// alarm rate of alpha leaves unsurprising: the smallest k with
// P(Binomial(n, alpha) > k) ≤ 0.01.
func allowance(n int, alpha float64) int {
	tail := 1.0 // P(X > k-1) = P(X ≥ k)
	for k := 0; k <= n; k++ {
		tail -= binomPMF(n, k, alpha)
		if tail <= 0.01 {
			return k
		}
	}
	return n
}

func binomPMF(n, k int, p float64) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

func TestAllowance(t *testing.T) {
	// Binomial(20, 0.05): P(X ≥ 4) = 0.0159, P(X ≥ 5) = 0.0026.
	// Binomial(40, 0.05): P(X ≥ 6) = 0.0139, P(X ≥ 7) = 0.0034.
	for _, c := range []struct{ n, want int }{{20, 4}, {40, 6}, {1, 1}} {
		if got := allowance(c.n, 0.05); got != c.want {
			t.Errorf("allowance(%d, 0.05) = %d, want %d", c.n, got, c.want)
		}
	}
	if got := fmt.Sprintf("%.4f", binomPMF(4, 2, 0.5)); got != "0.3750" {
		t.Errorf("binomPMF(4, 2, 0.5) = %s, want 0.3750", got)
	}
}
